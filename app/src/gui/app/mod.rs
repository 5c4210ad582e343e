//! The viewer's state and frame: documents, loads (started and taken in by `open.rs`), the
//! worker, and the commands panels push, applied after each frame (in `commands.rs`).

mod bottom;
mod commands;
mod open;
mod ranks;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use collector::LoadOptions;
use collector::analysis::diff::{Align, Diff};
use egui::{CentralPanel, Panel, Ui};

use super::doc::Document;
use super::export::ExportWindow;
use super::files::{FileBrowser, NativeDialog, Recent};
use super::jobs::{self, Outcome, Worker};
use super::loaded::Loaded;
use super::loader::PendingLoad;
use super::panels::{self, PanelContext};
use super::ranks::{self as rank_grid, FolderDialog, RankGrid};
use super::theme::{self, Palette, ThemeChoice};
use super::{Command, compare, follow, loading, summary, timeline, window};

const KEY_RECENT: &str = "recent_files";
const KEY_THEME: &str = "theme";
const KEY_BROWSER_DIR: &str = "browser_dir";

/// While files load, redraw this often so the progress bar moves.
const PROGRESS_REPAINT: Duration = Duration::from_millis(100);

/// The viewer.
pub struct ViewerApp {
    docs: Vec<Document>,
    active: Option<u64>,
    next_id: u64,
    loads: Vec<PendingLoad>,
    errors: Vec<String>,
    worker: Option<Worker>,
    /// Requests of documents opened this frame (the inspection of their peak), sent to the
    /// worker once the frame that first draws them is done: sent before it, the worker's
    /// start took the frame's core (4.5 ms of a 15 ms first frame on a 10 GB trace).
    after_frame: Vec<jobs::Request>,
    recent: Recent,
    theme: ThemeChoice,
    theme_applied: bool,
    browser: FileBrowser,
    dialog: Option<NativeDialog>,
    show_warnings: bool,
    export: Option<ExportWindow>,
    diffs: HashMap<(u64, u64, bool), Arc<Diff>>,
    options: LoadOptions,
    title: String,
    grid: Option<RankGrid>,
    folder_dialog: Option<FolderDialog>,
    bottom_tabs: bottom::BottomTabs,
}

#[cfg(test)]
mod testing;

impl ViewerApp {
    /// A viewer opening `paths`, with preferences from `storage` when there is one.
    pub fn new(
        ctx: &egui::Context,
        storage: Option<&dyn eframe::Storage>,
        paths: Vec<PathBuf>,
        options: LoadOptions,
    ) -> ViewerApp {
        let get = |key: &str| storage.and_then(|s| s.get_string(key));
        let recent = get(KEY_RECENT)
            .map(|s| Recent::from_json(&s))
            .unwrap_or_default();
        let theme = get(KEY_THEME)
            .and_then(|s| ThemeChoice::parse(&s))
            .unwrap_or(ThemeChoice::Dark);
        let dir = get(KEY_BROWSER_DIR)
            .map(PathBuf::from)
            .filter(|d| d.is_dir())
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let mut app = ViewerApp {
            docs: Vec::new(),
            active: None,
            next_id: 1,
            loads: Vec::new(),
            errors: Vec::new(),
            worker: None,
            after_frame: Vec::new(),
            recent,
            theme,
            theme_applied: false,
            browser: FileBrowser::new(dir),
            dialog: None,
            show_warnings: false,
            export: None,
            diffs: HashMap::new(),
            options,
            title: String::new(),
            grid: None,
            folder_dialog: None,
            bottom_tabs: Default::default(),
        };
        match Worker::start(ctx) {
            Ok(w) => app.worker = Some(w),
            Err(e) => app.errors.push(format!(
                "cannot start the analysis thread ({e}): analyses run in the window"
            )),
        }
        app.open(ctx, paths);
        app
    }

    /// The shown document.
    pub fn active_doc(&self) -> Option<&Document> {
        self.docs.iter().find(|d| Some(d.id) == self.active)
    }

    /// Collect finished loads, dialog results and analysis replies.
    fn poll(&mut self, ctx: &egui::Context) {
        self.poll_grid(ctx);
        self.poll_loads(ctx);
        let replies: Vec<_> = self
            .worker
            .as_ref()
            .map(|w| w.replies().collect())
            .unwrap_or_default();
        for r in replies {
            self.accept(r);
        }
        for doc in &mut self.docs {
            follow::poll(doc, ctx);
        }
    }

    fn accept(&mut self, reply: jobs::Reply) {
        let Some(doc) = self.docs.iter_mut().find(|d| d.id == reply.doc) else {
            return;
        };
        match reply.outcome {
            Outcome::Table(window, rows) if doc.panels.table.pending == Some(reply.generation) => {
                doc.panels.table.rows = Arc::new(rows);
                doc.panels.table.window = Some(window);
                doc.panels.table.pending = None;
                doc.panels.table.dirty = true;
                doc.panels.table.last_compute_ms = Some(reply.elapsed.as_secs_f64() * 1e3);
            }
            Outcome::Inspect(result) if doc.panels.inspect.pending == Some(reply.generation) => {
                doc.panels.inspect.result = Some(result);
                doc.panels.inspect.pending = None;
            }
            Outcome::Advise(advice) if doc.panels.advice.pending == Some(reply.generation) => {
                doc.panels.advice.result = Some(Arc::new(advice));
                doc.panels.advice.pending = None;
            }
            Outcome::OpSpans(spans)
                if doc.panels.table.highlighted.as_deref() == Some(spans.name.as_str()) =>
            {
                doc.panels.table.spans = Some(spans);
            }
            _ => {}
        }
    }

    fn diff_for(&mut self, i: usize) -> Option<Arc<Diff>> {
        let doc = self.docs.get(i)?;
        let other_id = doc.panels.compare.other?;
        let other = self.docs.iter().find(|d| d.id == other_id)?;
        let key = (doc.id, other_id, doc.panels.compare.align == Align::Step);
        let (a, b, align) = (
            doc.data.clone(),
            other.data.clone(),
            doc.panels.compare.align,
        );
        Some(
            self.diffs
                .entry(key)
                .or_insert_with(|| Arc::new(compare::compute(&a, &b, align)))
                .clone(),
        )
    }

    /// Draw one frame.
    pub fn show(&mut self, ui: &mut Ui) {
        let ctx = ui.ctx().clone();
        if !self.theme_applied {
            theme::install_fonts(&ctx);
            theme::solid_scroll_bars(&ctx);
            theme::apply(&ctx, self.theme);
            self.theme_applied = true;
        }
        self.poll(&ctx);
        self.relabel();
        let mut cmds = self.input(&ctx);
        let palette = theme::palette(ui);
        let active = self.docs.iter().position(|d| Some(d.id) == self.active);
        Panel::top("menu").show(ui, |ui| {
            let doc = active.and_then(|i| self.docs.get(i));
            window::menu_bar_ui(
                ui,
                doc,
                self.docs.len(),
                &self.recent,
                self.theme,
                &mut self.show_warnings,
                &mut cmds,
            );
            if !self.docs.is_empty() || !self.loads.is_empty() || self.grid.is_some() {
                ui.horizontal_wrapped(|ui| {
                    if let Some(g) = &self.grid {
                        rank_grid::grid_tab_ui(ui, g, &mut cmds);
                    }
                    window::tabs_ui(
                        ui,
                        &self.docs,
                        self.active,
                        &self.loads,
                        &palette,
                        &mut cmds,
                    );
                });
            }
            window::errors_ui(ui, &self.errors, &mut cmds);
        });
        match active {
            _ if self.grid_shown() => {
                if let Some(g) = &mut self.grid {
                    CentralPanel::default()
                        .show(ui, |ui| rank_grid::grid_ui(ui, g, &palette, &mut cmds));
                }
            }
            Some(i) => self.document_ui(ui, i, &palette, &mut cmds),
            None if !self.loads.is_empty() => {
                CentralPanel::default()
                    .show(ui, |ui| loading::loading_ui(ui, &self.loads, &palette));
            }
            None => {
                CentralPanel::default()
                    .show(ui, |ui| window::welcome_ui(ui, &self.recent, &mut cmds));
            }
        }
        self.browser.window_ui(&ctx, &mut cmds);
        if let Some(w) = &mut self.export
            && !w.window_ui(&ctx)
        {
            self.export = None;
        }
        window::drop_overlay_ui(&ctx);
        for c in cmds {
            self.apply(&ctx, c);
        }
        for r in std::mem::take(&mut self.after_frame) {
            self.submit(r);
        }
        self.update_title(&ctx);
        timeline::note_popups(&ctx);
        if !self.loads.is_empty() || self.dialog.is_some() {
            ctx.request_repaint_after(PROGRESS_REPAINT);
        }
    }

    fn document_ui(&mut self, ui: &mut Ui, i: usize, palette: &Palette, cmds: &mut Vec<Command>) {
        let diff = self.diff_for(i);
        let others: Vec<(u64, Arc<Loaded>, String)> = self
            .docs
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, d)| (d.id, d.data.clone(), d.label.clone()))
            .collect();
        let Some(doc) = self.docs.get_mut(i) else {
            return;
        };
        let other_data = doc
            .panels
            .compare
            .other
            .and_then(|id| others.iter().find(|o| o.0 == id))
            .cloned();
        Panel::top("summary").show(ui, |ui| summary::summary_strip_ui(ui, doc, palette, cmds));
        Panel::bottom("status").show(ui, |ui| window::status_bar_ui(ui, doc, palette));
        if doc.follow.is_some() {
            Panel::bottom("follow").show(ui, |ui| follow::status_ui(ui, doc, palette));
        }
        let cx = PanelContext {
            palette,
            others: &others,
            diff: diff.as_deref(),
        };
        self.bottom_tabs
            .show(ui, |ui| panels::bottom_ui(ui, doc, &cx, cmds));
        CentralPanel::default().show(ui, |ui| {
            if doc.panels.allocations.main && doc.data.curves.iter().any(|c| c.bands.is_some()) {
                panels::allocations_main_area_ui(ui, doc, palette);
                return;
            }
            let other = compare::other_for_timeline(doc, other_data.as_ref());
            timeline::timeline_ui(ui, doc, other, palette, cmds);
        });
        if self.show_warnings {
            window::warnings_window_ui(ui.ctx(), doc, &mut self.show_warnings);
        }
    }

    /// Keyboard shortcuts and dropped files.
    fn input(&mut self, ctx: &egui::Context) -> Vec<Command> {
        let mut cmds = Vec::new();
        let (open, close, dropped) = ctx.input_mut(|i| {
            if i.consume_key(egui::Modifiers::COMMAND, egui::Key::F) {
                cmds.push(Command::FocusSearch);
            }
            let open = i.consume_key(egui::Modifiers::COMMAND, egui::Key::O);
            let close = i.consume_key(egui::Modifiers::COMMAND, egui::Key::W);
            let dropped: Vec<PathBuf> = i
                .raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .collect();
            (open, close, dropped)
        });
        if open {
            cmds.push(Command::OpenDialog);
        }
        if close && let Some(id) = self.active {
            cmds.push(Command::Close(id));
        }
        if !dropped.is_empty() {
            cmds.push(Command::Open(dropped));
        }
        cmds
    }

    /// Each document's label: its file name, told apart by directories from another open
    /// file of the same name.
    fn relabel(&mut self) {
        let paths: Vec<&std::path::Path> =
            self.docs.iter().map(|d| d.data.path.as_path()).collect();
        let names = super::names::distinct_names(&paths);
        for (d, name) in self.docs.iter_mut().zip(names) {
            d.label = name;
        }
    }

    fn update_title(&mut self, ctx: &egui::Context) {
        let title = self.active_doc().map_or("vramscope".to_owned(), |d| {
            format!("{} — vramscope", d.label)
        });
        if title != self.title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.title = title;
        }
    }
}

impl eframe::App for ViewerApp {
    fn ui(&mut self, ui: &mut Ui, _frame: &mut eframe::Frame) {
        self.show(ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        storage.set_string(KEY_RECENT, self.recent.to_json());
        storage.set_string(KEY_THEME, self.theme.as_str().to_owned());
        storage.set_string(KEY_BROWSER_DIR, self.browser.dir.display().to_string());
    }
}
