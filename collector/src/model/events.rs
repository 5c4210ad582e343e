//! What a source says happened: allocator events, op spans, training steps, threads.

use super::{DeviceIdx, StackId, StrId, ThreadIdx, option_in_place};

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

option_in_place!(
    /// An allocator total after an event, where the source gives one, in 8 bytes: as an
    /// `Option<i64>` it took 16, and [`MemEvent`] 80 bytes instead of 64 — 16 bytes more for
    /// each of the millions of memory events a multi-gigabyte trace holds (53 MB of
    /// `summary`'s peak on a 2 GB trace of 3.3 M events). `i64::MIN`, which no allocator
    /// total reaches, stands for "not given": a source that writes it is read as giving none.
    Total(i64),
    /// The source does not say.
    UNKNOWN = i64::MIN
);

option_in_place!(
    /// A block's address, where the source records one, in 8 bytes: as an `Option<u64>` it
    /// took 16, and [`MemEvent`] 64 bytes instead of 56. `u64::MAX`, which no block starts
    /// at (a block of one byte there would end past the address space), stands for "not
    /// recorded": a source that writes it is read as recording none.
    Addr(u64),
    /// The source does not record the address.
    UNKNOWN = u64::MAX
);

/// One allocator record: an allocation, a free, or an allocation failure. 52 bytes
/// (`tests::a_memory_event_is_52_bytes`): a large trace holds millions. Aligned to 4, not 8,
/// so that its 51 bytes round up to 52, not 56 (unaligned loads of its 8-byte fields cost
/// nothing measurable on x86-64 or aarch64).
#[derive(Clone, Debug, PartialEq)]
#[repr(Rust, packed(4))]
pub struct MemEvent {
    /// When it happened.
    pub time_ns: i64,
    /// Signed size: positive for an allocation, negative for a free.
    pub bytes: i64,
    /// The block's address, where the source records it (PyTorch ≥ 1.10).
    pub addr: Addr,
    /// Allocator's allocated bytes on this device *after* the event, if the source says.
    pub total_allocated_bytes: Total,
    /// Allocator's reserved (segment) bytes on this device after the event, if the source says.
    pub total_reserved_bytes: Total,
    /// Which device's allocator.
    pub device: DeviceIdx,
    /// The thread that allocated or freed.
    pub thread: ThreadIdx,
    /// Alloc, free, segment or OOM.
    pub kind: MemEventKind,
    /// The allocation's call stack, where the source records one (allocator snapshots).
    pub stack: Option<StackId>,
}

impl MemEvent {
    /// An allocation of `bytes` at `time_ns` (a free where `bytes` is negative) on device 0,
    /// thread 0, with nothing else known: what tests and made-up events start from.
    pub fn sized(time_ns: i64, bytes: i64) -> MemEvent {
        MemEvent {
            time_ns,
            bytes,
            addr: Addr::UNKNOWN,
            total_allocated_bytes: Total::UNKNOWN,
            total_reserved_bytes: Total::UNKNOWN,
            device: 0,
            thread: 0,
            kind: if bytes < 0 {
                MemEventKind::Free
            } else {
                MemEventKind::Alloc
            },
            stack: None,
        }
    }
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
    /// Every category, in the order of their stable codes (packs and compact spans store
    /// the position; new categories go at the end, before `Other`, never in between).
    pub const ALL: [OpCategory; 11] = [
        OpCategory::CpuOp,
        OpCategory::UserAnnotation,
        OpCategory::PythonFunction,
        OpCategory::Runtime,
        OpCategory::Driver,
        OpCategory::Kernel,
        OpCategory::Memcpy,
        OpCategory::Memset,
        OpCategory::GpuUserAnnotation,
        OpCategory::Nvtx,
        OpCategory::Other,
    ];

    /// The category's stable code: its place in [`OpCategory::ALL`].
    pub fn code(self) -> u8 {
        let place = OpCategory::ALL.iter().position(|&c| c == self);
        place.unwrap_or(OpCategory::ALL.len() - 1) as u8
    }

    /// The category of a stable [`OpCategory::code`], if it is one.
    pub fn from_code(code: u8) -> Option<OpCategory> {
        OpCategory::ALL.get(usize::from(code)).copied()
    }

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
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpSpan {
    /// Op name, interned in [`Recording::strings`](super::Recording::strings).
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

/// What torch's profiler names a training step's span, before its number:
/// `ProfilerStep#12`.
pub const STEP_PREFIX: &str = "ProfilerStep#";

impl StepMarker {
    /// The step a span named `ProfilerStep#N` marks (`None` for any other name).
    pub fn from_span(name: &str, start_ns: i64, end_ns: i64) -> Option<StepMarker> {
        let number = name.strip_prefix(STEP_PREFIX)?.parse::<i64>().ok()?;
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

/// A text the program attached to an instant of a device's history: a snapshot trace
/// entry's `user_metadata` (`torch.cuda.memory._set_memory_metadata`).
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    /// When.
    pub time_ns: i64,
    /// Which device's history.
    pub device: super::DeviceIdx,
    /// The text, interned in [`Recording::strings`](super::Recording::strings).
    pub text: StrId,
}

#[cfg(test)]
mod tests {
    use super::{Addr, MemEvent, Total};

    #[test]
    fn a_memory_event_is_52_bytes() {
        // 80 with the totals, the address and the stack as options of 16 and 8 bytes, and
        // aligned to 8: see `Total`, `Addr` and `StackId`.
        assert_eq!(std::mem::size_of::<MemEvent>(), 52);
    }

    #[test]
    fn a_total_reads_back_what_was_given() {
        for v in [0, 1, -1, i64::MAX, i64::MIN + 1] {
            assert_eq!(Total::from(v).get(), Some(v));
            assert_eq!(Total::from(Some(v)).get(), Some(v));
        }
        assert_eq!(Total::from(None).get(), None);
        assert_eq!(Total::UNKNOWN.get(), None);
        // The one value that stands for "not given".
        assert_eq!(Total::from(i64::MIN).get(), None);
        assert_eq!(format!("{:?}", Total::from(5)), "Some(5)");
    }

    #[test]
    fn an_address_reads_back_what_was_recorded() {
        for v in [0, 1, 0x7f00_0000_0000, u64::MAX - 1] {
            assert_eq!(Addr::from(v).get(), Some(v));
            assert_eq!(Addr::from(Some(v)).get(), Some(v));
        }
        assert_eq!(Addr::from(None).get(), None);
        // The one value that stands for "not recorded".
        assert_eq!(Addr::from(u64::MAX).get(), None);
        assert_eq!(format!("{:?}", Addr::UNKNOWN), "None");
    }
}
