//! `vramscope summary`: peak, reserved and final memory per device, and the facts of the
//! trace; of several inputs (ranks), one row per input and device and what they say
//! together.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use collector::analysis::ranks::across_ranks;

use super::input::{Inputs, inputs, summarize_one, summarize_ranks};
use super::{Format, LoadArgs};
use crate::output::ranks::{RanksView, ranks_json, ranks_text};
use crate::output::style::Paint;
use crate::output::summary::{summary_json, summary_text};

/// Summarise `paths` on `out`: one file alone, several as ranks.
pub fn run(
    out: &mut impl Paint,
    paths: &[PathBuf],
    format: Format,
    load: LoadArgs,
) -> Result<ExitCode> {
    let found = match inputs(paths)? {
        Inputs::One(path) => return run_one(out, &path, format, load),
        Inputs::Ranks(found) => found,
    };
    let ranks = summarize_ranks(&found, load)?;
    let across = across_ranks(&ranks);
    let view = RanksView {
        inputs: &ranks,
        across: &across,
        skipped: found.skipped,
    };
    match format {
        Format::Text => ranks_text(out, &view)?,
        Format::Json => ranks_json(out, &view)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn run_one(out: &mut impl Paint, path: &Path, format: Format, load: LoadArgs) -> Result<ExitCode> {
    let summary = summarize_one(path, load)?.summary;
    match format {
        Format::Text => summary_text(out, path, &summary)?,
        Format::Json => summary_json(out, path, &summary)?,
    }
    Ok(ExitCode::SUCCESS)
}
