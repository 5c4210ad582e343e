//! Attribution (torch's steps 1–2): which `[memory]` records each op's closed interval
//! holds, as ranges of time-sorted records with prefix sums, and the `[memory]` /
//! `[OutOfMemory]` rows for records inside no op.

use super::TimeWindow;
use crate::model::STEP_PREFIX;
use crate::model::{
    DeviceClass, MemEvent, MemEventKind, OpCategory, OpSpan, Recording, StrId, ThreadIdx,
};

/// The two sums a pass of the table adds up per record: key_averages' CPU and device
/// bytes ([`split`]), or the net change's allocated and freed bytes.
pub(super) type Values = fn(&Recording, &MemEvent) -> (i64, i64);

/// Ops torch leaves out of the table (`_filter_name`).
const FILTERED_NAMES: &[&str] = &[
    "[memory]",
    "[OutOfMemory]",
    "profiler::_record_function_enter",
    "profiler::_record_function_enter_new",
    "profiler::_record_function_exit",
    "aten::is_leaf",
    "aten::output_nr",
    "aten::_version",
];

/// Which of a recording's spans are torch `FunctionEvent`s.
fn is_function_event(category: OpCategory) -> bool {
    !matches!(category, OpCategory::GpuUserAnnotation | OpCategory::Other)
}

/// The name a row shows for an event, in 32 bits: an op's [`StrId`], or one of the
/// synthetic rows at the top of the id space (no trace interns four billion names).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct RowName(pub(super) u32);

impl RowName {
    pub(super) const STEP: RowName = RowName(u32::MAX);
    pub(super) const MEMORY: RowName = RowName(u32::MAX - 1);
    pub(super) const OUT_OF_MEMORY: RowName = RowName(u32::MAX - 2);

    fn op(id: StrId) -> RowName {
        RowName(id.0)
    }
}

/// One torch `FunctionEvent`, in 32 bytes: a 111 MB trace has 186k of them and this vector
/// was the largest part of `table`'s memory (48 bytes each before, with the bytes stored).
/// Its memory is `records[lo..hi]` of the prefix sums, so it is recomputed, not stored.
pub(super) struct FunctionEvent {
    pub(super) start_ns: i64,
    pub(super) end_ns: i64,
    pub(super) name: RowName,
    /// The thread index in the low 29 bits, [`HOST`], [`PYTHON`] and [`USER_ANNOTATION`]
    /// in the top three (a recording with 2^29 threads would not fit in memory anyway).
    thread_flags: u32,
    lo: u32,
    hi: u32,
}

const HOST: u32 = 1 << 31;
const PYTHON: u32 = 1 << 30;
const USER_ANNOTATION: u32 = 1 << 29;
const THREAD_MASK: u32 = USER_ANNOTATION - 1;

impl FunctionEvent {
    pub(super) fn thread(&self) -> ThreadIdx {
        self.thread_flags & THREAD_MASK
    }
    pub(super) fn host(&self) -> bool {
        self.thread_flags & HOST != 0
    }
    pub(super) fn python(&self) -> bool {
        self.thread_flags & PYTHON != 0
    }
    pub(super) fn user_annotation(&self) -> bool {
        self.thread_flags & USER_ANNOTATION != 0
    }
}

/// Running sums of the attributed records' CPU and device bytes: `sum[k]` covers records
/// `0..k`. OOM records follow the time-sorted records, each as its own one-record range.
pub(super) struct Prefix {
    cpu: Vec<i64>,
    device: Vec<i64>,
}

impl Prefix {
    fn push(&mut self, (cpu, device): (i64, i64)) {
        let (c, d) = (
            self.cpu.last().copied().unwrap_or(0),
            self.device.last().copied().unwrap_or(0),
        );
        self.cpu.push(c.wrapping_add(cpu));
        self.device.push(d.wrapping_add(device));
    }

    /// The CPU and device bytes of an event.
    pub(super) fn bytes(&self, e: &FunctionEvent) -> (i64, i64) {
        let at = |v: &[i64], k: u32| v.get(k as usize).copied().unwrap_or(0);
        (
            at(&self.cpu, e.hi).wrapping_sub(at(&self.cpu, e.lo)),
            at(&self.device, e.hi).wrapping_sub(at(&self.device, e.lo)),
        )
    }
}

/// A `[memory]` or `[OutOfMemory]` event: record `k` of the prefix sums, at one instant.
pub(super) fn memory_event(
    name: RowName,
    time_ns: i64,
    thread: ThreadIdx,
    k: u32,
) -> FunctionEvent {
    FunctionEvent {
        start_ns: time_ns,
        end_ns: time_ns,
        name,
        thread_flags: (thread & THREAD_MASK) | HOST,
        lo: k,
        hi: k + 1,
    }
}

/// ATen overload names (`aten::mul.Tensor`, in traces taken with
/// `_ExperimentalConfig(capture_overload_names=True)`): torch's `key_averages()` keys a row
/// by the op's name without its overload and folds same-name children by it, so
/// `aten::mul.Scalar` calling `aten::mul.Tensor` is one `aten::mul`. Every overload of an op
/// maps to one representative name id (the first interned), shown without its overload.
pub(super) struct OpNames {
    /// By [`StrId`]: the id that stands for the name's op.
    canonical: Vec<u32>,
    /// Representative ids, and the length of their name without the overload.
    base_len: rustc_hash::FxHashMap<u32, usize>,
}

impl OpNames {
    pub(super) fn new(rec: &Recording) -> OpNames {
        let mut canonical = Vec::with_capacity(rec.strings.len());
        let mut base_len = rustc_hash::FxHashMap::default();
        let mut by_base: rustc_hash::FxHashMap<&str, u32> = Default::default();
        for id in 0..rec.strings.len() as u32 {
            let name = rec.strings.get(StrId(id));
            canonical.push(match without_overload(name) {
                Some(base) => *by_base.entry(base).or_insert_with(|| {
                    base_len.insert(id, base.len());
                    id
                }),
                None => id,
            });
        }
        OpNames {
            canonical,
            base_len,
        }
    }

    /// The row name of an op: `ProfilerStep*`, or the op's name up to its overload.
    fn row(&self, rec: &Recording, op: &OpSpan) -> RowName {
        if rec.strings.get(op.name).starts_with(STEP_PREFIX) {
            return RowName::STEP;
        }
        if op.category == OpCategory::CpuOp {
            let id = self.canonical.get(op.name.0 as usize).copied();
            return RowName(id.unwrap_or(op.name.0));
        }
        RowName::op(op.name)
    }

    /// The name a row shows for an op's representative id.
    pub(super) fn shown<'a>(&self, rec: &'a Recording, id: u32) -> &'a str {
        let name = rec.strings.get(StrId(id));
        match self.base_len.get(&id) {
            Some(&len) => name.get(..len).unwrap_or(name),
            None => name,
        }
    }
}

/// `ns::op.overload` → `ns::op` for an ATen-style operator name (identifier characters
/// around one `::` and one `.`); `None` for every other name.
pub(super) fn without_overload(name: &str) -> Option<&str> {
    let identifier =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let (namespace, rest) = name.split_once("::")?;
    let (op, overload) = rest.split_once('.')?;
    (identifier(namespace) && identifier(op) && identifier(overload))
        .then(|| &name[..namespace.len() + 2 + op.len()])
}

/// The class of a record's device: which of key_averages' columns counts it.
pub(super) fn class(rec: &Recording, e: &MemEvent) -> DeviceClass {
    rec.devices
        .get(e.device as usize)
        .map_or(DeviceClass::Uncounted, |d| d.key.device_type.class())
}

/// How a record's bytes split into key_averages' CPU and device columns.
pub(super) fn split(rec: &Recording, e: &MemEvent) -> (i64, i64) {
    match class(rec, e) {
        DeviceClass::Host => (e.bytes, 0),
        DeviceClass::Accelerator => (0, e.bytes),
        DeviceClass::Uncounted => (0, 0),
    }
}

/// Which ops the table counts: torch's `FunctionEvent`s, less the names it filters out,
/// that overlap the window.
pub(super) struct OpFilter {
    filtered: Vec<StrId>,
    window: Option<TimeWindow>,
}

impl OpFilter {
    pub(super) fn new(rec: &Recording, window: Option<TimeWindow>) -> OpFilter {
        OpFilter {
            filtered: FILTERED_NAMES
                .iter()
                .filter_map(|n| rec.strings.find(n))
                .collect(),
            window,
        }
    }

    pub(super) fn counts(&self, op: &OpSpan) -> bool {
        is_function_event(op.category)
            && !self.filtered.contains(&op.name)
            && self
                .window
                .is_none_or(|w| op.end_ns >= w.start_ns && op.start_ns <= w.end_ns)
    }
}

/// The memory records the table attributes in the window, as indices into
/// `rec.mem_events`: sorted by time (stable), and the OOM records in source order. Sources
/// that see only the allocator's segments (Nsight: cudaMalloc/cudaFree) have no allocation
/// records; their segment events are what the table attributes.
pub(super) struct Records {
    pub(super) sorted: Vec<u32>,
    pub(super) ooms: Vec<u32>,
}

pub(super) fn records(rec: &Recording, window: Option<TimeWindow>) -> Records {
    let in_window = |t: i64| window.is_none_or(|w| w.contains(t));
    let counted = if rec.mem_events.iter().any(|e| e.kind.is_allocation()) {
        MemEventKind::is_allocation
    } else {
        MemEventKind::is_segment
    };
    let pick = |keep: fn(MemEventKind) -> bool| -> Vec<u32> {
        rec.mem_events
            .iter()
            .enumerate()
            .filter(|(_, e)| keep(e.kind) && in_window(e.time_ns))
            .map(|(i, _)| i as u32)
            .collect()
    };
    let mut sorted = pick(counted);
    sorted.sort_by_key(|&i| rec.mem_events[i as usize].time_ns);
    Records {
        sorted,
        ooms: pick(|k| k == MemEventKind::OutOfMemory),
    }
}

/// One chunk's events, in torch's push order — its ops (`ops`, indices into `rec.ops`),
/// then `[memory]` events for its records covered by no op (in source order), then an
/// `[OutOfMemory]` event per OOM record — and the prefix sums their ranges index.
/// `records` are the chunk's attributed records in time order.
pub(super) fn chunk_events(
    rec: &Recording,
    names: &OpNames,
    ops: impl Iterator<Item = u32>,
    records: &[u32],
    ooms: &[u32],
    values: Values,
) -> (Vec<FunctionEvent>, Prefix) {
    let mut prefix = Prefix {
        cpu: Vec::with_capacity(records.len() + ooms.len() + 1),
        device: Vec::with_capacity(records.len() + ooms.len() + 1),
    };
    prefix.push((0, 0));
    let event = |i: u32| rec.mem_events.get(i as usize);
    for e in records.iter().filter_map(|&i| event(i)) {
        prefix.push(values(rec, e));
    }
    let times: Vec<i64> = records
        .iter()
        .filter_map(|&i| event(i))
        .map(|e| e.time_ns)
        .collect();
    // Coverage as a difference array: records inside some host event are not `[memory]`.
    let mut coverage = vec![0i32; records.len() + 1];
    // Sized once: one event per op, at most one per record and one per OOM.
    let mut events = Vec::with_capacity(ops.size_hint().0 + records.len() + ooms.len());
    for op in ops.filter_map(|o| rec.ops.get(o as usize)) {
        events.push(op_event(rec, names, &op, &times, &mut coverage));
    }
    drop(times);
    let mut depth = 0i32;
    let mut uncovered: Vec<(u32, u32)> = Vec::new();
    for (k, (&i, &c)) in records.iter().zip(&coverage).enumerate() {
        depth += c;
        if depth <= 0 {
            uncovered.push((i, k as u32));
        }
    }
    drop(coverage);
    uncovered.sort_unstable();
    for (i, k) in uncovered {
        if let Some(e) = event(i) {
            events.push(memory_event(RowName::MEMORY, e.time_ns, e.thread, k));
        }
    }
    for e in ooms.iter().filter_map(|&i| event(i)) {
        let k = prefix.cpu.len() as u32 - 1;
        prefix.push(values(rec, e));
        events.push(memory_event(RowName::OUT_OF_MEMORY, e.time_ns, e.thread, k));
    }
    (events, prefix)
}

/// An op's event, with the range of records in its closed interval (host ops only); marks
/// in `coverage` the records it holds.
fn op_event(
    rec: &Recording,
    names: &OpNames,
    op: &OpSpan,
    times: &[i64],
    coverage: &mut [i32],
) -> FunctionEvent {
    let host = op.category.is_host();
    let (mut lo, mut hi) = (0, 0);
    if host {
        lo = times.partition_point(|&t| t < op.start_ns);
        hi = times.partition_point(|&t| t <= op.end_ns);
        if lo < hi {
            coverage[lo] += 1;
            coverage[hi] -= 1;
        } else {
            (lo, hi) = (0, 0);
        }
    }
    let mut flags = 0;
    if host {
        flags |= HOST;
    }
    if op.category == OpCategory::PythonFunction {
        flags |= PYTHON;
    }
    if op.category == OpCategory::UserAnnotation {
        flags |= USER_ANNOTATION;
    }
    FunctionEvent {
        start_ns: op.start_ns,
        end_ns: op.end_ns,
        name: names.row(rec, op),
        thread_flags: (op.thread & THREAD_MASK) | flags,
        lo: lo as u32,
        hi: hi as u32,
    }
}
