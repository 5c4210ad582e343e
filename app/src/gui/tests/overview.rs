//! The allocation view's overview on a real allocator snapshot (CS336, bcrafton): the
//! reserved memory drawn over the bands is the collector's reserved curve (its highest
//! point in view is the summary's peak reserved), and the minimap's brush sets the time
//! view the timeline shares.

use collector::analysis::TimeWindow;
use egui::{Modifiers, Pos2};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use super::super::ViewerApp;
use super::{drag, harness, repo, settle};

fn snapshot() -> Harness<'static, ViewerApp> {
    let path = repo().join("../shared/traces/real/snapshot-cs336-bcrafton/memory_snapshot.pickle");
    let mut h = harness(vec![path]);
    settle(&mut h);
    h.get_by_label("Allocations").click();
    h.run_steps(3);
    h
}

#[test]
fn the_reserved_memory_is_drawn_over_the_bands_up_to_the_peak_reserved() {
    // GIVEN a real snapshot whose segments' history says what was reserved when
    let mut h = snapshot();
    let doc = h.state().active_doc().expect("doc");
    let id = doc.data.device_id(doc.device).expect("device");
    let summary = (doc.data.summary.devices.iter()).find(|d| d.device == id);
    let peak_reserved = summary
        .and_then(|d| d.peak_reserved_bytes)
        .expect("reserved");
    let peak_allocated = summary
        .and_then(|d| d.peak_allocated_bytes)
        .expect("allocated");
    assert!(
        peak_reserved > peak_allocated,
        "{peak_reserved} {peak_allocated}"
    );
    // THEN the whole run's view draws reserved up to its peak, on a scale that holds it
    let state = &doc.panels.allocations;
    assert_eq!(state.last_frame.reserved_max, Some(peak_reserved));
    let frame = state.plot.expect("bands drawn");
    assert!(
        frame.y1 >= peak_reserved as f64,
        "{} < {peak_reserved}",
        frame.y1
    );
    // WHEN the "show reserved" box is cleared THEN only the bands remain, on their own scale
    h.get_by_label("show reserved").click();
    h.run_steps(3);
    let state = &h.state().active_doc().expect("doc").panels.allocations;
    assert_eq!(state.last_frame.reserved_max, None);
    let frame = state.plot.expect("bands drawn");
    assert!(frame.y1 < peak_reserved as f64, "{}", frame.y1);
}

/// The view's edges as shares of the run.
fn view_shares(h: &Harness<'_, ViewerApp>) -> (f64, f64) {
    let doc = h.state().active_doc().expect("doc");
    let d = doc.data.duration_ns() as f64;
    (doc.view.t0_ns / d, doc.view.t1_ns / d)
}

#[test]
fn dragging_across_the_minimap_shows_that_range_and_dragging_the_brush_moves_it() {
    // GIVEN the allocation view, the whole run in view
    let mut h = snapshot();
    let doc = h.state().active_doc().expect("doc");
    let map = doc.panels.allocations.minimap.expect("the minimap drawn");
    let d = doc.data.duration_ns() as f64;
    let y = map.rect.center().y;
    let at = |share: f64| Pos2::new(map.x(share * d), y);
    // WHEN a brush is drawn across a quarter to a half of the run
    drag(&mut h, at(0.25), at(0.5), Modifiers::NONE);
    // THEN that is the view, to a point's time of the minimap
    let point = (map.t1_ns - map.t0_ns) / map.rect.width() as f64 / d;
    let (a, b) = view_shares(&h);
    assert!(
        (a - 0.25).abs() <= point && (b - 0.5).abs() <= point,
        "{a} {b}"
    );
    // and the timeline's table follows no range: the brush moves the view, not a selection
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.selection, None::<TimeWindow>);
    // WHEN the brush is dragged by a tenth of the run THEN the view moves with it, as wide
    drag(&mut h, at(0.375), at(0.475), Modifiers::NONE);
    let (a2, b2) = view_shares(&h);
    assert!((a2 - 0.35).abs() <= 2.0 * point, "{a2}");
    assert!(
        ((b2 - a2) - (b - a)).abs() <= 1e-9,
        "{} vs {}",
        b2 - a2,
        b - a
    );
    // WHEN the minimap is clicked at 80 % THEN the view is centred there
    let p = at(0.8);
    h.event(egui::Event::PointerMoved(p));
    h.event(super::primary(p, true));
    h.step();
    h.event(super::primary(p, false));
    h.run_steps(2);
    let (a3, b3) = view_shares(&h);
    assert!(((a3 + b3) / 2.0 - 0.8).abs() <= point, "{a3} {b3}");
}
