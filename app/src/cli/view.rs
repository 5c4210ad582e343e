//! `vramscope view` (and `vramscope FILE…`): open the viewer on the files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::LoadArgs;
use super::input::load_options;

/// Run the viewer until its window closes.
pub fn run(paths: Vec<PathBuf>, load: LoadArgs) -> Result<ExitCode> {
    // Before the window's threads start: a signal removes an export's temporary.
    crate::output::file::guard_signals();
    crate::gui::run(paths, load_options(load))?;
    Ok(ExitCode::SUCCESS)
}
