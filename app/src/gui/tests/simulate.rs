//! The Segments view's simulated column (issue 35): the segments under another allocator
//! setting at the inspected instant, beside the recorded ones, equal to the collector's
//! simulation at that instant.

use collector::analysis::simulate::{AllocatorConfig, simulated_layout_at};
use egui_kittest::kittest::Queryable;

use super::{oom_snapshot_segments, settle};

#[test]
fn the_segment_view_shows_the_segments_simulated_under_another_setting() {
    // gen_snapshots.py's OOM snapshot (kept with its history: it recorded an OOM).
    let mut h = oom_snapshot_segments();
    // Nothing simulated until asked: one column.
    assert!(h.query_by_label_contains("Simulated:").is_none());
    h.get_by_label("the allocator setting simulated beside the recorded segments")
        .click();
    h.run_steps(2);
    h.get_by_label("expandable_segments:True").click();
    h.run_steps(2);
    settle(&mut h);
    h.run_steps(2);
    let doc = h.state().active_doc().expect("doc");
    let target = doc.panels.inspect.target.expect("an instant inspected");
    let shown = (doc.panels.inspect.result.as_ref())
        .and_then(|r| r.simulated.clone())
        .expect("the simulated segments");
    let conf = AllocatorConfig::parse("expandable_segments:True").expect("conf");
    let want =
        simulated_layout_at(&doc.data.rec, target.device, &conf, target.at_ns).expect("a history");
    assert_eq!(shown, want);
    // The recorded run holds ten 18 MiB segments here; one growable segment holds the same
    // live blocks in 20 MiB pages.
    assert!(shown.segments.len() < 10, "{:?}", shown.segments.len());
    assert!(shown.allocated_bytes > 0);
    h.get_by_label("Simulated: expandable_segments:True");
    h.get_by_label_contains(&format!(
        "{} · {} reserved",
        crate::output::text::plural(shown.segments.len() as u64, "segment", "segments"),
        crate::gui::units::bytes(shown.reserved_bytes)
    ));
    h.get_by_label("Recorded");
}
