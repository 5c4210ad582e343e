//! The device's capacity: drawn by default where the trace knows it, its label inside the
//! plot and clear of the curves, and gone when unticked.

use std::io::Read;

use egui_kittest::kittest::Queryable;

use super::layout::texts;
use super::{harness, repo, settle};

#[test]
fn the_capacity_line_is_on_where_the_device_s_memory_is_known() {
    let path = repo()
        .join("../shared/traces/real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz");
    // Independently: the trace's deviceProperties, as torch wrote them.
    let mut json = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("trace"))
        .read_to_string(&mut json)
        .expect("gzip");
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    let total = doc["deviceProperties"][0]["totalGlobalMem"]
        .as_u64()
        .expect("totalGlobalMem");
    assert!(total > 79 << 30, "an 80 GB H100: {total}");
    let label = format!("device total {}", collector::units::bytes_iec(total as i64));

    let mut h = harness(vec![path]);
    settle(&mut h);
    let d = h.state().active_doc().expect("doc");
    assert!(d.show_total, "on by default");
    let (plot, (y0, y1)) = (d.last_plot_rect.expect("plot"), d.last_y);
    assert!(
        y1 >= total as f64 && y0 == 0.0,
        "the y axis reaches the capacity: {y1}"
    );
    // The label: inside the plot, beside the line.
    let line_y = plot.bottom() - (total as f64 / (y1 - y0)) as f32 * plot.height();
    let drawn = texts(&h);
    let t = drawn
        .iter()
        .find(|t| t.text == label)
        .unwrap_or_else(|| panic!("no {label:?}"));
    assert!(plot.contains_rect(t.full), "{:?} in {plot:?}", t.full);
    // Above the line where the plot has room under the step labels and markers, else
    // just under it (over the curves' lowest stretch, tested in capacity.rs).
    let above = t.full.bottom() <= line_y;
    let just_under = t.full.top() >= line_y && t.full.top() <= line_y + 4.0;
    assert!(above || just_under, "{:?} by the line at {line_y}", t.full);
    // Unticked, the line goes and the axis fits the curves again (the trace's peak is
    // 96.6 MiB, far under 80 GB).
    h.get_by_label("device total").click();
    h.run_steps(3);
    let d = h.state().active_doc().expect("doc");
    assert!(!d.show_total);
    assert!(d.last_y.1 < (1u64 << 30) as f64, "{}", d.last_y.1);
    assert!(!texts(&h).iter().any(|t| t.text == label));
}
