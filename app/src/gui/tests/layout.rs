//! The viewer at 1000×700, the smallest window it is made for: on every tab and window,
//! every widget lies inside the window (nothing cut at an edge) and no two pieces of text
//! are drawn over each other.

use std::path::PathBuf;

use egui::accesskit::Role;
use egui::{Rect, Shape, Vec2};
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};

use super::super::Command;
use super::super::ViewerApp;
use super::super::export::ExportKind;
use super::super::panels::PanelId;
use super::{fixture, repo, sample, settle};

/// The smallest window the viewer is laid out for.
pub(super) const SMALL: Vec2 = Vec2::new(1000.0, 700.0);

/// A harness with a window of `size`.
pub(super) fn harness_sized(paths: Vec<PathBuf>, size: Vec2) -> Harness<'static, ViewerApp> {
    let ctx = egui::Context::default();
    let app = ViewerApp::new(&ctx, None, paths, collector::LoadOptions::default());
    Harness::builder()
        .with_size(size)
        .with_step_dt(1.0 / 60.0)
        .with_max_steps(100_000)
        .build_ui_state(|ui, app: &mut ViewerApp| app.show(ui), app)
}

/// A text drawn this frame: what it says, its whole extent and the part its clip rect
/// shows (a row half scrolled out of a table shows its top half).
pub(super) struct Text {
    pub(super) text: String,
    pub(super) full: Rect,
    shown: Rect,
}

impl Text {
    /// Whether its clip rect cuts it (a panel or column too small, a list scrolled).
    pub(super) fn cut(&self) -> bool {
        self.shown.width() + 1.0 < self.full.width()
            || self.shown.height() + 1.0 < self.full.height()
    }
}

/// Every text drawn in the last frame, from the shapes egui painted.
pub(super) fn texts(h: &Harness<'_, ViewerApp>) -> Vec<Text> {
    fn collect(shape: &Shape, clip: Rect, out: &mut Vec<Text>) {
        match shape {
            Shape::Text(t) if !t.galley.text().trim().is_empty() => {
                let full = t.visual_bounding_rect();
                out.push(Text {
                    text: t.galley.text().to_owned(),
                    full,
                    shown: full.intersect(clip),
                });
            }
            Shape::Vec(shapes) => shapes.iter().for_each(|s| collect(s, clip, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for c in &h.output().shapes {
        collect(&c.shape, c.clip_rect, &mut out);
    }
    out
}

/// What is wrong with the layout: text outside the window, cut on its left or right (a
/// column or panel too narrow; cut at the top or bottom is a scrolled list), or drawn over
/// other text.
pub(super) fn layout_faults(h: &Harness<'_, ViewerApp>, size: Vec2) -> Vec<String> {
    let screen = Rect::from_min_size(egui::Pos2::ZERO, size).expand(0.5);
    let shown: Vec<Text> = texts(h)
        .into_iter()
        .filter(|t| t.shown.is_positive())
        .collect();
    let mut faults = Vec::new();
    for t in &shown {
        if !screen.contains_rect(t.shown)
            || t.full.left() < screen.left()
            || t.full.right() > screen.right()
        {
            faults.push(format!("outside the window: {:?} at {:?}", t.text, t.full));
        } else if t.shown.width() + 1.0 < t.full.width() {
            faults.push(format!(
                "cut: {:?} at {:?}, shown {:?}",
                t.text, t.full, t.shown
            ));
        }
    }
    for (i, a) in shown.iter().enumerate() {
        for b in &shown[i + 1..] {
            let overlap = a.shown.intersect(b.shown);
            if overlap.width() > 2.0 && overlap.height() > 2.0 {
                faults.push(format!(
                    "{:?} at {:?} overlaps {:?} at {:?}",
                    a.text, a.shown, b.text, b.shown
                ));
            }
        }
    }
    faults
}

/// What is wrong with a window: outside the screen, or its widgets over each other.
fn window_faults(h: &Harness<'_, ViewerApp>, size: Vec2) -> Vec<String> {
    let screen = Rect::from_min_size(egui::Pos2::ZERO, size).expand(0.5);
    let mut faults = Vec::new();
    let windows = h
        .root()
        .children_recursive()
        .filter(|n| n.accesskit_node().role() == Role::Window && n.parent().is_some());
    for w in windows {
        let frame = w.rect();
        if !screen.contains_rect(frame) {
            faults.push(format!("window outside the screen: {frame:?}"));
        }
        let widgets: Vec<(String, Rect)> = w
            .children_recursive()
            .filter_map(|n| {
                let node = n.accesskit_node();
                let label = node.label().or_else(|| node.value())?.trim().to_owned();
                // A text field scrolls its own text: what it holds may run past it.
                let in_field = n
                    .parent()
                    .is_some_and(|p| p.accesskit_node().role() == Role::TextInput);
                (!label.is_empty() && !in_field && node.bounding_box().is_some())
                    .then(|| (label, n.rect()))
            })
            .collect();
        for (l, r) in &widgets {
            if !frame.expand(0.5).contains_rect(*r) {
                faults.push(format!("outside its window: {l:?} at {r:?}"));
            }
        }
        for (i, (la, a)) in widgets.iter().enumerate() {
            for (lb, b) in &widgets[i + 1..] {
                let overlap = a.intersect(*b);
                let nested = a.contains_rect(b.shrink(0.5)) || b.contains_rect(a.shrink(0.5));
                if !nested && overlap.width() > 2.0 && overlap.height() > 2.0 {
                    faults.push(format!("{la:?} at {a:?} overlaps {lb:?} at {b:?}"));
                }
            }
        }
    }
    faults
}

pub(super) fn assert_fits(h: &Harness<'_, ViewerApp>, what: &str) {
    let faults = layout_faults(h, SMALL);
    assert!(
        faults.is_empty(),
        "{what} at 1000×700:\n{}",
        faults.join("\n")
    );
}

fn show_tab(h: &mut Harness<'_, ViewerApp>, tab: PanelId) {
    let ctx = h.ctx.clone();
    h.state_mut().apply(&ctx, Command::SetTab(tab));
    h.run_steps(2);
    settle(h);
}

#[test]
fn the_welcome_screen_fits_1000x700() {
    let mut h = harness_sized(Vec::new(), SMALL);
    h.run_steps(4);
    assert_fits(&h, "the welcome screen");
}

#[test]
fn every_tab_of_a_trace_fits_1000x700() {
    let t2 = repo().join("../shared/traces/torch-cpu/t2.json.gz");
    let mut h = harness_sized(vec![t2], SMALL);
    settle(&mut h);
    assert_fits(&h, "the Ops tab");
    for tab in [PanelId::INSPECTOR, PanelId::CATEGORIES] {
        show_tab(&mut h, tab);
        assert_fits(&h, &format!("{tab:?}"));
    }
}

#[test]
fn a_snapshot_s_segments_and_verdicts_fit_1000x700() {
    let mut h = harness_sized(vec![fixture("snapshot/oom.pickle")], SMALL);
    settle(&mut h);
    assert_fits(&h, "the snapshot's summary");
    for tab in [PanelId::INSPECTOR, PanelId::SEGMENTS] {
        show_tab(&mut h, tab);
        assert_fits(&h, &format!("{tab:?}"));
    }
}

#[test]
fn the_comparison_fits_1000x700() {
    let real = repo().join("../shared/traces/real");
    let mut h = harness_sized(
        vec![
            real.join("tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz"),
            real.join("tracelens-mi300-bert-small").join(mi300_bert()),
        ],
        SMALL,
    );
    settle(&mut h);
    show_tab(&mut h, PanelId::COMPARE);
    settle(&mut h);
    assert_fits(&h, "the Compare tab");
    // The two files' tabs share one row (the second's close button wrapped under the
    // first's), each label cut in its middle: its directory and its file name's end kept.
    let closes: Vec<f32> = (h.get_all_by_label("×"))
        .map(|n| n.rect().center().y)
        .collect();
    assert_eq!(closes.len(), 2, "{closes:?}");
    assert!(
        (closes[0] - closes[1]).abs() < 1.0,
        "the tabs wrap: {closes:?}"
    );
    let labels: Vec<String> = texts(&h)
        .into_iter()
        .filter(|t| t.text.starts_with("tracelens-") && t.full.top() < 60.0)
        .map(|t| t.text)
        .collect();
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("tracelens-h100") && l.ends_with(".json.gz"))
            && labels
                .iter()
                .any(|l| l.starts_with("tracelens-mi300") && l.contains('…')),
        "{labels:?}"
    );
}

#[test]
fn tables_follow_a_window_made_narrower() {
    // The window first drawn wide, then shrunk (a window manager's first resize, a user's
    // drag): the ops table's and the comparison's last columns stay in the window.
    let real = repo().join("../shared/traces/real");
    let a = real.join("tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz");
    let b = real.join("tracelens-mi300-bert-small").join(mi300_bert());
    let mut h = harness_sized(vec![a, b], LARGE);
    settle(&mut h);
    assert_fits_shrunk(&mut h, "CUDA Net", "the Ops tab");
    h.set_size(LARGE);
    show_tab(&mut h, PanelId::COMPARE);
    settle(&mut h);
    assert_fits_shrunk(&mut h, "B", "the Compare tab");
}

/// The large window of the screenshots.
pub(super) const LARGE: Vec2 = Vec2::new(1920.0, 1080.0);

/// Shrink the window to 1000×700: the table's `last_column` header is still drawn, and
/// everything fits.
fn assert_fits_shrunk(h: &mut Harness<'_, ViewerApp>, last_column: &str, what: &str) {
    h.set_size(SMALL);
    h.run_steps(4);
    assert!(
        texts(h).iter().any(|t| t.text == last_column),
        "{what}: the last column {last_column:?} is drawn"
    );
    assert_fits(h, &format!("{what} after a resize"));
}

/// The MI300X BERT trace's file name (the only file in its directory).
pub(super) fn mi300_bert() -> String {
    let dir = repo().join("../shared/traces/real/tracelens-mi300-bert-small");
    std::fs::read_dir(&dir)
        .expect("the MI300X trace")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".json.gz"))
        .expect("a .json.gz")
}

#[test]
fn the_export_windows_fit_1000x700() {
    for kind in [ExportKind::Report, ExportKind::Perfetto] {
        let mut h = harness_sized(vec![sample()], SMALL);
        settle(&mut h);
        let ctx = h.ctx.clone();
        h.state_mut().apply(&ctx, Command::Export(kind));
        h.run_steps(4);
        let faults = window_faults(&h, SMALL);
        assert!(
            faults.is_empty(),
            "the {kind:?} export window:\n{}",
            faults.join("\n")
        );
    }
}

#[test]
fn every_device_of_an_nsight_export_is_a_multiple_at_both_sizes() {
    // Five memory kinds (two GPUs, managed, pageable and pinned host memory), one long
    // name ("cuda-managed:0"): at 1000×700 the rows shrink instead of vanishing, at
    // both sizes every label lies inside the window and over no other text.
    for size in [SMALL, LARGE] {
        let mut h = harness_sized(vec![fixture("nsight/cuda-memory.sqlite")], size);
        settle(&mut h);
        let d = &h.state().docs()[0];
        let shown = &d.data.shown_devices;
        assert_eq!(shown.len(), 5, "{shown:?}");
        let (area, fit) = d.timeline.last_multiples.expect("multiples drawn");
        assert_eq!(fit.rows, shown.len(), "at {size:?}");
        let plot = d.timeline.last_plot_rect.expect("plot drawn");
        assert!(area.bottom() <= plot.top(), "{area:?} over {plot:?}");
        assert!(plot.height() >= 60.0, "the main plot keeps room: {plot:?}");
        let faults = layout_faults(&h, size);
        assert!(faults.is_empty(), "at {size:?}:\n{}", faults.join("\n"));
    }
}

#[test]
fn headers_and_segment_labels_are_whole_where_there_is_room() {
    // The comparison's per-op headers at both sizes: each numeric column starts as wide as
    // its header (at 1920×1080 they were elided "Self CUDA Mem …" while the name column
    // took the rest).
    let real = repo().join("../shared/traces/real");
    let a = real.join("tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz");
    let b = real.join("tracelens-mi300-bert-small").join(mi300_bert());
    for size in [SMALL, LARGE] {
        let mut h = harness_sized(vec![a.clone(), b.clone()], size);
        settle(&mut h);
        show_tab(&mut h, PanelId::COMPARE);
        settle(&mut h);
        let shown: Vec<String> = texts(&h).into_iter().map(|t| t.text).collect();
        for header in ["Self CUDA Mem A (", "CUDA Mem B − A (", "# Calls A"] {
            assert!(
                shown
                    .iter()
                    .any(|t| t.starts_with(header) && !t.contains('…')),
                "{header} whole at {size:?}: {:?}",
                shown
                    .iter()
                    .filter(|t| t.contains("Mem"))
                    .collect::<Vec<_>>()
            );
        }
    }
    // A private pool's segment label at 1920×1080 (a quarter of the row, up to 330 points).
    let mut h = harness_sized(vec![fixture("snapshot/graphs.pickle")], LARGE);
    settle(&mut h);
    show_tab(&mut h, PanelId::SEGMENTS);
    // At the snapshot, where the allocator names each segment's pool.
    h.get_by_label("Snapshot").click();
    h.run_steps(2);
    settle(&mut h);
    let labels: Vec<String> = texts(&h)
        .into_iter()
        .map(|t| t.text)
        .filter(|t| t.starts_with("0x"))
        .collect();
    assert!(
        labels.iter().any(|t| t.ends_with("· private pool (1, 0)")),
        "{labels:?}"
    );
    assert!(labels.iter().all(|t| !t.contains('…')), "{labels:?}");
}

/// A range's Ops table adds three columns (allocated, freed and net in the range): at
/// 1000×700 the last, the net, is still whole in the window.
#[test]
fn a_range_s_ops_table_fits_1000x700() {
    let mut h = harness_sized(vec![sample()], SMALL);
    settle(&mut h);
    let window = {
        let rec = &h.state().active_doc().expect("doc").data.rec;
        let (start, end) = (rec.meta.start_ns, rec.meta.end_ns);
        collector::analysis::TimeWindow {
            start_ns: start + (end - start) / 4,
            end_ns: start + (end - start) / 2,
        }
    };
    let ctx = h.ctx.clone();
    h.state_mut().apply(&ctx, Command::Select(Some(window)));
    settle(&mut h);
    assert!(
        texts(&h).iter().any(|t| t.text == "CPU Net"),
        "the net column is drawn"
    );
    assert_fits(&h, "a range's Ops tab");
}
