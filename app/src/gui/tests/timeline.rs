//! The timeline's own input, driven like a user would: the wheel, a double-click, a click,
//! and a table row that marks when its op ran.

use egui::{Event, Modifiers, MouseWheelSource, MouseWheelUnit, TouchPhase, vec2};
use egui_kittest::kittest::Queryable;

use super::{harness, primary, sample, settle};

#[test]
fn the_wheel_zooms_around_the_pointer_and_a_double_click_resets() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    let (full, plot) = (doc.view, doc.timeline.last_plot_rect.expect("plot"));
    let at = plot.left_center() + vec2(plot.width() * 0.3, 0.0);
    let t_at = full.t0_ns + 0.3 * full.span_ns();
    // WHEN the wheel turns (content moving down = zoom in) over 30% of the plot
    h.event(Event::PointerMoved(at));
    for _ in 0..5 {
        h.event(Event::MouseWheel {
            unit: MouseWheelUnit::Point,
            delta: vec2(0.0, 100.0),
            phase: TouchPhase::Move,
            source: MouseWheelSource::Unknown,
            modifiers: Modifiers::NONE,
        });
        h.step();
    }
    h.run_steps(10);
    // THEN the view is narrower and the time under the pointer stayed under it
    let v = h.state().active_doc().expect("doc").view;
    assert!(
        v.span_ns() < full.span_ns() * 0.5,
        "{} vs {}",
        v.span_ns(),
        full.span_ns()
    );
    let under = v.t0_ns + 0.3 * v.span_ns();
    assert!(
        (under - t_at).abs() < full.span_ns() * 1e-3,
        "{under} vs {t_at}"
    );
    // WHEN the plot is double-clicked THEN the whole recording is back
    for _ in 0..2 {
        h.event(primary(at, true));
        h.event(primary(at, false));
        h.step();
    }
    h.run_steps(3);
    assert_eq!(h.state().active_doc().expect("doc").view, full);
}

#[test]
fn a_click_inspects_that_instant() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    let (view, plot, start) = (
        doc.view,
        doc.timeline.last_plot_rect.expect("plot"),
        doc.data.rec.meta.start_ns,
    );
    let at = plot.left_center() + vec2(plot.width() * 0.6, 0.0);
    h.event(Event::PointerMoved(at));
    h.event(primary(at, true));
    h.event(primary(at, false));
    h.step();
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    let target = doc.panels.inspect.target.expect("inspected");
    let expected = start + (view.t0_ns + 0.6 * view.span_ns()).round() as i64;
    let ns_per_point = (view.span_ns() / plot.width() as f64) as i64 + 1;
    assert!(
        (target.at_ns - expected).abs() <= ns_per_point,
        "{} vs {expected}",
        target.at_ns
    );
    // The inspection is the collector's, for that instant.
    let result = doc.panels.inspect.result.as_ref().expect("result");
    assert_eq!(result.at_ns, target.at_ns);
    let d = &doc.data.timeline.devices[doc.device as usize];
    assert_eq!(
        result.allocated_bytes,
        d.at(target.at_ns).map(|p| p.allocated_bytes)
    );
}

#[test]
fn a_table_row_click_marks_when_its_op_ran() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    h.get_by_label("aten::mm").click();
    h.run_steps(2);
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.table.highlighted.as_deref(), Some("aten::mm"));
    let spans = doc.panels.table.spans.as_ref().expect("spans");
    let rec = &doc.data.rec;
    let mut expected: Vec<(i64, i64)> = rec
        .ops
        .iter()
        .filter(|o| rec.op_name(o) == "aten::mm")
        .map(|o| (o.start_ns, o.end_ns))
        .collect();
    expected.sort_unstable();
    // torch's table counts 60 calls of aten::mm in this run (samples/…key_averages.json).
    assert_eq!(expected.len(), 60);
    assert_eq!(
        spans.starts_ns,
        expected.iter().map(|s| s.0).collect::<Vec<_>>()
    );
    let (first, last) = (expected[0], expected[expected.len() - 1]);
    assert!(spans.any_in(first.0, first.0));
    assert!(spans.any_in(last.1, last.1 + 1_000));
    assert!(!spans.any_in(last.1 + 1, last.1 + 1_000_000));
    // A second click clears it.
    h.get_by_label("aten::mm").click();
    h.run_steps(2);
    assert!(
        h.state()
            .active_doc()
            .expect("doc")
            .panels
            .table
            .highlighted
            .is_none()
    );
}

#[test]
fn the_device_selector_switches_the_timeline_and_the_inspector() {
    // gen_snapshots.py: four GPUs, training on 0, 1 and 3; device 2's trace is empty.
    let mut h = harness(vec![super::fixture("snapshot/multi_gpu.pickle")]);
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    let names: Vec<String> = doc
        .data
        .shown_devices
        .iter()
        .map(|&d| doc.data.device_name(d))
        .collect();
    assert_eq!(names, ["cuda:0", "cuda:1", "cuda:3"]);
    // WHEN cuda:3 is picked in the menu bar's selector
    h.get_by_label("device").click();
    h.run_steps(2);
    h.get_by_label("cuda:3").click();
    h.run_steps(2);
    settle(&mut h);
    // THEN the timeline and the inspector follow it, at the same instant
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.data.device_name(doc.device), "cuda:3");
    let target = doc.panels.inspect.target.expect("inspected");
    assert_eq!(doc.data.device_name(target.device), "cuda:3");
    let d = &doc.data.timeline.devices[doc.device as usize];
    let result = doc.panels.inspect.result.as_ref().expect("result");
    assert_eq!(
        result.allocated_bytes,
        d.at(target.at_ns).map(|p| p.allocated_bytes)
    );
}
