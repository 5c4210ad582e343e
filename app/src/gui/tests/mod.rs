//! The viewer driven through egui_kittest: real files, real clicks and drags, no display
//! and no GPU. Every number the tests expect comes from an independent source — torch's
//! own key_averages() output, the snapshot generator's known layout — or, where the GUI's
//! job is to show a collector analysis, from calling that analysis directly.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use collector::analysis::{TimeWindow, key_averages, key_averages_with_net};
use collector::{LoadOptions, Timeline};
use egui::{Event, Modifiers, PointerButton, Pos2, pos2};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use super::ViewerApp;
use super::panels::OpColumn;
use super::panels::PanelId;

mod advice;
mod allocations;
mod cached;
mod capacity;
mod categories;
mod compare;
mod consistency;
mod export;
mod files;
mod heights;
mod history;
mod keys;
mod labels;
mod layout;
mod loading;
mod memviz;
mod net;
mod op_lanes;
mod overview;
mod ranks;
mod scroll;
mod simulate;
mod timeline;

pub(super) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub(super) fn sample() -> PathBuf {
    repo().join("samples/transformer-lm-train-cpu.json.gz")
}

pub(super) fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures").join(name)
}

pub(super) fn harness(paths: Vec<PathBuf>) -> Harness<'static, ViewerApp> {
    let ctx = egui::Context::default();
    let app = ViewerApp::new(&ctx, None, paths, LoadOptions::default());
    Harness::builder()
        .with_size([1400.0, 900.0])
        .with_step_dt(1.0 / 60.0)
        .with_max_steps(100_000)
        .build_ui_state(|ui, app: &mut ViewerApp| app.show(ui), app)
}

/// Step until nothing is loading or computing (the loader and worker are real threads).
pub(super) fn settle(h: &mut Harness<'_, ViewerApp>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        h.step();
        if !h.state().busy() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the viewer stayed busy for 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..3 {
        h.step();
    }
}

/// A press (or release) of the primary button at `pos`.
pub(super) fn primary(pos: Pos2, pressed: bool) -> Event {
    primary_with(pos, pressed, Modifiers::NONE)
}

/// A click of the primary button at `pos` (the pointer moved there first), then three
/// frames for the viewer to answer it.
pub(super) fn click_at(h: &mut Harness<'_, ViewerApp>, pos: Pos2) {
    h.event(Event::PointerMoved(pos));
    h.event(primary(pos, true));
    h.event(primary(pos, false));
    h.run_steps(3);
}

/// A press (or release) of the primary button at `pos` with modifier keys held.
pub(super) fn primary_with(pos: Pos2, pressed: bool, modifiers: Modifiers) -> Event {
    Event::PointerButton {
        pos,
        button: PointerButton::Primary,
        pressed,
        modifiers,
    }
}

fn ordered_names(app: &ViewerApp) -> Vec<String> {
    let doc = app.active_doc().expect("a document");
    doc.panels
        .table
        .order
        .iter()
        .map(|&i| doc.panels.table.rows[i].name.clone())
        .collect()
}

#[derive(serde::Deserialize)]
struct TorchTable {
    key_averages: Vec<TorchRow>,
}

#[derive(serde::Deserialize)]
struct TorchRow {
    name: String,
    calls: u64,
    self_cpu_memory_usage: i64,
}

#[test]
fn a_sample_loads_and_a_header_click_sorts_the_table() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let torch: TorchTable = serde_json::from_slice(
        &std::fs::read(repo().join("samples/transformer-lm-train-cpu.key_averages.json"))
            .expect("truth"),
    )
    .expect("torch's table");
    // A CPU run: the table starts sorted by Self CPU Mem, largest first, as torch prints it.
    let mut by_self_cpu: Vec<&TorchRow> = torch.key_averages.iter().collect();
    by_self_cpu.sort_by(|a, b| {
        b.self_cpu_memory_usage
            .cmp(&a.self_cpu_memory_usage)
            .then(a.name.cmp(&b.name))
    });
    let names = ordered_names(h.state());
    assert_eq!(names.len(), torch.key_averages.len());
    assert_eq!(
        names[..5],
        by_self_cpu[..5]
            .iter()
            .map(|r| r.name.clone())
            .collect::<Vec<_>>()[..]
    );
    // The row's cells show torch's numbers in torch's format.
    let top = by_self_cpu[0];
    let cell = collector::units::torch_memory(top.self_cpu_memory_usage);
    assert!(
        h.query_all_by_label(&cell).count() >= 1,
        "no cell shows {cell}"
    );

    // WHEN the "# of Calls" header is clicked
    h.get_by_label("# of Calls").click();
    h.run_steps(3);
    // THEN the rows follow torch's call counts, most calls first
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.table.sort, OpColumn::Calls);
    let calls = |name: &str| {
        torch
            .key_averages
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.calls)
    };
    let shown: Vec<u64> = ordered_names(h.state())
        .iter()
        .map(|n| calls(n).expect("a torch row"))
        .collect();
    assert!(shown.windows(2).all(|w| w[0] >= w[1]), "{shown:?}");
    assert_eq!(
        shown[0],
        torch
            .key_averages
            .iter()
            .map(|r| r.calls)
            .max()
            .expect("rows")
    );
    // and a second click reverses it
    h.get_by_label("# of Calls").click();
    h.run_steps(3);
    let shown: Vec<u64> = ordered_names(h.state())
        .iter()
        .map(|n| calls(n).expect("row"))
        .collect();
    assert!(shown.windows(2).all(|w| w[0] <= w[1]), "{shown:?}");
}

/// Press at `from`, drag to `to` and release, holding `modifiers`.
pub(super) fn drag(h: &mut Harness<'_, ViewerApp>, from: Pos2, to: Pos2, modifiers: Modifiers) {
    h.event(Event::ModifiersChanged(modifiers));
    h.event(Event::PointerMoved(from));
    h.event(primary_with(from, true, modifiers));
    h.step();
    for i in 1..=10 {
        let p = from + (to - from) * (i as f32 / 10.0);
        h.event(Event::PointerMoved(p));
        h.step();
    }
    h.event(primary_with(to, false, modifiers));
    h.step();
    h.event(Event::ModifiersChanged(Modifiers::NONE));
    h.step();
}

/// Shift-drag across the second quarter of the plot (a range selection), at its middle
/// height; returns the plot's rect as drawn before the drag.
pub(super) fn select_second_quarter(h: &mut Harness<'_, ViewerApp>) -> egui::Rect {
    let plot = (h.state().active_doc())
        .and_then(|d| d.timeline.last_plot_rect)
        .expect("plot drawn");
    let y = plot.center().y;
    let (x0, x1) = (
        plot.left() + plot.width() * 0.25,
        plot.left() + plot.width() * 0.5,
    );
    drag(h, pos2(x0, y), pos2(x1, y), Modifiers::SHIFT);
    settle(h);
    plot
}

/// gen_snapshots.py's OOM snapshot, its first OOM inspected from the summary strip, with the
/// Segments panel open.
pub(super) fn oom_snapshot_segments() -> Harness<'static, ViewerApp> {
    let mut h = harness(vec![fixture("snapshot/oom.pickle")]);
    settle(&mut h);
    h.get_by_label_contains("2 × · first: fragmentation")
        .click();
    h.run_steps(2);
    settle(&mut h);
    h.get_by_label("Segments").click();
    h.run_steps(3);
    h
}

#[test]
fn selecting_a_range_recomputes_the_table_for_it() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let before = h
        .state()
        .active_doc()
        .expect("doc")
        .panels
        .table
        .rows
        .clone();
    let (view, start_ns) = {
        let d = h.state().active_doc().expect("doc");
        (d.view, d.data.rec.meta.start_ns)
    };
    // WHEN the second quarter of the plot is shift-dragged
    let plot = select_second_quarter(&mut h);
    let (x0, x1) = (
        plot.left() + plot.width() * 0.25,
        plot.left() + plot.width() * 0.5,
    );
    // THEN the table covers that range (to the ns the pointer positions map to)
    let doc = h.state().active_doc().expect("doc");
    let w = doc.panels.table.window.expect("a range");
    let t_at = |x: f32| {
        start_ns
            + (view.t0_ns + (x - plot.left()) as f64 / plot.width() as f64 * view.span_ns()).round()
                as i64
    };
    let tolerance = (view.span_ns() / plot.width() as f64) as i64 + 1;
    assert!(
        (w.start_ns - t_at(x0)).abs() <= tolerance,
        "{} vs {}",
        w.start_ns,
        t_at(x0)
    );
    assert!((w.end_ns - t_at(x1)).abs() <= tolerance);
    // and its rows are key_averages for that window, not the whole run's
    let expected = key_averages_with_net(&doc.data.rec, Some(w));
    assert_eq!(*doc.panels.table.rows, expected);
    assert_ne!(*doc.panels.table.rows, *before);
    // and it says which range it covers
    h.get_by_label_contains("Range ");
    // Clearing the range brings the whole-run table back.
    h.get_by_label("× whole recording").click();
    h.run_steps(3);
    let doc = h.state().active_doc().expect("doc");
    assert!(doc.panels.table.window.is_none());
    assert_eq!(*doc.panels.table.rows, *before);
}

#[test]
fn the_inspector_shows_what_was_live_at_the_peak() {
    let t2 = repo().join("../shared/traces/torch-cpu/t2.json.gz");
    let mut h = harness(vec![t2.clone()]);
    settle(&mut h);
    h.get_by_label("Live at cursor").click();
    h.run_steps(2);
    settle(&mut h);
    // Independently: load the file again and ask the collector.
    let rec = collector::load(&t2, LoadOptions::default()).expect("t2");
    let timeline = Timeline::build(&rec);
    let summary = collector::analysis::summarize(&rec, &timeline);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.tab, PanelId::INSPECTOR);
    let peak = summary
        .devices
        .iter()
        .find(|d| Some(d.device) == doc.data.device_id(doc.device))
        .expect("device");
    let result = doc.panels.inspect.result.as_ref().expect("inspected");
    assert_eq!(result.allocated_bytes, peak.peak_allocated_bytes);
    assert_eq!(Some(result.at_ns), peak.peak_allocated_at_ns);
    let by = collector::analysis::live::GroupBy::Site;
    let groups =
        collector::analysis::live::live_at(&rec, &timeline, doc.device, result.at_ns, by).groups;
    assert_eq!(result.groups, groups);
    assert_eq!(
        Some(groups.iter().map(|g| g.bytes).sum::<i64>()),
        peak.peak_allocated_bytes
    );
    // The window shows them: the heading, the allocated bytes, the largest group.
    h.get_by_label_contains("(the peak)");
    h.get_by_label(&collector::units::bytes_iec(
        peak.peak_allocated_bytes.expect("bytes"),
    ));
    let first = groups.first().expect("something was live at the peak");
    h.get_by_label_contains(&super::axis::ellipsize(&first.site, 60));
}

#[test]
fn the_segment_view_and_oom_verdicts_of_a_snapshot() {
    // The summary strip names the OOMs; its link inspects the first one.
    let mut h = oom_snapshot_segments();
    // gen_snapshots.py: ten 18 MiB tensors, each in its own 18 MiB segment, every other
    // one freed before the 60 MiB request: five full segments and five empty ones.
    let doc = h.state().active_doc().expect("doc");
    let layout = doc
        .panels
        .inspect
        .result
        .as_ref()
        .and_then(|r| r.layout.as_ref())
        .expect("segment geometry");
    assert_eq!(layout.len(), 10);
    assert!(layout.iter().all(|s| s.size_bytes == 18 << 20));
    assert_eq!(
        layout.iter().filter(|s| s.free_bytes() == 18 << 20).count(),
        5
    );
    assert_eq!(layout.iter().filter(|s| s.free_bytes() == 0).count(), 5);
    h.get_by_label_contains("10 segments · 180.00 MiB reserved · 90.00 MiB free in 5 blocks · largest free block 18.00 MiB");
    // The inspector shows the verdict sentence with the expandable-segments hint: the
    // allocator simulation does not reproduce this made-up OOM (a real allocator would
    // have released the five empty segments first), so it keeps the hint and says so.
    h.get_by_label("Live at cursor").click();
    h.run_steps(3);
    h.get_by_label_contains("try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the allocator simulation does not reproduce");
}

#[test]
fn two_files_compare_per_op() {
    let (a, b) = (
        fixture("torch-cpu/k01_mlp_s1.json.gz"),
        fixture("torch-cpu/k02_mlp_stack.json.gz"),
    );
    let mut h = harness(vec![a.clone(), b.clone()]);
    settle(&mut h);
    assert_eq!(h.state().docs().len(), 2);
    // A first: a tab is added when its load ends, and the two loads run in parallel.
    h.state_mut().docs_mut().sort_by_key(|d| d.data.path != a);
    let (a_id, b_id) = (h.state().docs()[0].id, h.state().docs()[1].id);
    let ctx = h.ctx.clone();
    h.state_mut().apply(&ctx, super::Command::Activate(a_id));
    h.run_steps(2);
    h.get_by_label("Compare").click();
    h.run_steps(2);
    h.state_mut()
        .apply(&ctx, super::Command::CompareWith(Some(b_id)));
    h.run_steps(3);
    settle(&mut h);
    // The diff shown is `vramscope diff`'s: recompute it from the two files.
    let load = |p: &Path| {
        let rec = collector::load(p, LoadOptions::default()).expect("load");
        let t = Timeline::build(&rec);
        (
            collector::analysis::summarize(&rec, &t),
            key_averages(&rec, None),
        )
    };
    let (sa, ra) = load(&a);
    let (sb, rb) = load(&b);
    fn facts<'a>(
        s: &'a collector::analysis::Summary,
        r: &'a [collector::analysis::OpRow],
    ) -> collector::analysis::diff::RunFacts<'a> {
        collector::analysis::diff::RunFacts {
            summary: s,
            rows: r,
            origin_ns: s.start_ns,
        }
    }
    let d = collector::analysis::diff::diff(
        &facts(&sa, &ra),
        &facts(&sb, &rb),
        collector::analysis::diff::Align::Start,
    );
    let top = d.ops.first().expect("ops");
    h.get_by_label(&super::axis::ellipsize(&top.name, 90));
    // Its change, in the unit of the column's largest change (named in the header).
    let delta = top.self_cpu_memory_usage.delta.expect("delta");
    let largest = d
        .ops
        .iter()
        .filter_map(|o| o.self_cpu_memory_usage.delta)
        .map(i64::unsigned_abs)
        .max()
        .expect("changes");
    let (divisor, unit) = compare::torch_unit(largest);
    let sign = if delta > 0 { "+" } else { "-" };
    let cell = format!("{sign}{:.2}", delta.unsigned_abs() as f64 / divisor);
    assert!(
        h.query_all_by_label(&cell).count() >= 1,
        "no cell shows {cell}"
    );
    h.get_by_label(&format!("B − A ({unit})"));
    h.get_by_label_contains("A = k01_mlp_s1.json.gz · B = k02_mlp_stack.json.gz");
    // Aligned at the first steps, B's first step lands where A's does on A's axis; at
    // the starts, B's start lands on A's start.
    let app = h.state();
    let (da, db) = (&app.docs()[0], &app.docs()[1]);
    let step = |d: &super::doc::Document| d.data.rec.steps.first().expect("steps").start_ns;
    let start_rel = super::compare::other_source(da, db.id, &db.data).origin_ns;
    assert_eq!(start_rel, db.data.rec.meta.start_ns);
    h.state_mut().docs_mut()[0].panels.compare.align = collector::analysis::diff::Align::Step;
    h.run_steps(2);
    let app = h.state();
    let (da, db) = (&app.docs()[0], &app.docs()[1]);
    let origin = super::compare::other_source(da, db.id, &db.data).origin_ns;
    let a_step_rel = step(da) - da.data.rec.meta.start_ns;
    assert!(
        (origin + a_step_rel - step(db)).abs() <= 1,
        "{origin} {a_step_rel} {}",
        step(db)
    );
}

#[test]
fn a_window_outside_the_recording_gives_an_empty_table() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let ctx = h.ctx.clone();
    let end = h.state().active_doc().expect("doc").data.rec.meta.end_ns;
    let w = TimeWindow {
        start_ns: end + 1_000,
        end_ns: end + 2_000,
    };
    h.state_mut().apply(&ctx, super::Command::Select(Some(w)));
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    assert!(doc.panels.table.rows.is_empty());
    assert_eq!(doc.panels.table.window, Some(w));
}
