//! The op stack as lanes under the timeline (issue 37, Perfetto's nested slices), on a
//! real GPU trace: View › Op stack lanes shows the collector's op lanes, each level of the stack a
//! row, the widest spans named.

use egui_kittest::kittest::Queryable;

use super::layout::{LARGE, harness_sized, texts};
use super::{repo, settle};

#[test]
fn the_op_stack_lanes_show_every_level_under_the_timeline() {
    // GIVEN a real TraceLens trace (BERT small on an H100) without NVTX ranges: no lanes
    let path = repo().join(
        "../shared/traces/real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
    );
    let mut h = harness_sized(vec![path], LARGE);
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    assert!(doc.data.lanes.is_empty() && doc.timeline.last_lanes.is_none());
    let total = doc.data.op_lanes.len();
    assert!(total >= 3, "{total} rows");
    // WHEN View › Op stack lanes is ticked
    h.get_by_label("View").click();
    h.run_steps(2);
    h.get_by_label("Op stack lanes").click();
    h.run_steps(4);
    // THEN the lanes are drawn with the collector's rows, as many as fit
    let doc = h.state().active_doc().expect("doc");
    let (area, fit) = doc.timeline.last_lanes.expect("lanes drawn");
    assert_eq!(fit.rows, total.min(super::super::timeline::LANES_MAX_ROWS));
    // and the widest span of the first row (a whole step, or the module that ran the
    // forward pass) is named in it
    let rec = &doc.data.rec;
    let first = &doc.data.op_lanes[0];
    let widest = (first.spans.iter())
        .filter_map(|&i| rec.ops.get(i as usize))
        .max_by_key(|o| o.end_ns - o.start_ns)
        .expect("a span");
    let name = rec.op_name(widest);
    let prefix: String = name.chars().take(6).collect();
    let named = texts(&h)
        .into_iter()
        .any(|t| area.contains_rect(t.full.shrink(1.0)) && t.text.starts_with(&prefix));
    assert!(named, "{name} named in the lanes at {area:?}");
}
