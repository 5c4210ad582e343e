//! `vramscope diff`: reading each run for the comparison.

use std::path::Path;

use anyhow::Result;
use collector::Timeline;
use collector::analysis::decimate::{Curve, curve};
use collector::analysis::{self, diff::Align};

use super::{LoadArgs, open};
use crate::report::compare_chart::DeviceCurves;

/// One run of a diff: its summary, per-op table and memory curves.
pub struct Run {
    summary: analysis::Summary,
    rows: Vec<analysis::OpRow>,
    origin_us: f64,
    /// Per device, in ns since the run's origin (its start, or its first step).
    pub curves: Vec<DeviceCurves>,
}

impl Run {
    /// Read a run and compute what a diff needs of it.
    pub fn read(path: &Path, load: LoadArgs, align: Align) -> Result<Run> {
        let rec = open(path, load)?;
        let timeline = Timeline::build(&rec);
        let origin_ns = match (align, rec.steps.first()) {
            (Align::Step, Some(step)) => step.start_ns,
            _ => rec.meta.start_ns,
        };
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
            origin_us: rec.us_since_start(origin_ns),
            curves,
        })
    }

    /// The run as the diff analysis takes it.
    pub fn facts(&self) -> analysis::diff::RunFacts<'_> {
        analysis::diff::RunFacts {
            summary: &self.summary,
            rows: &self.rows,
            origin_us: self.origin_us,
        }
    }
}

/// Draw both runs on one time axis into `path`.
pub fn write_chart(
    path: &Path,
    files: &crate::render::diff::DiffFiles<'_>,
    a: &Run,
    b: &Run,
    align: Align,
) -> Result<()> {
    use crate::report::compare_chart::{RunCurves, compare_chart};
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
    compare_chart(
        &RunCurves {
            label: &la,
            devices: &a.curves,
        },
        &RunCurves {
            label: &lb,
            devices: &b.curves,
        },
        origin,
        path,
    )
}
