//! Many ranks at once: one summary per input (a rank's trace, snapshot or recording), read
//! in parallel and each recording dropped after its summary ([`summarize_files`]), then
//! what the ranks say together ([`across_ranks`]): the worst rank, the skew between ranks, the
//! ranks that ran out of memory, and peaks per pipeline stage where the traces tell; and
//! the viewer's rank grid, each rank's allocated memory over time ([`grid`]).

pub mod grid;
mod names;
mod parallel;

use std::path::PathBuf;

use super::Summary;
use crate::model::{DeviceId, Meta};
pub use names::{one_run_by_names, rank_from_file_name, rank_of, stage_of};
pub use parallel::{
    FilesProgress, MAX_WORKERS, OnError, map_files, summarize_files, summarize_files_beside,
};

/// One input's summary and where it sits among the ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct RankInput {
    /// The file, as found.
    pub path: PathBuf,
    /// The rank: the input's own (`distributedInfo.rank`), else the file name's
    /// (`rank3`, `rank_3`, `rank-3`), else none.
    pub rank: Option<i64>,
    /// The pipeline stage, where the trace names it ([`stage_of`]).
    pub stage: Option<i64>,
    /// The input's summary, as `summary` of the file alone gives it.
    pub summary: Summary,
}

impl RankInput {
    /// The input's summary, its rank from its facts or the file name, and its stage.
    pub fn new(path: PathBuf, meta: &Meta, summary: Summary) -> RankInput {
        RankInput {
            rank: rank_of(&path, meta),
            stage: stage_of(meta),
            path,
            summary,
        }
    }

    /// The largest peak allocated of the input's devices, and that device.
    pub fn peak_allocated(&self) -> Option<(DeviceId, i64)> {
        let mut best: Option<(DeviceId, i64)> = None;
        for d in &self.summary.devices {
            if let Some(bytes) = d.peak_allocated_bytes
                && best.is_none_or(|(_, b)| bytes > b)
            {
                best = Some((d.device, bytes));
            }
        }
        best
    }

    /// Whether any device of the input ran out of memory.
    pub fn has_oom(&self) -> bool {
        !self.summary.ooms.is_empty() || self.summary.devices.iter().any(|d| d.ooms > 0)
    }
}

/// The input with the largest peak allocated, and where.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorstRank {
    /// Index into the inputs.
    pub input: usize,
    /// Its device with that peak.
    pub device: DeviceId,
    /// The peak.
    pub peak_allocated_bytes: i64,
}

/// The peaks of one pipeline stage's ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct StagePeaks {
    /// The stage.
    pub stage: i64,
    /// Inputs of the stage (indices), in input order.
    pub inputs: Vec<usize>,
    /// The stage's worst input (index) and its peak allocated.
    pub worst: Option<(usize, i64)>,
}

/// What the inputs say together.
#[derive(Clone, Debug, PartialEq)]
pub struct AcrossRanks {
    /// The input whose peak allocated is largest (the first in input order on a tie).
    pub worst: Option<WorstRank>,
    /// The largest input peak over the median input peak (of inputs with a peak; the
    /// median of an even count is the mean of the two middle values); none when no input
    /// has a peak or the median is zero.
    pub skew_max_over_median: Option<f64>,
    /// Inputs (indices) that ran out of memory.
    pub oom_inputs: Vec<usize>,
    /// Per pipeline stage, by stage; empty when no input names its stage.
    pub stages: Vec<StagePeaks>,
}

/// Put inputs in rank order: by rank (inputs without one last), then by path.
pub fn sort_inputs(inputs: &mut [RankInput]) {
    inputs.sort_by(|a, b| rank_order(a).cmp(&rank_order(b)));
}

/// The key of rank order: by rank, inputs without one last, then by path.
fn rank_order(input: &RankInput) -> (bool, Option<i64>, &std::path::Path) {
    (input.rank.is_none(), input.rank, &input.path)
}

/// The worst input, the skew, the inputs with OOMs and the stages.
pub fn across_ranks(inputs: &[RankInput]) -> AcrossRanks {
    let peaks: Vec<(usize, DeviceId, i64)> = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.peak_allocated().map(|(d, b)| (i, d, b)))
        .collect();
    let worst = peaks
        .iter()
        .fold(
            None,
            |best: Option<(usize, DeviceId, i64)>, &p| match best {
                Some(b) if b.2 >= p.2 => Some(b),
                _ => Some(p),
            },
        )
        .map(|(input, device, bytes)| WorstRank {
            input,
            device,
            peak_allocated_bytes: bytes,
        });
    let values: Vec<i64> = peaks.iter().map(|p| p.2).collect();
    let skew = match (median(&values), worst) {
        (Some(m), Some(w)) if m > 0.0 => Some(w.peak_allocated_bytes as f64 / m),
        _ => None,
    };
    AcrossRanks {
        worst,
        skew_max_over_median: skew,
        oom_inputs: (0..inputs.len()).filter(|&i| inputs[i].has_oom()).collect(),
        stages: stages(inputs),
    }
}

/// The median: the middle value, or the mean of the two middle values of an even count.
pub fn median(values: &[i64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let middle = |i: usize| sorted.get(i).map(|&v| v as f64);
    match n {
        0 => None,
        _ if n % 2 == 1 => middle(n / 2),
        _ => Some((middle(n / 2 - 1)? + middle(n / 2)?) / 2.0),
    }
}

fn stages(inputs: &[RankInput]) -> Vec<StagePeaks> {
    let mut stages: Vec<StagePeaks> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let Some(stage) = input.stage else { continue };
        let at = match stages.binary_search_by_key(&stage, |s| s.stage) {
            Ok(at) => at,
            Err(at) => {
                stages.insert(
                    at,
                    StagePeaks {
                        stage,
                        inputs: Vec::new(),
                        worst: None,
                    },
                );
                at
            }
        };
        let Some(s) = stages.get_mut(at) else {
            continue;
        };
        s.inputs.push(i);
        if let Some((_, bytes)) = input.peak_allocated()
            && s.worst.is_none_or(|(_, b)| bytes > b)
        {
            s.worst = Some((i, bytes));
        }
    }
    stages
}

#[cfg(test)]
mod tests;
