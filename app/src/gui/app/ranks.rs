//! The viewer's side of the rank grid: several inputs (or a folder) open as a grid, a
//! click on a rank opens its tab, and the linked cursor: the grid's time since each rank's
//! start, and each linked tab's inspector at its own start plus that time.

use std::path::PathBuf;

use super::super::Command;
use super::super::ranks::{FolderDialog, RankGrid};
use super::ViewerApp;
use super::commands::inspect_request;

/// Files named on the command line from which they open as a rank grid rather than as
/// tabs. Two files stay two tabs: that is a comparison (the Compare panel), the common case
/// of `view a b`; a directory always opens as a grid.
pub const GRID_MIN_FILES: usize = 3;

impl ViewerApp {
    /// Open the inputs of the command line: one or two files in tabs; more, when their names
    /// make them the ranks of one run (`collector::analysis::ranks::one_run_by_names`), or a
    /// directory, as a rank grid. Other files open in tabs; View › "Open the tabs as a rank
    /// grid" asks for the grid anyway.
    pub fn open_inputs(&mut self, ctx: &egui::Context, paths: Vec<PathBuf>) {
        let names: Vec<String> = paths
            .iter()
            .map(|p| {
                p.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            })
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let ranks =
            paths.len() >= GRID_MIN_FILES && collector::analysis::ranks::one_run_by_names(&names);
        if ranks || paths.iter().any(|p| p.is_dir()) {
            self.apply(ctx, Command::OpenGrid(paths));
        } else {
            self.open(ctx, paths);
        }
    }

    /// Apply a command of the grid.
    pub(super) fn apply_grid(&mut self, ctx: &egui::Context, cmd: Command) {
        match cmd {
            Command::OpenGrid(paths) => {
                self.grid = Some(RankGrid::start(paths, self.options, ctx));
            }
            Command::GridOfTabs => {
                let paths = self.docs.iter().map(|d| d.data.path.clone()).collect();
                self.apply_grid(ctx, Command::OpenGrid(paths));
            }
            Command::OpenFolderDialog => self.open_folder_dialog(ctx),
            Command::ShowGrid(shown) => {
                if let Some(g) = &mut self.grid {
                    g.shown = shown;
                }
            }
            Command::CancelGrid => {
                if let Some(l) = self.grid.as_ref().and_then(|g| g.load.as_ref()) {
                    l.cancel();
                }
            }
            Command::GridCursor(rel_ns) => self.move_linked_cursor(None, Some(rel_ns)),
            Command::OpenRank(input, at_rel_ns) => self.open_rank(ctx, input, at_rel_ns),
            _ => {}
        }
    }

    fn open_folder_dialog(&mut self, ctx: &egui::Context) {
        if self.folder_dialog.is_some() {
            return;
        }
        let native = super::super::files::portal_available()
            .then(|| FolderDialog::start(&self.browser.dir, ctx).ok())
            .flatten();
        match native {
            Some(d) => self.folder_dialog = Some(d),
            // No portal: the built-in browser, whose "Open this folder as ranks" does it.
            None => self.browser.open = true,
        }
    }

    fn open_rank(&mut self, ctx: &egui::Context, input: usize, at_rel_ns: Option<i64>) {
        let Some(g) = &mut self.grid else { return };
        let Some(path) = g
            .grid
            .as_ref()
            .and_then(|gr| gr.inputs.get(input))
            .map(|i| i.path.clone())
        else {
            return;
        };
        g.shown = false;
        if let Some(rel) = at_rel_ns {
            g.cursor_rel_ns = Some(rel);
        }
        // The rank's tab, once it is open, shows it; until then, its load.
        self.active = None;
        self.open(ctx, vec![path]);
        // Already open: its tab moves to the cursor now (a new one opens at it).
        let cursor = self.grid.as_ref().and_then(|g| g.cursor_rel_ns);
        self.move_linked_cursor(None, cursor);
    }

    /// The grid, its load and the folder dialog: take what finished.
    pub(super) fn poll_grid(&mut self, ctx: &egui::Context) {
        if let Some(g) = &mut self.grid {
            g.poll();
        }
        if let Some(dir) = self.folder_dialog.as_ref().and_then(FolderDialog::poll) {
            self.folder_dialog = None;
            if let Some(dir) = dir {
                self.apply(ctx, Command::OpenGrid(vec![dir]));
            }
        }
    }

    /// A document just opened: show it; when it is one of the grid's ranks, link it, and
    /// return where its cursor goes (the linked cursor, on its own start).
    pub(super) fn link_document(&mut self, id: u64, path: &std::path::Path) -> Option<i64> {
        let g = self.grid.as_mut()?;
        // A document that opens is shown, from the grid or not (dropped, File › Open).
        g.shown = false;
        let input = g.input_of(path)?;
        g.links.retain(|l| l.0 != id);
        g.links.push((id, input));
        g.cursor_abs_ns(input)
    }

    /// An instant inspected in the active document: when it is linked, the grid's cursor
    /// and the other linked tabs follow.
    pub(super) fn follow_inspect(&mut self, at_ns: i64) {
        let Some(id) = self.active else { return };
        let Some(g) = &self.grid else { return };
        let Some(input) = g.linked_input(id) else {
            return;
        };
        let Some(start) = g
            .grid
            .as_ref()
            .and_then(|gr| gr.starts_ns.get(input))
            .copied()
        else {
            return;
        };
        self.move_linked_cursor(Some(id), Some(at_ns - start));
    }

    /// Put the linked cursor at `rel_ns` since each rank's start, in the grid and in every
    /// linked tab but `except` (the one that moved it).
    fn move_linked_cursor(&mut self, except: Option<u64>, rel_ns: Option<i64>) {
        let Some(rel_ns) = rel_ns else { return };
        let Some(g) = &mut self.grid else { return };
        g.cursor_rel_ns = Some(rel_ns);
        g.links.retain(|l| self.docs.iter().any(|d| d.id == l.0));
        let targets: Vec<(u64, i64)> = g
            .links
            .iter()
            .filter(|l| Some(l.0) != except)
            .filter_map(|&(id, input)| Some((id, g.cursor_abs_ns(input)?)))
            .collect();
        let mut requests = Vec::new();
        for (id, at_ns) in targets {
            if let Some(doc) = self.docs.iter_mut().find(|d| d.id == id)
                && doc.panels.inspect.target.map(|t| t.at_ns) != Some(at_ns)
            {
                requests.push(inspect_request(doc, at_ns, false));
            }
        }
        for r in requests {
            self.submit(r);
        }
    }

    /// Whether the central area shows the grid.
    pub(super) fn grid_shown(&self) -> bool {
        self.grid
            .as_ref()
            .is_some_and(|g| g.shown || (self.active.is_none() && self.loads.is_empty()))
    }
}

#[cfg(test)]
impl ViewerApp {
    /// The rank grid, when one is open.
    pub fn rank_grid(&self) -> Option<&RankGrid> {
        self.grid.as_ref()
    }
}
