//! Out-of-memory verdicts: for each failed allocation, was the device full of live tensors
//! (capacity), was there enough free memory but in pieces too small (fragmentation), or
//! was memory held outside this allocator?

use serde::Serialize;

use std::collections::HashMap;

use super::fragmentation::fragmentation_at;
use super::live::{GroupBy, LiveGroup, live_at};
use super::simulate::{Run, SimulateOptions, simulate};
use crate::model::{DeviceId, Recording};
use crate::timeline::Timeline;

/// How many live groups an OOM report lists.
pub const OOM_GROUPS: usize = 5;

/// The cause of an OOM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OomCause {
    /// Live tensors (and the cache) fill what the device has.
    Capacity,
    /// Enough free memory in total, but no block large enough.
    Fragmentation,
    /// The device's memory is held by something other than this allocator.
    OutsideAllocator,
    /// A cached block was large enough, yet the request failed (another stream or pool).
    StreamOrPool,
}

/// One OOM, explained.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OomVerdict {
    /// The device.
    pub device: DeviceId,
    /// When, ns on the recording's clock.
    pub at_ns: i64,
    /// Bytes requested.
    pub requested_bytes: i64,
    /// Free bytes on the device as the driver said.
    pub device_free_bytes: Option<u64>,
    /// Allocated bytes then.
    pub allocated_bytes: i64,
    /// Reserved bytes then.
    pub reserved_bytes: Option<i64>,
    /// Free bytes in the allocator's cache then.
    pub cache_free_bytes: Option<i64>,
    /// The largest free cached block then, where segment geometry is known.
    pub largest_free_block_bytes: Option<i64>,
    /// Memory on the device outside this allocator, where the device's capacity is known.
    pub outside_allocator_bytes: Option<i64>,
    /// The cause (the app words it, with these numbers and the simulation's answer).
    pub cause: OomCause,
    /// The largest groups of live allocations then.
    pub largest_live: Vec<LiveGroup>,
    /// What the allocator simulation says of it, where the input has the history to
    /// replay ([`crate::analysis::simulate`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<SimulatedOom>,
}

/// What the allocator simulation says of one OOM.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimulatedOom {
    /// Whether the replay under the recorded settings fails here too (the model check of
    /// this OOM: where it does not, the other settings' verdicts are less sure).
    pub reproduced: bool,
    /// The reserved peak of the replay under the recorded settings.
    pub reserved_peak_bytes: u64,
    /// Each other setting's outcome.
    pub settings: Vec<SimulatedSetting>,
}

/// One allocator setting's outcome for an OOM.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimulatedSetting {
    /// The setting, as `PYTORCH_CUDA_ALLOC_CONF` says it.
    pub allocator_conf: String,
    /// Whether the request fails under it.
    pub happens: bool,
    /// Where it fails, how much more the device would need.
    pub short_by_bytes: Option<u64>,
    /// Where it does not fail, the device's memory left after it.
    pub headroom_bytes: Option<u64>,
    /// The replay's reserved peak under it.
    pub reserved_peak_bytes: u64,
}

/// Explain every OOM event of the recording.
pub fn oom_verdicts(rec: &Recording, timeline: &Timeline) -> Vec<OomVerdict> {
    let mut out = Vec::new();
    let mut simulated = simulated_ooms(rec, timeline);
    // In file order, as the events are: the timeline holds each device's.
    let mut ooms: Vec<u32> = timeline
        .devices
        .iter()
        .flat_map(|d| d.ooms.iter().copied())
        .collect();
    ooms.sort_unstable();
    // The first detail of each event, found by a binary search.
    let mut details: Vec<(u32, Option<u64>)> = (rec.oom_details.iter())
        .map(|o| (o.event, o.device_free_bytes))
        .collect();
    details.sort_by_key(|&(event, _)| event);
    for i in ooms {
        let Some(e) = rec.mem_events.get(i as usize) else {
            continue;
        };
        let Some(d) = timeline.devices.get(e.device as usize) else {
            continue;
        };
        let first = details.partition_point(|&(event, _)| event < i);
        let device_free = (details.get(first))
            .filter(|&&(event, _)| event == i)
            .and_then(|&(_, free)| free);
        let point = d.at(e.time_ns);
        let allocated = point.map_or(0, |p| p.allocated_bytes);
        let reserved = point.and_then(|p| p.reserved_bytes.get());
        let cache_free = reserved.map(|r| r - allocated);
        let largest = fragmentation_at(rec, timeline, e.device, e.time_ns)
            .map(|f| f.largest_free_block_bytes);
        let capacity = rec
            .devices
            .get(e.device as usize)
            .and_then(|d| d.total_memory_bytes);
        let outside = match (capacity, reserved, device_free) {
            (Some(c), Some(r), Some(f)) => Some(c as i64 - r - f as i64),
            _ => None,
        };
        let cause = judge(
            e.bytes,
            device_free.map_or(0, |f| f as i64),
            cache_free.unwrap_or(0),
            largest,
            outside,
        );
        let simulation = simulated.remove(&i);
        out.push(OomVerdict {
            device: rec
                .devices
                .get(e.device as usize)
                .map_or(DeviceId::CPU, |d| d.key),
            at_ns: e.time_ns,
            requested_bytes: e.bytes,
            device_free_bytes: device_free,
            allocated_bytes: allocated,
            reserved_bytes: reserved,
            cache_free_bytes: cache_free,
            largest_free_block_bytes: largest,
            outside_allocator_bytes: outside,
            cause,
            largest_live: live_at(rec, timeline, e.device, e.time_ns, GroupBy::Site)
                .groups
                .into_iter()
                .filter(|g| g.kind.is_seen())
                .take(OOM_GROUPS)
                .collect(),
            simulation,
        });
    }
    out
}

/// Per OOM event (its index in the recording), what the simulation says, for the inputs
/// with a history to replay; only the predictions run (no model check).
fn simulated_ooms(rec: &Recording, timeline: &Timeline) -> HashMap<u32, SimulatedOom> {
    let mut out = HashMap::new();
    if timeline.devices.iter().all(|d| d.ooms.is_empty()) {
        return out;
    }
    let options = SimulateOptions {
        skip_proof: true,
        ..SimulateOptions::default()
    };
    let Some(sim) = simulate(rec, &options) else {
        return out;
    };
    for d in &sim.devices {
        let Some(events) = timeline.devices.get(d.device as usize).map(|t| &t.ooms) else {
            continue;
        };
        let Some((recorded, others)) = d.runs.split_first() else {
            continue;
        };
        let verdicts = |r: &'_ Run| {
            r.ooms
                .iter()
                .filter(|o| o.recorded)
                .copied()
                .collect::<Vec<_>>()
        };
        let mine = verdicts(recorded);
        let theirs: Vec<Vec<_>> = others.iter().map(verdicts).collect();
        // The device's OOM events in time order, as the history has them.
        for (k, &event) in events.iter().enumerate() {
            let Some(v) = mine.get(k) else { break };
            let settings = (others.iter().zip(&theirs))
                .filter_map(|(r, t)| {
                    let o = t.get(k)?;
                    Some(SimulatedSetting {
                        allocator_conf: r.allocator_conf.clone(),
                        happens: o.happens?,
                        short_by_bytes: o.short_by_bytes,
                        headroom_bytes: o.headroom_bytes,
                        reserved_peak_bytes: r.reserved_peak_bytes,
                    })
                })
                .collect();
            if let Some(happens) = v.happens {
                out.insert(
                    event,
                    SimulatedOom {
                        reproduced: happens,
                        reserved_peak_bytes: recorded.reserved_peak_bytes,
                        settings,
                    },
                );
            }
        }
    }
    out
}

/// The decision, in order: a usable cached block → stream/pool; enough free memory in
/// total → fragmentation; a large share held outside the allocator → outside; else capacity.
fn judge(
    requested: i64,
    device_free: i64,
    cache_free: i64,
    largest: Option<i64>,
    outside: Option<i64>,
) -> OomCause {
    if largest.is_some_and(|l| l >= requested) {
        OomCause::StreamOrPool
    } else if cache_free + device_free >= requested {
        OomCause::Fragmentation
    } else if outside.is_some_and(|o| o > 0 && o + cache_free + device_free >= requested) {
        OomCause::OutsideAllocator
    } else {
        OomCause::Capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: i64 = 1 << 20;

    #[test]
    fn causes() {
        let cases = [
            // requested, device free, cache free, largest, outside → cause
            (
                60 * MIB,
                12 * MIB,
                90 * MIB,
                Some(20 * MIB),
                None,
                OomCause::Fragmentation,
            ),
            (
                300 * MIB,
                30 * MIB,
                40 * MIB,
                Some(20 * MIB),
                None,
                OomCause::Capacity,
            ),
            (
                10 * MIB,
                0,
                40 * MIB,
                Some(20 * MIB),
                None,
                OomCause::StreamOrPool,
            ),
            (
                300 * MIB,
                10 * MIB,
                0,
                None,
                Some(4096 * MIB),
                OomCause::OutsideAllocator,
            ),
            // Memory outside the allocator that would not have been enough: capacity.
            (
                300 * MIB,
                10 * MIB,
                0,
                None,
                Some(100 * MIB),
                OomCause::Capacity,
            ),
        ];
        for (req, free, cache, largest, outside, want) in cases {
            assert_eq!(judge(req, free, cache, largest, outside), want);
        }
    }
}
