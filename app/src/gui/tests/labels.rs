//! Issue 37's labels that misled or could not be read, each on a real file: the live
//! groups' labels at 1000×700, Compare's two files of one name and its per-op units,
//! event-order snapshots, ops a snapshot has not.

use egui::Shape;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

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
    let groups = d
        .panels
        .inspect
        .result
        .as_ref()
        .expect("inspected")
        .groups
        .clone();
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

fn bert(dir: &str) -> std::path::PathBuf {
    repo()
        .join("../shared/traces/real")
        .join(dir)
        .join("gaunernst_bert-small-uncased__1016001.json.gz")
}

#[test]
fn two_files_of_one_name_are_told_apart_by_their_directories() {
    // GIVEN the H100 and MI300 runs of bert-small: one file name, two directories
    let (a, b) = (
        bert("tracelens-h100-bert-small"),
        bert("tracelens-mi300-bert-small"),
    );
    let h = super::compare::comparing(&a, &b);
    let name = "gaunernst_bert-small-uncased__1016001.json.gz";
    let a_label = format!("tracelens-h100-bert-small/{name}");
    let b_label = format!("tracelens-mi300-bert-small/{name}");
    // THEN the tabs name each by its directory, and so does Compare's A = … · B = … line
    let labels: Vec<&str> = h.state().docs().iter().map(|d| d.label.as_str()).collect();
    assert_eq!(labels.len(), 2);
    assert!(labels.contains(&a_label.as_str()) && labels.contains(&b_label.as_str()));
    h.get_by_label(&a_label);
    h.get_by_label(&b_label);
    h.get_by_label(&format!("A = {a_label} · B = {b_label}"));
    // and nothing names the bare file alone
    let drawn = galleys(&h);
    assert!(!drawn.iter().any(|(t, _)| t == name), "a bare {name}");
}

#[test]
fn the_per_op_comparison_shows_a_b_and_the_change_in_one_unit() {
    use super::super::panels::compare_table::{OpDiffColumn, op_units};
    let (a, b) = (
        bert("tracelens-h100-bert-small"),
        bert("tracelens-mi300-bert-small"),
    );
    let d = super::compare::diff_of(&a, &b);
    let device = d.sorted_by == "self_device_memory_usage";
    assert!(device, "two GPU runs compare device memory");
    // The largest magnitude of A, B and B − A, in torch's units, names the one unit.
    let largest = d
        .ops
        .iter()
        .flat_map(|o| {
            let s = &o.self_device_memory_usage;
            [s.a, s.b, s.delta]
        })
        .flatten()
        .map(i64::unsigned_abs)
        .max()
        .expect("values");
    let (_, unit) = super::compare::torch_unit(largest);
    let h = super::compare::comparing(&a, &b);
    // The headers as drawn: "Self CUDA Mem A (GB)", "B (GB)", "B − A (GB)".
    for title in [
        format!("Self CUDA Mem A ({unit})"),
        format!("B ({unit})"),
        format!("B − A ({unit})"),
    ] {
        assert!(
            h.query_by_label(&title).is_some(),
            "no header {title:?}: {:?}",
            galleys(&h)
        );
    }
    // A small negative beside GB-sized values rounds to 0.00, never -0.00.
    assert!(
        !galleys(&h).iter().any(|(t, _)| t == "-0.00"),
        "a -0.00 cell"
    );
    let units = op_units(&d, device);
    let at = |c: OpDiffColumn| {
        OpDiffColumn::ALL
            .iter()
            .position(|&x| x == c)
            .expect("a column")
    };
    assert_eq!(units[at(OpDiffColumn::SelfA)].name, unit);
    assert_eq!(units[at(OpDiffColumn::SelfB)].name, unit);
    assert_eq!(units[at(OpDiffColumn::SelfDelta)].name, unit);
}

#[test]
fn an_event_order_snapshot_is_labelled_in_events_not_ns() {
    // GIVEN a torch 2.0–2.1 snapshot: trace entries without time_us
    let old = super::fixture("snapshot/old.pickle");
    let rec = collector::load(&old, collector::LoadOptions::default()).expect("old");
    assert!(
        rec.meta.event_order,
        "the collector marks its times as event order"
    );
    let t = collector::Timeline::build(&rec);
    let s = collector::analysis::summarize(&rec, &t);
    let dev = s
        .devices
        .iter()
        .find(|d| d.peak_allocated_at_ns.is_some())
        .expect("a peak");
    let at = dev.peak_allocated_at_ns.expect("when") - rec.meta.start_ns;
    let mut h = super::harness(vec![old]);
    settle(&mut h);
    // THEN the summary strip and the time axis count events; nothing reads as ns
    let drawn = galleys(&h);
    let peak = format!(
        "{} at event {at}",
        collector::units::bytes_iec(dev.peak_allocated_bytes.expect("bytes"))
    );
    assert!(
        drawn.iter().any(|(t, _)| t.starts_with(&peak)),
        "no {peak:?} in {drawn:?}"
    );
    let ticks = drawn
        .iter()
        .filter(|(t, _)| t.starts_with("event "))
        .count();
    assert!(ticks >= 3, "{ticks} event ticks: {drawn:?}");
    let ns: Vec<&String> = drawn
        .iter()
        .map(|(t, _)| t)
        .filter(|t| t.ends_with(" ns") || t.contains(" ns ") || t.contains(" ns\n"))
        .collect();
    assert!(ns.is_empty(), "labelled in ns: {ns:?}");
}

/// A harness on `path` showing the bottom tab `tab`.
fn on_tab(path: std::path::PathBuf, tab: &str) -> Harness<'static, ViewerApp> {
    let mut h = super::harness(vec![path]);
    settle(&mut h);
    h.get_by_label(tab).click();
    h.run_steps(3);
    settle(&mut h);
    h
}

#[test]
fn a_snapshot_without_ops_shows_no_op_rows_nor_an_ops_table() {
    // GIVEN the sample snapshot (stacks, no ops), its largest allocation selected
    let mut h = on_tab(snapshot_sample(), "Allocations");
    let d = h.state().active_doc().expect("doc");
    assert!(d.data.rec.ops.is_empty());
    let allocations = &d.data.timeline.devices[d.device as usize].allocations;
    let largest = (0..allocations.len())
        .max_by_key(|&i| allocations[i].bytes)
        .expect("allocations");
    h.state_mut().docs_mut()[0].panels.allocations.selected = Some(largest);
    h.run_steps(3);
    // THEN its details and readout name no op: no "(outside any op)" on every band
    let drawn = galleys(&h);
    assert!(drawn.iter().any(|(t, _)| t == "lifetime"), "details shown");
    for bad in ["(outside any op)", "allocated by", "freed by"] {
        assert!(!drawn.iter().any(|(t, _)| t == bad), "{bad:?} shown");
    }
    // and the bottom tabs offer no Ops table (its one "[memory]" row held everything)
    assert!(
        h.query_by_label("Ops").is_none(),
        "an Ops tab for a snapshot"
    );
    assert!(!drawn.iter().any(|(t, _)| t == "[memory]"));
    // A trace keeps its Ops tab.
    let h = on_tab(super::sample(), "Ops");
    assert!(h.query_by_label("Ops").is_some());
}

#[test]
fn a_trace_without_stacks_is_not_coloured_by_stack() {
    use collector::analysis::allocations::ColorBy;
    // GIVEN a GPU trace recorded without stacks
    let h100 = bert("tracelens-h100-bert-small");
    let h = on_tab(h100, "Allocations");
    let d = h.state().active_doc().expect("doc");
    assert!(d.data.rec.stacks.is_empty(), "the trace has no stacks");
    // THEN its bands are coloured by op (one colour by stack), and "stack" is greyed
    assert_eq!(d.panels.allocations.color_by, ColorBy::Op);
    let stack = h.get_by_label("stack");
    assert!(stack.accesskit_node().is_disabled(), "'stack' offered");
}

#[test]
fn no_bands_drawn_says_why_and_what_shows_them() {
    // GIVEN the sample snapshot's allocation view zoomed to 200 ns before the first event
    let mut h = on_tab(snapshot_sample(), "Allocations");
    let doc = &mut h.state_mut().docs_mut()[0];
    doc.view.t0_ns = -400.0;
    doc.view.t1_ns = -200.0;
    h.run_steps(4);
    let d = h.state().active_doc().expect("doc");
    assert_eq!(d.panels.allocations.last_frame.drawn, 0);
    // THEN the count comes with a hint, not a bare "0 bands drawn"
    let drawn = galleys(&h);
    assert!(
        drawn
            .iter()
            .any(|(t, _)| t.starts_with("0 bands drawn: ") && t.contains("zoom in")),
        "{drawn:?}"
    );
}

#[test]
fn hover_lists_every_level_of_the_op_stack() {
    // GIVEN the sample trace, the pointer on the plot at its allocated peak
    let mut h = super::harness(vec![super::sample()]);
    settle(&mut h);
    let d = h.state().active_doc().expect("doc");
    let (peak, _) = d.peak().expect("a peak");
    let plot = d.timeline.last_plot_rect.expect("drawn");
    let frac = (d.rel_ns(peak) - d.view.t0_ns) / d.view.span_ns();
    let x = plot.left() + frac as f32 * plot.width();
    let at = egui::pos2(x, plot.center().y);
    // Independently: the spans enclosing the instant under the pointer on its thread.
    let t_ns =
        d.abs_ns(d.view.t0_ns + ((at.x - plot.left()) / plot.width()) as f64 * d.view.span_ns());
    let rec = &d.data.rec;
    let nested: Vec<String> = d
        .data
        .timeline
        .ops
        .nested_at(t_ns)
        .into_iter()
        .map(|o| {
            rec.op_name(rec.ops.get(o as usize).expect("an op"))
                .to_owned()
        })
        .collect();
    assert!(
        nested.len() >= 3,
        "{nested:?}: the peak is inside nested ops"
    );
    h.event(egui::Event::PointerMoved(at));
    h.run_steps(3);
    // THEN the readout names every level, innermost first, each under the one it is in
    let drawn = galleys(&h);
    let shown = |want: &str| drawn.iter().any(|(t, _)| t.trim_start() == want);
    let innermost = super::super::axis::ellipsize(&nested[0], 48);
    assert!(shown(&format!("op  {innermost}")), "{innermost}: {drawn:?}");
    for op in nested.iter().skip(1).take(7) {
        let line = format!("in {}", super::super::axis::ellipsize(op, 44));
        assert!(shown(&line), "{line:?} not in the readout");
    }
}
