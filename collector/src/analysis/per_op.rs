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

/// The name a row shows for an event.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum RowName {
    Op(StrId),
    Step,
    Memory,
    OutOfMemory,
}

struct FunctionEvent {
    name: RowName,
    start_ns: i64,
    end_ns: i64,
    thread: ThreadIdx,
    cpu_bytes: i64,
    device_bytes: i64,
    host: bool,
    python: bool,
    user_annotation: bool,
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
    let mut cpu_prefix = Vec::with_capacity(records.len() + 1);
    let mut dev_prefix = Vec::with_capacity(records.len() + 1);
    let (mut cpu_sum, mut dev_sum) = (0i64, 0i64);
    cpu_prefix.push(0);
    dev_prefix.push(0);
    for &i in &records {
        let e = &rec.mem_events[i as usize];
        let (c, d) = split(e.bytes, e.device);
        cpu_sum = cpu_sum.wrapping_add(c);
        dev_sum = dev_sum.wrapping_add(d);
        cpu_prefix.push(cpu_sum);
        dev_prefix.push(dev_sum);
    }
    // Coverage as a difference array: records inside some host event are not `[memory]` rows.
    let mut coverage = vec![0i32; records.len() + 1];

    let filtered: Vec<StrId> = FILTERED_NAMES
        .iter()
        .filter_map(|n| rec.strings.find(n))
        .collect();
    let mut events: Vec<FunctionEvent> = Vec::new();
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
        let (mut cpu_bytes, mut device_bytes) = (0, 0);
        if host {
            let lo = times.partition_point(|&t| t < op.start_ns);
            let hi = times.partition_point(|&t| t <= op.end_ns);
            if lo < hi {
                cpu_bytes = cpu_prefix[hi].wrapping_sub(cpu_prefix[lo]);
                device_bytes = dev_prefix[hi].wrapping_sub(dev_prefix[lo]);
                coverage[lo] += 1;
                coverage[hi] -= 1;
            }
        }
        let name = if rec.strings.get(op.name).starts_with("ProfilerStep#") {
            RowName::Step
        } else {
            RowName::Op(op.name)
        };
        events.push(FunctionEvent {
            name,
            start_ns: op.start_ns,
            end_ns: op.end_ns,
            thread: op.thread,
            cpu_bytes,
            device_bytes,
            host,
            python: op.category == OpCategory::PythonFunction,
            user_annotation: op.category == OpCategory::UserAnnotation,
        });
    }

    // Records covered by no event, in source order, then every OOM record.
    let mut covered = vec![false; rec.mem_events.len()];
    let mut depth = 0i32;
    for (k, &i) in records.iter().enumerate() {
        depth += coverage[k];
        covered[i as usize] = depth > 0;
    }
    let mut in_records = vec![false; rec.mem_events.len()];
    for &i in &records {
        in_records[i as usize] = true;
    }
    for (i, e) in rec.mem_events.iter().enumerate() {
        if in_records[i] && !covered[i] {
            events.push(memory_event(
                RowName::Memory,
                e.time_ns,
                e.thread,
                split(e.bytes, e.device),
            ));
        }
    }
    for e in &rec.mem_events {
        if e.kind == MemEventKind::OutOfMemory && in_window(e.time_ns) {
            events.push(memory_event(
                RowName::OutOfMemory,
                e.time_ns,
                e.thread,
                split(e.bytes, e.device),
            ));
        }
    }

    events.sort_by_key(|e| (e.start_ns, std::cmp::Reverse(e.end_ns)));
    let mut tree = nest(&events);
    let alive = fold_duplicates(&events, &mut tree);
    aggregate(rec, &events, &alive, &tree)
}

fn memory_event(
    name: RowName,
    time_ns: i64,
    thread: ThreadIdx,
    (cpu, dev): (i64, i64),
) -> FunctionEvent {
    FunctionEvent {
        name,
        start_ns: time_ns,
        end_ns: time_ns,
        thread,
        cpu_bytes: cpu,
        device_bytes: dev,
        host: true,
        python: false,
        user_annotation: false,
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
        if !e.host {
            continue;
        }
        let stack = stacks.entry(e.thread).or_default();
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
    let mut fill: Vec<u32> = ranges.iter().map(|r| r.0).collect();
    for (i, &p) in parent.iter().enumerate() {
        if p != NO_PARENT {
            flat[fill[p as usize] as usize] = i as u32;
            fill[p as usize] += 1;
        }
    }
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

fn aggregate(rec: &Recording, events: &[FunctionEvent], alive: &[bool], tree: &Tree) -> Vec<OpRow> {
    let mut rows: Vec<OpRow> = Vec::new();
    let mut index: rustc_hash::FxHashMap<(RowName, bool, bool), usize> = Default::default();
    for (i, e) in events.iter().enumerate() {
        if !alive[i] || e.python {
            continue;
        }
        let key = (e.name, e.host, e.user_annotation);
        let row = *index.entry(key).or_insert_with(|| {
            rows.push(OpRow {
                name: match e.name {
                    RowName::Op(id) => rec.strings.get(id).to_owned(),
                    RowName::Step => STEP_ROW.to_owned(),
                    RowName::Memory => MEMORY_ROW.to_owned(),
                    RowName::OutOfMemory => OOM_ROW.to_owned(),
                },
                calls: 0,
                self_cpu_memory_usage: 0,
                cpu_memory_usage: 0,
                self_device_memory_usage: 0,
                device_memory_usage: 0,
                on_device: !e.host,
                user_annotation: e.user_annotation,
            });
            rows.len() - 1
        });
        let (mut self_cpu, mut self_dev) = (0, 0);
        if e.host {
            let kids = tree.children(i);
            let kids_cpu: i64 = kids.iter().map(|&k| events[k as usize].cpu_bytes).sum();
            let kids_dev: i64 = kids.iter().map(|&k| events[k as usize].device_bytes).sum();
            self_cpu = e.cpu_bytes - kids_cpu;
            self_dev = e.device_bytes - kids_dev;
        }
        let r = &mut rows[row];
        r.calls += 1;
        r.cpu_memory_usage += e.cpu_bytes;
        r.device_memory_usage += e.device_bytes;
        r.self_cpu_memory_usage += self_cpu;
        r.self_device_memory_usage += self_dev;
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
