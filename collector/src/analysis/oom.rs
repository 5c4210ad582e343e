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
use crate::units::bytes_iec;

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
    /// The cause.
    pub cause: OomCause,
    /// One sentence for a human.
    pub verdict: String,
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
        let reserved = point.and_then(|p| p.reserved_bytes);
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
        let (cause, mut verdict) = judge(
            e.bytes,
            device_free,
            allocated,
            cache_free,
            largest,
            outside,
        );
        let simulation = simulated.remove(&i);
        if let Some(s) = &simulation {
            verdict = with_simulation(verdict, s);
        }
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
            verdict,
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

/// The verdict with the simulation's answer in place of a hint: the first setting under
/// which the OOM would not happen, or that none of those tried avoids it.
fn with_simulation(verdict: String, s: &SimulatedOom) -> String {
    let base = verdict
        .strip_suffix(EXPANDABLE_HINT)
        .map_or(verdict.as_str(), |v| v.trim_end_matches("; "));
    if !s.reproduced {
        // The replay does not fail where the run did (its start or the capacity is not
        // the run's): what other settings do there says nothing.
        return format!(
            "{verdict} (the allocator simulation does not reproduce this OOM under the recorded settings, so it cannot judge other settings)"
        );
    }
    let said = match s.settings.iter().find(|o| !o.happens) {
        Some(o) => format!(
            "simulated: with {} this OOM would not happen (reserved peak {} → {})",
            o.allocator_conf,
            bytes_iec(s.reserved_peak_bytes as i64),
            bytes_iec(o.reserved_peak_bytes as i64)
        ),
        None => {
            let tried: Vec<&str> = s
                .settings
                .iter()
                .map(|o| o.allocator_conf.as_str())
                .collect();
            format!("simulated: it happens with {} too", tried.join(" and "))
        }
    };
    format!("{base}; {said}")
}

/// The hint a fragmentation verdict ends with where no simulation replaces it.
const EXPANDABLE_HINT: &str = "try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";

/// The decision, in order: a usable cached block → stream/pool; enough free memory in
/// total → fragmentation; a large share held outside the allocator → outside; else capacity.
fn judge(
    requested: i64,
    device_free: Option<u64>,
    allocated: i64,
    cache_free: Option<i64>,
    largest: Option<i64>,
    outside: Option<i64>,
) -> (OomCause, String) {
    let want = bytes_iec(requested);
    let free = device_free.map_or(0, |f| f as i64);
    let cache = cache_free.unwrap_or(0);
    if let Some(l) = largest
        && l >= requested
    {
        return (
            OomCause::StreamOrPool,
            format!(
                "a cached free block of {} could hold the {want} request, but it belongs to another stream or memory pool",
                bytes_iec(l)
            ),
        );
    }
    if cache + free >= requested {
        let largest_text =
            largest.map_or(String::new(), |l| format!(", the largest {}", bytes_iec(l)));
        return (
            OomCause::Fragmentation,
            format!(
                "fragmentation: {} is free in the allocator's cache{largest_text} and {} on the device, but no single block of {want}; {EXPANDABLE_HINT}",
                bytes_iec(cache),
                bytes_iec(free)
            ),
        );
    }
    if let Some(o) = outside
        && o > 0
        && o + cache + free >= requested
    {
        return (
            OomCause::OutsideAllocator,
            format!(
                "memory held outside this allocator ({}: other processes, the CUDA context, NCCL buffers) leaves too little for the {want} request",
                bytes_iec(o)
            ),
        );
    }
    (
        OomCause::Capacity,
        format!(
            "capacity: live tensors hold {}, with {} cached and {} free on the device — not enough for {want}; reduce batch size or activation memory (checkpointing, mixed precision)",
            bytes_iec(allocated),
            bytes_iec(cache),
            bytes_iec(free)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: i64 = 1 << 20;

    #[test]
    fn verdicts() {
        let cases = [
            // requested, device free, allocated, cache free, largest, outside → cause
            (
                60 * MIB,
                Some(12 << 20),
                100 * MIB,
                Some(90 * MIB),
                Some(20 * MIB),
                None,
                OomCause::Fragmentation,
            ),
            (
                300 * MIB,
                Some(30 << 20),
                180 * MIB,
                Some(40 * MIB),
                Some(20 * MIB),
                None,
                OomCause::Capacity,
            ),
            (
                10 * MIB,
                Some(0),
                100 * MIB,
                Some(40 * MIB),
                Some(20 * MIB),
                None,
                OomCause::StreamOrPool,
            ),
            (
                300 * MIB,
                Some(10 << 20),
                100 * MIB,
                Some(0),
                None,
                Some(4096 * MIB),
                OomCause::OutsideAllocator,
            ),
        ];
        for (req, free, alloc, cache, largest, outside, want) in cases {
            let (cause, text) = judge(req, free, alloc, cache, largest, outside);
            assert_eq!(cause, want, "{text}");
            assert!(text.contains(&bytes_iec(req)), "{text}");
        }
    }

    #[test]
    fn the_simulation_replaces_the_hint_only_where_it_reproduces_the_oom() {
        let (_, hinted) = judge(
            60 * MIB,
            Some(12 << 20),
            130 * MIB,
            Some(90 * MIB),
            Some(18 * MIB),
            None,
        );
        assert!(hinted.ends_with(EXPANDABLE_HINT), "{hinted}");
        let setting = |conf: &str, happens: bool, peak: u64| SimulatedSetting {
            allocator_conf: conf.to_owned(),
            happens,
            short_by_bytes: happens.then_some(4 << 20),
            headroom_bytes: (!happens).then_some(8 << 20),
            reserved_peak_bytes: peak,
        };
        let mut s = SimulatedOom {
            reproduced: true,
            reserved_peak_bytes: 220 << 20,
            settings: vec![
                setting("expandable_segments:True", false, 200 << 20),
                setting("max_split_size_mb:64", true, 220 << 20),
            ],
        };
        let said = with_simulation(hinted.clone(), &s);
        assert!(!said.contains("try PYTORCH_CUDA_ALLOC_CONF"), "{said}");
        assert!(
            said.ends_with("; simulated: with expandable_segments:True this OOM would not happen (reserved peak 220.00 MiB → 200.00 MiB)"),
            "{said}"
        );
        s.settings[0].happens = true;
        let said = with_simulation(hinted.clone(), &s);
        assert!(
            said.ends_with(
                "simulated: it happens with expandable_segments:True and max_split_size_mb:64 too"
            ),
            "{said}"
        );
        s.reproduced = false;
        let said = with_simulation(hinted.clone(), &s);
        assert!(
            said.starts_with(&hinted) && said.contains("does not reproduce"),
            "{said}"
        );
    }
}
