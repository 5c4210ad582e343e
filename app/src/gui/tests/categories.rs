//! The memory categories in the viewer, driven like a user would: the timeline's "by
//! category" toggle stacks the allocated memory (its top is the allocated curve, point for
//! point), and the Categories panel shows the composition at the peak — the summary's
//! `composition_at_peak`, as `summary --format json` prints it — and, after a click, the
//! collector's categories series at that instant.

use collector::analysis::categories::{Category, categories_over_time};
use collector::units::bytes_iec;
use egui::{Event, vec2};
use egui_kittest::kittest::Queryable;

use super::super::ViewerApp;
use super::super::categories::composition_at;
use super::super::panels::PanelId;
use super::{fixture, harness, primary, repo, settle};

/// An MLP trained with Adam on CPU (torch's memory profiler's truth beside it).
const TRACE: &str = "categories/c03_mlp_adam.json.gz";

#[test]
fn the_toggle_stacks_the_allocated_memory_by_category() {
    let mut h = harness(vec![fixture(TRACE)]);
    settle(&mut h);
    assert!(
        !h.state()
            .active_doc()
            .expect("doc")
            .timeline
            .show_categories
    );
    // WHEN the timeline's toggle is clicked
    h.get_by_label("by category").click();
    h.run_steps(3);
    let doc = h.state().active_doc().expect("doc");
    assert!(doc.timeline.show_categories);
    let curves = doc.data.curves.get(doc.device as usize).expect("curves");
    let stacked = curves.categories.as_ref().expect("categories");
    // THEN the legend names each stacked category
    for layer in &stacked.layers {
        assert!(
            h.query_all_by_label(layer.category.as_str()).count() >= 1,
            "{} in the legend",
            layer.category.as_str()
        );
    }
    // and the stack's top is the allocated curve at every point of the series
    let top = &stacked.layers.last().expect("a layer").top;
    let allocated = curves.allocated.as_ref().expect("allocated");
    for &t in &stacked.series.times_ns {
        assert_eq!(top.value_at(t), allocated.value_at(t), "at {t} ns");
    }
    // including the peak, which the summary reports
    let peak = doc.peak().expect("a peak");
    assert_eq!(top.value_at(peak.0), Some(peak.1));
    assert_eq!(top.max(), Some(peak.1));
}

#[test]
fn the_categories_panel_shows_the_composition_at_the_peak_and_at_the_cursor() {
    let mut h = harness(vec![fixture(TRACE)]);
    settle(&mut h);
    h.get_by_label("Categories").click();
    h.run_steps(3);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.tab, PanelId::CATEGORIES);
    // Before any click: the summary's composition at the peak, row by row.
    let id = doc.data.device_id(doc.device).expect("device");
    let summary = doc.data.summary.devices.iter().find(|d| d.device == id);
    let peak = summary
        .and_then(|d| d.composition_at_peak.clone())
        .expect("a composition at the peak");
    let shown = composition_at(&doc.data, doc.device, None).expect("shown");
    assert!(shown.at_peak);
    assert_eq!(
        (shown.bytes, shown.total_bytes),
        (peak.bytes, peak.total_bytes)
    );
    assert_eq!(shown.bytes.iter().sum::<i64>(), peak.total_bytes);
    for (category, bytes) in peak.entries() {
        assert!(
            h.query_all_by_label(category.as_str()).count() >= 1,
            "{}",
            category.as_str()
        );
        let text = bytes_iec(bytes);
        assert!(h.query_all_by_label(&text).count() >= 1, "{text}");
    }
    h.get_by_label_contains("at the peak");
    // WHEN the timeline is clicked at 30% of its width
    let (plot, view, start) = (
        doc.timeline.last_plot_rect.expect("plot"),
        doc.view,
        doc.data.rec.meta.start_ns,
    );
    let at = plot.left_center() + vec2(plot.width() * 0.3, 0.0);
    h.event(Event::PointerMoved(at));
    h.event(primary(at, true));
    h.event(primary(at, false));
    h.step();
    settle(&mut h);
    // THEN the panel stays and shows the series at that instant, from the collector
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.tab, PanelId::CATEGORIES);
    let t = doc.panels.inspect.target.expect("inspected").at_ns;
    let expected_t = start + (view.t0_ns + 0.3 * view.span_ns()).round() as i64;
    assert!((t - expected_t).abs() <= (view.span_ns() / plot.width() as f64) as i64 + 1);
    let d = doc
        .data
        .timeline
        .devices
        .iter()
        .find(|d| d.device == doc.device)
        .expect("timeline");
    let series = categories_over_time(&doc.data.rec, &doc.data.timeline, d);
    let i = series.times_ns.partition_point(|&x| x <= t) - 1;
    let shown = composition_at(&doc.data, doc.device, Some(t)).expect("shown");
    assert!(!shown.at_peak);
    assert_eq!(shown.at_ns, series.times_ns[i]);
    assert_eq!(shown.bytes, series.bytes[i]);
    let allocated = doc.data.curves[doc.device as usize]
        .allocated
        .as_ref()
        .and_then(|a| a.value_at(t));
    assert_eq!(Some(shown.total_bytes), allocated, "sums to allocated then");
    assert_ne!(shown.bytes, peak.bytes, "30% in is not the peak");
    for (category, bytes) in shown.entries() {
        let text = bytes_iec(bytes);
        assert!(
            h.query_all_by_label(&text).count() >= 1,
            "{category:?} {text}"
        );
    }
}

/// The Categories panel on `path` at the peak, after the panel is opened.
fn categories_panel(path: std::path::PathBuf) -> egui_kittest::Harness<'static, ViewerApp> {
    let mut h = harness(vec![path]);
    settle(&mut h);
    h.get_by_label("Categories").click();
    h.run_steps(3);
    h
}

#[test]
fn the_panel_marks_inferred_bytes_and_weights_a_cpu_trace_never_counted() {
    // A snapshot whose weights were made before recording: inferred, and marked so.
    let h = categories_panel(repo().join("samples/cs336-transformer-snapshot.pickle"));
    let doc = h.state().active_doc().expect("doc");
    let shown = composition_at(&doc.data, doc.device, None).expect("shown");
    let weights = shown.bytes[Category::Parameter.index()];
    assert!(weights > 1 << 29, "{weights}");
    assert_eq!(shown.inferred[Category::Parameter.index()], weights);
    assert_eq!(h.query_all_by_label("inferred").count(), 1);
    // A CPU trace of a model built before profiling: its weights appear nowhere, and the
    // panel says how much at least (what the gradients and optimizer state imply).
    let h = categories_panel(fixture(TRACE));
    let doc = h.state().active_doc().expect("doc");
    let shown = composition_at(&doc.data, doc.device, None).expect("shown");
    let implied = shown.bytes[Category::Gradient.index()]
        .max(shown.bytes[Category::OptimizerState.index()] / 2);
    assert!(implied > 0);
    let says = format!(
        "at least {} (from the gradients and state)",
        bytes_iec(implied)
    );
    h.get_by_label_contains(&says);
    h.get_by_label_contains("made before profiling began");
}

#[test]
fn the_panel_says_what_a_gpu_trace_s_memory_from_before_it_likely_is() {
    // GIVEN Qwen1.5-0.5B's inference on an H100, its weights loaded before profiling
    let dir = repo().join("../shared/traces/real/tracelens-h100-qwen-0.5b");
    let path = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with(".json.gz"))
        .expect("trace");
    let h = categories_panel(path);
    let doc = h.state().active_doc().expect("doc");
    let shown = composition_at(&doc.data, doc.device, None).expect("shown");
    // THEN the panel reads the peak's before_trace as the weights, with the bytes there at
    // the first event (the summary's words)
    let reading = shown.before_trace.expect("a reading");
    assert_eq!(reading.at_start_bytes, 984_742_400);
    h.get_by_label_contains("before_trace is likely the model's weights and buffers");
    h.get_by_label_contains(&format!("{} at the first event", bytes_iec(984_742_400)));
}
