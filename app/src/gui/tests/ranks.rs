//! The rank grid (issue 19): eight ranks made from a real fixture, each with its
//! allocation sizes times its own factor and its clock moved by its rank in seconds, so
//! the worst rank is known and the alignment on each rank's own start matters.

use std::path::{Path, PathBuf};

use collector::analysis::ranks::grid::Grid;
use collector::analysis::ranks::{across_ranks, sort_inputs, summarize_files};
use collector::{LoadOptions, Timeline};
use egui::{Event, Pos2, pos2};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use serde_json::Value;

use super::super::ViewerApp;
use super::{fixture, primary, settle};

/// Each rank's factor: rank 5 is the worst (9×).
const FACTORS: [i64; 8] = [3, 1, 4, 1, 5, 9, 2, 6];

fn base_trace() -> Value {
    let mut text = Vec::new();
    let file = std::fs::File::open(fixture("torch-cpu/k01_mlp_s1.json.gz")).expect("fixture");
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(file), &mut text).expect("gzip");
    serde_json::from_slice(&text).expect("JSON")
}

/// The base trace's largest `Total Allocated`: its peak, read from the file itself.
fn base_peak(base: &Value) -> i64 {
    memory_events(base)
        .filter_map(|e| e["args"]["Total Allocated"].as_i64())
        .max()
        .expect("memory events")
}

fn memory_events(trace: &Value) -> impl Iterator<Item = &Value> {
    trace["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["name"] == "[memory]")
}

/// Eight ranks under a directory (`rank_R.json`), and the directory.
fn rank_set(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = std::env::temp_dir().join(format!("vramscope-grid-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let base = base_trace();
    let files = (0..)
        .zip(FACTORS)
        .map(|(rank, factor)| {
            let mut trace = base.clone();
            for e in trace["traceEvents"].as_array_mut().expect("events") {
                if let Some(ts) = e["ts"].as_f64() {
                    e["ts"] = Value::from(ts + rank as f64 * 1e6);
                }
                if e["name"] == "[memory]" {
                    for key in ["Bytes", "Total Allocated", "Total Reserved"] {
                        if let Some(v) = e["args"][key].as_i64() {
                            e["args"][key] = Value::from(v * factor);
                        }
                    }
                }
            }
            trace["distributedInfo"] =
                serde_json::json!({"backend": "nccl", "rank": rank, "world_size": 8});
            let path = dir.join(format!("rank_{rank}.json"));
            std::fs::write(&path, serde_json::to_vec(&trace).expect("JSON")).expect("write");
            path
        })
        .collect();
    (dir, files)
}

fn grid_harness(dir: &Path) -> Harness<'static, ViewerApp> {
    let ctx = egui::Context::default();
    let mut app = ViewerApp::new(&ctx, None, Vec::new(), LoadOptions::default());
    app.open_inputs(&ctx, vec![dir.to_path_buf()]);
    let mut h = Harness::builder()
        .with_size([1400.0, 900.0])
        .with_step_dt(1.0 / 60.0)
        .with_max_steps(100_000)
        .build_ui_state(|ui, app: &mut ViewerApp| app.show(ui), app);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while h.state().rank_grid().is_some_and(|g| g.grid.is_none()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the grid did not load"
        );
        h.step();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    settle(&mut h);
    h
}

fn grid(h: &Harness<'_, ViewerApp>) -> std::sync::Arc<Grid> {
    h.state()
        .rank_grid()
        .and_then(|g| g.grid.clone())
        .expect("grid")
}

/// The middle of row `row`, `fraction` of the way across the heat map.
fn cell_pos(h: &Harness<'_, ViewerApp>, row: usize, fraction: f32) -> Pos2 {
    let g = h.state().rank_grid().expect("grid");
    let heat = g.last_heat_rect.expect("drawn");
    pos2(
        heat.left() + fraction * heat.width(),
        heat.top() + (row as f32 + 0.5) * g.row_height,
    )
}

fn click(h: &mut Harness<'_, ViewerApp>, at: Pos2) {
    h.event(Event::PointerMoved(at));
    h.step();
    h.event(primary(at, true));
    h.event(primary(at, false));
    h.step();
    settle(h);
}

#[test]
fn the_grid_loads_every_rank_in_order_and_marks_summarys_worst() {
    let (dir, files) = rank_set("worst");
    let h = grid_harness(&dir);
    let grid = grid(&h);
    let ranks: Vec<Option<i64>> = grid.inputs.iter().map(|i| i.rank).collect();
    assert_eq!(ranks, (0..8).map(Some).collect::<Vec<_>>());
    // One row per rank (the fixture has one device), in rank order.
    let rows: Vec<usize> = grid.rows.iter().map(|r| r.input).collect();
    assert_eq!(rows, (0..8).collect::<Vec<_>>());
    // The worst: rank 5, the base peak times 9, read from the files themselves ...
    let w = grid.across.worst.expect("worst");
    assert_eq!(grid.inputs[w.input].rank, Some(5));
    assert_eq!(w.peak_allocated_bytes, base_peak(&base_trace()) * 9);
    // ... and the very one `summary` of the same inputs names (its functions, its order).
    let mut summaries = summarize_files(&files, LoadOptions::default(), 2).expect("summaries");
    sort_inputs(&mut summaries);
    let summary_worst = across_ranks(&summaries).worst.expect("summary's worst");
    assert_eq!(summaries[summary_worst.input].rank, Some(5));
    assert_eq!(summary_worst.peak_allocated_bytes, w.peak_allocated_bytes);
    // Its row is marked, and the window says so.
    assert_eq!(grid.worst_row(), Some(5));
    h.get_by_label_contains("▶ worst: rank 5");
    h.get_by_label_contains("since each rank's own start");
    std::fs::remove_dir_all(&dir).expect("clean");
}

/// The largest allocated bytes of `path`'s curve in `[from, to)` ns since its start, by
/// brute force over its timeline: the points inside, and the value carried in.
fn brute_max(path: &Path, from_rel: i64, to_rel: i64) -> Option<i64> {
    let rec = collector::load(path, LoadOptions::default()).expect("load");
    let t = Timeline::build(&rec);
    let points = &t
        .devices
        .iter()
        .find(|d| !d.points.is_empty())
        .expect("device")
        .points;
    let (from, to) = (rec.meta.start_ns + from_rel, rec.meta.start_ns + to_rel);
    let carried = points
        .iter()
        .rev()
        .find(|p| p.time_ns < from)
        .filter(|_| !points.iter().any(|p| p.time_ns == from));
    points
        .iter()
        .filter(|p| p.time_ns >= from && p.time_ns < to)
        .chain(carried)
        .map(|p| p.allocated_bytes)
        .max()
}

#[test]
fn hovering_a_cell_reads_out_rank_device_time_and_allocated() {
    let (dir, files) = rank_set("hover");
    let mut h = grid_harness(&dir);
    let at = cell_pos(&h, 2, 0.4);
    h.event(Event::PointerMoved(at));
    h.run_steps(60);
    let grid = grid(&h);
    let cell = h
        .state()
        .rank_grid()
        .and_then(|g| g.hover)
        .expect("hovered");
    assert_eq!(cell.row, 2);
    let (from, to) = grid.column_range_ns(cell.column);
    assert!(from <= cell.at_rel_ns && cell.at_rel_ns < to);
    let expected = brute_max(&files[2], from, to).expect("a value");
    h.get_by_label_contains("rank 2 · cpu");
    h.get_by_label_contains(&format!(
        "allocated: up to {}",
        super::super::units::bytes(expected)
    ));
    h.get_by_label_contains("since its start");
    std::fs::remove_dir_all(&dir).expect("clean");
}

#[test]
fn clicking_a_rank_opens_it_at_that_time() {
    let (dir, files) = rank_set("click");
    let mut h = grid_harness(&dir);
    let at = cell_pos(&h, 3, 0.6);
    click(&mut h, at);
    let at_rel = h
        .state()
        .rank_grid()
        .and_then(|g| g.cursor_rel_ns)
        .expect("cursor");
    let doc = h.state().active_doc().expect("the rank's tab");
    assert_eq!(
        std::fs::canonicalize(&doc.data.path).ok(),
        std::fs::canonicalize(&files[3]).ok()
    );
    let start = doc.data.rec.meta.start_ns;
    assert_eq!(
        doc.panels.inspect.target.map(|t| t.at_ns),
        Some(start + at_rel)
    );
    assert!(!h.state().rank_grid().expect("grid").shown);
    std::fs::remove_dir_all(&dir).expect("clean");
}

#[test]
fn the_grid_and_its_rank_tabs_share_one_cursor_on_their_own_starts() {
    let (dir, _) = rank_set("linked");
    let mut h = grid_harness(&dir);
    let at = cell_pos(&h, 1, 0.2);
    click(&mut h, at);
    let rank1 = h.state().active_doc().expect("rank 1's tab").id;
    h.state_mut().apply(
        &egui::Context::default(),
        super::super::Command::ShowGrid(true),
    );
    h.run_steps(3);
    let at = cell_pos(&h, 6, 0.5);
    click(&mut h, at);
    let doc6 = h.state().active_doc().expect("rank 6's tab");
    let (rank6, start6, plot) = (
        doc6.id,
        doc6.data.rec.meta.start_ns,
        doc6.timeline.last_plot_rect.expect("plot"),
    );
    assert_ne!(rank1, rank6);
    // WHEN the cursor moves in rank 6's timeline
    click(
        &mut h,
        plot.left_center() + egui::vec2(plot.width() * 0.3, 0.0),
    );
    let target6 = h
        .state()
        .active_doc()
        .and_then(|d| d.panels.inspect.target)
        .expect("moved")
        .at_ns;
    // THEN the grid's cursor and rank 1's are at the same time since their own starts
    let rel = target6 - start6;
    assert_eq!(
        h.state().rank_grid().and_then(|g| g.cursor_rel_ns),
        Some(rel)
    );
    let doc1 = h
        .state()
        .docs()
        .iter()
        .find(|d| d.id == rank1)
        .expect("rank 1");
    assert_ne!(
        doc1.data.rec.meta.start_ns, start6,
        "the ranks' clocks differ"
    );
    assert_eq!(
        doc1.panels.inspect.target.map(|t| t.at_ns),
        Some(doc1.data.rec.meta.start_ns + rel)
    );
    // WHEN the grid's ruler is clicked at 80% THEN both tabs follow
    h.state_mut().apply(
        &egui::Context::default(),
        super::super::Command::ShowGrid(true),
    );
    h.run_steps(3);
    let ruler = h
        .state()
        .rank_grid()
        .and_then(|g| g.last_ruler_rect)
        .expect("ruler");
    let heat = h
        .state()
        .rank_grid()
        .and_then(|g| g.last_heat_rect)
        .expect("heat");
    click(
        &mut h,
        pos2(heat.left() + 0.8 * heat.width(), ruler.center().y),
    );
    let span = grid(&h).span_ns;
    let rel = h
        .state()
        .rank_grid()
        .and_then(|g| g.cursor_rel_ns)
        .expect("cursor");
    assert!(
        (rel - span * 8 / 10).abs() <= span / heat.width() as i64 + 1,
        "{rel} of {span}"
    );
    for d in h.state().docs() {
        assert_eq!(
            d.panels.inspect.target.map(|t| t.at_ns),
            Some(d.data.rec.meta.start_ns + rel)
        );
    }
    std::fs::remove_dir_all(&dir).expect("clean");
}

/// `view` of these files (as the command line opens them), the grid loaded if one opens.
fn opened(paths: Vec<PathBuf>) -> Harness<'static, ViewerApp> {
    let ctx = egui::Context::default();
    let mut app = ViewerApp::new(&ctx, None, Vec::new(), LoadOptions::default());
    app.open_inputs(&ctx, paths);
    let mut h = Harness::builder()
        .with_size([1000.0, 700.0])
        .with_step_dt(1.0 / 60.0)
        .with_max_steps(100_000)
        .build_ui_state(|ui, app: &mut ViewerApp| app.show(ui), app);
    wait_for_grid(&mut h);
    h
}

fn wait_for_grid(h: &mut Harness<'_, ViewerApp>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while h.state().rank_grid().is_some_and(|g| g.grid.is_none()) {
        assert!(std::time::Instant::now() < deadline, "no grid");
        h.step();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    settle(h);
}

#[test]
fn unrelated_files_open_in_tabs_and_the_grid_is_there_when_asked_for() {
    let real = super::repo().join("../shared/traces/real");
    let files = vec![
        super::sample(),
        real.join("tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz"),
        real.join("tracelens-h100-qwen-0.5b/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    ];
    // GIVEN three traces of three runs named on the command line
    let mut h = opened(files.clone());
    // THEN they open as three tabs, not as a "3 ranks" grid with a worst and a skew
    assert!(h.state().rank_grid().is_none(), "a grid of unrelated files");
    assert_eq!(h.state().docs().len(), 3);
    // WHEN the grid is asked for (View › Open the tabs as a rank grid)
    h.get_by_label("View").click();
    h.run_steps(2);
    h.get_by_label("Open the tabs as a rank grid").click();
    h.run_steps(2);
    wait_for_grid(&mut h);
    let g = grid(&h);
    assert_eq!(g.inputs.len(), 3);
    // THEN each row's label keeps its name's start, cut at its right end, inside the window
    let heat = h
        .state()
        .rank_grid()
        .and_then(|g| g.last_heat_rect)
        .expect("drawn");
    let labels: Vec<_> = super::layout::texts(&h)
        .into_iter()
        .filter(|t| t.text.contains(" · cuda:") || t.text.contains(" · cpu"))
        .filter(|t| t.full.right() <= heat.left() + 1.0)
        .collect();
    assert!(labels.len() >= 3, "{} row labels", labels.len());
    for t in &labels {
        assert!(
            t.full.left() >= 0.0 && !t.cut(),
            "{:?} cut at {:?}",
            t.text,
            t.full
        );
    }
    for start in ["transformer-lm", "gaunernst_bert", "Qwen_Qwen1.5"] {
        assert!(
            labels
                .iter()
                .any(|t| t.text.trim_start_matches("▶ ").starts_with(start)),
            "no row label starts {start:?}"
        );
    }
}

#[test]
fn files_named_as_ranks_of_one_run_open_as_a_grid() {
    let (_dir, files) = rank_set("named");
    let h = opened(files[..3].to_vec());
    assert_eq!(grid(&h).inputs.len(), 3, "rank_0..2.json open as one grid");
    assert!(h.state().docs().is_empty());
}
