//! `vramscope report` and the viewer's Export report: a directory to attach to a bug
//! report — `report.html` (the interactive page, [`html`]), `report.md` (summary per device, what was live at the peak, the top ops,
//! what-if advice, fragmentation, OOM verdicts, warnings, environment) and charts. Deterministic: the same
//! inputs give the same bytes.

mod advice;
mod analyses;
mod categories;
mod figures;
mod section;

use std::path::Path;

use anyhow::Result;
use collector::analysis::advise::{DeviceAdvice, Options, advise};
use collector::analysis::{self, OpRow, SortKey, Summary};
use collector::model::DeviceId;
use collector::{Recording, Timeline};

use super::file::{self, DirShape, FRESH, FileError, Policy};
use super::html::{self, RankTable};

/// Live groups listed at each peak.
pub const LIVE_GROUPS: usize = 10;
/// Rows of the top-ops table and bars of its chart.
pub const TOP_OPS: usize = 15;

/// The temporaries' tag while the report is written: the directory is built as
/// `.DIR.report-PID-N` beside it, and its files as `.NAME.report-PID-N` in that.
const TEMP_TAG: &str = "report";

/// The page beside report.md.
pub const HTML_NAME: &str = "report.html";

/// The first line of report.md, by which a directory is known to be a report.
const TITLE: &str = "# vramscope report\n";

/// What a report directory holds (report.md and the charts [`chart_stem`] and
/// [`figures`] name): only such a directory is ever replaced, so `-o ~ --force` cannot
/// cost a home directory.
pub const REPORT_SHAPE: DirShape = DirShape {
    what: "a vramscope report",
    marker: "report.md",
    marker_head: TITLE,
    made: is_report_file,
};

/// Whether `name` is a file a report writes: report.md, and charts named
/// `[N-]memory-DEVICE.png|svg` (`DEVICE` also `cuda-0-categories`, `host`) and
/// `[N-]top-ops.png`.
fn is_report_file(name: &str) -> bool {
    if name == "report.md" || name == HTML_NAME {
        return true;
    }
    // Several inputs prefix their charts with their number.
    let chart = match name.split_once('-') {
        Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => name,
    };
    let device = |stem: &str| {
        stem.strip_prefix("memory-").is_some_and(|d| {
            !d.is_empty() && d.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
    };
    chart == "top-ops.png"
        || chart.strip_suffix(".png").is_some_and(device)
        || chart.strip_suffix(".svg").is_some_and(device)
}

/// Everything one input contributes to the report.
pub struct Section<'a> {
    /// The file name shown (no directory, so reports compare across machines).
    pub name: &'a str,
    /// Prefix of this input's chart files ("" for a single input).
    pub prefix: &'a str,
    /// The input's recording.
    pub rec: &'a Recording,
    /// Its timeline.
    pub timeline: &'a Timeline,
    /// Its summary.
    pub summary: &'a Summary,
    /// key_averages rows, sorted by self device (or CPU) memory.
    pub rows: &'a [OpRow],
    /// Which column `rows` is sorted by.
    pub sort: SortKey,
    /// `advise`'s estimates with its defaults.
    pub advice: &'a [DeviceAdvice],
}

/// One input whose timeline and summary are already built (the viewer has them).
pub struct Analysed<'a> {
    /// The file name shown.
    pub name: &'a str,
    /// The recording.
    pub rec: &'a Recording,
    /// Its timeline.
    pub timeline: &'a Timeline,
    /// Its summary.
    pub summary: &'a Summary,
}

/// The chart file stem of a device: `memory-cuda-0`.
fn chart_stem(prefix: &str, device: DeviceId) -> String {
    let safe: String = device
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{prefix}memory-{safe}")
}

/// The advisor's options the report shows: `advise`'s defaults.
pub const ADVICE_OPTIONS: Options = Options::DEFAULTS;

/// What report.md and report.html both show of an input, computed once: the whole run's
/// key_averages rows as `table` sorts them, and the advice with `advise`'s defaults (which
/// replays the run through the allocator model where it can).
pub struct Derived {
    /// The whole run's rows, sorted.
    pub rows: Vec<OpRow>,
    /// Which column they are sorted by.
    pub sort: SortKey,
    /// `advise`'s estimates.
    pub advice: Vec<DeviceAdvice>,
}

/// [`Derived`] of `a`.
pub fn derive(a: &Analysed<'_>) -> Derived {
    let (rows, sort) = sorted_rows(a.rec);
    Derived {
        rows,
        sort,
        advice: advise(a.rec, a.timeline, &ADVICE_OPTIONS),
    }
}

/// Sort a recording's key_averages rows as `table` does by default.
pub fn sorted_rows(rec: &Recording) -> (Vec<OpRow>, SortKey) {
    let mut rows = analysis::key_averages(rec, None);
    let key = SortKey::default_for(&rows);
    analysis::sort_rows(&mut rows, key);
    (rows, key)
}

/// The report's markdown for all sections.
pub fn markdown(sections: &[Section<'_>]) -> Result<String> {
    let mut md = String::new();
    md.push_str(TITLE);
    for s in sections {
        section::section_markdown(&mut md, s)?;
    }
    Ok(md)
}

/// What goes above the inputs' sections: the ranks of several inputs, as markdown for
/// report.md and as a table for report.html.
#[derive(Debug, Default)]
pub struct Overview {
    /// Markdown put right under report.md's title.
    pub markdown: String,
    /// The page's rank table.
    pub ranks: Option<RankTable>,
}

/// The timeline and summary of each input (what `summary` and the viewer build).
pub fn analyse(inputs: &[(String, Recording)]) -> Vec<(Timeline, Summary)> {
    inputs
        .iter()
        .map(|(_, rec)| {
            let timeline = Timeline::build(rec);
            let summary = analysis::summarize(rec, &timeline);
            (timeline, summary)
        })
        .collect()
}

/// `inputs` beside their timelines and summaries (from [`analyse`]).
pub fn analysed<'a>(
    inputs: &'a [(String, Recording)],
    built: &'a [(Timeline, Summary)],
) -> Vec<Analysed<'a>> {
    inputs
        .iter()
        .zip(built)
        .map(|((name, rec), (timeline, summary))| Analysed {
            name,
            rec,
            timeline,
            summary,
        })
        .collect()
}

/// Write the report for `inputs` (display name, recording) into `dir`, whole; returns
/// the size of its report.html.
#[cfg(all(test, feature = "gui"))]
pub fn write_report(
    dir: &Path,
    inputs: &[(String, Recording)],
    policy: &Policy<'_>,
) -> Result<u64, FileError> {
    let built = analyse(inputs);
    write_analysed(dir, &analysed(inputs, &built), &Overview::default(), policy)
}

/// Write the report for analysed inputs into `dir`, whole ([`file::write_dir`]):
/// report.md, report.html and the charts beside them, nothing else (`report -o`, the
/// viewer's File › Export report), with `overview` at the top. Returns the size of
/// report.html.
pub fn write_analysed(
    dir: &Path,
    inputs: &[Analysed<'_>],
    overview: &Overview,
    policy: &Policy<'_>,
) -> Result<u64, FileError> {
    let mut html_bytes = 0;
    file::write_dir(dir, policy, &REPORT_SHAPE, TEMP_TAG, |staging| {
        html_bytes = fill(staging, inputs, overview)?;
        Ok(())
    })?;
    Ok(html_bytes)
}

/// Write report.md, report.html and the charts of `inputs` into the new directory `dir`;
/// returns the size of report.html.
fn fill(dir: &Path, inputs: &[Analysed<'_>], overview: &Overview) -> Result<u64> {
    let derived: Vec<Derived> = inputs.iter().map(derive).collect();
    let prefixes: Vec<String> = (0..inputs.len())
        .map(|i| {
            if inputs.len() == 1 {
                String::new()
            } else {
                format!("{}-", i + 1)
            }
        })
        .collect();
    let sections: Vec<Section<'_>> = inputs
        .iter()
        .zip(&derived)
        .zip(&prefixes)
        .map(|((a, d), prefix)| Section {
            name: a.name,
            prefix,
            rec: a.rec,
            timeline: a.timeline,
            summary: a.summary,
            rows: &d.rows,
            sort: d.sort,
            advice: &d.advice,
        })
        .collect();
    for s in &sections {
        figures::write_charts(dir, s)?;
    }
    let mut md = markdown(&sections)?;
    md.insert_str(TITLE.len(), &overview.markdown);
    file::write_bytes(&dir.join("report.md"), &FRESH, TEMP_TAG, md.as_bytes())?;
    let page = html::page(inputs, &derived, overview.ranks.as_ref())?;
    Ok(file::write_bytes(
        &dir.join(HTML_NAME),
        &FRESH,
        TEMP_TAG,
        page.as_bytes(),
    )?)
}

#[cfg(test)]
mod tests {
    use super::is_report_file;

    #[test]
    fn a_report_directory_holds_report_md_and_its_charts_only() {
        for name in [
            "report.md",
            "report.html",
            "memory-cuda-0.png",
            "memory-cuda-0.svg",
            "memory-cuda-0-categories.png",
            "memory-cuda-0-categories.svg",
            "2-memory-cpu-categories.png",
            "memory-cpu.png",
            "top-ops.png",
            "2-memory-cuda-1.svg",
            "12-top-ops.png",
        ] {
            assert!(is_report_file(name), "{name}");
        }
        for name in [
            ".bashrc",
            "notes.md",
            "memory-.png",
            "memory-cuda:0.png",
            "memory-cuda-0-categories.csv",
            "top-ops.svg",
            "-top-ops.png",
            "x-top-ops.png",
            "trace.json.gz",
            "Report.md",
        ] {
            assert!(!is_report_file(name), "{name}");
        }
    }
}
