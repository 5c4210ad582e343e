//! `vramscope check`: a CI gate on peak memory. Exit codes, as `check --help` and the
//! README say: 0 within the limit, 1 over it, 2 the input could not be read (or the command
//! line is wrong), 3 no memory data to judge.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use collector::analysis::Summary;
use collector::analysis::summary::FileSummary;
use collector::analysis::summary::{JudgedPeak, PeakSource};
use collector::model::DeviceId;

use super::input::{Inputs, inputs, no_memory_words, summarize_one, summarize_ranks};
use super::options::PeakOf;
use super::{CheckOptions, Failure, Format, LoadArgs};
use crate::output::check::{CheckVerdict, check_json, check_text};
use crate::output::ranks_check::{RankVerdict, ranks_check_json, ranks_check_text};
use crate::output::style::Paint;
use crate::output::terminal::eprint_escaped;

/// Exit code: every judged peak is within the limit.
const WITHIN: u8 = 0;
/// Exit code: a peak is over the limit.
const OVER: u8 = 1;
/// Exit code: the input could not be read — distinct from "over", so a CI gate can tell a
/// broken artifact from a regression.
pub const UNREADABLE: u8 = 2;
/// Exit code: no device recorded memory (a trace without `profile_memory=True`, or none on
/// the `--device` asked for): nothing to judge.
const NO_DATA: u8 = 3;

/// Check the peaks of `paths` (one file, or many: every rank's) against `options`' limit.
pub fn run(
    out: &mut impl Paint,
    paths: &[PathBuf],
    options: &CheckOptions,
    load: LoadArgs,
) -> Result<ExitCode> {
    let unreadable = |error| Failure {
        code: UNREADABLE,
        error,
    };
    let found = match inputs(paths).map_err(unreadable)? {
        Inputs::One(path) => return run_one(out, &path, options, load),
        Inputs::Ranks(found) => found,
    };
    let ranks = summarize_ranks(&found, load).map_err(unreadable)?;
    let only: Option<Vec<DeviceId>> = options.device.map(|arg| {
        let devices = ranks
            .iter()
            .flat_map(|r| r.summary.devices.iter().map(|d| d.device));
        devices.filter(|&d| arg.matches(d)).collect()
    });
    let verdicts: Vec<RankVerdict<'_>> = ranks
        .iter()
        .map(|input| RankVerdict {
            input,
            verdict: judge(
                &input.summary,
                only.as_deref(),
                options.max_peak,
                options.of.source(),
            ),
        })
        .collect();
    match options.format {
        Format::Text => ranks_check_text(out, &verdicts, found.skipped)?,
        Format::Json => ranks_check_json(out, &verdicts)?,
    }
    if verdicts.iter().all(|v| v.verdict.peaks.is_empty()) {
        let on = options.device.map_or(String::new(), |d| format!(" on {d}"));
        eprint_escaped!(
            "vramscope: {} recorded memory{on}: nothing to check against --max-peak",
            match ranks.len() {
                1 => "the input".to_owned(),
                n => format!("none of the {n} inputs"),
            }
        );
        return Ok(ExitCode::from(NO_DATA));
    }
    let over = verdicts.iter().any(|v| v.verdict.over().next().is_some());
    Ok(ExitCode::from(if over { OVER } else { WITHIN }))
}

/// Check one file, as check always has.
fn run_one(
    out: &mut impl Paint,
    path: &Path,
    options: &CheckOptions,
    load: LoadArgs,
) -> Result<ExitCode> {
    // Summarised as `summary` summarises a file (a pack's stored summary, else the file
    // read with only the spans the summary reads): a gate in a pipeline runs on the
    // largest traces.
    let file = summarize_one(path, load).map_err(|error| Failure {
        code: UNREADABLE,
        error,
    })?;
    let summary = &file.summary;
    let mut known: Vec<DeviceId> = (summary.devices.iter().map(|d| d.device))
        .chain(summary.gpus.iter().map(|g| g.device))
        .chain(summary.nvml.iter().map(|n| n.device))
        .chain(summary.host_rss_peak_bytes.map(|_| DeviceId::CPU))
        .collect();
    known.sort();
    known.dedup();
    // A device the input does not have has no memory recorded: "no data" (3), as for a
    // rank among several, not a mistake in the command line.
    let keys: Option<Vec<DeviceId>> = options
        .device
        .map(|d| known.iter().copied().filter(|&k| d.matches(k)).collect());
    let verdict = judge(
        summary,
        keys.as_deref(),
        options.max_peak,
        options.of.source(),
    );
    match options.format {
        Format::Text => check_text(out, &verdict),
        Format::Json => check_json(out, path, &verdict),
    }
    .with_context(|| path.display().to_string())?;
    if verdict.peaks.is_empty() {
        let hint = file.meta.format.importer().memory_hint();
        let message = match options.device {
            Some(d) if keys.as_ref().is_some_and(Vec::is_empty) => {
                let there: Vec<String> = known.iter().map(DeviceId::to_string).collect();
                let there = match there.is_empty() {
                    true => "no device with memory".to_owned(),
                    false => there.join(", "),
                };
                format!("no memory recorded on {d}: the input has {there}")
            }
            Some(d) => format!("no memory recorded on {d} ({hint})"),
            None => nothing_of(options.of, &file),
        };
        let message = format!(
            "{}: nothing to check against --max-peak: {message}",
            path.display()
        );
        eprint_escaped!("vramscope: {message}");
        return Ok(ExitCode::from(NO_DATA));
    }
    let code = if verdict.over().next().is_some() {
        OVER
    } else {
        WITHIN
    };
    Ok(ExitCode::from(code))
}

/// Why a whole input has nothing of `of` to judge, and what it does have.
fn nothing_of(of: PeakOf, file: &FileSummary) -> String {
    let summary = &file.summary;
    let (has_nvml, has_host) = (
        !summary.nvml.is_empty(),
        summary.host_rss_peak_bytes.is_some(),
    );
    let also = |has: bool, words: &'static str| if has { words } else { "" };
    match of {
        PeakOf::Allocator => {
            let words = no_memory_words(
                "allocated or reserved memory",
                has_nvml,
                has_host,
                file.meta.format,
            );
            match (has_nvml, has_host) {
                (false, false) => words,
                (true, _) => format!("{words}; `check --of nvml` judges its GPUs' NVML peak"),
                (false, true) => format!("{words}; `check --of host` judges its host memory"),
            }
        }
        PeakOf::Nvml => format!(
            "it has no NVML readings (`vramscope record` samples them where NVML is installed){}",
            also(has_host, "; --of host judges its host memory")
        ),
        PeakOf::Host => format!(
            "it has no host memory readings (`vramscope record` samples them){}",
            also(has_nvml, "; --of nvml judges its NVML readings")
        ),
    }
}

/// Every device's judged peak of `source` (of the devices in `only`, when given), worst
/// first: the furthest over the limit, or the closest to it.
pub fn judge<'a>(
    summary: &'a Summary,
    only: Option<&[DeviceId]>,
    max_peak_bytes: u64,
    source: PeakSource,
) -> CheckVerdict<'a> {
    let mut peaks: Vec<JudgedPeak<'a>> = (summary.judged_peaks(source).into_iter())
        .filter(|p| only.is_none_or(|keys| keys.contains(&p.device)))
        .collect();
    peaks.sort_by(|a, b| {
        (b.peak.bytes.cmp(&a.peak.bytes))
            .then_with(|| a.device.to_string().cmp(&b.device.to_string()))
    });
    CheckVerdict {
        summary,
        max_peak_bytes,
        peaks,
    }
}
