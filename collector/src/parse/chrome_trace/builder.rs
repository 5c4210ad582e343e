//! Builds a [`Recording`](crate::Recording) from a Chrome trace's events, one [`Fields`] at a time: threads and
//! devices get indices in order of first appearance, op names are interned, times are exact
//! integer ns; what cannot be used is counted in the diagnostics.

mod finish;

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::SEGMENT_EVENT;
use super::raw::{Args, Fields, Int, Micros, RawDeviceProps, RawId};
use crate::model::{
    CompactSpans, DeviceId, DeviceIdx, DeviceInfo, DeviceType, Diagnostics, DistributedInfo,
    MemEvent, MemEventKind, OpCategory, OpSpan, OpSpans, StepMarker, StringTable, ThreadIdx,
    ThreadInfo,
};
use crate::parse::SpanFilter;
use crate::parse::preview::{PREVIEW_EVERY_EVENTS, Preview};

/// A `B` event waiting for its `E`: name, category, start.
type OpenBegin = (Option<String>, Option<String>, i64);

/// Builds a [`Recording`](crate::Recording) event by event.
pub(super) struct Builder {
    strings: StringTable,
    threads: Vec<ThreadInfo>,
    thread_index: FxHashMap<(String, String), ThreadIdx>,
    /// Fast path for the common all-integer ids: no string is built per event.
    int_thread_index: FxHashMap<(i64, i64), ThreadIdx>,
    devices: Vec<DeviceInfo>,
    device_index: FxHashMap<DeviceId, DeviceIdx>,
    mem_events: Vec<MemEvent>,
    ops: OpSpans,
    /// The spans kept compressed, with [`SpanFilter::SummaryCompact`].
    compact_ops: CompactSpans,
    /// Which spans `ops` keeps; the others are counted in `spans_left_out`.
    spans: SpanFilter,
    spans_left_out: u64,
    steps: Vec<StepMarker>,
    pub(super) diagnostics: Diagnostics,
    /// Open `B` events per thread, for B/E pairs.
    open_begins: FxHashMap<ThreadIdx, Vec<OpenBegin>>,
    start_ns: Option<i64>,
    end_ns: Option<i64>,
    base_time_ns: Option<i64>,
    device_props: Vec<RawDeviceProps>,
    distributed: Option<DistributedInfo>,
    properties: BTreeMap<String, String>,
    events_read: u64,
    saw_addr: bool,
    saw_legacy_memory: bool,
    saw_legacy_category: bool,
    saw_fractional_ts: bool,
    saw_hip: bool,
    /// Where the memory events go as they come, for a view while the file is read.
    pub(super) preview: Option<Arc<Preview>>,
    /// Memory events already added to `preview`.
    previewed: usize,
}

impl Builder {
    pub(super) fn new(spans: SpanFilter) -> Self {
        Builder {
            strings: StringTable::default(),
            threads: Vec::new(),
            thread_index: FxHashMap::default(),
            int_thread_index: FxHashMap::default(),
            devices: Vec::new(),
            device_index: FxHashMap::default(),
            mem_events: Vec::new(),
            ops: OpSpans::default(),
            compact_ops: CompactSpans::default(),
            spans,
            spans_left_out: 0,
            steps: Vec::new(),
            diagnostics: Diagnostics::default(),
            open_begins: FxHashMap::default(),
            start_ns: None,
            end_ns: None,
            base_time_ns: None,
            device_props: Vec::new(),
            distributed: None,
            properties: BTreeMap::new(),
            events_read: 0,
            saw_addr: false,
            saw_legacy_memory: false,
            saw_legacy_category: false,
            saw_fractional_ts: false,
            saw_hip: false,
            preview: None,
            previewed: 0,
        }
    }

    /// Add the memory events since the last call to the preview, if any.
    pub(super) fn update_preview(&mut self) {
        if let Some(preview) = &self.preview {
            let devices: Vec<DeviceId> = self.devices.iter().map(|d| d.key).collect();
            preview.add(&self.mem_events[self.previewed..], &devices);
            self.previewed = self.mem_events.len();
        }
    }

    fn thread(&mut self, pid: Option<&RawId<'_>>, tid: Option<&RawId<'_>>) -> ThreadIdx {
        if let (Some(RawId::Int(p)), Some(RawId::Int(t))) = (pid, tid) {
            if let Some(&idx) = self.int_thread_index.get(&(*p, *t)) {
                return idx;
            }
            let idx = self.thread_by_name(pid, tid);
            self.int_thread_index.insert((*p, *t), idx);
            return idx;
        }
        self.thread_by_name(pid, tid)
    }

    fn thread_by_name(&mut self, pid: Option<&RawId<'_>>, tid: Option<&RawId<'_>>) -> ThreadIdx {
        let pid = pid.map(|p| p.normalized().into_owned()).unwrap_or_default();
        let tid = tid.map(|t| t.normalized().into_owned()).unwrap_or_default();
        let key = (pid, tid);
        if let Some(&idx) = self.thread_index.get(&key) {
            return idx;
        }
        let idx = self.threads.len() as ThreadIdx;
        self.threads.push(ThreadInfo {
            pid: key.0.clone(),
            tid: key.1.clone(),
            name: None,
        });
        self.thread_index.insert(key, idx);
        idx
    }

    fn device(&mut self, key: DeviceId) -> DeviceIdx {
        if let Some(&idx) = self.device_index.get(&key) {
            return idx;
        }
        let idx = self.devices.len() as DeviceIdx;
        self.devices.push(DeviceInfo {
            key,
            name: None,
            total_memory_bytes: None,
        });
        self.device_index.insert(key, idx);
        idx
    }

    fn see_time(&mut self, start_ns: i64, end_ns: i64) {
        self.start_ns = Some(self.start_ns.map_or(start_ns, |s| s.min(start_ns)));
        self.end_ns = Some(self.end_ns.map_or(end_ns, |e| e.max(end_ns)));
    }

    /// Time of an event in absolute ns: relative µs + `baseTimeNanoseconds` when present.
    /// The base may arrive after the events (keys in any order), so it is added at the end.
    fn time(&mut self, raw: Option<Micros>) -> Option<i64> {
        let micros = raw?;
        if micros.fractional {
            self.saw_fractional_ts = true;
        }
        micros.ns
    }

    /// A memory event's `Device Id` (-1 when absent); `None`, noted, outside `i32`.
    fn device_index(&mut self, id: Option<Int>) -> Option<i32> {
        let index = id.map_or(Some(-1), |d| i32::try_from(d.0).ok().filter(|&i| i >= -1));
        if index.is_none() {
            self.diagnostics
                .note("memory events with a Device Id outside -1..=2147483647 skipped");
        }
        index
    }

    pub(super) fn add(&mut self, ev: Fields<'_>) {
        self.events_read += 1;
        let ph = ev.ph.as_deref().unwrap_or("");
        match ph {
            "X" => self.add_complete(&ev),
            "i" | "I" => self.add_instant(&ev),
            "B" | "E" => self.add_begin_end(&ev, ph == "B"),
            "M" => self.add_metadata(&ev),
            // Flow arrows and async/counter/object events carry nothing vramscope uses.
            "s" | "t" | "f" | "b" | "n" | "e" | "C" | "N" | "O" | "D" | "P" | "R" | "c" => {}
            "" => self
                .diagnostics
                .note("events without a phase (\"ph\") skipped"),
            _ => self
                .diagnostics
                .note(&format!("events with unknown phase \"{ph}\" skipped")),
        }
    }

    fn add_complete(&mut self, ev: &Fields<'_>) {
        let (Some(start_ns), Some(name)) = (self.time(ev.ts), ev.name.as_deref()) else {
            self.diagnostics
                .note("complete events without a readable ts or name skipped");
            return;
        };
        let dur_ns = match ev.dur {
            Some(raw) => match raw.ns {
                Some(d) if d >= 0 => d,
                _ => {
                    self.diagnostics
                        .note("complete events with a bad dur skipped");
                    return;
                }
            },
            None => 0,
        };
        let end_ns = start_ns.saturating_add(dur_ns);
        self.see_time(start_ns, end_ns);
        if ev.cat.as_deref() == Some("Operator") {
            self.saw_legacy_category = true;
        }
        // The profiler's own session span only bounds the trace.
        let Some(category) = op_category(ev.cat.as_deref()) else {
            return;
        };
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        self.push_op(name, category, thread, start_ns, end_ns);
    }

    fn push_op(
        &mut self,
        name: &str,
        category: OpCategory,
        thread: ThreadIdx,
        start_ns: i64,
        end_ns: i64,
    ) {
        if category.is_host()
            && let Some(step) = StepMarker::from_span(name, start_ns, end_ns)
        {
            self.steps.push(step);
        }
        if !self.spans.keeps(category, name) {
            self.spans_left_out += 1;
            return;
        }
        let span = OpSpan {
            name: self.strings.intern(name),
            category,
            thread,
            start_ns,
            end_ns,
        };
        if self.spans == SpanFilter::SummaryCompact {
            self.compact_ops.push(&span);
        } else {
            self.ops.push(span);
        }
    }

    fn add_begin_end(&mut self, ev: &Fields<'_>, begin: bool) {
        let Some(time_ns) = self.time(ev.ts) else {
            self.diagnostics
                .note("begin/end events without a readable ts skipped");
            return;
        };
        self.see_time(time_ns, time_ns);
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        let stack = self.open_begins.entry(thread).or_default();
        if begin {
            stack.push((
                ev.name.as_deref().map(str::to_owned),
                ev.cat.as_deref().map(str::to_owned),
                time_ns,
            ));
            return;
        }
        let Some((name, cat, start_ns)) = stack.pop() else {
            self.diagnostics.note("end events without a begin skipped");
            return;
        };
        let name = name
            .or_else(|| ev.name.as_deref().map(str::to_owned))
            .unwrap_or_default();
        let Some(category) = op_category(cat.as_deref()) else {
            return;
        };
        self.push_op(&name, category, thread, start_ns, time_ns.max(start_ns));
    }

    fn add_instant(&mut self, ev: &Fields<'_>) {
        let kind = match ev.name.as_deref() {
            Some("[memory]") => MemEventKind::Alloc,
            Some("[OutOfMemory]") => MemEventKind::OutOfMemory,
            Some(SEGMENT_EVENT) => MemEventKind::SegmentAlloc,
            _ => {
                if let Some(t) = self.time(ev.ts) {
                    self.see_time(t, t);
                }
                return;
            }
        };
        let Some(time_ns) = self.time(ev.ts) else {
            self.diagnostics
                .note("memory events without a readable ts skipped");
            return;
        };
        let Some(raw_args) = &ev.args else {
            self.diagnostics.note("memory events without args skipped");
            return;
        };
        let Some(args) = raw_args.read() else {
            self.diagnostics
                .note("memory events with unreadable args skipped");
            return;
        };
        let (Some(bytes), Some(device_type)) = (args.bytes, args.device_type) else {
            self.diagnostics
                .note("memory events without Bytes or Device Type skipped");
            return;
        };
        let Ok(bytes) = i64::try_from(bytes.0) else {
            self.diagnostics
                .note("memory events with out-of-range Bytes skipped");
            return;
        };
        let device_type = DeviceType(
            device_type
                .0
                .clamp(i128::from(DeviceType::CUDA_MANAGED.0), i128::from(i16::MAX))
                as i16,
        );
        if device_type == DeviceType::HIP {
            self.saw_hip = true;
        }
        let Some(index) = self.device_index(args.device_id) else {
            return;
        };
        self.see_time(time_ns, time_ns);
        let device = self.device(DeviceId { device_type, index });
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        let addr = args.addr.map(|a| a.0 as u64);
        if addr.is_some() {
            self.saw_addr = true;
        } else if kind == MemEventKind::Alloc {
            self.saw_legacy_memory = true;
        }
        let kind = match kind {
            MemEventKind::OutOfMemory => MemEventKind::OutOfMemory,
            MemEventKind::SegmentAlloc if bytes < 0 => MemEventKind::SegmentFree,
            MemEventKind::SegmentAlloc => MemEventKind::SegmentAlloc,
            _ if bytes < 0 => MemEventKind::Free,
            _ => MemEventKind::Alloc,
        };
        self.mem_events.push(MemEvent {
            time_ns,
            bytes,
            addr: addr.into(),
            total_allocated_bytes: args.total_allocated.map(Int::as_wrapped_i64).into(),
            total_reserved_bytes: args.total_reserved.map(Int::as_wrapped_i64).into(),
            device,
            thread,
            kind,
            stack: None,
        });
        if self.mem_events.len() - self.previewed >= PREVIEW_EVERY_EVENTS {
            self.update_preview();
        }
    }

    fn add_metadata(&mut self, ev: &Fields<'_>) {
        if ev.name.as_deref() != Some("thread_name") {
            return;
        }
        let Some(args) = ev.args.as_ref().and_then(Args::read) else {
            return;
        };
        let Some(name) = args.name.as_deref() else {
            return;
        };
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        if let Some(info) = self.threads.get_mut(thread as usize) {
            info.name = Some(name.to_owned());
        }
    }
}

/// The op category a span's `cat` names: torch's own (kineto and the legacy profiler's),
/// and `nvtx`, which vramscope's Perfetto export writes for Nsight's NVTX ranges; `None` for
/// the profiler's session span (`Trace`), which only bounds the trace.
fn op_category(cat: Option<&str>) -> Option<OpCategory> {
    Some(match cat {
        Some("cpu_op" | "Operator") => OpCategory::CpuOp,
        Some("user_annotation") => OpCategory::UserAnnotation,
        Some("python_function") => OpCategory::PythonFunction,
        Some("cuda_runtime" | "Runtime") => OpCategory::Runtime,
        Some("cuda_driver") => OpCategory::Driver,
        Some("kernel" | "Kernel") => OpCategory::Kernel,
        Some("gpu_memcpy" | "Memcpy") => OpCategory::Memcpy,
        Some("gpu_memset" | "Memset") => OpCategory::Memset,
        Some("gpu_user_annotation") => OpCategory::GpuUserAnnotation,
        Some("nvtx") => OpCategory::Nvtx,
        Some("Trace") => return None,
        _ => OpCategory::Other,
    })
}
