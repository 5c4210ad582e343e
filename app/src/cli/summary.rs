//! `vramscope summary`: peak, reserved and final memory per device, and the facts of the
//! trace.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use collector::{Timeline, analysis};

use super::input::open;
use super::{Format, LoadArgs};
use crate::output::style::Paint;
use crate::output::summary::{summary_json, summary_text};

/// Summarise `path` on `out`.
pub fn run(out: &mut impl Paint, path: &Path, format: Format, load: LoadArgs) -> Result<ExitCode> {
    let rec = open(path, load)?;
    let timeline = Timeline::build(&rec);
    let summary = analysis::summarize(&rec, &timeline);
    match format {
        Format::Text => summary_text(out, path, &summary)?,
        Format::Json => summary_json(out, path, &summary)?,
    }
    Ok(ExitCode::SUCCESS)
}
