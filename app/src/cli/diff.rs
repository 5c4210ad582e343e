//! `vramscope diff`: reading each run for the comparison.

use std::path::Path;

use anyhow::Result;
use collector::Timeline;
use collector::analysis::{self, diff::Align};

use super::{LoadArgs, open};

/// One run of a diff: its summary and per-op table.
pub struct Run {
    summary: analysis::Summary,
    rows: Vec<analysis::OpRow>,
    origin_us: f64,
}

impl Run {
    /// Read a run and compute what a diff needs of it.
    pub fn read(path: &Path, load: LoadArgs, align: Align) -> Result<Run> {
        let rec = open(path, load)?;
        let timeline = Timeline::build(&rec);
        let origin_us = match (align, rec.steps.first()) {
            (Align::Step, Some(step)) => rec.us_since_start(step.start_ns),
            _ => 0.0,
        };
        Ok(Run {
            summary: analysis::summarize(&rec, &timeline),
            rows: analysis::key_averages(&rec, None),
            origin_us,
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
