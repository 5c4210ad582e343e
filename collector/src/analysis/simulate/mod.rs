//! Would this OOM go away? The run's allocations and frees replayed through a model of
//! PyTorch's CUDA caching allocator (`c10/cuda/CUDACachingAllocator.cpp`): first under the
//! recorded settings against what the real allocator did, address by address
//! ([`mod@proof`]), then under other settings on a device of the run's capacity ([`mod@predict`]):
//! the reserved peak, fragmentation there, driver calls, and whether each out-of-memory
//! would still happen. `docs/ALLOCATOR.md` lists the rules modelled and those not.
//!
//! `allocator` holds the rules of a request and a free, `release` the ways cached memory
//! goes back, `expandable` expandable segments, `blocks` the blocks and pools, `driver`
//! the two drivers (a device of some capacity; the recorded run's own segments), `state`
//! the segments in and out, `history` the input built from what a source recorded.

mod allocator;
mod blocks;
mod config;
mod driver;
mod expandable;
mod forced;
mod history;
mod layout;
mod predict;
mod proof;
mod release;
mod state;
#[cfg(test)]
mod tests;

pub use allocator::Totals;
pub use config::{AllocatorConfig, ConfigError, ROUNDUP_INTERVALS};
pub use history::{Capacity, CapacitySource, capacity_of, histories};
pub use layout::{SimulatedLayout, simulated_layout_at};
pub use predict::{AtPeak, OomVerdict, Run, predict, predict_until};
pub use proof::{Divergence, Proof, prove};
pub use state::{SimBlockState, SimSegment, recorded_segments};

use crate::model::{DeviceIdx, Recording};

/// `max_split_size_mb` values tried when the run does not say which to try; the one with
/// the lowest reserved peak is shown (each costs one more replay).
pub const MAX_SPLIT_CANDIDATES_MB: [u64; 5] = [64, 128, 256, 512, 1024];

/// What to simulate.
#[derive(Clone, Debug, Default)]
pub struct SimulateOptions {
    /// Settings asked for; none: `expandable_segments:True` and a `max_split_size_mb`
    /// chosen from the run ([`MAX_SPLIT_CANDIDATES_MB`]), beside the recorded settings.
    pub alternatives: Vec<AllocatorConfig>,
    /// The memory the allocator may hold, where the user says it.
    pub capacity_bytes: Option<u64>,
    /// Skip the model check (the OOM verdicts need only the predictions).
    pub skip_proof: bool,
}

/// Every device's simulation.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Simulation {
    /// Per device with an allocation history.
    pub devices: Vec<DeviceSimulation>,
}

/// One device's simulation.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DeviceSimulation {
    /// The device.
    #[serde(skip)]
    pub device: DeviceIdx,
    /// When the history begins, ns (times are reported from it).
    pub start_ns: i64,
    /// The settings the run used (`None`: the input does not say; the defaults are
    /// assumed).
    pub recorded_conf: Option<String>,
    /// The memory the allocator could hold, and where that comes from.
    pub capacity: Option<Capacity>,
    /// The reserved peak the run recorded over the history, where the input says.
    pub measured_reserved_peak_bytes: Option<u64>,
    /// The model against the real allocator (snapshots, which record segments).
    pub proof: Option<Proof>,
    /// The recorded settings first, then each alternative.
    pub runs: Vec<Run>,
    /// The `max_split_size_mb` values tried for the chosen one, where one was chosen.
    pub max_split_tried_mb: Vec<u64>,
}

/// Simulate every device of `rec` that has an allocation history; `None` where none has
/// (a trace without addresses, a recording without allocator events).
pub fn simulate(rec: &Recording, options: &SimulateOptions) -> Option<Simulation> {
    let histories = histories(rec);
    if histories.is_empty() {
        return None;
    }
    let recorded_conf = rec
        .allocator
        .as_ref()
        .and_then(|a| AllocatorConfig::from_snapshot(&a.settings));
    let devices = histories
        .iter()
        .map(|h| simulate_device(rec, h, recorded_conf.as_ref(), options))
        .collect();
    Some(Simulation { devices })
}

fn simulate_device(
    rec: &Recording,
    h: &history::History,
    recorded: Option<&AllocatorConfig>,
    options: &SimulateOptions,
) -> DeviceSimulation {
    let config = recorded.cloned().unwrap_or_default();
    let capacity = capacity_of(rec, h, options.capacity_bytes);
    let capacity_bytes = capacity.as_ref().map(|c| c.bytes);
    let proof = (h.snapshot_segments.as_ref())
        .filter(|_| !options.skip_proof)
        .map(|at_end| prove(&h.history, &config, at_end));
    let mut runs = vec![predict(&h.history, &config, capacity_bytes)];
    let mut tried = Vec::new();
    if options.alternatives.is_empty() {
        if !config.expandable_segments {
            let expandable = AllocatorConfig {
                expandable_segments: true,
                ..config.clone()
            };
            runs.push(predict(&h.history, &expandable, capacity_bytes));
        }
        if config.max_split_size_bytes.is_none() {
            let best = MAX_SPLIT_CANDIDATES_MB
                .iter()
                .map(|&mb| {
                    let c = AllocatorConfig {
                        max_split_size_bytes: Some(mb << 20),
                        ..config.clone()
                    };
                    predict(&h.history, &c, capacity_bytes)
                })
                .min_by_key(|run| {
                    (
                        run.reserved_peak_bytes,
                        run.ooms.iter().filter(|o| o.happens == Some(true)).count(),
                    )
                });
            tried = MAX_SPLIT_CANDIDATES_MB.to_vec();
            runs.extend(best);
        }
    } else {
        for alternative in &options.alternatives {
            runs.push(predict(&h.history, alternative, capacity_bytes));
        }
    }
    DeviceSimulation {
        device: h.history.device,
        start_ns: h.history.entries.first().map_or(0, |e| e.time_ns),
        recorded_conf: recorded.map(ToString::to_string),
        capacity,
        measured_reserved_peak_bytes: h.measured_reserved_peak_bytes,
        proof,
        runs,
        max_split_tried_mb: tried,
    }
}
