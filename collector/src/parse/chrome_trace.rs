//! PyTorch profiler Chrome traces (Kineto JSON), every era from torch 1.8 to 2.x.
//!
//! The top-level object's keys may come in any order and `traceEvents` may be anywhere;
//! a bare event array is accepted too (and, as the Chrome format allows, without its
//! closing bracket). Events stream through [`JsonStream`]; only what the model needs is
//! kept. Era differences handled here: legacy (1.8/1.9) memory events without `Addr`,
//! totals or `cat`, string-vs-int thread ids, integer absolute µs (≤ 1.13) vs decimal µs
//! relative to `baseTimeNanoseconds` (2.x), HIP (`Device Type` 6) on ROCm.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::fmt;
use std::io::Read;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde_json::value::RawValue;

use super::LoadOptions;
use super::decimal::micros_text_to_ns;
use super::input::Input;
use super::json_stream::{JsonStream, StreamError, ValueError, parse_one};
use crate::model::{
    DeviceIdx, DeviceInfo, DeviceKey, DeviceType, Diagnostics, DistributedInfo, MemEvent,
    MemEventKind, Meta, OpCategory, OpSpan, Recording, SourceFormat, StepMarker, StringTable,
    ThreadIdx, ThreadInfo,
};

/// Failure reading a Chrome trace.
#[derive(Debug)]
pub enum TraceError {
    /// The byte stream failed (I/O, syntax, truncation).
    Stream(StreamError),
    /// The JSON is fine but is not a trace.
    Shape { offset: u64, message: String },
}

impl From<StreamError> for TraceError {
    fn from(e: StreamError) -> Self {
        TraceError::Stream(e)
    }
}

/// A pid/tid: traces mix integers, numeric strings and labels ("stream 7", "Spans").
#[derive(Debug)]
enum RawId<'a> {
    Int(i64),
    Text(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for RawId<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawId<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or string id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(RawId::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(RawId::Int(v as i64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(RawId::Text(Cow::Owned(v.to_string())))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawId::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawId::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawId::Text(Cow::Borrowed("")))
            }
        }
        d.deserialize_any(V)
    }
}

impl RawId<'_> {
    /// Numeric strings become numbers, so torch 1.9's `"25738"` matches `25738`.
    fn normalized(&self) -> Cow<'_, str> {
        match self {
            RawId::Int(v) => Cow::Owned(v.to_string()),
            RawId::Text(t) => match t.trim().parse::<i64>() {
                Ok(v) => Cow::Owned(v.to_string()),
                Err(_) => Cow::Borrowed(t),
            },
        }
    }
}

/// An integer argument that may be written as an integer, a float or a numeric string.
#[derive(Debug, Clone, Copy)]
struct Int(i128);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                Ok(Int(i128::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                Ok(Int(i128::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int, E> {
                if v.is_finite() && v.fract() == 0.0 && v.abs() < 1.7e38 {
                    Ok(Int(v as i128))
                } else {
                    Err(E::custom("not an integer"))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Int, E> {
                v.trim()
                    .parse::<i128>()
                    .map(Int)
                    .map_err(|_| E::custom("not an integer"))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Int, E> {
                Ok(Int(i128::from(v)))
            }
        }
        d.deserialize_any(V)
    }
}

impl Int {
    /// Allocator totals are written as `uint64`: a negative running total wraps to ≥ 2^63.
    fn as_wrapped_i64(self) -> i64 {
        self.0 as u64 as i64
    }
}

#[derive(Deserialize, Default)]
struct RawArgs<'a> {
    #[serde(rename = "Bytes")]
    bytes: Option<Int>,
    #[serde(rename = "Addr")]
    addr: Option<Int>,
    #[serde(rename = "Total Allocated")]
    total_allocated: Option<Int>,
    #[serde(rename = "Total Reserved")]
    total_reserved: Option<Int>,
    #[serde(rename = "Device Id")]
    device_id: Option<Int>,
    #[serde(rename = "Device Type")]
    device_type: Option<Int>,
    /// Metadata events (`thread_name`, `process_name`) carry the name here.
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pid: Option<RawId<'a>>,
    #[serde(borrow)]
    tid: Option<RawId<'a>>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    #[serde(borrow)]
    /// Kept raw and read only for the few events that need it (memory, metadata): operator
    /// args (shapes, strides, concrete inputs) are most of a trace's bytes and are unused.
    args: Option<&'a RawValue>,
}

/// `deviceProperties` entries.
#[derive(Deserialize)]
struct RawDeviceProps {
    id: Option<Int>,
    name: Option<String>,
    #[serde(rename = "totalGlobalMem")]
    total_global_mem: Option<Int>,
}

#[derive(Deserialize)]
struct RawDistributed {
    backend: Option<String>,
    rank: Option<Int>,
    world_size: Option<Int>,
}

/// A `B` event waiting for its `E`: name, category, start.
type OpenBegin = (Option<String>, Option<String>, i64);

/// Builds a [`Recording`] event by event.
struct Builder {
    strings: StringTable,
    threads: Vec<ThreadInfo>,
    thread_index: FxHashMap<(String, String), ThreadIdx>,
    /// Fast path for the common all-integer ids: no string is built per event.
    int_thread_index: FxHashMap<(i64, i64), ThreadIdx>,
    devices: Vec<DeviceInfo>,
    device_index: FxHashMap<DeviceKey, DeviceIdx>,
    mem_events: Vec<MemEvent>,
    ops: Vec<OpSpan>,
    steps: Vec<StepMarker>,
    diagnostics: Diagnostics,
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
}

impl Builder {
    fn new() -> Self {
        Builder {
            strings: StringTable::default(),
            threads: Vec::new(),
            thread_index: FxHashMap::default(),
            int_thread_index: FxHashMap::default(),
            devices: Vec::new(),
            device_index: FxHashMap::default(),
            mem_events: Vec::new(),
            ops: Vec::new(),
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

    fn device(&mut self, key: DeviceKey) -> DeviceIdx {
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
    fn time(&mut self, raw: Option<&RawValue>) -> Option<i64> {
        let text = raw?.get();
        if !self.saw_fractional_ts && text.contains('.') {
            self.saw_fractional_ts = true;
        }
        micros_text_to_ns(text.as_bytes())
    }

    fn add(&mut self, ev: RawEvent<'_>) {
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

    fn add_complete(&mut self, ev: &RawEvent<'_>) {
        let (Some(start_ns), Some(name)) = (self.time(ev.ts), ev.name.as_deref()) else {
            self.diagnostics
                .note("complete events without a readable ts or name skipped");
            return;
        };
        let dur_ns = match ev.dur {
            Some(raw) => match micros_text_to_ns(raw.get().as_bytes()) {
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
        let category = match ev.cat.as_deref() {
            Some("cpu_op") => OpCategory::CpuOp,
            Some("Operator") => {
                self.saw_legacy_category = true;
                OpCategory::CpuOp
            }
            Some("user_annotation") => OpCategory::UserAnnotation,
            Some("python_function") => OpCategory::PythonFunction,
            Some("cuda_runtime" | "Runtime") => OpCategory::Runtime,
            Some("cuda_driver") => OpCategory::Driver,
            Some("kernel" | "Kernel") => OpCategory::Kernel,
            Some("gpu_memcpy" | "Memcpy") => OpCategory::Memcpy,
            Some("gpu_memset" | "Memset") => OpCategory::Memset,
            Some("gpu_user_annotation") => OpCategory::GpuUserAnnotation,
            // The profiler's own session span: it only bounds the trace.
            Some("Trace") => return,
            _ => OpCategory::Other,
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
        let name = self.strings.intern(name);
        self.ops.push(OpSpan {
            name,
            category,
            thread,
            start_ns,
            end_ns,
        });
    }

    fn add_begin_end(&mut self, ev: &RawEvent<'_>, begin: bool) {
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
        let category = match cat.as_deref() {
            Some("cpu_op") => OpCategory::CpuOp,
            Some("user_annotation") => OpCategory::UserAnnotation,
            _ => OpCategory::Other,
        };
        self.push_op(&name, category, thread, start_ns, time_ns.max(start_ns));
    }

    fn add_instant(&mut self, ev: &RawEvent<'_>) {
        let kind = match ev.name.as_deref() {
            Some("[memory]") => MemEventKind::Alloc,
            Some("[OutOfMemory]") => MemEventKind::OutOfMemory,
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
        let Some(raw_args) = ev.args else {
            self.diagnostics.note("memory events without args skipped");
            return;
        };
        let Ok(args) = serde_json::from_str::<RawArgs<'_>>(raw_args.get()) else {
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
        let device_type = DeviceType(device_type.0.clamp(-1, i128::from(i16::MAX)) as i16);
        if device_type == DeviceType::HIP {
            self.saw_hip = true;
        }
        let index = args
            .device_id
            .map_or(-1, |d| d.0.clamp(-1, i128::from(i32::MAX)) as i32);
        self.see_time(time_ns, time_ns);
        let device = self.device(DeviceKey { device_type, index });
        let thread = self.thread(ev.pid.as_ref(), ev.tid.as_ref());
        let addr = args.addr.map(|a| a.0 as u64);
        if addr.is_some() {
            self.saw_addr = true;
        } else if kind != MemEventKind::OutOfMemory {
            self.saw_legacy_memory = true;
        }
        let kind = match kind {
            MemEventKind::OutOfMemory => MemEventKind::OutOfMemory,
            _ if bytes < 0 => MemEventKind::Free,
            _ => MemEventKind::Alloc,
        };
        self.mem_events.push(MemEvent {
            time_ns,
            bytes,
            addr,
            total_allocated_bytes: args.total_allocated.map(Int::as_wrapped_i64),
            total_reserved_bytes: args.total_reserved.map(Int::as_wrapped_i64),
            device,
            thread,
            kind,
            stack: None,
        });
    }

    fn add_metadata(&mut self, ev: &RawEvent<'_>) {
        if ev.name.as_deref() != Some("thread_name") {
            return;
        }
        let Some(args) = ev
            .args
            .and_then(|a| serde_json::from_str::<RawArgs<'_>>(a.get()).ok())
        else {
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

    /// A top-level key other than `traceEvents`.
    fn top_level(&mut self, key: &str, value: &RawValue) {
        let text = value.get();
        match key {
            "baseTimeNanoseconds" => match serde_json::from_str::<Int>(text) {
                Ok(v) => self.base_time_ns = i64::try_from(v.0).ok(),
                Err(_) => self
                    .diagnostics
                    .note("unreadable baseTimeNanoseconds ignored"),
            },
            "deviceProperties" => match serde_json::from_str::<Vec<RawDeviceProps>>(text) {
                Ok(v) => self.device_props = v,
                Err(_) => self.diagnostics.note("unreadable deviceProperties ignored"),
            },
            "distributedInfo" => match serde_json::from_str::<RawDistributed>(text) {
                Ok(d) => {
                    self.distributed = Some(DistributedInfo {
                        backend: d.backend,
                        rank: d.rank.and_then(|r| i64::try_from(r.0).ok()),
                        world_size: d.world_size.and_then(|w| i64::try_from(w.0).ok()),
                    })
                }
                Err(_) => self.diagnostics.note("unreadable distributedInfo ignored"),
            },
            _ => {
                // Keep short scalar facts (versions, options, names) for the report.
                let scalar = text.len() <= 256 && !text.starts_with(['{', '[']);
                if scalar {
                    let shown =
                        serde_json::from_str::<String>(text).unwrap_or_else(|_| text.to_owned());
                    if key == "roctracer_version" || key == "hip_runtime_version" {
                        self.saw_hip = true;
                    }
                    self.properties.insert(key.to_owned(), shown);
                }
            }
        }
    }

    fn finish(mut self, compressed: bool, content_bytes: u64) -> Recording {
        if let Some(base) = self.base_time_ns {
            for e in &mut self.mem_events {
                e.time_ns = e.time_ns.saturating_add(base);
            }
            for o in &mut self.ops {
                o.start_ns = o.start_ns.saturating_add(base);
                o.end_ns = o.end_ns.saturating_add(base);
            }
            for s in &mut self.steps {
                s.start_ns = s.start_ns.saturating_add(base);
                s.end_ns = s.end_ns.saturating_add(base);
            }
            self.start_ns = self.start_ns.map(|t| t.saturating_add(base));
            self.end_ns = self.end_ns.map(|t| t.saturating_add(base));
        }
        for (thread, stack) in std::mem::take(&mut self.open_begins) {
            if !stack.is_empty() {
                let _ = thread;
                self.diagnostics
                    .note_n("begin events never ended skipped", stack.len() as u64);
            }
        }
        self.attach_device_properties();
        // Growth slack is up to half of these vectors; give it back.
        self.ops.shrink_to_fit();
        self.mem_events.shrink_to_fit();
        self.steps.sort_by_key(|s| (s.start_ns, s.number));
        let era = self.era();
        let start_ns = self.start_ns.unwrap_or(0);
        Recording {
            meta: Meta {
                format: SourceFormat::TorchChromeTrace,
                era,
                compressed,
                content_bytes,
                base_time_ns: self.base_time_ns,
                start_ns,
                end_ns: self.end_ns.unwrap_or(start_ns),
                distributed: self.distributed,
                properties: self.properties,
                events_read: self.events_read,
            },
            strings: self.strings,
            devices: self.devices,
            threads: self.threads,
            mem_events: self.mem_events,
            ops: self.ops,
            steps: self.steps,
            stacks: Vec::new(),
            allocator: None,
            oom_details: Vec::new(),
            gpu_samples: Vec::new(),
            host_samples: Vec::new(),
            gpu_process_samples: Vec::new(),
            diagnostics: self.diagnostics,
        }
    }

    fn attach_device_properties(&mut self) {
        let gpu_type = if self.saw_hip {
            DeviceType::HIP
        } else {
            DeviceType::CUDA
        };
        for props in std::mem::take(&mut self.device_props) {
            let Some(id) = props.id.and_then(|i| i32::try_from(i.0).ok()) else {
                continue;
            };
            let key = DeviceKey {
                device_type: gpu_type,
                index: id,
            };
            let total = props.total_global_mem.and_then(|t| u64::try_from(t.0).ok());
            // Describe GPUs that memory events use; list the others too, so reports can
            // name every GPU of the machine.
            let idx = self.device(key);
            if let Some(info) = self.devices.get_mut(idx as usize) {
                info.name = props.name;
                info.total_memory_bytes = total;
            }
        }
    }

    fn era(&self) -> String {
        let rocm = if self.saw_hip { ", ROCm" } else { "" };
        let era = if self.base_time_ns.is_some() {
            "torch 2.x (µs relative to baseTimeNanoseconds)"
        } else if self.saw_legacy_memory && !self.saw_addr {
            "torch 1.8–1.9 legacy (memory events without Addr or totals)"
        } else if self.saw_addr {
            if self.saw_fractional_ts {
                "torch 2.0–2.1 (absolute µs)"
            } else {
                "torch 1.10–1.13 (integer absolute µs)"
            }
        } else if self.saw_legacy_category {
            "torch 1.8–1.9 legacy (no memory events)"
        } else {
            "Kineto trace (no memory events)"
        };
        format!("{era}{rocm}")
    }
}

/// Read a Chrome trace from an opened input.
pub fn read(input: Input, options: LoadOptions) -> Result<Recording, TraceError> {
    let compressed = input.compressed;
    let mut stream = JsonStream::new(input.reader);
    let mut builder = Builder::new();
    let outcome = read_document(&mut stream, &mut builder);
    match outcome {
        Ok(()) => {}
        Err(Cut {
            error,
            in_events: true,
        }) if options.salvage_truncated && salvageable(&error) => {
            builder.diagnostics.truncated_at = Some(stream.offset());
        }
        Err(Cut { error, .. }) => return Err(error),
    }
    let content_bytes = stream.offset();
    Ok(builder.finish(compressed, content_bytes))
}

fn salvageable(error: &TraceError) -> bool {
    matches!(
        error,
        TraceError::Stream(StreamError::Truncated { .. } | StreamError::Io(..))
            | TraceError::Stream(StreamError::Syntax { .. })
    )
}

/// An error, and whether it happened inside the event array (where salvage can keep the rest).
struct Cut {
    error: TraceError,
    in_events: bool,
}

fn outside(error: impl Into<TraceError>) -> Cut {
    Cut {
        error: error.into(),
        in_events: false,
    }
}

fn read_document<R: Read>(stream: &mut JsonStream<R>, b: &mut Builder) -> Result<(), Cut> {
    let mut saw_events = false;
    match stream.peek().map_err(outside)? {
        Some(b'[') => {
            read_event_array(stream, b, true)?;
            saw_events = true;
        }
        Some(b'{') => {
            stream.bump();
            let mut first = true;
            loop {
                match stream.peek().map_err(outside)? {
                    Some(b'}') if first => {
                        stream.bump();
                        break;
                    }
                    None => {
                        return Err(outside(StreamError::Truncated {
                            offset: stream.offset(),
                            context: "the top-level object",
                        }));
                    }
                    _ => {}
                }
                first = false;
                let key: String = stream
                    .value("a top-level key", |w| {
                        parse_one::<Cow<'_, str>>(w).map(|(k, n)| (k.into_owned(), n))
                    })
                    .map_err(outside)?;
                stream
                    .expect(b':', "after a top-level key")
                    .map_err(outside)?;
                if key == "traceEvents" {
                    read_event_array(stream, b, false)?;
                    saw_events = true;
                } else {
                    stream
                        .value("a top-level value", |w| {
                            let (raw, n) = parse_one::<&RawValue>(w)?;
                            b.top_level(&key, raw);
                            Ok(((), n))
                        })
                        .map_err(outside)?;
                }
                match stream.peek().map_err(outside)? {
                    Some(b',') => stream.bump(),
                    Some(b'}') => {
                        stream.bump();
                        break;
                    }
                    Some(other) => {
                        return Err(outside(StreamError::Syntax {
                            offset: stream.offset(),
                            message: format!(
                                "expected ',' or '}}' in the top-level object, found {}",
                                super::json_stream::describe_byte(other)
                            ),
                        }));
                    }
                    None => {
                        return Err(outside(StreamError::Truncated {
                            offset: stream.offset(),
                            context: "the top-level object",
                        }));
                    }
                }
            }
        }
        Some(other) => {
            return Err(outside(TraceError::Shape {
                offset: stream.offset(),
                message: format!(
                    "not a trace: expected a JSON object or array, found {}",
                    super::json_stream::describe_byte(other)
                ),
            }));
        }
        None => {
            return Err(outside(TraceError::Shape {
                offset: 0,
                message: "the file is empty".into(),
            }));
        }
    }
    if !saw_events {
        return Err(outside(TraceError::Shape {
            offset: 0,
            message: "not a PyTorch profiler trace: the JSON object has no \"traceEvents\" array"
                .into(),
        }));
    }
    if let Ok(Some(_)) = stream.peek() {
        b.diagnostics
            .note("trailing data after the JSON document ignored");
    }
    Ok(())
}

fn read_event_array<R: Read>(
    stream: &mut JsonStream<R>,
    b: &mut Builder,
    bare: bool,
) -> Result<(), Cut> {
    let inside = |error: StreamError| Cut {
        error: error.into(),
        in_events: true,
    };
    match stream.peek().map_err(outside)? {
        Some(b'[') => stream.bump(),
        Some(other) => {
            return Err(outside(TraceError::Shape {
                offset: stream.offset(),
                message: format!(
                    "\"traceEvents\" is not an array (found {})",
                    super::json_stream::describe_byte(other)
                ),
            }));
        }
        None => {
            return Err(outside(StreamError::Truncated {
                offset: stream.offset(),
                context: "traceEvents",
            }));
        }
    }
    if stream.peek().map_err(inside)? == Some(b']') {
        stream.bump();
        return Ok(());
    }
    loop {
        let parsed = stream.value("a trace event", |w| match parse_one::<RawEvent<'_>>(w) {
            Ok((ev, n)) => {
                b.add(ev);
                Ok(((), n))
            }
            // Valid JSON of another shape (a string where a number belongs, a non-object):
            // skip that one event, count it, and go on.
            Err(ValueError::Json(j)) if j.classify() == serde_json::error::Category::Data => {
                let (_, n) = parse_one::<IgnoredAny>(w)?;
                b.diagnostics
                    .note("trace events with unexpected field types skipped");
                Ok(((), n))
            }
            Err(e) => Err(e),
        });
        if let Err(e) = parsed {
            return Err(inside(e));
        }
        match stream.peek().map_err(inside)? {
            Some(b',') => stream.bump(),
            Some(b']') => {
                stream.bump();
                return Ok(());
            }
            // The Chrome "JSON Array Format" allows the closing bracket to be missing.
            None if bare => {
                b.diagnostics
                    .note("event array without its closing ']' (allowed by the Chrome format)");
                return Ok(());
            }
            None => {
                return Err(inside(StreamError::Truncated {
                    offset: stream.offset(),
                    context: "traceEvents",
                }));
            }
            Some(other) => {
                return Err(inside(StreamError::Syntax {
                    offset: stream.offset(),
                    message: format!(
                        "expected ',' or ']' between trace events, found {}",
                        super::json_stream::describe_byte(other)
                    ),
                }));
            }
        }
        // A trailing comma before the end of a bare array.
        if bare && stream.peek().map_err(inside)?.is_none() {
            b.diagnostics
                .note("event array without its closing ']' (allowed by the Chrome format)");
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests;
