//! Keyboard pan and zoom: a press moves the view by a fifth of what is visible, at any
//! zoom; a held key moves it smoothly.

use egui::{Event, Key, vec2};

use super::super::doc::TimeView;
use super::super::timeline::KEY_STEP;
use super::{harness, sample, settle};

fn view(h: &egui_kittest::Harness<'_, super::ViewerApp>) -> TimeView {
    h.state().active_doc().expect("doc").view
}

fn close(a: f64, b: f64, span: f64) -> bool {
    (a - b).abs() <= span * 1e-6
}

#[test]
fn a_key_press_moves_the_view_by_a_fifth_of_its_span() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    for (pan_key, sign) in [
        (Key::D, 1.0),
        (Key::ArrowRight, 1.0),
        (Key::A, -1.0),
        (Key::ArrowLeft, -1.0),
    ] {
        let v = view(&h);
        h.key_press(pan_key);
        h.step();
        let after = view(&h);
        let expected = v.t0_ns + sign * 0.2 * v.span_ns();
        assert!(
            close(after.t0_ns, expected, v.span_ns()),
            "{pan_key:?}: {} vs {expected}",
            after.t0_ns
        );
        assert!(close(after.span_ns(), v.span_ns(), v.span_ns()));
    }
    // Zoom about the pointer: the time under it stays under it.
    let plot = h
        .state()
        .active_doc()
        .and_then(|d| d.timeline.last_plot_rect)
        .expect("plot");
    let at = plot.left_center() + vec2(plot.width() * 0.3, 0.0);
    h.event(Event::PointerMoved(at));
    h.step();
    for (zoom_key, factor) in [
        (Key::W, 0.8),
        (Key::ArrowUp, 0.8),
        (Key::S, 1.25),
        (Key::ArrowDown, 1.25),
    ] {
        let v = view(&h);
        let under = v.t0_ns + 0.3 * v.span_ns();
        h.key_press(zoom_key);
        h.step();
        let after = view(&h);
        assert!(
            close(after.span_ns(), v.span_ns() * factor, v.span_ns()),
            "{zoom_key:?}"
        );
        assert!(
            close(after.t0_ns + 0.3 * after.span_ns(), under, v.span_ns()),
            "{zoom_key:?}: {:?} -> {after:?}, under {under}",
            v
        );
    }
    // Deep in, a press still moves by a fifth of what is now visible.
    let before = view(&h);
    for _ in 0..20 {
        h.key_press(Key::W);
        h.step();
    }
    let v = view(&h);
    let expected = before.span_ns() * 0.8f64.powi(20);
    assert!(
        close(v.span_ns(), expected, before.span_ns()),
        "{} vs {expected}",
        v.span_ns()
    );
    h.key_press(Key::D);
    h.step();
    assert!(close(
        view(&h).t0_ns,
        v.t0_ns + KEY_STEP * v.span_ns(),
        v.span_ns()
    ));
}

#[test]
fn a_held_key_pans_smoothly() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let v0 = view(&h);
    // WHEN D is held for a second (60 frames of 1/60 s)
    h.key_down(Key::D);
    let mut t0 = Vec::new();
    for _ in 0..60 {
        h.step();
        t0.push(view(&h).t0_ns);
    }
    h.key_up(Key::D);
    h.step();
    // THEN the first frame took one press' step, then the view waited for the repeat
    // delay, then moved every frame by the same small amount (no jumps of key repeat)
    let first = t0[0] - v0.t0_ns;
    assert!(
        close(first, KEY_STEP * v0.span_ns(), v0.span_ns()),
        "{first}"
    );
    let moves: Vec<f64> = t0.windows(2).map(|w| w[1] - w[0]).collect();
    let moving: Vec<f64> = moves.iter().copied().filter(|m| *m > 0.0).collect();
    assert!(moving.len() >= 40, "{moves:?}");
    let per_frame = 0.9 / 60.0 * v0.span_ns();
    assert!(
        moving
            .iter()
            .all(|m| (m - per_frame).abs() < per_frame * 0.01),
        "{moves:?}"
    );
    // and releasing stops it
    let stopped = view(&h).t0_ns;
    h.run_steps(5);
    assert_eq!(view(&h).t0_ns, stopped);
}

#[test]
fn esc_that_closes_a_menu_keeps_the_selected_range() {
    use egui_kittest::kittest::Queryable;
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    // GIVEN a selected range
    let d = h.state().active_doc().expect("doc");
    let (start, end) = (d.data.rec.meta.start_ns, d.data.rec.meta.end_ns);
    let range = collector::analysis::TimeWindow {
        start_ns: start + (end - start) / 4,
        end_ns: start + (end - start) / 2,
    };
    let ctx = h.ctx.clone();
    h.state_mut()
        .apply(&ctx, super::super::Command::Select(Some(range)));
    settle(&mut h);
    // WHEN a menu is opened and Esc closes it
    h.get_by_label("View").click();
    h.run_steps(2);
    assert!(
        h.query_by_label("Reset timeline view").is_some(),
        "the menu is open"
    );
    h.key_press(Key::Escape);
    h.run_steps(2);
    // THEN the menu is closed and the range is still selected
    assert!(
        h.query_by_label("Reset timeline view").is_none(),
        "the menu closed"
    );
    let d = h.state().active_doc().expect("doc");
    assert_eq!(
        d.selection,
        Some(range),
        "Esc that closed the menu dropped the range"
    );
    // and a second Esc, with nothing open, clears it as before
    h.key_press(Key::Escape);
    h.run_steps(2);
    settle(&mut h);
    assert_eq!(h.state().active_doc().expect("doc").selection, None);
}

#[test]
fn panning_stops_at_the_start_of_the_recording() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let full = view(&h);
    assert!(
        full.t0_ns < 0.0,
        "the whole view has a margin before the start"
    );
    // WHEN the view is panned left from the whole recording, by keys and by a drag
    for _ in 0..5 {
        h.key_press(Key::A);
        h.step();
    }
    let plot = h
        .state()
        .active_doc()
        .and_then(|d| d.timeline.last_plot_rect)
        .expect("plot");
    super::drag(
        &mut h,
        plot.center(),
        plot.center() + vec2(plot.width() * 0.4, 0.0),
        egui::Modifiers::NONE,
    );
    // THEN it shows no more before the start than its margin, and kept its span
    let after = view(&h);
    assert!(
        after.t0_ns >= full.t0_ns - 1.0,
        "panned to {} ns, before the start's margin {}",
        after.t0_ns,
        full.t0_ns
    );
    assert!(close(after.span_ns(), full.span_ns(), full.span_ns()));
    // and zooming out at the start does not go there either
    h.event(egui::Event::PointerMoved(plot.left_center()));
    for _ in 0..5 {
        h.key_press(Key::S);
        h.step();
    }
    let out = view(&h);
    assert!(
        out.t0_ns >= -0.011 * out.span_ns(),
        "zoomed out to {}",
        out.t0_ns
    );
}

#[test]
fn ctrl_f_focuses_the_search_of_the_panel_shown() {
    use egui::Modifiers;
    // GIVEN the sample trace on its op table
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    // WHEN Ctrl+F is pressed and "mm" typed
    h.key_press_modifiers(Modifiers::COMMAND, Key::F);
    h.run_steps(2);
    h.event(egui::Event::Text("mm".into()));
    h.run_steps(2);
    // THEN the op table's filter has it
    assert_eq!(
        h.state().active_doc().expect("doc").panels.table.filter,
        "mm"
    );
    // GIVEN the sample snapshot (no op table) on Live at cursor
    let mut h = harness(vec![super::labels::snapshot_sample()]);
    settle(&mut h);
    h.key_press_modifiers(Modifiers::COMMAND, Key::F);
    h.run_steps(2);
    h.event(egui::Event::Text("softmax".into()));
    h.run_steps(2);
    // THEN the allocation view comes forward with its search focused
    let d = h.state().active_doc().expect("doc");
    assert_eq!(d.tab, super::super::panels::PanelId::ALLOCATIONS);
    assert_eq!(d.panels.allocations.query, "softmax");
}

/// Alt+1 … Alt+9 pick the bottom tabs in the order the tab bar shows them (issue 37: the
/// tabs had no keys); a digit without Alt leaves the tab alone, and Alt+n past the last
/// tab does nothing.
#[test]
fn alt_and_a_digit_pick_the_bottom_tab_of_that_place() {
    use super::super::panels::{PANELS, PanelId};
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let tab = |h: &egui_kittest::Harness<'_, super::ViewerApp>| -> PanelId {
        h.state().active_doc().expect("doc").tab
    };
    let shown: Vec<PanelId> = {
        let doc = h.state().active_doc().expect("doc");
        (PANELS.iter())
            .filter(|p| p.available(&doc.data))
            .map(|p| p.id())
            .collect()
    };
    // The sample's tabs: Ops, Live at cursor, Categories, Allocations, Flame, History…
    assert!(shown.len() >= 5, "{shown:?}");
    assert_eq!(tab(&h), PanelId::OPS);
    let digits = [
        Key::Num1,
        Key::Num2,
        Key::Num3,
        Key::Num4,
        Key::Num5,
        Key::Num6,
        Key::Num7,
        Key::Num8,
        Key::Num9,
    ];
    for (n, &id) in shown.iter().enumerate().rev() {
        h.key_press_modifiers(egui::Modifiers::ALT, digits[n]);
        h.run_steps(2);
        assert_eq!(tab(&h), id, "Alt+{}", n + 1);
    }
    h.key_press(Key::Num3);
    h.run_steps(2);
    assert_eq!(tab(&h), shown[0], "3 without Alt");
    if let Some(&past) = digits.get(shown.len()) {
        h.key_press_modifiers(egui::Modifiers::ALT, past);
        h.run_steps(2);
        assert_eq!(tab(&h), shown[0], "Alt past the last tab");
    }
    h.key_press_modifiers(egui::Modifiers::ALT, Key::Num2);
    h.run_steps(2);
    assert_eq!(tab(&h), shown[1]);
}
