//! The replay: one device's ring-buffer history walked back from the segment state at
//! snapshot time to what was live when it begins, then replayed forwards with allocator
//! totals.

use rustc_hash::FxHashMap;

use super::PRE_EXISTING_BLOCKS;
use super::entry::{Action, Entry, Trace};
use super::history::device_history;
use super::parse::Gathered;
use super::state::{Live, Pieces, Sizes, state_at_snapshot, survivor_sizes, walk_back};
use crate::model::{
    AllocatorState, DeviceHistory, DeviceId, DeviceIdx, MemEvent, MemEventKind, Note, OomDetail,
    Recording, RequestedTotals, Segment, StackId, StepMarker, ThreadIdx,
};

impl Gathered {
    /// Replay every device's history into the recording.
    pub(super) fn replay(self, keep_history: bool) -> Recording {
        let Gathered {
            rec,
            state,
            settings,
            per_device,
            annotations,
            has_time,
            any_entry,
        } = self;
        // A snapshot that ran out of memory keeps its history whatever the load asked: its
        // OOM verdicts quote the allocator simulation, which replays it.
        let any_oom =
            (per_device.iter()).any(|(_, t)| t.entries.iter().any(|e| e.action == Action::Oom));
        let mut r = Replayer {
            rec,
            requested: Vec::new(),
            history: (keep_history || any_oom).then(Vec::new),
        };
        for (index, trace) in per_device {
            r.replay_device(index, &trace, &state, has_time);
            let device = r.rec.device_index(DeviceId::cuda(index));
            r.rec
                .notes
                .extend(trace.notes.iter().map(|&(time_ns, text)| Note {
                    time_ns,
                    device,
                    text,
                }));
        }
        r.rec.notes.sort_by_key(|n| n.time_ns);
        r.rec.ops = annotations.into();
        r.rec.steps = steps_from(&r.rec);
        r.rec.allocator = Some(AllocatorState {
            time_ns: None,
            segments: state,
            settings,
            requested: std::mem::take(&mut r.requested),
            history: r.history.take().unwrap_or_default(),
        });
        r.finish_meta(has_time, any_entry);
        r.rec
    }
}

/// Replays the entries into the recording's events.
struct Replayer {
    rec: Recording,
    /// Per device replayed, the requested totals.
    requested: Vec<RequestedTotals>,
    /// Per device replayed, its history as recorded, where the load asked for it.
    history: Option<Vec<DeviceHistory>>,
}

impl Replayer {
    /// Replay one device: synthesize the state before the surviving history, then the history.
    fn replay_device(&mut self, index: i32, trace: &Trace, state: &[Segment], has_time: bool) {
        let entries = &trace.entries[..];
        let device = self.rec.device_index(DeviceId::cuda(index));
        let thread = self.rec.thread_index("allocator", &format!("cuda:{index}"));
        let (mut live, mut pieces) = state_at_snapshot(state, device);
        let final_allocated =
            (live.values()).fold(0i64, |t, &(size, _)| t.saturating_add(size.block as i64));
        let final_reserved = (pieces.values()).fold(0i64, |t, &s| t.saturating_add(s as i64));
        // Two walks back over the history, one from the live blocks at snapshot time and
        // one changing them: each on its own thread.
        let at_snapshot = live.clone();
        let (notes, survivor_size) = crate::threads::join(
            "vramscope-survivors",
            || walk_back(entries, &mut live, &mut pieces),
            || survivor_sizes(entries, &at_snapshot),
        );
        for (what, n) in notes {
            self.rec.diagnostics.note_n(what, n);
        }
        let first_time = entries.iter().find_map(Entry::time_ns);
        let start = match (has_time, first_time) {
            (true, Some(t)) => t - 1,
            _ => -1,
        };
        if let Some(history) = &mut self.history {
            let mut last = start;
            let times = entries.iter().enumerate().map(|(i, e)| {
                last = if has_time {
                    e.time_ns().unwrap_or(last)
                } else {
                    i as i64
                };
                last
            });
            history.push(device_history(device, trace, state, &live, &pieces, times));
        }
        let mut lane = Lane {
            device,
            thread,
            allocated: 0,
            reserved: 0,
            requested: 0,
            requested_peak: (0, start),
        };
        let current = self.push_start_state(&mut lane, &pieces, &live, start, entries.len());
        self.replay_forward(&mut lane, trace, &survivor_size, current, has_time, start);
        self.requested.push(RequestedTotals {
            device,
            peak_bytes: lane.requested_peak.0,
            peak_at_ns: lane.requested_peak.1,
            final_bytes: lane.requested,
        });
        let (allocated, reserved_now) = (lane.allocated, lane.reserved);
        if (allocated, reserved_now) != (final_allocated, final_reserved) {
            self.rec.diagnostics.note(&format!(
                "cuda:{index}: replay ends at {allocated} allocated / {reserved_now} reserved bytes, the snapshot's segments hold {final_allocated} / {final_reserved}"
            ));
        }
    }

    /// The state before the surviving history as synthetic events at `start`: every
    /// reserved range, then every live block. Returns the live blocks' sizes by address.
    fn push_start_state(
        &mut self,
        lane: &mut Lane,
        pieces: &Pieces,
        live: &Live,
        start: i64,
        entries: usize,
    ) -> FxHashMap<u64, Sizes> {
        for (&addr, &size) in pieces {
            lane.reserved = lane.reserved.saturating_add(size as i64);
            lane.push(
                &mut self.rec,
                MemEventKind::SegmentAlloc,
                size as i64,
                Some(addr),
                start,
                None,
            );
        }
        self.rec
            .mem_events
            .reserve(pieces.len() + live.len() + entries);
        let pre_existing = live.len() as u64;
        let mut current: FxHashMap<u64, Sizes> = FxHashMap::default();
        // In address order, whatever order the map holds them in.
        let mut by_address: Vec<_> = live.iter().collect();
        by_address.sort_unstable_by_key(|&(&addr, _)| addr);
        for (&addr, &(size, stack)) in by_address {
            current.insert(addr, size);
            lane.take(size, 1);
            lane.push(
                &mut self.rec,
                MemEventKind::Alloc,
                size.block as i64,
                Some(addr),
                start,
                stack,
            );
        }
        lane.note_requested_peak(start);
        self.rec
            .diagnostics
            .note_n(PRE_EXISTING_BLOCKS, pre_existing);
        current
    }

    /// Replay the surviving entries forwards with running totals; `current` holds the live
    /// blocks' sizes by address.
    fn replay_forward(
        &mut self,
        lane: &mut Lane,
        trace: &Trace,
        survivor_size: &FxHashMap<usize, Sizes>,
        mut current: FxHashMap<u64, Sizes>,
        has_time: bool,
        start: i64,
    ) {
        let mut device_free = trace.device_free.iter().copied();
        let mut last_time = start;
        for (i, e) in trace.entries.iter().enumerate() {
            // Old snapshots have no times: the entry's position is its time.
            let time_ns = if has_time {
                e.time_ns().unwrap_or(last_time)
            } else {
                i as i64
            };
            last_time = time_ns;
            let mut size = e.size.min(i64::MAX as u64) as i64;
            let kind = match e.action {
                Action::Alloc => {
                    let sizes =
                        (survivor_size.get(&i).copied()).unwrap_or(Sizes::from_request(e.size));
                    if let Some(addr) = e.addr() {
                        current.insert(addr, sizes);
                    }
                    lane.take(sizes, 1);
                    size = sizes.block.min(i64::MAX as u64) as i64;
                    MemEventKind::Alloc
                }
                Action::FreeCompleted => {
                    // A free gives back what its allocation took.
                    let sizes = e
                        .addr()
                        .and_then(|a| current.remove(&a))
                        .unwrap_or(Sizes::from_request(e.size));
                    lane.take(sizes, -1);
                    size = sizes.block.min(i64::MAX as u64) as i64;
                    MemEventKind::Free
                }
                Action::SegmentAlloc | Action::SegmentMap => {
                    lane.reserved = lane.reserved.saturating_add(size);
                    MemEventKind::SegmentAlloc
                }
                Action::SegmentFree | Action::SegmentUnmap => {
                    lane.reserved = lane.reserved.saturating_sub(size);
                    MemEventKind::SegmentFree
                }
                Action::Oom => {
                    self.rec.oom_details.push(OomDetail {
                        event: self.rec.mem_events.len() as u32,
                        device_free_bytes: device_free.next().flatten(),
                    });
                    MemEventKind::OutOfMemory
                }
                Action::FreeRequested | Action::Snapshot => continue,
                Action::Unknown => {
                    self.rec
                        .diagnostics
                        .note("trace entries with an unknown action skipped");
                    continue;
                }
            };
            let bytes = match kind {
                MemEventKind::Free | MemEventKind::SegmentFree => -size,
                _ => size,
            };
            lane.push(&mut self.rec, kind, bytes, e.addr(), time_ns, e.stack());
            lane.note_requested_peak(time_ns);
        }
    }

    fn finish_meta(&mut self, has_time: bool, any_entry: bool) {
        let times = self
            .rec
            .mem_events
            .iter()
            .map(|e| e.time_ns)
            .chain(self.rec.ops.iter().flat_map(|o| [o.start_ns, o.end_ns]));
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for t in times {
            lo = lo.min(t);
            hi = hi.max(t);
        }
        if lo > hi {
            (lo, hi) = (0, 0);
        }
        self.rec.meta.start_ns = lo;
        self.rec.meta.end_ns = hi;
        self.rec.meta.events_read = self.rec.mem_events.len() as u64;
        self.rec.meta.event_order = any_entry && !has_time;
        self.rec.meta.era = match (any_entry, has_time) {
            (false, _) => "segments only (no allocation history recorded)".to_owned(),
            (true, true) => "torch ≥ 2.1 (trace entries with time_us)".to_owned(),
            (true, false) => {
                "torch 2.0–2.1 (no time_us: event order stands in for time)".to_owned()
            }
        };
        if let Some(s) = &self.rec.allocator
            && s.segments.iter().any(|s| s.expandable)
        {
            self.rec.meta.era.push_str(", expandable segments");
        }
    }
}

/// One device's replay under way: where its events go and the allocator totals so far.
struct Lane {
    device: DeviceIdx,
    thread: ThreadIdx,
    allocated: i64,
    reserved: i64,
    /// The requested total, and its peak (bytes, when).
    requested: i64,
    requested_peak: (i64, i64),
}

impl Lane {
    /// A block taken (`sign` 1) or given back (−1): both totals move.
    fn take(&mut self, sizes: Sizes, sign: i64) {
        // The sizes add up to at most MAX_TOTAL_BYTES (checked when read): never past i64.
        self.allocated =
            (self.allocated).saturating_add(sign * sizes.block.min(i64::MAX as u64) as i64);
        self.requested =
            (self.requested).saturating_add(sign * sizes.requested.min(i64::MAX as u64) as i64);
    }

    /// Keep the requested total's peak (the first time it is reached).
    fn note_requested_peak(&mut self, time_ns: i64) {
        if self.requested > self.requested_peak.0 {
            self.requested_peak = (self.requested, time_ns);
        }
    }

    /// Push an event carrying the current totals.
    fn push(
        &self,
        rec: &mut Recording,
        kind: MemEventKind,
        bytes: i64,
        addr: Option<u64>,
        time_ns: i64,
        stack: Option<StackId>,
    ) {
        rec.mem_events.push(MemEvent {
            time_ns,
            bytes,
            addr: addr.into(),
            total_allocated_bytes: self.allocated.into(),
            total_reserved_bytes: self.reserved.into(),
            device: self.device,
            thread: self.thread,
            kind,
            stack,
        });
    }
}

/// Steps from annotations: repeated names (`ProfilerStep#N`, `step`, …).
fn steps_from(rec: &Recording) -> Vec<StepMarker> {
    rec.ops
        .iter()
        .filter_map(|op| StepMarker::from_span(rec.strings.get(op.name), op.start_ns, op.end_ns))
        .collect()
}
