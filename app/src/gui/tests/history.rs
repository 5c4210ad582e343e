//! The History panel (issue 37, memory_viz's allocator state history) on the sample
//! snapshot: every entry the allocator recorded, in order, with its action, address, size
//! and stream as the collector reads them; ↓ steps and the cursor follows; the segment
//! holding the entry's address is drawn beside it.

use collector::model::HistoryAction;
use egui::Key;
use egui_kittest::kittest::Queryable;

use super::super::panels::PanelId;
use super::labels::snapshot_sample;
use super::{harness, settle};

#[test]
fn the_allocator_history_lists_every_entry_and_steps_with_the_keys() {
    // Independently: the snapshot read with its history kept.
    let options = collector::LoadOptions {
        allocator_history: true,
        ..Default::default()
    };
    let rec = collector::load(&snapshot_sample(), options).expect("snapshot");
    let truth = &rec.allocator.as_ref().expect("allocator").history[0];
    let count = |a: HistoryAction| truth.entries.iter().filter(|e| e.action == a).count();
    assert!(count(HistoryAction::Alloc) > 1000, "allocs");
    assert!(count(HistoryAction::FreeRequested) > 1000, "free_requested");
    assert!(count(HistoryAction::FreeCompleted) > 1000, "free_completed");
    // GIVEN the viewer on the History tab
    let mut h = harness(vec![snapshot_sample()]);
    settle(&mut h);
    h.get_by_label("History").click();
    h.run_steps(3);
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.tab, PanelId::HISTORY);
    let shown = &doc.data.rec.allocator.as_ref().expect("kept").history[0];
    // THEN it lists the allocator's own entries (with their stacks)
    assert_eq!(shown.entries.len(), truth.entries.len());
    assert_eq!(shown.entries, truth.entries);
    assert!(shown.entries.iter().filter(|e| e.stack.is_some()).count() > 1000);
    h.get_by_label_contains(&format!(
        "{} allocator events on cuda:0",
        crate::output::text::group(truth.entries.len() as u64)
    ));
    // The selection starts at the cursor (the peak): the last entry at or before it.
    let peak = doc.panels.inspect.target.expect("the peak inspected").at_ns;
    let at = truth.entries.partition_point(|e| e.time_ns <= peak) - 1;
    assert_eq!(doc.panels.history.selected, Some(at));
    // WHEN ↓ is pressed twice
    for _ in 0..2 {
        h.key_press(Key::ArrowDown);
        h.run_steps(2);
    }
    settle(&mut h);
    // THEN the next-but-one entry is selected, the cursor at its time, its row shown
    let doc = h.state().active_doc().expect("doc");
    let e = truth.entries[at + 2];
    assert_eq!(doc.panels.history.selected, Some(at + 2));
    assert_eq!(doc.panels.inspect.target.map(|t| t.at_ns), Some(e.time_ns));
    let heading = format!(
        "#{} {} {} at {:#x} on stream {}",
        at + 2,
        e.action.as_str(),
        collector::units::bytes_iec(e.size_bytes as i64),
        e.addr,
        e.stream
    );
    h.get_by_label(&heading);
    assert!(h.query_all_by_label(&format!("{:#x}", e.addr)).count() >= 1);
    // and the segment holding its address, as the inspector lays it out then, beside it
    let layout = doc
        .panels
        .inspect
        .result
        .as_ref()
        .and_then(|r| r.layout.clone());
    let seg = layout
        .iter()
        .flatten()
        .find(|s| e.addr >= s.addr && e.addr < s.addr + s.size_bytes as u64)
        .expect("a segment holds it");
    h.get_by_label_contains(&format!("segment {:#x}", seg.addr));
    // ↑ steps back
    h.key_press(Key::ArrowUp);
    h.run_steps(2);
    assert_eq!(
        h.state().active_doc().expect("doc").panels.history.selected,
        Some(at + 1)
    );
}
