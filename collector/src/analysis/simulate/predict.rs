//! Prediction: a device's history replayed through the model under a setting, on a device
//! of a known capacity (or none): the reserved peak, the fragmentation there, the driver
//! calls, and each out-of-memory — those recorded (would they still happen?) and any new
//! one. Every setting starts alike: the blocks live when the history begins allocated in
//! address order through that setting, the cache empty (what was cached before the history
//! began is not known to be needed).

use rustc_hash::FxHashMap;

use super::allocator::{Allocator, OutOfMemory};
use super::config::AllocatorConfig;
use super::driver::Device;
use super::state::SimSegment;
use crate::model::{BlockState, DeviceHistory, HistoryAction};

/// One setting's outcome on one device.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Run {
    /// The setting, as `PYTORCH_CUDA_ALLOC_CONF` says it.
    pub allocator_conf: String,
    /// Its largest reserved total.
    pub reserved_peak_bytes: u64,
    /// When, ns.
    pub reserved_peak_at_ns: i64,
    /// Its largest allocated total (blocks as this setting rounds them).
    pub allocated_peak_bytes: u64,
    /// At the reserved peak: bytes allocated, cached but free, and the largest free block.
    pub at_peak: AtPeak,
    /// `cudaMalloc` calls and page mappings.
    pub device_mallocs: u64,
    /// `cudaFree` calls and page unmappings.
    pub device_frees: u64,
    /// Every out-of-memory, recorded or predicted.
    pub ooms: Vec<OomVerdict>,
    /// The segments at the end, in address order.
    pub final_segments: Vec<SimSegment>,
}

/// Fragmentation at a reserved peak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AtPeak {
    /// Allocated bytes then.
    pub allocated_bytes: u64,
    /// Reserved but not allocated.
    pub cached_free_bytes: u64,
    /// The largest cached free block.
    pub largest_free_block_bytes: u64,
}

/// What becomes of an out-of-memory under a setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OomVerdict {
    /// When, ns.
    pub time_ns: i64,
    /// The request, bytes.
    pub requested_bytes: u64,
    /// The recorded run failed here (false: only the simulation does).
    pub recorded: bool,
    /// Whether it happens under this setting (`None`: the capacity is not known).
    pub happens: Option<bool>,
    /// Where it happens: how much more the device would need.
    pub short_by_bytes: Option<u64>,
    /// Where it does not: the device's memory left after the request.
    pub headroom_bytes: Option<u64>,
}

/// Replay `history` under `config` on a device of `capacity_bytes`.
pub fn predict(
    history: &DeviceHistory,
    config: &AllocatorConfig,
    capacity_bytes: Option<u64>,
) -> Run {
    predict_until(history, config, capacity_bytes, None)
}

/// [`predict`], stopped after the last entry at or before `until_ns` where one is given:
/// its `final_segments` are the simulated segments at that instant.
pub fn predict_until(
    history: &DeviceHistory,
    config: &AllocatorConfig,
    capacity_bytes: Option<u64>,
    until_ns: Option<i64>,
) -> Run {
    let mut r = Runner {
        a: Allocator::new(config.clone()),
        device: Device::new(capacity_bytes, history.carried_bytes),
        at: FxHashMap::default(),
        run: Run {
            allocator_conf: config.to_string(),
            reserved_peak_bytes: 0,
            reserved_peak_at_ns: 0,
            allocated_peak_bytes: 0,
            at_peak: AtPeak::default(),
            device_mallocs: 0,
            device_frees: 0,
            ooms: Vec::new(),
            final_segments: Vec::new(),
        },
    };
    let start_ns = history.entries.first().map_or(0, |e| e.time_ns);
    let mut live: Vec<(u64, u64, u64)> = (history.start.iter())
        .flat_map(|s| s.blocks.iter().map(move |b| (s, b)))
        .filter(|(_, b)| b.state != BlockState::Inactive)
        .map(|(s, b)| {
            let asked = match b.requested_size_bytes {
                0 => b.size_bytes,
                r => r,
            };
            (b.address, asked, s.stream)
        })
        .collect();
    live.sort_unstable();
    for (addr, asked, stream) in live {
        r.alloc(addr, asked, stream, start_ns);
    }
    let empty_cache = empty_cache_calls(history);
    for (i, e) in history.entries.iter().enumerate() {
        if until_ns.is_some_and(|t| e.time_ns > t) {
            break;
        }
        match e.action {
            HistoryAction::Alloc => r.alloc(e.addr, e.size_bytes, e.stream, e.time_ns),
            HistoryAction::FreeCompleted => {
                if let Some(addr) = r.at.remove(&e.addr) {
                    r.a.free(addr);
                }
            }
            HistoryAction::SegmentFree | HistoryAction::SegmentUnmap if empty_cache[i] => {
                r.a.release_cached_blocks(&mut r.device);
            }
            HistoryAction::Oom => r.recorded_oom(e.size_bytes, e.stream, e.time_ns),
            _ => {}
        }
        r.note_peak(e.time_ns);
    }
    r.run.device_mallocs = r.a.totals.device_mallocs;
    r.run.device_frees = r.a.totals.device_frees;
    r.run.final_segments = r.a.segments();
    r.run
}

/// A replay under way.
struct Runner {
    a: Allocator,
    device: Device,
    /// Recorded address → the model's address of each live block.
    at: FxHashMap<u64, u64>,
    run: Run,
}

impl Runner {
    /// An allocation the recorded run made; a failure here is a new out-of-memory, after
    /// which the replay goes on as if the device had had room.
    fn alloc(&mut self, recorded_addr: u64, asked: u64, stream: u64, time_ns: i64) {
        let placed = match self.a.malloc(asked, stream, &mut self.device) {
            Ok(id) => id,
            Err(oom) => {
                let short = self.short_by(oom);
                self.run.ooms.push(OomVerdict {
                    time_ns,
                    requested_bytes: asked,
                    recorded: false,
                    happens: Some(true),
                    short_by_bytes: Some(short),
                    headroom_bytes: None,
                });
                self.device.over_capacity_once = true;
                match self.a.malloc(asked, stream, &mut self.device) {
                    Ok(id) => id,
                    Err(_) => return,
                }
            }
        };
        self.at
            .insert(recorded_addr, self.a.blocks.get(placed).addr);
        self.note_peak(time_ns);
    }

    /// A request the recorded run could not satisfy: would this setting?
    fn recorded_oom(&mut self, asked: u64, stream: u64, time_ns: i64) {
        let mut verdict = OomVerdict {
            time_ns,
            requested_bytes: asked,
            recorded: true,
            happens: None,
            short_by_bytes: None,
            headroom_bytes: None,
        };
        if let Some(capacity) = self.device.capacity_bytes {
            match self.a.malloc(asked, stream, &mut self.device) {
                Ok(id) => {
                    verdict.happens = Some(false);
                    let held = self.a.totals.reserved_bytes + self.device.held_bytes;
                    verdict.headroom_bytes = Some(capacity.saturating_sub(held));
                    self.note_peak(time_ns);
                    // The program did not get it: freed at once.
                    let addr = self.a.blocks.get(id).addr;
                    self.a.free(addr);
                }
                Err(oom) => {
                    verdict.happens = Some(true);
                    verdict.short_by_bytes = Some(self.short_by(oom));
                }
            }
        }
        self.run.ooms.push(verdict);
    }

    /// How much more memory the device would need for the failed request.
    fn short_by(&self, oom: OutOfMemory) -> u64 {
        let held = self.a.totals.reserved_bytes + self.device.held_bytes;
        let room = (self.device.capacity_bytes).map_or(0, |c| c.saturating_sub(held));
        oom.wanted_bytes.saturating_sub(room)
    }

    fn note_peak(&mut self, time_ns: i64) {
        let mut t = self.a.totals;
        t.allocated_bytes += self.device.held_bytes;
        t.reserved_bytes += self.device.held_bytes;
        self.run.allocated_peak_bytes = self.run.allocated_peak_bytes.max(t.allocated_bytes);
        if t.reserved_bytes > self.run.reserved_peak_bytes {
            self.run.reserved_peak_bytes = t.reserved_bytes;
            self.run.reserved_peak_at_ns = time_ns;
            self.run.at_peak = AtPeak {
                allocated_bytes: t.allocated_bytes,
                cached_free_bytes: t.reserved_bytes - t.allocated_bytes,
                largest_free_block_bytes: self.a.largest_free_bytes(),
            };
        }
    }
}

/// Per entry, whether it starts a run of segment frees that is a `torch.cuda.empty_cache()`
/// call: one not followed by new memory or an out-of-memory (those are the allocator's own
/// releases when a segment cannot be had, which the model makes itself).
fn empty_cache_calls(history: &DeviceHistory) -> Vec<bool> {
    let releases =
        |a: HistoryAction| matches!(a, HistoryAction::SegmentFree | HistoryAction::SegmentUnmap);
    let e = &history.entries;
    let mut out = vec![false; e.len()];
    let mut i = 0;
    while i < e.len() {
        if !releases(e[i].action) {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < e.len() && releases(e[end].action) {
            end += 1;
        }
        let own = e.get(end).is_some_and(|n| {
            matches!(
                n.action,
                HistoryAction::SegmentAlloc | HistoryAction::SegmentMap | HistoryAction::Oom
            )
        });
        out[i] = !own;
        i = end;
    }
    out
}
