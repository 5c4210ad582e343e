//! `vramscope view` (and `vramscope FILE…`): open the viewer on the files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::LoadArgs;
use super::input::load_options;

/// Run the viewer until its window closes.
pub fn run(paths: Vec<PathBuf>, load: LoadArgs) -> Result<ExitCode> {
    crate::gui::run(paths, load_options(load))?;
    Ok(ExitCode::SUCCESS)
}
