//! `vramscope summary`: peak, reserved and final memory per device, and the facts of the
//! trace; of several inputs (ranks), one row per input and device and what they say
//! together.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use collector::analysis;
use collector::analysis::ranks::fleet;
use collector::parse::SpanFilter;
use collector::parse::recording::packed;

use super::input::{Inputs, inputs, load_options, open_spans, summarize_many};
use super::{Format, LoadArgs};
use crate::output::ranks::{RanksView, ranks_json, ranks_text};
use crate::output::style::Paint;
use crate::output::summary::{summary_json, summary_text};

/// Summarise `paths` on `out`: one file as it always was, several as a fleet.
pub fn run(
    out: &mut impl Paint,
    paths: &[PathBuf],
    format: Format,
    load: LoadArgs,
) -> Result<ExitCode> {
    let found = match inputs(paths)? {
        Inputs::One(path) => return run_one(out, &path, format, load),
        Inputs::Many(found) => found,
    };
    let ranks = summarize_many(&found.files, load)?;
    let fleet = fleet(&ranks);
    let view = RanksView {
        inputs: &ranks,
        fleet: &fleet,
        skipped: found.skipped,
    };
    match format {
        Format::Text => ranks_text(out, &view)?,
        Format::Json => ranks_json(out, &view)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn run_one(out: &mut impl Paint, path: &Path, format: Format, load: LoadArgs) -> Result<ExitCode> {
    // A pack stores its summary, as computed from its events when it was written: used when
    // the pack is whole and was written by this build, else computed as for any input.
    let summary = match packed::stored_summary(path, load_options(load)) {
        Some(stored) => stored.summary,
        None => {
            // Summary reads a few spans: the rest are held compressed until it has taken
            // those, then counted, not kept (peak memory below a tenth of a large trace's size).
            let mut rec = open_spans(path, load, SpanFilter::SummaryCompact)?;
            analysis::summarize_compact(&mut rec).1
        }
    };
    match format {
        Format::Text => summary_text(out, path, &summary)?,
        Format::Json => summary_json(out, path, &summary)?,
    }
    Ok(ExitCode::SUCCESS)
}
