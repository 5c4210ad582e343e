//! `vramscope report`: a directory for a bug report (report.html, report.md and charts) on
//! the inputs, or the page alone (`--html`);
//! of several inputs (or directories of them), a ranks overview at the top.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use collector::Timeline;
use collector::analysis::ranks::{RankInput, across_ranks, sort_inputs};
use collector::analysis::{self};
use collector::units::bytes_iec;

use super::LoadArgs;
use super::input::{Inputs, inputs as find_inputs, open_with_history};
use crate::output::file::{self, Overwrite, Policy};
use crate::output::html;
use crate::output::ranks::{RanksView, ranks_markdown, ranks_table};
use crate::output::report::{HTML_NAME, Overview, REPORT_SHAPE, analyse, analysed, write_analysed};

/// Most inputs one report takes. A report holds every input's recording in memory and
/// draws its charts (for the 111 MB bench trace, ~30 MB and a second each), so more ranks
/// larger than this is for `summary`, which keeps one recording per core.
pub const MAX_REPORT_INPUTS: usize = 64;

/// Where `report` writes, and how.
#[derive(Clone, Copy, Debug)]
pub struct Destination<'a> {
    /// The report directory (`-o`).
    pub dir: Option<&'a Path>,
    /// The page alone (`--html`).
    pub html: Option<&'a Path>,
    /// Strip user paths first (`--redact-paths`).
    pub redact_paths: bool,
    /// Replace an existing report (`--force`).
    pub force: bool,
}

/// Write the report on `paths` into the directory `to.dir` (whole; an existing report
/// there is replaced only with `force`, never a directory holding an input or other
/// files) and the page alone to `to.html`.
pub fn run(
    out: &mut impl Write,
    paths: &[PathBuf],
    to: &Destination<'_>,
    load: LoadArgs,
) -> Result<ExitCode> {
    file::guard_signals();
    let (files, skipped) = match find_inputs(paths)? {
        Inputs::One(path) => (vec![path], None),
        Inputs::Ranks(found) => (found.files, Some(found.skipped)),
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
    let policy = Policy::new(Overwrite::from_force(to.force), &input_paths);
    // Refused before the inputs are read, not after.
    if let Some(dir) = to.dir {
        file::check_dir(dir, &policy, &REPORT_SHAPE)?;
    }
    if let Some(page) = to.html {
        file::check(page, &policy)?;
    }
    let mut inputs = Vec::with_capacity(files.len());
    let mut ranks = Vec::new();
    for path in &files {
        // The file name only, so reports compare across machines.
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut rec = open_with_history(path, load)?;
        if to.redact_paths {
            collector::redact::redact_paths(&mut rec);
        }
        if skipped.is_some() {
            let summary = analysis::summarize(&rec, &Timeline::build(&rec));
            ranks.push(RankInput::new(name.clone().into(), &rec.meta, summary));
        }
        inputs.push((name, rec));
    }
    let overview = match skipped {
        // One file: its report alone.
        None => Overview::default(),
        Some(skipped) => overview(&mut ranks, skipped),
    };
    let built = analyse(&inputs);
    let analysed = analysed(&inputs, &built);
    if let Some(dir) = to.dir {
        let bytes = write_analysed(dir, &analysed, &overview, &policy)?;
        writeln!(out, "wrote {}", dir.join("report.md").display())?;
        written(out, &dir.join(HTML_NAME), bytes)?;
    }
    if let Some(page) = to.html {
        let bytes = html::write_page(page, &policy, &analysed, overview.ranks.as_ref())?;
        written(out, page, bytes)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The line saying a page was written, with its size.
fn written(out: &mut impl Write, page: &Path, bytes: u64) -> Result<()> {
    let size = bytes_iec(i64::try_from(bytes).unwrap_or(i64::MAX));
    writeln!(out, "wrote {} ({size})", page.display())?;
    Ok(())
}

/// The ranks table, worst rank and skew, for the top of the report and the page.
fn overview(ranks: &mut [RankInput], skipped: u64) -> Overview {
    sort_inputs(ranks);
    let across = across_ranks(ranks);
    let view = RanksView {
        inputs: ranks,
        across: &across,
        skipped,
    };
    let mut markdown = String::new();
    ranks_markdown(&mut markdown, &view);
    Overview {
        markdown,
        ranks: Some(ranks_table(&view)),
    }
}
