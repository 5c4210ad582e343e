//! The per-op memory table, computed exactly as `torch.profiler`'s `key_averages()`.
//!
//! Torch's rules (torch/autograd/profiler.py `_parse_kineto_results`, profiler_util.py
//! `EventList._build_tree` and `key_averages`), reproduced step by step:
//! 1. Every host-side event (ops, annotations, Python frames, runtime calls) gets the sum of
//!    the `[memory]` records whose time lies in its *closed* interval, on any thread — so an
//!    op's memory includes its nested ops. CPU, MKLDNN and IDEEP bytes count as CPU memory;
//!    CUDA, HIP, XPU and PrivateUse1 as device memory.
//! 2. Records inside no event become events named `[memory]`; `[OutOfMemory]` records always do.
//! 3. Events are sorted by (start, −end). Per thread, a stack nests them: a child starts
//!    before its parent ends and ends no later. Python frames take part in the nesting but
//!    are not rows.
//! 4. A child with its parent's name that is its parent's only child is folded into the
//!    parent (`_remove_dup_nodes`), repeatedly until nothing changes.
//! 5. Self memory = memory − Σ children's memory (zero for device-side events).
//! 6. Rows group by name (`ProfilerStep#N` → `ProfilerStep*`), host-vs-device and
//!    user-annotation-or-not, in order of first appearance; `# of Calls` counts events.

use serde::Serialize;

use crate::model::{DeviceClass, MemEventKind, OpCategory, Recording, StrId, ThreadIdx};

/// A time range, closed at both ends, in the recording's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    /// First instant included.
    pub start_ns: i64,
    /// Last instant included.
    pub end_ns: i64,
}

impl TimeWindow {
    fn contains(&self, t: i64) -> bool {
        self.start_ns <= t && t <= self.end_ns
    }
}

/// One row of the table. Field names are torch's `FunctionEventAvg` attribute names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpRow {
    /// Op name (`ProfilerStep*` for all steps).
    pub name: String,
    /// Number of events ("# of Calls").
    pub calls: u64,
    /// "Self CPU Mem": bytes, signed.
    pub self_cpu_memory_usage: i64,
    /// "CPU Mem": bytes, signed, including nested ops.
    pub cpu_memory_usage: i64,
    /// "Self CUDA Mem".
    pub self_device_memory_usage: i64,
    /// "CUDA Mem".
    pub device_memory_usage: i64,
    /// Whether the row is device-side work (kernels, copies), which holds no memory.
    #[serde(skip)]
    pub on_device: bool,
    /// Whether the row is a `record_function` range.
    #[serde(skip)]
    pub user_annotation: bool,
}

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

const MEMORY_ROW: &str = "[memory]";
const OOM_ROW: &str = "[OutOfMemory]";
const STEP_ROW: &str = "ProfilerStep*";

/// Which of a recording's spans are torch `FunctionEvent`s.
fn is_function_event(category: OpCategory) -> bool {
    !matches!(category, OpCategory::GpuUserAnnotation | OpCategory::Other)
}

/// The name a row shows for an event, in 32 bits: an op's [`StrId`], or one of the
/// synthetic rows at the top of the id space (no trace interns four billion names).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct RowName(u32);

impl RowName {
    const STEP: RowName = RowName(u32::MAX);
    const MEMORY: RowName = RowName(u32::MAX - 1);
    const OUT_OF_MEMORY: RowName = RowName(u32::MAX - 2);

    fn op(id: StrId) -> RowName {
        RowName(id.0)
    }
}

/// One torch `FunctionEvent`, in 32 bytes: a 111 MB trace has 186k of them and this vector
/// was the largest part of `table`'s memory (48 bytes each before, with the bytes stored).
/// Its memory is `records[lo..hi]` of the prefix sums, so it is recomputed, not stored.
struct FunctionEvent {
    start_ns: i64,
    end_ns: i64,
    name: RowName,
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
    fn thread(&self) -> ThreadIdx {
        self.thread_flags & THREAD_MASK
    }
    fn host(&self) -> bool {
        self.thread_flags & HOST != 0
    }
    fn python(&self) -> bool {
        self.thread_flags & PYTHON != 0
    }
    fn user_annotation(&self) -> bool {
        self.thread_flags & USER_ANNOTATION != 0
    }
}

/// Running sums of the attributed records' CPU and device bytes: `sum[k]` covers records
/// `0..k`. OOM records follow the time-sorted records, each as its own one-record range.
struct Prefix {
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
    fn bytes(&self, e: &FunctionEvent) -> (i64, i64) {
        let at = |v: &[i64], k: u32| v.get(k as usize).copied().unwrap_or(0);
        (
            at(&self.cpu, e.hi).wrapping_sub(at(&self.cpu, e.lo)),
            at(&self.device, e.hi).wrapping_sub(at(&self.device, e.lo)),
        )
    }
}

/// Compute the key_averages table, for the whole recording or for `window`.
///
/// With a window, the table covers the ops that overlap it and the memory records that
/// lie in it — what torch would report had the profiler run for just that range.
pub fn key_averages(rec: &Recording, window: Option<TimeWindow>) -> Vec<OpRow> {
    let in_window = |t: i64| window.is_none_or(|w| w.contains(t));
    let class_of = |device: u16| {
        rec.devices
            .get(device as usize)
            .map_or(DeviceClass::Uncounted, |d| d.key.device_type.class())
    };
    let split = |bytes: i64, device: u16| match class_of(device) {
        DeviceClass::Host => (bytes, 0),
        DeviceClass::Accelerator => (0, bytes),
        DeviceClass::Uncounted => (0, 0),
    };

    // Memory records sorted by time (stable), with prefix sums for O(log n) interval sums.
    // Sources that see only the allocator's segments (Nsight: cudaMalloc/cudaFree) have no
    // allocation records; their segment events are what the table attributes.
    let counted = if rec.mem_events.iter().any(|e| e.kind.is_allocation()) {
        MemEventKind::is_allocation
    } else {
        MemEventKind::is_segment
    };
    let mut records: Vec<u32> = rec
        .mem_events
        .iter()
        .enumerate()
        .filter(|(_, e)| counted(e.kind) && in_window(e.time_ns))
        .map(|(i, _)| i as u32)
        .collect();
    records.sort_by_key(|&i| rec.mem_events[i as usize].time_ns);
    let times: Vec<i64> = records
        .iter()
        .map(|&i| rec.mem_events[i as usize].time_ns)
        .collect();
    let ooms = rec
        .mem_events
        .iter()
        .filter(|e| e.kind == MemEventKind::OutOfMemory && in_window(e.time_ns))
        .count();
    let mut prefix = Prefix {
        cpu: Vec::with_capacity(records.len() + ooms + 1),
        device: Vec::with_capacity(records.len() + ooms + 1),
    };
    prefix.push((0, 0));
    for &i in &records {
        let e = &rec.mem_events[i as usize];
        prefix.push(split(e.bytes, e.device));
    }
    // Coverage as a difference array: records inside some host event are not `[memory]` rows.
    let mut coverage = vec![0i32; records.len() + 1];

    let filtered: Vec<StrId> = FILTERED_NAMES
        .iter()
        .filter_map(|n| rec.strings.find(n))
        .collect();
    // Sized once: at most one event per op, per memory record and per OOM.
    let mut events: Vec<FunctionEvent> = Vec::with_capacity(rec.ops.len() + records.len() + ooms);
    for op in &rec.ops {
        if !is_function_event(op.category) || filtered.contains(&op.name) {
            continue;
        }
        if let Some(w) = window
            && (op.end_ns < w.start_ns || op.start_ns > w.end_ns)
        {
            continue;
        }
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
        let name = if rec.strings.get(op.name).starts_with("ProfilerStep#") {
            RowName::STEP
        } else {
            RowName::op(op.name)
        };
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
        events.push(FunctionEvent {
            start_ns: op.start_ns,
            end_ns: op.end_ns,
            name,
            thread_flags: (op.thread & THREAD_MASK) | flags,
            lo: lo as u32,
            hi: hi as u32,
        });
    }
    drop(times);

    // Records covered by no event, in source order, then every OOM record.
    const NOT_RECORDED: u32 = u32::MAX;
    const COVERED: u32 = u32::MAX - 1;
    let mut slot = vec![NOT_RECORDED; rec.mem_events.len()];
    let mut depth = 0i32;
    for (k, &i) in records.iter().enumerate() {
        depth += coverage[k];
        slot[i as usize] = if depth > 0 { COVERED } else { k as u32 };
    }
    drop(coverage);
    drop(records);
    for (e, &k) in rec.mem_events.iter().zip(&slot) {
        if k < COVERED {
            events.push(memory_event(RowName::MEMORY, e.time_ns, e.thread, k));
        }
    }
    drop(slot);
    for e in &rec.mem_events {
        if e.kind == MemEventKind::OutOfMemory && in_window(e.time_ns) {
            let k = prefix.cpu.len() as u32 - 1;
            prefix.push(split(e.bytes, e.device));
            events.push(memory_event(RowName::OUT_OF_MEMORY, e.time_ns, e.thread, k));
        }
    }

    sort_in_place(&mut events);
    let mut tree = nest(&events);
    let alive = fold_duplicates(&events, &mut tree);
    aggregate(rec, &events, &prefix, &alive, &tree)
}

/// Sort events by start, longest first at equal starts, keeping push order for ties (a
/// stable sort, as torch's `sorted`) — through a permutation of 4-byte indices applied in
/// place, so the 48-byte events are never copied into a second buffer (a stable
/// `sort_by_key` on them takes a scratch buffer of half their size).
fn sort_in_place(events: &mut [FunctionEvent]) {
    let mut order: Vec<u32> = (0..events.len() as u32).collect();
    order.sort_by_key(|&i| {
        let e = &events[i as usize];
        (e.start_ns, std::cmp::Reverse(e.end_ns))
    });
    // Position k receives the event at order[k]: follow each cycle of the permutation,
    // marking visited positions by setting their entry to u32::MAX.
    for start in 0..order.len() {
        if order[start] == u32::MAX {
            continue;
        }
        let mut k = start;
        loop {
            let from = order[k] as usize;
            order[k] = u32::MAX;
            if from == start {
                break;
            }
            events.swap(k, from);
            k = from;
        }
    }
}

/// A `[memory]` or `[OutOfMemory]` event: record `k` of the prefix sums, at one instant.
fn memory_event(name: RowName, time_ns: i64, thread: ThreadIdx, k: u32) -> FunctionEvent {
    FunctionEvent {
        start_ns: time_ns,
        end_ns: time_ns,
        name,
        thread_flags: (thread & THREAD_MASK) | HOST,
        lo: k,
        hi: k + 1,
    }
}

/// Children lists in one flat array: event `i`'s children are
/// `flat[ranges[i].0 .. ranges[i].0 + ranges[i].1]`. Torch only ever *reassigns* a child
/// list (never edits one), so folding is a copy of a range — 8 bytes per event instead
/// of a `Vec` each.
struct Tree {
    flat: Vec<u32>,
    ranges: Vec<(u32, u32)>,
    parent: Vec<u32>,
}

const NO_PARENT: u32 = u32::MAX;

impl Tree {
    fn children(&self, i: usize) -> &[u32] {
        let (start, len) = self.ranges[i];
        &self.flat[start as usize..(start + len) as usize]
    }
}

/// Per-thread nesting of host events (`_populate_cpu_children`).
fn nest(events: &[FunctionEvent]) -> Tree {
    let mut parent = vec![NO_PARENT; events.len()];
    let mut stacks: rustc_hash::FxHashMap<ThreadIdx, Vec<u32>> = Default::default();
    for (i, e) in events.iter().enumerate() {
        if !e.host() {
            continue;
        }
        let stack = stacks.entry(e.thread()).or_default();
        while let Some(&top) = stack.last() {
            let p = &events[top as usize];
            if e.start_ns >= p.end_ns || e.end_ns > p.end_ns {
                stack.pop();
            } else {
                parent[i] = top;
                break;
            }
        }
        stack.push(i as u32);
    }
    // Children in event order, grouped by parent (counting sort).
    let mut counts = vec![0u32; events.len()];
    for &p in &parent {
        if p != NO_PARENT {
            counts[p as usize] += 1;
        }
    }
    let mut ranges = Vec::with_capacity(events.len());
    let mut next = 0u32;
    for &c in &counts {
        ranges.push((next, c));
        next += c;
    }
    let mut flat = vec![0u32; next as usize];
    // `counts` becomes each list's fill position.
    let mut fill = counts;
    for (f, r) in fill.iter_mut().zip(&ranges) {
        *f = r.0;
    }
    for (i, &p) in parent.iter().enumerate() {
        if p != NO_PARENT {
            flat[fill[p as usize] as usize] = i as u32;
            fill[p as usize] += 1;
        }
    }
    drop(fill);
    Tree {
        flat,
        ranges,
        parent,
    }
}

/// `_remove_dup_nodes`: fold an only child that has its parent's name into the parent,
/// pass after pass until a pass folds nothing. Returns which events remain.
fn fold_duplicates(events: &[FunctionEvent], tree: &mut Tree) -> Vec<bool> {
    let mut alive = vec![true; events.len()];
    loop {
        let mut folded = Vec::new();
        for idx in 0..events.len() {
            let p = tree.parent[idx];
            if !alive[idx] || p == NO_PARENT {
                continue;
            }
            let p = p as usize;
            if events[p].name == events[idx].name && tree.ranges[p].1 == 1 {
                let (start, len) = tree.ranges[idx];
                for k in start..start + len {
                    let g = tree.flat[k as usize];
                    tree.parent[g as usize] = p as u32;
                }
                tree.ranges[p] = (start, len);
                folded.push(idx);
            }
        }
        if folded.is_empty() {
            return alive;
        }
        for idx in folded {
            alive[idx] = false;
        }
    }
}

fn aggregate(
    rec: &Recording,
    events: &[FunctionEvent],
    prefix: &Prefix,
    alive: &[bool],
    tree: &Tree,
) -> Vec<OpRow> {
    let mut rows: Vec<OpRow> = Vec::new();
    let mut index: rustc_hash::FxHashMap<(RowName, bool, bool), usize> = Default::default();
    for (i, e) in events.iter().enumerate() {
        if !alive[i] || e.python() {
            continue;
        }
        let (host, user_annotation) = (e.host(), e.user_annotation());
        let row = *index
            .entry((e.name, host, user_annotation))
            .or_insert_with(|| {
                rows.push(OpRow {
                    name: match e.name {
                        RowName::STEP => STEP_ROW.to_owned(),
                        RowName::MEMORY => MEMORY_ROW.to_owned(),
                        RowName::OUT_OF_MEMORY => OOM_ROW.to_owned(),
                        RowName(id) => rec.strings.get(StrId(id)).to_owned(),
                    },
                    calls: 0,
                    self_cpu_memory_usage: 0,
                    cpu_memory_usage: 0,
                    self_device_memory_usage: 0,
                    device_memory_usage: 0,
                    on_device: !host,
                    user_annotation,
                });
                rows.len() - 1
            });
        let (cpu, device) = prefix.bytes(e);
        let (mut self_cpu, mut self_dev) = (0i64, 0i64);
        if host {
            let (mut kids_cpu, mut kids_dev) = (0i64, 0i64);
            for &k in tree.children(i) {
                let (c, d) = prefix.bytes(&events[k as usize]);
                kids_cpu = kids_cpu.wrapping_add(c);
                kids_dev = kids_dev.wrapping_add(d);
            }
            self_cpu = cpu.wrapping_sub(kids_cpu);
            self_dev = device.wrapping_sub(kids_dev);
        }
        let r = &mut rows[row];
        r.calls += 1;
        r.cpu_memory_usage = r.cpu_memory_usage.wrapping_add(cpu);
        r.device_memory_usage = r.device_memory_usage.wrapping_add(device);
        r.self_cpu_memory_usage = r.self_cpu_memory_usage.wrapping_add(self_cpu);
        r.self_device_memory_usage = r.self_device_memory_usage.wrapping_add(self_dev);
    }
    rows
}

/// Sort keys of torch's `table(sort_by=...)`, for the memory columns and the call count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// `self_cuda_memory_usage` (also `self_device_memory_usage`).
    SelfDeviceMemory,
    /// `cuda_memory_usage`.
    DeviceMemory,
    /// `self_cpu_memory_usage`.
    SelfCpuMemory,
    /// `cpu_memory_usage`.
    CpuMemory,
    /// `count`.
    Calls,
}

impl SortKey {
    /// Parse torch's spelling (`cuda`, `device`, `xpu` and `privateuse1` are synonyms).
    pub fn parse(s: &str) -> Option<SortKey> {
        let s = s
            .replace("cuda", "device")
            .replace("xpu", "device")
            .replace("privateuse1", "device");
        Some(match s.as_str() {
            "self_device_memory_usage" => SortKey::SelfDeviceMemory,
            "device_memory_usage" => SortKey::DeviceMemory,
            "self_cpu_memory_usage" => SortKey::SelfCpuMemory,
            "cpu_memory_usage" => SortKey::CpuMemory,
            "count" | "calls" => SortKey::Calls,
            _ => return None,
        })
    }

    fn value(self, r: &OpRow) -> i128 {
        match self {
            SortKey::SelfDeviceMemory => i128::from(r.self_device_memory_usage),
            SortKey::DeviceMemory => i128::from(r.device_memory_usage),
            SortKey::SelfCpuMemory => i128::from(r.self_cpu_memory_usage),
            SortKey::CpuMemory => i128::from(r.cpu_memory_usage),
            SortKey::Calls => i128::from(r.calls),
        }
    }
}

/// Sort rows largest first, keeping the original order among equals — as torch's
/// `sorted(..., reverse=True)` does.
pub fn sort_rows(rows: &mut [OpRow], key: SortKey) {
    rows.sort_by_key(|r| std::cmp::Reverse(key.value(r)));
}

#[cfg(test)]
mod tests;
