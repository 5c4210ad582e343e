//! `vramscope diff`: two runs read, compared (peaks, finals, the per-op table, B − A) and
//! printed, and with `--chart` drawn on one time axis.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use collector::Timeline;
use collector::analysis::decimate::{Curve, curve};
use collector::analysis::{self, diff::Align};

use super::input::open;
use super::{AlignArg, DiffFormat, DiffOptions, LoadArgs};
use crate::output::charts::compare::{self, DeviceCurves, RunCurves};
use crate::output::diff::{DiffFiles, diff_json, diff_markdown, diff_text};
use crate::output::file::{self, Overwrite, Policy};
use crate::output::terminal::eprint_escaped;

/// Compare the two runs on `out`, and draw the chart when asked.
pub fn run(
    out: &mut impl Write,
    a: &Path,
    b: &Path,
    options: &DiffOptions,
    load: LoadArgs,
) -> Result<ExitCode> {
    let inputs = [a, b];
    let chart_policy = Policy::new(Overwrite::from_force(options.force), &inputs);
    if let Some(chart) = &options.chart {
        file::guard_signals();
        // Refused before the runs are read, not after.
        file::check(chart, &chart_policy)?;
    }
    let align = match options.align {
        AlignArg::Start => Align::Start,
        AlignArg::Step => Align::Step,
    };
    let run_a = Run::read(a, load, align)?;
    let run_b = Run::read(b, load, align)?;
    let mut d = analysis::diff::diff(&run_a.facts(), &run_b.facts(), align);
    if let Some(n) = options.limit {
        d.keep_largest_changes(n);
    }
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let files = DiffFiles { a: &a, b: &b };
    match options.format {
        DiffFormat::Text => diff_text(out, &files, &d)?,
        DiffFormat::Json => diff_json(out, &files, &d)?,
        DiffFormat::Markdown => diff_markdown(out, &files, &d)?,
    }
    if let Some(chart) = &options.chart {
        write_chart(chart, &chart_policy, &files, &run_a, &run_b, align)?;
        // The table goes to stdout (maybe JSON); the note to stderr, after it.
        out.flush()?;
        eprint_escaped!("vramscope: wrote {}", chart.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// One run of a diff: its summary, per-op table and memory curves.
pub struct Run {
    summary: analysis::Summary,
    rows: Vec<analysis::OpRow>,
    origin_ns: i64,
    /// Per device, in ns since the run's origin (its start, or its first step).
    pub curves: Vec<DeviceCurves>,
}

impl Run {
    /// Read a run and compute what a diff needs of it.
    pub fn read(path: &Path, load: LoadArgs, align: Align) -> Result<Run> {
        let rec = open(path, load)?;
        let timeline = Timeline::build(&rec);
        let origin_ns = align.origin_ns(&rec);
        let shifted = |points: Vec<(i64, i64)>| -> Vec<(i64, i64)> {
            points
                .into_iter()
                .map(|(t, b)| (t - origin_ns, b))
                .collect()
        };
        let curves = timeline
            .devices
            .iter()
            .filter_map(|d| {
                let info = rec.devices.get(d.device as usize)?;
                Some(DeviceCurves {
                    device: info.key.to_string(),
                    allocated: shifted(curve(d, Curve::Allocated)),
                    reserved: shifted(curve(d, Curve::Reserved)),
                    end_ns: rec.meta.end_ns - origin_ns,
                })
            })
            .collect();
        Ok(Run {
            summary: analysis::summarize(&rec, &timeline),
            rows: analysis::key_averages(&rec, None),
            origin_ns,
            curves,
        })
    }

    /// The run as the diff analysis takes it.
    pub fn facts(&self) -> analysis::diff::RunFacts<'_> {
        analysis::diff::RunFacts {
            summary: &self.summary,
            rows: &self.rows,
            origin_ns: self.origin_ns,
        }
    }
}

/// Draw both runs on one time axis into `path`, as `policy` allows.
fn write_chart(
    path: &Path,
    policy: &Policy<'_>,
    files: &DiffFiles<'_>,
    a: &Run,
    b: &Run,
    align: Align,
) -> Result<()> {
    let name = |p: &str| {
        Path::new(p)
            .file_name()
            .map_or_else(|| p.to_owned(), |n| n.to_string_lossy().into_owned())
    };
    let (la, lb) = (
        format!("A: {}", name(files.a)),
        format!("B: {}", name(files.b)),
    );
    let origin = match align {
        Align::Start => "start",
        Align::Step => "first step",
    };
    compare::write_file(
        path,
        policy,
        &RunCurves {
            label: &la,
            devices: &a.curves,
        },
        &RunCurves {
            label: &lb,
            devices: &b.curves,
        },
        origin,
    )
}
