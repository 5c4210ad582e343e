//! The bottom tabs keep their height (the default, then the user's drag) on every tab.
//! Positions come from the drawn widgets: the bottom tabs' top is their resize handle (a
//! splitter to assistive technologies).

use egui::accesskit::Role;
use egui::{Modifiers, pos2};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

use super::super::ViewerApp;
use super::super::panels::PANELS;
use super::layout::{LARGE, SMALL, harness_sized, texts};
use super::{drag, fixture, settle};

/// The bottom tabs' top edge: the y of their resize handle, the one splitter wider than
/// high (the inspector's facts column has an upright one).
fn tabs_top(h: &Harness<'_, ViewerApp>) -> f32 {
    let edges: Vec<_> = h
        .root()
        .children_recursive()
        .filter(|n| n.accesskit_node().role() == Role::Splitter)
        .map(|n| n.rect())
        .filter(|r| r.width() > r.height())
        .collect();
    assert_eq!(edges.len(), 1, "one bottom edge: {edges:?}");
    edges[0].center().y
}

/// Click each tab the file has, by its label; the bottom tabs' top stays at `top`.
fn assert_top_on_every_tab(h: &mut Harness<'_, ViewerApp>, top: f32, what: &str) {
    let data = h.state().active_doc().expect("a document").data.clone();
    for p in PANELS.iter().filter(|p| p.available(&data)) {
        h.get_by_label(p.title()).click();
        h.run_steps(2);
        settle(h);
        let now = tabs_top(h);
        assert!(
            (now - top).abs() <= 1.0,
            "{what}: on {} the bottom tabs' top is {now}, not {top}",
            p.title()
        );
    }
}

#[test]
fn the_bottom_tabs_keep_their_height_on_every_tab_and_after_a_drag() {
    // An allocator snapshot with OOMs: it opens on Live at cursor, a line until a click,
    // which the panel must not shrink to (and stay 140 points tall).
    let mut h = harness_sized(vec![fixture("snapshot/oom.pickle")], LARGE);
    settle(&mut h);
    // At 1920×1080 the default, 330 points (and the status bar's line under them).
    let top = tabs_top(&h);
    let below = LARGE.y - top;
    assert!(
        (330.0..=370.0).contains(&below),
        "{below} points below the top"
    );
    assert_top_on_every_tab(&mut h, top, "1920×1080");
    // WHEN the first OOM is inspected THEN its verdict card shows whole, nothing
    // scrolled out of the panel.
    h.get_by_label("Live at cursor").click();
    h.run_steps(2);
    h.get_by_label("OOM 1").click();
    h.run_steps(2);
    settle(&mut h);
    assert!((tabs_top(&h) - top).abs() <= 1.0, "the top moved");
    // The card at the cursor comes first: its heading, then the first request and
    // verdict below it.
    let drawn = texts(&h);
    let heading = drawn
        .iter()
        .find(|t| t.text.starts_with("OOM 1: "))
        .expect("the card's heading");
    let first_below = |pred: &dyn Fn(&str) -> bool| {
        drawn
            .iter()
            .filter(|t| t.full.top() > heading.full.top() && pred(&t.text))
            .min_by(|a, b| a.full.top().total_cmp(&b.full.top()))
            .expect("in the card")
    };
    let card = [
        heading,
        first_below(&|t| t.starts_with("requested ")),
        first_below(&|t| t.contains("PYTORCH_CUDA_ALLOC_CONF")),
    ];
    for t in card {
        assert!(
            t.full.top() > top && t.full.bottom() < LARGE.y - 16.0 && !t.cut(),
            "{:?} at {:?} cut",
            t.text,
            t.full
        );
    }
    // WHEN the window is made 1000×700 THEN the default follows it (40 %, below 330).
    h.set_size(SMALL);
    h.run_steps(3);
    let top = tabs_top(&h);
    let below = SMALL.y - top;
    assert!(
        (140.0..=0.4 * SMALL.y + 40.0).contains(&below),
        "{below} at 1000×700"
    );
    // WHEN the user drags the edge 100 points up THEN the tabs keep that height on every
    // tab.
    let x = SMALL.x / 2.0;
    drag(&mut h, pos2(x, top), pos2(x, top - 100.0), Modifiers::NONE);
    h.run_steps(2);
    let dragged = tabs_top(&h);
    assert!(
        (dragged - (top - 100.0)).abs() <= 1.0,
        "dragged to {dragged}"
    );
    assert_top_on_every_tab(&mut h, dragged, "after the drag");
    // (the inspector at the OOM again: a tall card does not push it up)
    h.get_by_label("Live at cursor").click();
    h.run_steps(2);
    settle(&mut h);
    assert!((tabs_top(&h) - dragged).abs() <= 1.0, "the drag kept");
}
