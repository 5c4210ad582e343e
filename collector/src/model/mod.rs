//! The neutral model every source produces: a [`Recording`].
//!
//! A recording is what a trace *says*, normalised: memory events per device, op spans,
//! training-step markers and metadata. Nothing here is derived; derived views (series,
//! live allocations, op trees) live in [`crate::timeline`] and [`crate::analysis`].
//! Times are `i64` nanoseconds on the source's own clock (absolute epoch ns for PyTorch
//! traces), sizes are bytes.

mod allocator;
mod device;
mod strings;

pub use allocator::{
    AllocatorState, Block, BlockState, Frame, OomDetail, Segment, SegmentPool, StackId,
};
pub use device::{DeviceClass, DeviceKey, DeviceType};
pub use strings::{StrId, StringTable};

use std::collections::BTreeMap;

/// Index into [`Recording::devices`].
pub type DeviceIdx = u16;
/// Index into [`Recording::threads`].
pub type ThreadIdx = u32;

/// What a memory event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemEventKind {
    /// Bytes were handed out (`bytes > 0`).
    Alloc,
    /// Bytes were given back (`bytes < 0`).
    Free,
    /// The allocator failed to satisfy a request (`[OutOfMemory]`, snapshot `oom`).
    OutOfMemory,
    /// The allocator reserved memory from the driver (`cudaMalloc` of a segment, an
    /// expandable segment mapping more pages): `bytes > 0`, counted as *reserved*.
    SegmentAlloc,
    /// The allocator gave reserved memory back to the driver: `bytes < 0`.
    SegmentFree,
}

impl MemEventKind {
    /// Whether the event changes allocated (tensor) memory.
    pub fn is_allocation(self) -> bool {
        matches!(self, MemEventKind::Alloc | MemEventKind::Free)
    }

    /// Whether the event changes reserved (segment) memory.
    pub fn is_segment(self) -> bool {
        matches!(self, MemEventKind::SegmentAlloc | MemEventKind::SegmentFree)
    }
}

/// One allocator record: an allocation, a free, or an allocation failure.
#[derive(Clone, Debug, PartialEq)]
pub struct MemEvent {
    /// When it happened.
    pub time_ns: i64,
    /// Signed size: positive for an allocation, negative for a free.
    pub bytes: i64,
    /// The block's address, where the source records it (PyTorch ≥ 1.10).
    pub addr: Option<u64>,
    /// Allocator's allocated bytes on this device *after* the event, if the source says.
    pub total_allocated_bytes: Option<i64>,
    /// Allocator's reserved (segment) bytes on this device after the event, if the source says.
    pub total_reserved_bytes: Option<i64>,
    /// Which device's allocator.
    pub device: DeviceIdx,
    /// The thread that allocated or freed.
    pub thread: ThreadIdx,
    /// Alloc, free, segment or OOM.
    pub kind: MemEventKind,
    /// The allocation's call stack, where the source records one (allocator snapshots).
    pub stack: Option<StackId>,
}

/// What kind of span an [`OpSpan`] is. The categories follow the Kineto trace's `cat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpCategory {
    /// An ATen / TorchScript operator (`cpu_op`, legacy `Operator`).
    CpuOp,
    /// A `record_function` range, including `ProfilerStep#N` (`user_annotation`).
    UserAnnotation,
    /// A Python frame recorded with `with_stack=True` (`python_function`).
    PythonFunction,
    /// A CUDA/HIP runtime call on the host (`cuda_runtime`, legacy `Runtime`).
    Runtime,
    /// A CUDA driver call on the host (`cuda_driver`).
    Driver,
    /// A GPU kernel (`kernel`, legacy `Kernel`).
    Kernel,
    /// A GPU copy (`gpu_memcpy`, legacy `Memcpy`).
    Memcpy,
    /// A GPU memset (`gpu_memset`, legacy `Memset`).
    Memset,
    /// A user annotation mirrored onto the GPU timeline (`gpu_user_annotation`).
    GpuUserAnnotation,
    /// An NVTX range (Nsight Systems).
    Nvtx,
    /// Anything else with a duration.
    Other,
}

impl OpCategory {
    /// Whether the span runs on the host (PyTorch's `DeviceType.CPU` for kineto events).
    pub fn is_host(self) -> bool {
        !matches!(
            self,
            OpCategory::Kernel
                | OpCategory::Memcpy
                | OpCategory::Memset
                | OpCategory::GpuUserAnnotation
        )
    }

    /// Short stable name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            OpCategory::CpuOp => "cpu_op",
            OpCategory::UserAnnotation => "user_annotation",
            OpCategory::PythonFunction => "python_function",
            OpCategory::Runtime => "cuda_runtime",
            OpCategory::Driver => "cuda_driver",
            OpCategory::Kernel => "kernel",
            OpCategory::Memcpy => "gpu_memcpy",
            OpCategory::Memset => "gpu_memset",
            OpCategory::GpuUserAnnotation => "gpu_user_annotation",
            OpCategory::Nvtx => "nvtx",
            OpCategory::Other => "other",
        }
    }
}

/// A span of time during which an op (or annotation, kernel, …) ran.
#[derive(Clone, Debug, PartialEq)]
pub struct OpSpan {
    /// Op name, interned in [`Recording::strings`].
    pub name: StrId,
    /// What kind of span.
    pub category: OpCategory,
    /// The thread (or stream) it ran on.
    pub thread: ThreadIdx,
    /// Start time.
    pub start_ns: i64,
    /// End time (`start_ns + duration`); equal to `start_ns` for zero-length spans.
    pub end_ns: i64,
}

/// A training step (`ProfilerStep#N` in PyTorch traces).
#[derive(Clone, Debug, PartialEq)]
pub struct StepMarker {
    /// The step number N.
    pub number: i64,
    /// Step start.
    pub start_ns: i64,
    /// Step end.
    pub end_ns: i64,
}

impl StepMarker {
    /// The step a span named `ProfilerStep#N` marks (`None` for any other name).
    pub fn from_span(name: &str, start_ns: i64, end_ns: i64) -> Option<StepMarker> {
        let number = name.strip_prefix("ProfilerStep#")?.parse::<i64>().ok()?;
        Some(StepMarker {
            number,
            start_ns,
            end_ns,
        })
    }
}

/// A thread (or GPU stream) of the trace, as the source names it.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadInfo {
    /// Process id as written in the source (numbers normalised, strings kept).
    pub pid: String,
    /// Thread id as written in the source.
    pub tid: String,
    /// Name from the source's metadata, if any.
    pub name: Option<String>,
}

/// A device that memory events refer to.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// Type and ordinal.
    pub key: DeviceKey,
    /// Marketing name ("NVIDIA H100 80GB HBM3"), where the source has device properties.
    pub name: Option<String>,
    /// Total memory of the device in bytes, where known.
    pub total_memory_bytes: Option<u64>,
}

/// Distributed-training facts of the process that wrote the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DistributedInfo {
    /// `nccl`, `gloo`, …
    pub backend: Option<String>,
    /// This process's rank.
    pub rank: Option<i64>,
    /// Number of ranks.
    pub world_size: Option<i64>,
}

/// Which file format a recording came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    /// PyTorch profiler Chrome trace (Kineto JSON), plain or gzip.
    TorchChromeTrace,
    /// PyTorch CUDA caching-allocator snapshot (`torch.cuda.memory._dump_snapshot` pickle).
    TorchSnapshot,
    /// Nsight Systems `nsys export --type sqlite`.
    NsightSqlite,
    /// Nsight Systems `nsys export --type json`.
    NsightJson,
    /// vramscope's own recording (`vramscope record`).
    VramscopeRecording,
}

impl SourceFormat {
    /// Stable identifier for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceFormat::TorchChromeTrace => "pytorch-chrome-trace",
            SourceFormat::TorchSnapshot => "pytorch-allocator-snapshot",
            SourceFormat::NsightSqlite => "nsight-systems-sqlite",
            SourceFormat::NsightJson => "nsight-systems-json",
            SourceFormat::VramscopeRecording => "vramscope-recording",
        }
    }

    /// What to call it in prose.
    pub fn describe(self) -> &'static str {
        match self {
            SourceFormat::TorchChromeTrace => "PyTorch profiler trace",
            SourceFormat::TorchSnapshot => "PyTorch allocator snapshot",
            SourceFormat::NsightSqlite => "Nsight Systems export (SQLite)",
            SourceFormat::NsightJson => "Nsight Systems export (JSON)",
            SourceFormat::VramscopeRecording => "vramscope recording",
        }
    }
}

/// Facts about the source.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// File format.
    pub format: SourceFormat,
    /// Producer era, e.g. "torch 2.x (relative µs, baseTimeNanoseconds)".
    pub era: String,
    /// Whether the input was gzip-compressed.
    pub compressed: bool,
    /// Size of the (decompressed) content in bytes.
    pub content_bytes: u64,
    /// `baseTimeNanoseconds` of modern traces.
    pub base_time_ns: Option<i64>,
    /// Earliest timestamp seen; "time since trace start" is measured from here.
    pub start_ns: i64,
    /// Latest end timestamp seen.
    pub end_ns: i64,
    /// Distributed facts, where present.
    pub distributed: Option<DistributedInfo>,
    /// Free-form key/value facts from the source (`traceName`, `profile_memory`, versions…).
    pub properties: BTreeMap<String, String>,
    /// Total number of trace events read.
    pub events_read: u64,
}

/// Recoverable oddities met while reading: counted, reported, never fatal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diagnostics {
    /// What was skipped or repaired, by kind, with counts.
    pub counts: BTreeMap<String, u64>,
    /// Set when the input ended early and the complete prefix was kept (salvage mode).
    pub truncated_at: Option<u64>,
}

impl Diagnostics {
    /// Count one occurrence of `what`.
    pub fn note(&mut self, what: &str) {
        self.note_n(what, 1);
    }

    /// Count `n` occurrences of `what`.
    pub fn note_n(&mut self, what: &str, n: u64) {
        if n == 0 {
            return;
        }
        match self.counts.get_mut(what) {
            Some(c) => *c += n,
            None => {
                self.counts.insert(what.to_owned(), n);
            }
        }
    }

    /// Total number of noted oddities.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

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
    /// Op spans in source order.
    pub ops: Vec<OpSpan>,
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
    /// What was skipped or odd.
    pub diagnostics: Diagnostics,
}

/// One NVML reading of one GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuSample {
    /// When.
    pub time_ns: i64,
    /// Which GPU.
    pub device: DeviceIdx,
    /// Memory in use on the whole device (all processes, contexts, the driver).
    pub used_bytes: u64,
    /// Device memory total, where reported.
    pub total_bytes: Option<u64>,
    /// Memory used by the recorded process and its descendants, where NVML reports it.
    pub process_bytes: Option<u64>,
    /// Free memory on the device, where reported.
    pub free_bytes: Option<u64>,
    /// Memory the driver and firmware reserve (NVML's `reserved`, not the allocator's).
    pub driver_reserved_bytes: Option<u64>,
}

/// One NVML reading of one process of the recorded tree on one GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuProcessSample {
    /// When.
    pub time_ns: i64,
    /// Which GPU.
    pub device: DeviceIdx,
    /// The process.
    pub pid: u32,
    /// Its memory on the GPU; `None` where NVML lists the process without its memory
    /// (MIG without privileges, WDDM).
    pub used_bytes: Option<u64>,
}

/// One reading of the recorded process tree's host memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostSample {
    /// When.
    pub time_ns: i64,
    /// Resident set size of the process and its descendants.
    pub rss_bytes: u64,
}

impl Recording {
    /// The name of an op.
    pub fn op_name(&self, op: &OpSpan) -> &str {
        self.strings.get(op.name)
    }

    /// The frames of a stack (empty for `None` or an unknown id).
    pub fn stack(&self, id: Option<StackId>) -> &[Frame] {
        id.and_then(|i| self.stacks.get(i.0 as usize))
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
                distributed: None,
                properties: BTreeMap::new(),
                events_read: 0,
            },
            strings: StringTable::default(),
            devices: Vec::new(),
            threads: Vec::new(),
            mem_events: Vec::new(),
            ops: Vec::new(),
            steps: Vec::new(),
            stacks: Vec::new(),
            allocator: None,
            oom_details: Vec::new(),
            gpu_samples: Vec::new(),
            host_samples: Vec::new(),
            gpu_process_samples: Vec::new(),
            diagnostics: Diagnostics::default(),
        }
    }

    /// The index of a device, adding it if new.
    pub fn device_index(&mut self, key: DeviceKey) -> DeviceIdx {
        if let Some(i) = self.devices.iter().position(|d| d.key == key) {
            return i as DeviceIdx;
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

    /// Every timestamp of the recording but its time range: memory events, op spans,
    /// steps, the allocator's state, NVML and host samples.
    fn for_each_time_mut(&mut self, mut f: impl FnMut(&mut i64)) {
        for e in &mut self.mem_events {
            f(&mut e.time_ns);
        }
        for op in &mut self.ops {
            f(&mut op.start_ns);
            f(&mut op.end_ns);
        }
        for s in &mut self.steps {
            f(&mut s.start_ns);
            f(&mut s.end_ns);
        }
        if let Some(t) = self.allocator.as_mut().and_then(|a| a.time_ns.as_mut()) {
            f(t);
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
    }

    /// Move every timestamp by `delta_ns` (events, spans, steps, the allocator's state,
    /// samples, the time range): to put a source on another clock.
    pub fn shift_time(&mut self, delta_ns: i64) {
        self.for_each_time_mut(|t| *t = t.saturating_add(delta_ns));
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
        self.for_each_time_mut(|t| {
            if !limit.contains(t) {
                *t = (*t).clamp(*limit.start(), *limit.end());
                clamped += 1;
            }
        });
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

    /// Time since the start of the recording, in µs, as reports show it.
    pub fn us_since_start(&self, time_ns: i64) -> f64 {
        (time_ns - self.meta.start_ns) as f64 / 1000.0
    }

    /// Absolute time of a point given in µs since the start of the recording.
    pub fn ns_from_us_since_start(&self, us: f64) -> i64 {
        self.meta
            .start_ns
            .saturating_add((us * 1000.0).round() as i64)
    }
}
