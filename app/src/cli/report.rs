//! `vramscope report`: a directory for a bug report (report.md and charts) on the inputs;
//! of several inputs (or directories of them), a ranks overview at the top.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use collector::Timeline;
use collector::analysis::ranks::{RankInput, fleet, sort_inputs};
use collector::analysis::{self};

use super::LoadArgs;
use super::input::{Inputs, inputs as find_inputs, open};
use crate::output::file::{self, Overwrite, Policy};
use crate::output::ranks::{RanksView, ranks_markdown};
use crate::output::report::{REPORT_SHAPE, write_report, write_report_with};

/// Most inputs one report takes. A report holds every input's recording in memory and
/// draws its charts (for the 111 MB bench trace, ~30 MB and a second each), so a fleet
/// larger than this is for `summary`, which keeps one recording per core.
pub const MAX_REPORT_INPUTS: usize = 64;

/// Write the report on `paths` into the directory `output`, whole; an existing report
/// there is replaced only with `force` (never a directory holding an input or other files).
pub fn run(
    out: &mut impl Write,
    paths: &[PathBuf],
    output: &Path,
    force: bool,
    load: LoadArgs,
) -> Result<ExitCode> {
    file::guard_signals();
    let (files, skipped) = match find_inputs(paths)? {
        Inputs::One(path) => (vec![path], None),
        Inputs::Many(found) => (found.files, Some(found.skipped)),
    };
    if files.len() > MAX_REPORT_INPUTS {
        bail!(
            "{} inputs: a report takes at most {MAX_REPORT_INPUTS}; `vramscope summary` reads \
             any number (the worst rank, the skew), then report on the ranks it names",
            files.len()
        );
    }
    let mut input_paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    input_paths.extend(files.iter().map(PathBuf::as_path));
    let policy = Policy::new(Overwrite::from_force(force), &input_paths);
    // Refused before the inputs are read, not after.
    file::check_dir(output, &policy, &REPORT_SHAPE)?;
    let mut inputs = Vec::with_capacity(files.len());
    let mut ranks = Vec::new();
    for path in &files {
        // The file name only, so reports compare across machines.
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let rec = open(path, load)?;
        if skipped.is_some() {
            let summary = analysis::summarize(&rec, &Timeline::build(&rec));
            ranks.push(RankInput::new(name.clone().into(), &rec.meta, summary));
        }
        inputs.push((name, rec));
    }
    match skipped {
        // One file: its report alone.
        None => write_report(output, &inputs, &policy)?,
        Some(skipped) => {
            let overview = overview(&mut ranks, skipped);
            write_report_with(output, &inputs, &overview, &policy)?;
        }
    }
    writeln!(out, "wrote {}", output.join("report.md").display())?;
    Ok(ExitCode::SUCCESS)
}

/// The ranks table, worst rank and skew, as markdown for the top of the report.
fn overview(ranks: &mut [RankInput], skipped: u64) -> String {
    sort_inputs(ranks);
    let fleet = fleet(ranks);
    let view = RanksView {
        inputs: ranks,
        fleet: &fleet,
        skipped,
    };
    let mut md = String::new();
    ranks_markdown(&mut md, &view);
    md
}
