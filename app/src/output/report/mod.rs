//! `vramscope report` and the viewer's Export report: a directory to attach to a bug
//! report — `report.md` (summary per device, what was live at the peak, the top ops,
//! fragmentation, OOM verdicts, warnings, environment) and charts. Deterministic: the same
//! inputs give the same bytes.

mod analyses;
mod figures;
mod section;

use std::path::Path;

use anyhow::Result;
use collector::analysis::{self, OpRow, SortKey, Summary};
use collector::model::DeviceId;
use collector::{Recording, Timeline};

use super::file::{self, Overwrite};

/// Live groups listed at each peak.
pub const LIVE_GROUPS: usize = 10;
/// Rows of the top-ops table and bars of its chart.
pub const TOP_OPS: usize = 15;

/// The temporary files' tag while the report is written: `.report.md.report-PID`.
const TEMP_TAG: &str = "report";

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

/// Sort a recording's key_averages rows as `table` does by default.
pub fn sorted_rows(rec: &Recording) -> (Vec<OpRow>, SortKey) {
    let mut rows = analysis::key_averages(rec, None);
    let key = SortKey::default_for(&rows);
    analysis::sort_rows(&mut rows, key);
    (rows, key)
}

/// The report's markdown for all sections.
pub fn markdown(sections: &[Section<'_>]) -> Result<String> {
    use std::fmt::Write as _;
    let mut md = String::new();
    writeln!(md, "# vramscope report")?;
    for s in sections {
        section::section_markdown(&mut md, s)?;
    }
    Ok(md)
}

/// Write the report for `inputs` (display name, recording) into `dir`.
pub fn write_report(
    dir: &Path,
    inputs: &[(String, Recording)],
    overwrite: Overwrite,
) -> Result<()> {
    let built: Vec<(Timeline, Summary)> = inputs
        .iter()
        .map(|(_, rec)| {
            let timeline = Timeline::build(rec);
            let summary = analysis::summarize(rec, &timeline);
            (timeline, summary)
        })
        .collect();
    let analysed: Vec<Analysed<'_>> = inputs
        .iter()
        .zip(&built)
        .map(|((name, rec), (timeline, summary))| Analysed {
            name,
            rec,
            timeline,
            summary,
        })
        .collect();
    write_analysed(dir, &analysed, overwrite)
}

/// Write the report for analysed inputs into `dir`: report.md and the charts beside it.
pub fn write_analysed(dir: &Path, inputs: &[Analysed<'_>], overwrite: Overwrite) -> Result<()> {
    file::create_dir_all(dir)?;
    let rows: Vec<(Vec<OpRow>, SortKey)> = inputs.iter().map(|a| sorted_rows(a.rec)).collect();
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
        .zip(&rows)
        .zip(&prefixes)
        .map(|((a, (rows, sort)), prefix)| Section {
            name: a.name,
            prefix,
            rec: a.rec,
            timeline: a.timeline,
            summary: a.summary,
            rows,
            sort: *sort,
        })
        .collect();
    for s in &sections {
        figures::write_charts(dir, s, overwrite)?;
    }
    let md = markdown(&sections)?;
    file::write_bytes(&dir.join("report.md"), overwrite, TEMP_TAG, md.as_bytes())?;
    Ok(())
}
