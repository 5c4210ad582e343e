//! The rank grid: many ranks' allocated memory as a ranks × time heat map (one row per
//! rank and device, by rank; the worst rank marked), loaded in the background. Hovering a
//! cell reads it out, clicking a rank opens it in a tab, and the grid's time cursor and
//! the cursors of the rank tabs move together — on time since each rank's own start.

mod facts;
mod heat;
mod load;
mod view;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use collector::LoadOptions;
use collector::analysis::ranks::grid::Grid;
use crossbeam_channel::{Receiver, TryRecvError, bounded};
use egui::TextureHandle;

pub use facts::grid_tab_ui;
pub use load::GridLoad;
pub use view::grid_ui;

/// What the pointer is over in the heat map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HoverCell {
    /// The row.
    pub row: usize,
    /// The column.
    pub column: usize,
    /// Time under the pointer, ns since the rank's start.
    pub at_rel_ns: i64,
}

/// The rank grid and how it is being looked at.
pub struct RankGrid {
    /// The load in flight.
    pub load: Option<GridLoad>,
    /// The grid, once loaded.
    pub grid: Option<Arc<Grid>>,
    /// Inputs that could not be read, and why; or why the grid could not be loaded.
    pub errors: Vec<String>,
    /// Files under the directories that are no input.
    pub skipped: u64,
    /// Whether the grid is shown rather than a document.
    pub shown: bool,
    /// The linked cursor: ns since each rank's start.
    pub cursor_rel_ns: Option<i64>,
    /// The open documents of the grid's ranks: (document id, input index).
    pub links: Vec<(u64, usize)>,
    /// The cell under the pointer last frame.
    pub hover: Option<HoverCell>,
    /// Where the heat map was drawn last frame (its full height, scrolled or not).
    pub last_heat_rect: Option<egui::Rect>,
    /// Where the time ruler was drawn last frame.
    pub last_ruler_rect: Option<egui::Rect>,
    /// Height of a row last frame.
    pub row_height: f32,
    textures: Option<(bool, Vec<TextureHandle>)>,
}

impl RankGrid {
    /// A grid of `paths`, loading.
    pub fn start(paths: Vec<PathBuf>, options: LoadOptions, ctx: &egui::Context) -> RankGrid {
        RankGrid {
            load: Some(GridLoad::start(paths, options, ctx)),
            grid: None,
            errors: Vec::new(),
            skipped: 0,
            shown: true,
            cursor_rel_ns: None,
            links: Vec::new(),
            hover: None,
            last_heat_rect: None,
            last_ruler_rect: None,
            row_height: 0.0,
            textures: None,
        }
    }

    /// Take the load's result once there is one.
    pub fn poll(&mut self) {
        let Some(result) = self.load.as_ref().and_then(GridLoad::poll) else {
            return;
        };
        self.load = None;
        match result {
            Ok(loaded) => {
                self.grid = Some(Arc::new(loaded.grid));
                self.errors = loaded.errors;
                self.skipped = loaded.skipped;
            }
            Err(e) => self.errors.push(e),
        }
    }

    /// The input whose file is `path`, if any.
    pub fn input_of(&self, path: &Path) -> Option<usize> {
        let grid = self.grid.as_ref()?;
        let canonical = |p: &Path| std::fs::canonicalize(p).ok();
        let want = canonical(path)?;
        grid.inputs
            .iter()
            .position(|i| canonical(&i.path).as_ref() == Some(&want))
    }

    /// A document's absolute time at the linked cursor, for input `input`.
    pub fn cursor_abs_ns(&self, input: usize) -> Option<i64> {
        let start = *self.grid.as_ref()?.starts_ns.get(input)?;
        Some(start.saturating_add(self.cursor_rel_ns?))
    }

    /// The input a document shows, when it is one of the grid's.
    pub fn linked_input(&self, doc: u64) -> Option<usize> {
        self.links.iter().find(|l| l.0 == doc).map(|l| l.1)
    }
}

/// The desktop's folder dialog, running on its own thread.
pub struct FolderDialog {
    rx: Receiver<Option<PathBuf>>,
}

impl FolderDialog {
    /// Open the dialog; `ctx` is woken when the user has chosen.
    pub fn start(dir: &Path, ctx: &egui::Context) -> std::io::Result<FolderDialog> {
        let (tx, rx) = bounded(1);
        let (dir, ctx) = (dir.to_path_buf(), ctx.clone());
        std::thread::Builder::new()
            .name("vramscope-folder-dialog".into())
            .spawn(move || {
                let picked = rfd::FileDialog::new()
                    .set_title("Open a folder of ranks")
                    .set_directory(dir)
                    .pick_folder();
                let _ = tx.send(picked);
                ctx.request_repaint();
            })?;
        Ok(FolderDialog { rx })
    }

    /// `Some` once the dialog closed: the folder, or `None` when cancelled.
    pub fn poll(&self) -> Option<Option<PathBuf>> {
        match self.rx.try_recv() {
            Ok(dir) => Some(dir),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(None),
        }
    }
}
