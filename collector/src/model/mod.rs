//! The neutral model every source produces: a [`Recording`].
//!
//! A recording is what a trace *says*, normalised: memory events per device, op spans,
//! training-step markers and metadata. Nothing here is derived; derived views (series,
//! live allocations, op trees) live in [`crate::timeline`] and [`crate::analysis`].
//! Times are `i64` nanoseconds on the source's own clock (absolute epoch ns for PyTorch
//! traces), sizes are bytes.

mod allocator;
mod compact_spans;
mod device;
mod events;
mod in_place;
mod op_spans;
pub mod python;
mod samples;
mod source;
mod strings;
mod tags;

pub use crate::parse::SourceFormat;
pub use allocator::{
    AllocatorState, Block, BlockState, DeviceHistory, Frame, HistoryAction, HistoryEntry,
    OomDetail, RequestedTotals, Segment, SegmentPool, StackId,
};
pub use compact_spans::CompactSpans;
pub use device::{DeviceClass, DeviceId, DeviceType};
pub use events::{
    Addr, MemEvent, MemEventKind, Note, OpCategory, OpSpan, STEP_PREFIX, StepMarker, ThreadInfo,
    Total,
};
pub(crate) use in_place::option_in_place;
pub use op_spans::OpSpans;
pub use samples::{GpuProcessSample, GpuSample, HostSample};
pub use source::{DeviceInfo, Diagnostics, DistributedInfo, Meta};
pub use strings::{StrId, StringTable};
pub use tags::{StorageTag, TensorRole};

use std::collections::BTreeMap;

/// Index into [`Recording::devices`].
pub type DeviceIdx = u16;
/// Index into [`Recording::threads`].
pub type ThreadIdx = u32;

/// The largest timestamp magnitude kept (2^62 − 1 ns, about 146 years from the clock's
/// zero; epoch clocks read about 2^60.6 ns today): see [`Recording::clamp_times`].
pub const TIME_LIMIT_NS: i64 = (1 << 62) - 1;

/// Everything one source said, in the neutral model.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Source facts.
    pub meta: Meta,
    /// Interned op names.
    pub strings: StringTable,
    /// Devices referenced by memory events (and described by the source).
    pub devices: Vec<DeviceInfo>,
    /// Threads and streams referenced by events.
    pub threads: Vec<ThreadInfo>,
    /// Memory events in source order (not necessarily sorted by time).
    pub mem_events: Vec<MemEvent>,
    /// Op spans in source order (16 bytes each).
    pub ops: OpSpans,
    /// Op spans held compressed instead of in `ops`, in source order, by readers asked to
    /// ([`crate::parse::SpanFilter::SummaryCompact`]); empty otherwise. `summary` takes the
    /// few it asks about into `ops` ([`crate::analysis::summary::summarize_compact`]).
    pub compact_ops: CompactSpans,
    /// Training steps, sorted by start.
    pub steps: Vec<StepMarker>,
    /// Interned call stacks (innermost frame first), referenced by [`StackId`].
    pub stacks: Vec<Vec<Frame>>,
    /// The allocator's segments and blocks at one instant, for sources that have them.
    pub allocator: Option<AllocatorState>,
    /// Extra facts of out-of-memory events.
    pub oom_details: Vec<OomDetail>,
    /// Device memory as the driver (NVML) saw it, for recordings.
    pub gpu_samples: Vec<GpuSample>,
    /// Host memory (RSS) of the recorded process tree, for recordings.
    pub host_samples: Vec<HostSample>,
    /// Per-process GPU memory of the recorded process tree (NVML), for recordings.
    pub gpu_process_samples: Vec<GpuProcessSample>,
    /// Storages whose role the program itself showed (`record --torch-memory`'s shim):
    /// parameters, gradients, optimizer state.
    pub storage_tags: Vec<StorageTag>,
    /// Texts the program attached to instants (snapshots' `user_metadata`), in time order.
    pub notes: Vec<Note>,
    /// What was skipped or odd.
    pub diagnostics: Diagnostics,
}

impl Recording {
    /// The name of an op.
    pub fn op_name(&self, op: impl std::borrow::Borrow<OpSpan>) -> &str {
        self.strings.get(op.borrow().name)
    }

    /// The frames of a stack (empty for `None` or an unknown id).
    pub fn stack(&self, id: Option<StackId>) -> &[Frame] {
        id.and_then(|i| self.stacks.get(i.index() as usize))
            .map_or(&[], Vec::as_slice)
    }

    /// A recording with no events, for a source to fill.
    pub fn empty(format: SourceFormat, era: &str) -> Recording {
        Recording {
            meta: Meta {
                format,
                era: era.to_owned(),
                compressed: false,
                content_bytes: 0,
                base_time_ns: None,
                start_ns: 0,
                end_ns: 0,
                event_order: false,
                distributed: None,
                properties: BTreeMap::new(),
                events_read: 0,
                spans_left_out: 0,
                memory_events_in_ops: None,
            },
            strings: StringTable::default(),
            devices: Vec::new(),
            threads: Vec::new(),
            mem_events: Vec::new(),
            ops: OpSpans::default(),
            compact_ops: CompactSpans::default(),
            steps: Vec::new(),
            stacks: Vec::new(),
            allocator: None,
            oom_details: Vec::new(),
            gpu_samples: Vec::new(),
            host_samples: Vec::new(),
            gpu_process_samples: Vec::new(),
            storage_tags: Vec::new(),
            notes: Vec::new(),
            diagnostics: Diagnostics::default(),
        }
    }

    /// Whether device `idx` is an accelerator (a GPU), not the host.
    pub fn is_accelerator(&self, idx: DeviceIdx) -> bool {
        self.devices
            .get(idx as usize)
            .is_some_and(|i| i.key.is_accelerator())
    }

    /// The index of a device, if the recording has it.
    pub fn find_device(&self, key: DeviceId) -> Option<DeviceIdx> {
        self.devices
            .iter()
            .position(|d| d.key == key)
            .map(|i| i as DeviceIdx)
    }

    /// The index of a device, adding it if new.
    pub fn device_index(&mut self, key: DeviceId) -> DeviceIdx {
        if let Some(i) = self.find_device(key) {
            return i;
        }
        self.devices.push(DeviceInfo {
            key,
            name: None,
            total_memory_bytes: None,
        });
        (self.devices.len() - 1) as DeviceIdx
    }

    /// The index of a thread, adding it if new.
    pub fn thread_index(&mut self, pid: &str, tid: &str) -> ThreadIdx {
        if let Some(i) = self
            .threads
            .iter()
            .position(|t| t.pid == pid && t.tid == tid)
        {
            return i as ThreadIdx;
        }
        self.threads.push(ThreadInfo {
            pid: pid.to_owned(),
            tid: tid.to_owned(),
            name: None,
        });
        (self.threads.len() - 1) as ThreadIdx
    }

    /// Every timestamp of the recording but its time range and op spans: memory events,
    /// steps, the allocator's state, NVML and host samples, storage tags.
    fn for_each_time_mut(&mut self, mut f: impl FnMut(&mut i64)) {
        for e in &mut self.mem_events {
            // A copy: the event is packed, its fields cannot be borrowed.
            let mut time_ns = e.time_ns;
            f(&mut time_ns);
            e.time_ns = time_ns;
        }
        for s in &mut self.steps {
            f(&mut s.start_ns);
            f(&mut s.end_ns);
        }
        if let Some(a) = self.allocator.as_mut() {
            if let Some(t) = a.time_ns.as_mut() {
                f(t);
            }
            for r in &mut a.requested {
                f(&mut r.peak_at_ns);
            }
        }
        for s in &mut self.gpu_samples {
            f(&mut s.time_ns);
        }
        for s in &mut self.host_samples {
            f(&mut s.time_ns);
        }
        for s in &mut self.gpu_process_samples {
            f(&mut s.time_ns);
        }
        for t in &mut self.storage_tags {
            f(&mut t.since_ns);
        }
        for n in &mut self.notes {
            f(&mut n.time_ns);
        }
    }

    /// Move every timestamp by `delta_ns` (events, spans, steps, the allocator's state,
    /// samples, storage tags, the time range): to put a source on another clock.
    pub fn shift_time(&mut self, delta_ns: i64) {
        self.for_each_time_mut(|t| *t = t.saturating_add(delta_ns));
        self.ops.shift_times(delta_ns);
        self.compact_ops.shift(delta_ns);
        self.meta.start_ns = self.meta.start_ns.saturating_add(delta_ns);
        self.meta.end_ns = self.meta.end_ns.saturating_add(delta_ns);
    }

    /// Clamp every timestamp into ±[`TIME_LIMIT_NS`], counting those that were not (a
    /// corrupt or hostile file's): after this, any two times differ by less than
    /// `i64::MAX`, so no duration computed from them overflows. Every reader's result
    /// passes through here ([`crate::load`]).
    pub fn clamp_times(&mut self) {
        let limit = -TIME_LIMIT_NS..=TIME_LIMIT_NS;
        let mut clamped = 0u64;
        let mut clamp = |t: &mut i64| {
            if !limit.contains(t) {
                *t = (*t).clamp(*limit.start(), *limit.end());
                clamped += 1;
            }
        };
        self.for_each_time_mut(&mut clamp);
        self.ops
            .update_outside((*limit.start(), *limit.end()), |op| {
                clamp(&mut op.start_ns);
                clamp(&mut op.end_ns);
            });
        // Compact spans clamp as they are read back; counted here like the others.
        clamped += self.compact_ops.times_out_of_range();
        // The time range is derived from the times above: clamped, not counted again.
        self.meta.start_ns = self.meta.start_ns.clamp(*limit.start(), *limit.end());
        self.meta.end_ns = self.meta.end_ns.clamp(*limit.start(), *limit.end());
        if self.meta.end_ns < self.meta.start_ns {
            self.meta.end_ns = self.meta.start_ns;
        }
        self.diagnostics.note_n(
            "timestamps beyond ±146 years clamped (corrupt times)",
            clamped,
        );
    }

    /// The training step running at `time_ns` (steps are in start order; a step is looked
    /// for among the few that started last, as steps do not nest deeply).
    pub fn step_at(&self, time_ns: i64) -> Option<&StepMarker> {
        let started = self.steps.partition_point(|s| s.start_ns <= time_ns);
        self.steps[..started]
            .iter()
            .rev()
            .take(4)
            .find(|s| s.end_ns >= time_ns)
    }

    /// Time since the start of the recording, in µs, as reports show it.
    pub fn us_since_start(&self, time_ns: i64) -> f64 {
        crate::units::us_after(self.meta.start_ns, time_ns)
    }

    /// Absolute time of a point given in µs since the start of the recording.
    pub fn ns_from_us_since_start(&self, us: f64) -> i64 {
        self.meta
            .start_ns
            .saturating_add((us * 1000.0).round() as i64)
    }
}
