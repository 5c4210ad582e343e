//! `vramscope view`: the desktop viewer (eframe/egui, glow renderer, X11).
//!
//! The app owns the open documents, the files being loaded and the analysis worker.
//! Panels read the state and push [`Command`]s, applied after the frame (eframe_template,
//! rerun's `SystemCommand`), so no panel mutates what another is drawing. Only UI
//! preferences persist: the theme, the recent files, the browser's directory.

mod allocations;
mod app;
mod axis;
mod categories;
mod compare;
mod doc;
mod export;
mod files;
mod follow;
mod fonts_warm;
mod jobs;
mod loaded;
mod loader;
mod loading;
mod multiples;
mod names;
mod oom;
mod paint;
mod panels;
mod ranks;
mod summary;
mod theme;
mod timeline;
mod units;
mod window;

#[cfg(test)]
mod bench;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use collector::LoadOptions;
use collector::analysis::TimeWindow;
use collector::model::DeviceIdx;

pub use app::ViewerApp;
use export::ExportKind;
use panels::PanelId;
use theme::ThemeChoice;

/// Something a panel asks for, applied after the frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Open these files (each in a tab).
    Open(Vec<PathBuf>),
    /// Show the native file dialog (or the built-in browser where there is no portal).
    OpenDialog,
    /// Ctrl+F: focus the shown panel's search field (the op table's filter, the allocation
    /// view's search), bringing the op table forward where the panel shown has none.
    FocusSearch,
    /// Show the built-in file browser.
    OpenBrowser,
    /// Stop loading the i-th pending file.
    CancelLoad(usize),
    /// Close a document.
    Close(u64),
    /// Show a document.
    Activate(u64),
    /// Show another device of the active document.
    SetDevice(DeviceIdx),
    /// Show the whole recording.
    ResetView,
    /// Select a time range for the table (`None` clears it).
    Select(Option<TimeWindow>),
    /// Inspect an instant (absolute ns) on the shown device.
    Inspect(i64),
    /// Inspect the instant the snapshot was taken, from the allocator's own blocks.
    InspectSnapshot,
    /// Highlight when a table row's op ran (`None` clears).
    HighlightOp(Option<String>),
    /// Compare the active document with another (`None` stops comparing).
    CompareWith(Option<u64>),
    /// Show this bottom panel.
    SetTab(PanelId),
    /// Switch theme.
    SetTheme(ThemeChoice),
    /// Show the op stack in the lanes under the timeline (or the NVTX ranges again).
    ShowOpLanes(bool),
    /// Forget the recent files.
    ClearRecent,
    /// Open the export window for the active document.
    Export(ExportKind),
    /// Hide an error.
    DismissError(usize),
    /// Estimate the active document's peaks under each memory-saving technique.
    Advise(collector::analysis::advise::Options),
    /// Show these inputs (files, directories) as a rank grid.
    OpenGrid(Vec<PathBuf>),
    /// Show the open tabs' files as a rank grid (asked for: files whose names do not make
    /// them ranks of one run open in tabs).
    GridOfTabs,
    /// Choose a folder to show as a rank grid.
    OpenFolderDialog,
    /// Show the rank grid (`true`) or the active document.
    ShowGrid(bool),
    /// Open the grid's i-th input in a tab, its cursor at this many ns since its start.
    OpenRank(usize, Option<i64>),
    /// Put the grid's linked cursor at this many ns since each rank's start.
    GridCursor(i64),
    /// Stop loading the grid.
    CancelGrid,
}

/// Open the viewer window on `paths` and run until it is closed.
pub fn run(paths: Vec<PathBuf>, options: LoadOptions) -> Result<()> {
    let viewport = egui::ViewportBuilder::default()
        .with_title("vramscope")
        .with_app_id("vramscope")
        .with_inner_size([1440.0, 900.0])
        .with_min_inner_size([760.0, 520.0])
        .with_drag_and_drop(true);
    let native = eframe::NativeOptions {
        viewport,
        ..Default::default()
    };
    eframe::run_native(
        "vramscope",
        native,
        Box::new(move |cc| {
            let mut app = ViewerApp::new(&cc.egui_ctx, cc.storage, Vec::new(), options);
            // Three or more files, or a directory, open as a rank grid.
            app.open_inputs(&cc.egui_ctx, paths);
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| anyhow!("{e}"))
}
