//! File → Export report… and Export for Perfetto…: a small window asks where (a path
//! prefilled next to the input, or the desktop's save dialog), then a named thread writes
//! exactly what `vramscope report` and `vramscope export --format perfetto` write — the same
//! functions, fed the recording, timeline and summary the viewer already holds — while the
//! window keeps drawing. The files follow the policy of every writer ([`crate::output::file`]):
//! nothing is overwritten unless the user ticks "Replace" (the commands' `--force`), and never
//! the file being viewed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, TryRecvError, bounded};
use egui::{RichText, Ui};

use super::files::portal_available;
use super::loaded::Loaded;
use crate::output::file::{self, Overwrite, Policy};
use crate::output::{perfetto, report};

/// What is exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportKind {
    /// `report.md` and its charts, in a directory.
    Report,
    /// One Chrome trace-event JSON file for Perfetto UI and chrome://tracing.
    Perfetto,
}

impl ExportKind {
    /// What the export writes, for the window.
    fn what(self) -> &'static str {
        match self {
            ExportKind::Report => {
                "report.html (one interactive page that opens in any browser) and report.md \
                 with the summary, the peak and what was live, the top ops, fragmentation and \
                 OOM verdicts, plus PNG/SVG charts — what `vramscope report` writes."
            }
            ExportKind::Perfetto => {
                "Chrome trace-event JSON: memory counter tracks and the ops as slices, for \
                 ui.perfetto.dev and chrome://tracing — what `vramscope export` writes."
            }
        }
    }

    fn title(self) -> &'static str {
        match self {
            ExportKind::Report => "Export report",
            ExportKind::Perfetto => "Export for Perfetto",
        }
    }
}

/// Where an export stands.
enum State {
    /// Asking where; the reason the last attempt was refused.
    Editing(Option<String>),
    /// The desktop's dialog is open.
    Choosing(Receiver<Option<PathBuf>>),
    /// Writing on a thread since then.
    Writing(Receiver<Result<String, String>>, Instant),
    /// Finished: what was written, or why not.
    Done(Result<String, String>),
}

/// The export window of one document.
pub struct ExportWindow {
    /// What it exports.
    pub kind: ExportKind,
    data: Arc<Loaded>,
    /// The destination typed or chosen.
    pub path_text: String,
    /// Whether an existing destination may be replaced.
    pub replace: bool,
    state: State,
}

impl ExportWindow {
    /// A window exporting `data`, its destination prefilled next to the input file.
    pub fn new(kind: ExportKind, data: Arc<Loaded>) -> ExportWindow {
        let path_text = default_destination(kind, &data.path).display().to_string();
        ExportWindow {
            kind,
            data,
            path_text,
            replace: false,
            state: State::Editing(None),
        }
    }

    /// Whether it is writing (or its dialog is open).
    pub fn busy(&self) -> bool {
        matches!(self.state, State::Writing(..) | State::Choosing(_))
    }

    /// What the last export wrote (`Ok`), or why it failed or was refused (`Err`).
    #[cfg(test)]
    pub fn outcome(&self) -> Option<Result<&str, &str>> {
        match &self.state {
            State::Done(r) => Some(r.as_deref().map_err(String::as_str)),
            State::Editing(Some(why)) => Some(Err(why)),
            _ => None,
        }
    }

    /// Check the destination and start writing (what the Export button does).
    pub fn start(&mut self, ctx: &egui::Context) {
        let dest = PathBuf::from(self.path_text.trim());
        if let Err(why) = check_destination(self.kind, &dest, &self.data.path, self.replace) {
            self.state = State::Editing(Some(why));
            return;
        }
        let (tx, rx) = bounded(1);
        let (kind, data, ctx) = (self.kind, self.data.clone(), ctx.clone());
        let replace = self.replace;
        let spawned = std::thread::Builder::new()
            .name("vramscope-export".into())
            .spawn(move || {
                let _ = tx.send(write(kind, &data, &dest, replace));
                ctx.request_repaint();
            });
        self.state = match spawned {
            Ok(_) => State::Writing(rx, Instant::now()),
            Err(e) => State::Done(Err(format!("cannot start the export thread: {e}"))),
        };
    }

    fn poll(&mut self) {
        match &self.state {
            State::Writing(rx, _) => match rx.try_recv() {
                Ok(result) => self.state = State::Done(result),
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => {
                    self.state = State::Done(Err("the export thread stopped".into()));
                }
            },
            State::Choosing(rx) => match rx.try_recv() {
                Ok(picked) => {
                    if let Some(p) = picked {
                        self.path_text = p.display().to_string();
                        // The desktop's dialog has already asked about replacing.
                        self.replace = true;
                    }
                    self.state = State::Editing(None);
                }
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => self.state = State::Editing(None),
            },
            _ => {}
        }
    }

    fn browse(&mut self, ctx: &egui::Context) {
        let (tx, rx) = bounded(1);
        let current = PathBuf::from(self.path_text.trim());
        let (kind, ctx) = (self.kind, ctx.clone());
        let spawned = std::thread::Builder::new()
            .name("vramscope-save-dialog".into())
            .spawn(move || {
                let dir = current.parent().map(Path::to_path_buf).unwrap_or_default();
                let dialog = rfd::FileDialog::new()
                    .set_title(kind.title())
                    .set_directory(dir);
                let picked = match kind {
                    ExportKind::Report => dialog.pick_folder(),
                    ExportKind::Perfetto => dialog
                        .set_file_name(
                            current
                                .file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default(),
                        )
                        .add_filter("Chrome trace JSON", &["json"])
                        .save_file(),
                };
                let _ = tx.send(picked);
                ctx.request_repaint();
            });
        if let Ok(_handle) = spawned {
            self.state = State::Choosing(rx);
        }
    }

    /// Draw the window; `false` once the user closed it.
    pub fn window_ui(&mut self, ctx: &egui::Context) -> bool {
        self.poll();
        let mut open = true;
        let mut close = false;
        egui::Window::new(self.kind.title())
            .open(&mut open)
            .collapsible(false)
            .resizable(false)
            .default_width(560.0)
            .pivot(egui::Align2::CENTER_CENTER)
            .default_pos(ctx.content_rect().center())
            .show(ctx, |ui| close = self.body_ui(ui));
        if self.busy() {
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
        open && !close
    }

    /// The window's contents; `true` when the user asked to close it.
    fn body_ui(&mut self, ui: &mut Ui) -> bool {
        ui.label(self.kind.what());
        ui.add_space(6.0);
        let editable = matches!(self.state, State::Editing(_) | State::Done(_));
        ui.horizontal(|ui| {
            ui.label(match self.kind {
                ExportKind::Report => "Directory",
                ExportKind::Perfetto => "File",
            });
            let field = egui::TextEdit::singleline(&mut self.path_text)
                .desired_width(380.0)
                .id_salt("export-path");
            if ui.add_enabled(editable, field).changed() {
                self.state = State::Editing(None);
            }
            let browse =
                ui.add_enabled(editable && portal_available(), egui::Button::new("Browse…"));
            if browse
                .on_disabled_hover_text("No desktop portal: type the path")
                .clicked()
            {
                self.browse(ui.ctx());
            }
        });
        ui.checkbox(&mut self.replace, "Replace what is already there");
        ui.add_space(6.0);
        let mut close = false;
        match &self.state {
            State::Editing(why) => {
                if let Some(why) = why {
                    ui.label(RichText::new(why).color(ui.visuals().warn_fg_color));
                }
            }
            State::Choosing(_) => {
                ui.label("Choosing in the desktop's dialog…");
            }
            State::Writing(_, since) => {
                ui.horizontal(|ui| {
                    ui.spinner();
                    ui.label(format!(
                        "Writing… {}",
                        super::units::format_elapsed(since.elapsed())
                    ));
                });
            }
            State::Done(Ok(what)) => {
                ui.label(RichText::new(format!("✔ {what}")).strong());
            }
            State::Done(Err(why)) => {
                ui.label(RichText::new(why).color(ui.visuals().error_fg_color));
            }
        }
        ui.add_space(4.0);
        ui.horizontal(|ui| {
            if ui
                .add_enabled(editable, egui::Button::new("Export"))
                .clicked()
            {
                self.start(ui.ctx());
            }
            if let State::Done(Ok(_)) = self.state
                && ui.button("Copy path").clicked()
            {
                ui.ctx().copy_text(self.path_text.trim().to_owned());
            }
            if ui.button("Close").clicked() {
                close = true;
            }
        });
        close
    }
}

/// Where an export of `input` goes unless the user says otherwise: beside it, named after
/// it (`run.json.gz` → `run-report/`, `run.perfetto.json`).
pub fn default_destination(kind: ExportKind, input: &Path) -> PathBuf {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "vramscope".into());
    let mut stem = name.as_str();
    for ext in [
        ".gz",
        ".json",
        ".pickle",
        ".pkl",
        ".sqlite",
        ".vrec",
        ".vramscope",
    ] {
        if let Some(s) = stem.strip_suffix(ext)
            && !s.is_empty()
        {
            stem = s;
        }
    }
    let dir = input.parent().unwrap_or(Path::new("."));
    match kind {
        ExportKind::Report => dir.join(format!("{stem}-report")),
        ExportKind::Perfetto => dir.join(format!("{stem}.perfetto.json")),
    }
}

/// The file policy of an export of `input`: replace only when the user ticked "Replace".
fn policy<'a>(inputs: &'a [&'a Path], replace: bool) -> Policy<'a> {
    let overwrite = if replace {
        Overwrite::Replace
    } else {
        Overwrite::Refuse {
            hint: "tick \"Replace\" to overwrite it",
        }
    };
    Policy::new(overwrite, inputs)
}

/// Whether `dest` may be written, by the policy every writer follows; why not otherwise.
fn check_destination(
    kind: ExportKind,
    dest: &Path,
    input: &Path,
    replace: bool,
) -> Result<(), String> {
    if dest.as_os_str().is_empty() {
        return Err("Type where to write.".into());
    }
    let inputs = [input];
    let policy = policy(&inputs, replace);
    let checked = match kind {
        ExportKind::Perfetto => file::check(dest, &policy),
        ExportKind::Report => file::check_dir(dest, &policy, &report::REPORT_SHAPE).map(|_| ()),
    };
    checked.map_err(|e| e.to_string())
}

/// Write the export through [`crate::output`], by the same policy; a line saying what was
/// written.
fn write(kind: ExportKind, data: &Loaded, dest: &Path, replace: bool) -> Result<String, String> {
    let inputs = [data.path.as_path()];
    let policy = policy(&inputs, replace);
    let said = |e: file::FileError| format!("{:#}", anyhow::Error::from(e));
    match kind {
        ExportKind::Report => {
            let input = report::Analysed {
                name: &data.name,
                rec: &data.rec,
                timeline: &data.timeline,
                summary: &data.summary,
            };
            let overview = report::Overview::default();
            report::write_analysed(dest, &[input], &overview, &policy).map_err(said)?;
            Ok(format!(
                "Wrote {} and {}",
                dest.join("report.md").display(),
                report::HTML_NAME
            ))
        }
        ExportKind::Perfetto => {
            let bytes =
                perfetto::write_file(dest, &policy, &data.rec, &data.timeline).map_err(said)?;
            Ok(format!(
                "Wrote {} ({})",
                dest.display(),
                super::units::bytes(i64::try_from(bytes).unwrap_or(i64::MAX))
            ))
        }
    }
}
