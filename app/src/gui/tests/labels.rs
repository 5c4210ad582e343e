//! Issue 37's labels that misled or could not be read, each on a real file: the live
//! groups' labels at 1000×700, Compare's two files of one name and its per-op units,
//! event-order snapshots, ops a snapshot has not.

use egui::Shape;
use egui_kittest::Harness;

use super::super::ViewerApp;
use super::super::panels::PanelId;
use super::layout::{SMALL, harness_sized};
use super::{repo, settle};

/// A text drawn in the last frame and whether egui elided it (cut with "…" to fit).
pub(super) fn galleys(h: &Harness<'_, ViewerApp>) -> Vec<(String, bool)> {
    fn collect(shape: &Shape, out: &mut Vec<(String, bool)>) {
        match shape {
            Shape::Text(t) => out.push((t.galley.text().to_owned(), t.galley.elided)),
            Shape::Vec(shapes) => shapes.iter().for_each(|s| collect(s, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for c in &h.output().shapes {
        collect(&c.shape, &mut out);
    }
    out
}

pub(super) fn snapshot_sample() -> std::path::PathBuf {
    repo().join("samples/cs336-transformer-snapshot.pickle")
}

#[test]
fn live_group_labels_are_whole_at_the_smallest_window() {
    // GIVEN the sample snapshot at 1000×700, on Live at cursor (at the peak)
    let mut h = harness_sized(vec![snapshot_sample()], SMALL);
    settle(&mut h);
    let d = h.state().active_doc().expect("a document");
    assert_eq!(d.tab, PanelId::INSPECTOR);
    let groups = d.inspect.result.as_ref().expect("inspected").groups.clone();
    let with_stacks: Vec<_> = groups.iter().filter(|g| !g.frames.is_empty()).collect();
    assert!(with_stacks.len() >= 3, "{} groups", with_stacks.len());
    // THEN each group's label says its whole stack: drawn in full, never elided
    let drawn = galleys(&h);
    let mut seen = 0;
    for g in &with_stacks {
        let short = g.short_site();
        let Some((_, elided)) = drawn.iter().find(|(t, _)| t.contains(&short)) else {
            continue; // scrolled out of the list
        };
        assert!(!elided, "{short:?} is cut");
        seen += 1;
    }
    assert!(
        seen >= 3,
        "only {seen} of the groups' labels are whole: {drawn:?} {:?}",
        with_stacks
            .iter()
            .map(|g| g.short_site())
            .collect::<Vec<_>>()
    );
    assert!(seen >= 3, "only {seen} of the groups' labels are whole");
    assert!(
        drawn
            .iter()
            .all(|(t, elided)| !(*elided && t.contains(" ← "))),
        "a stack label is elided"
    );
}
