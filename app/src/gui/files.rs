//! Choosing files: the desktop's native dialog over the XDG portal (rfd, on its own named
//! thread so the window keeps drawing), an in-app file browser that always works —
//! under Xvfb or on a minimal desktop there is no portal — and the recent-files list.

use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, TryRecvError, bounded};
use egui::{RichText, ScrollArea, Ui};

use super::Command;
use super::units;

/// Recent files kept.
pub const MAX_RECENT: usize = 12;

/// Whether a desktop portal can be reached: the session bus must exist. Without one rfd
/// would fail, so "Open…" goes straight to the in-app browser.
pub fn portal_available() -> bool {
    std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|v| !v.is_empty())
}

/// The native dialog, running.
pub struct NativeDialog {
    rx: Receiver<Option<Vec<PathBuf>>>,
}

impl NativeDialog {
    /// Open the dialog on a thread; `ctx` is woken when the user has chosen.
    pub fn start(dir: &Path, ctx: &egui::Context) -> std::io::Result<NativeDialog> {
        let (tx, rx) = bounded(1);
        let (dir, ctx) = (dir.to_path_buf(), ctx.clone());
        std::thread::Builder::new()
            .name("vramscope-file-dialog".into())
            .spawn(move || {
                let picked = open_dialog_filters(rfd::FileDialog::new())
                    .set_title("Open traces or snapshots")
                    .set_directory(dir)
                    .pick_files();
                let _ = tx.send(picked);
                ctx.request_repaint();
            })?;
        Ok(NativeDialog { rx })
    }

    /// `Some` once the dialog closed: the files chosen (empty when cancelled or failed).
    pub fn poll(&self) -> Option<Vec<PathBuf>> {
        match self.rx.try_recv() {
            Ok(files) => Some(files.unwrap_or_default()),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Vec::new()),
        }
    }
}

/// The open dialog's filters: every format vramscope reads first (by its usual file
/// endings), then each format alone, then all files — formats are recognised by content,
/// so a renamed file opens too. (The portal turns `json.gz` into the glob `*.json.gz`,
/// and `*` into `*`.)
fn open_dialog_filters(dialog: rfd::FileDialog) -> rfd::FileDialog {
    use collector::model::SourceFormat;
    let endings = |format: SourceFormat| format.importer().file_extensions().to_vec();
    let mut every: Vec<&str> = SourceFormat::ALL.into_iter().flat_map(endings).collect();
    every.sort_unstable();
    every.dedup();
    let mut dialog = dialog.add_filter("Traces, snapshots and recordings", &every);
    for format in SourceFormat::ALL {
        dialog = dialog.add_filter(format.describe(), &endings(format));
    }
    dialog.add_filter("All files", &["*"])
}

/// One entry of a listed directory.
struct Entry {
    name: String,
    path: PathBuf,
    dir: bool,
    bytes: u64,
}

/// The in-app file browser.
pub struct FileBrowser {
    /// Whether its window is shown.
    pub open: bool,
    /// The directory shown.
    pub dir: PathBuf,
    listed: Option<PathBuf>,
    entries: Vec<Entry>,
    error: Option<String>,
    filter: String,
    path_text: String,
}

impl FileBrowser {
    /// A closed browser starting in `dir`.
    pub fn new(dir: PathBuf) -> FileBrowser {
        FileBrowser {
            open: false,
            path_text: dir.display().to_string(),
            dir,
            listed: None,
            entries: Vec::new(),
            error: None,
            filter: String::new(),
        }
    }

    fn go(&mut self, dir: PathBuf) {
        self.path_text = dir.display().to_string();
        self.dir = dir;
        self.filter.clear();
    }

    fn list(&mut self) {
        if self.listed.as_ref() == Some(&self.dir) {
            return;
        }
        self.listed = Some(self.dir.clone());
        self.entries.clear();
        self.error = None;
        match std::fs::read_dir(&self.dir) {
            Ok(read) => {
                for e in read.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with('.') {
                        continue;
                    }
                    let meta = std::fs::metadata(e.path()).ok();
                    self.entries.push(Entry {
                        dir: meta.as_ref().is_some_and(std::fs::Metadata::is_dir),
                        bytes: meta.map_or(0, |m| m.len()),
                        path: e.path(),
                        name,
                    });
                }
                self.entries.sort_by(|a, b| {
                    b.dir
                        .cmp(&a.dir)
                        .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
                });
            }
            Err(e) => self.error = Some(format!("{}: {e}", self.dir.display())),
        }
    }

    /// Show the browser window.
    pub fn window_ui(&mut self, ctx: &egui::Context, cmds: &mut Vec<Command>) {
        if !self.open {
            return;
        }
        self.list();
        let mut open = self.open;
        let mut go_to = None;
        egui::Window::new("Open a trace or snapshot")
            .open(&mut open)
            .default_size([560.0, 420.0])
            .pivot(egui::Align2::CENTER_CENTER)
            .default_pos(ctx.content_rect().center())
            .collapsible(false)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    if ui.button("⬆ Up").clicked() {
                        go_to = self.dir.parent().map(Path::to_path_buf);
                    }
                    let edit = ui.add(
                        egui::TextEdit::singleline(&mut self.path_text)
                            .desired_width(f32::INFINITY),
                    );
                    if edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                        let p = PathBuf::from(&self.path_text);
                        if p.is_dir() {
                            go_to = Some(p);
                        } else if p.is_file() {
                            cmds.push(Command::Open(vec![p]));
                            self.open = false;
                        }
                    }
                });
                ui.horizontal(|ui| {
                    ui.add(egui::TextEdit::singleline(&mut self.filter).hint_text("filter"));
                    self.open &= !open_as_ranks_ui(ui, &self.dir, cmds);
                });
                if let Some(e) = &self.error {
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
                ui.separator();
                let needle = self.filter.to_lowercase();
                let shown: Vec<&Entry> = self
                    .entries
                    .iter()
                    .filter(|e| needle.is_empty() || e.name.to_lowercase().contains(&needle))
                    .collect();
                ScrollArea::vertical()
                    .auto_shrink([false, false])
                    .show_rows(ui, 20.0, shown.len(), |ui, range| {
                        for e in shown.iter().skip(range.start).take(range.len()) {
                            ui.horizontal(|ui| {
                                let label = if e.dir {
                                    format!("📁 {}", e.name)
                                } else {
                                    e.name.clone()
                                };
                                if ui.selectable_label(false, label).clicked() {
                                    if e.dir {
                                        go_to = Some(e.path.clone());
                                    } else {
                                        cmds.push(Command::Open(vec![e.path.clone()]));
                                        self.open = false;
                                    }
                                }
                                if !e.dir {
                                    ui.label(RichText::new(units::bytes(e.bytes as i64)).weak());
                                }
                            });
                        }
                    });
            });
        if let Some(d) = go_to {
            self.go(d);
        }
        self.open &= open;
    }
}

/// The browser's "Open this folder as ranks": whether it was clicked.
fn open_as_ranks_ui(ui: &mut Ui, dir: &Path, cmds: &mut Vec<Command>) -> bool {
    let clicked = ui
        .button("Open this folder as ranks")
        .on_hover_text("Every input under it, as a rank grid")
        .clicked();
    if clicked {
        cmds.push(Command::OpenGrid(vec![dir.to_path_buf()]));
    }
    clicked
}

/// Recent files, most recent first, as stored in the settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recent {
    /// The files.
    pub paths: Vec<PathBuf>,
}

impl Recent {
    /// Put `path` first.
    pub fn push(&mut self, path: &Path) {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.paths.retain(|p| p != &path);
        self.paths.insert(0, path);
        self.paths.truncate(MAX_RECENT);
    }

    /// As JSON, for eframe's storage.
    pub fn to_json(&self) -> String {
        let list: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        serde_json::to_string(&list).unwrap_or_default()
    }

    /// From [`Self::to_json`]; anything unreadable gives an empty list.
    pub fn from_json(s: &str) -> Recent {
        let list: Vec<String> = serde_json::from_str(s).unwrap_or_default();
        Recent {
            paths: list
                .into_iter()
                .map(PathBuf::from)
                .take(MAX_RECENT)
                .collect(),
        }
    }

    /// Menu entries; a click opens the file.
    pub fn menu_ui(&self, ui: &mut Ui, cmds: &mut Vec<Command>) {
        if self.paths.is_empty() {
            ui.label(RichText::new("No recent files").weak());
            return;
        }
        for p in &self.paths {
            let name = p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            if ui
                .button(name)
                .on_hover_text(p.display().to_string())
                .clicked()
            {
                cmds.push(Command::Open(vec![p.clone()]));
                ui.close();
            }
        }
        ui.separator();
        if ui.button("Clear recent files").clicked() {
            cmds.push(Command::ClearRecent);
            ui.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_files_dedupe_cap_and_round_trip() {
        let mut r = Recent::default();
        for i in 0..20 {
            r.push(Path::new(&format!("/nonexistent/trace-{i}.json")));
        }
        r.push(Path::new("/nonexistent/trace-3.json"));
        assert_eq!(r.paths.len(), MAX_RECENT);
        assert_eq!(r.paths[0], PathBuf::from("/nonexistent/trace-3.json"));
        assert_eq!(
            r.paths
                .iter()
                .filter(|p| p.ends_with("trace-3.json"))
                .count(),
            1
        );
        assert_eq!(Recent::from_json(&r.to_json()), r);
        assert!(Recent::from_json("not json").paths.is_empty());
    }
}
