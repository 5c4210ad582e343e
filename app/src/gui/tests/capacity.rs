//! The device's capacity: drawn by default where the trace knows it (a line the axis
//! reaches, or a label saying it is off scale when it would flatten the curves), its label
//! inside the plot and clear of the curves, and gone when unticked.

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
    assert!(d.timeline.show_total, "on by default");
    let (plot, (y0, y1)) = (d.timeline.last_plot_rect.expect("plot"), d.timeline.last_y);
    // The run's peak (96.6 MiB) is 0.12 % of 80 GB: scaled to the capacity the curves
    // would lie on the floor, so the axis fits them and the toolbar says so.
    assert!(
        y0 == 0.0 && y1 < (1u64 << 30) as f64,
        "the y axis fits the curves, not the capacity: {y1}"
    );
    // The toolbar says so, with the share: the curves' top (the reserve's peak, over the
    // allocated one) of the total.
    let dev = &d.data.summary.devices[0];
    let top = dev
        .peak_reserved_bytes
        .max(dev.peak_allocated_bytes)
        .expect("peaks");
    let note = format!(
        "{} · off scale (the curves reach {:.2} %)",
        collector::units::bytes_iec(total as i64),
        100.0 * top as f64 / total as f64
    );
    let drawn = texts(&h);
    let t = drawn
        .iter()
        .find(|t| t.text == note)
        .unwrap_or_else(|| panic!("no {note:?}"));
    assert!(t.full.bottom() < plot.top(), "in the toolbar: {:?}", t.full);
    assert!(!drawn.iter().any(|t| t.text == label), "no line label");
    // Unticked, the label goes.
    h.get_by_label("device total").click();
    h.run_steps(3);
    let d = h.state().active_doc().expect("doc");
    assert!(!d.timeline.show_total);
    assert!(!texts(&h).iter().any(|t| t.text == note));
}

#[test]
fn a_capacity_near_the_curves_is_a_line_the_axis_reaches() {
    // Two 32 GB V100s with a 11.9 GiB reserve peak: within 4× of the curves' top.
    let path =
        repo().join("../shared/traces/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz");
    let mut h = harness(vec![path]);
    settle(&mut h);
    let d = h.state().active_doc().expect("doc");
    let total = d.data.curves[d.device as usize]
        .total_bytes
        .expect("deviceProperties");
    let label = format!("device total {}", collector::units::bytes_iec(total as i64));
    let (plot, (y0, y1)) = (d.timeline.last_plot_rect.expect("plot"), d.timeline.last_y);
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
    // Unticked, the line goes and the axis fits the curves again.
    h.get_by_label("device total").click();
    h.run_steps(3);
    let d = h.state().active_doc().expect("doc");
    assert!(
        d.timeline.last_y.1 < total as f64,
        "{}",
        d.timeline.last_y.1
    );
    assert!(!texts(&h).iter().any(|t| t.text == label));
}
