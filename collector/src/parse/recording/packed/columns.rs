//! The records of a packed recording: the model's parts as serde structs, events as
//! columns. Encoders and the [`Decoder`] carry the delta state across lines, so each
//! column holds small numbers that gzip turns into almost nothing.
//!
//! Decoding never trusts the file: every arithmetic step wraps instead of overflowing,
//! every enum code and every column length is checked, and [`check_references`] makes sure
//! no index points outside the tables before an analysis can index with it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{
    AllocatorState, Block, BlockState, DeviceIdx, DeviceInfo, DeviceKey, DeviceType,
    DistributedInfo, Frame, GpuProcessSample, GpuSample, HostSample, MemEvent, MemEventKind,
    OpCategory, OpSpan, Recording, Segment, SegmentPool, StackId, StrId, ThreadIdx, ThreadInfo,
};

/// The source's facts ([`crate::model::Meta`]) and diagnostics.
#[derive(Serialize, Deserialize)]
pub struct MetaLine {
    format: String,
    era: String,
    compressed: bool,
    content_bytes: u64,
    base_time_ns: Option<i64>,
    start_ns: i64,
    end_ns: i64,
    distributed: Option<(Option<String>, Option<i64>, Option<i64>)>,
    properties: BTreeMap<String, String>,
    events_read: u64,
    diagnostics: BTreeMap<String, u64>,
    truncated_at: Option<u64>,
}

impl MetaLine {
    /// The facts of `rec`.
    pub fn from_meta(rec: &Recording) -> MetaLine {
        let m = &rec.meta;
        MetaLine {
            format: m.format.as_str().to_owned(),
            era: m.era.clone(),
            compressed: m.compressed,
            content_bytes: m.content_bytes,
            base_time_ns: m.base_time_ns,
            start_ns: m.start_ns,
            end_ns: m.end_ns,
            distributed: m
                .distributed
                .as_ref()
                .map(|d| (d.backend.clone(), d.rank, d.world_size)),
            properties: m.properties.clone(),
            events_read: m.events_read,
            diagnostics: rec.diagnostics.counts.clone(),
            truncated_at: rec.diagnostics.truncated_at,
        }
    }

    /// Put the facts back into `rec`.
    pub fn apply(self, rec: &mut Recording) -> Result<(), String> {
        let format = super::format_from_str(&self.format)
            .ok_or_else(|| format!("a pack of an unknown source format {:?}", self.format))?;
        let m = &mut rec.meta;
        m.format = format;
        m.era = self.era;
        m.compressed = self.compressed;
        m.content_bytes = self.content_bytes;
        m.base_time_ns = self.base_time_ns;
        m.start_ns = self.start_ns;
        m.end_ns = self.end_ns;
        m.distributed = self
            .distributed
            .map(|(backend, rank, world_size)| DistributedInfo {
                backend,
                rank,
                world_size,
            });
        m.properties = self.properties;
        m.events_read = self.events_read;
        rec.diagnostics.counts = self.diagnostics;
        rec.diagnostics.truncated_at = self.truncated_at;
        Ok(())
    }
}

/// A device: `[c10 type, ordinal, name, total bytes]`.
#[derive(Serialize, Deserialize)]
pub struct DeviceLine(i16, i32, Option<String>, Option<u64>);

impl DeviceLine {
    /// From the model.
    pub fn from_info(d: &DeviceInfo) -> DeviceLine {
        DeviceLine(
            d.key.device_type.0,
            d.key.index,
            d.name.clone(),
            d.total_memory_bytes,
        )
    }

    /// Into the model.
    pub fn into_info(self) -> DeviceInfo {
        DeviceInfo {
            key: DeviceKey {
                device_type: DeviceType(self.0),
                index: self.1,
            },
            name: self.2,
            total_memory_bytes: self.3,
        }
    }
}

/// A thread: `[pid, tid, name]`.
#[derive(Serialize, Deserialize)]
pub struct ThreadLine(String, String, Option<String>);

impl ThreadLine {
    /// From the model.
    pub fn from_info(t: &ThreadInfo) -> ThreadLine {
        ThreadLine(t.pid.clone(), t.tid.clone(), t.name.clone())
    }

    /// Into the model.
    pub fn into_info(self) -> ThreadInfo {
        ThreadInfo {
            pid: self.0,
            tid: self.1,
            name: self.2,
        }
    }
}

/// A call stack: frames as `[name id, file id, line]`, innermost first.
#[derive(Serialize, Deserialize)]
pub struct StackLine(Vec<[u32; 3]>);

impl StackLine {
    /// From the model.
    pub fn from_frames(frames: &[Frame]) -> StackLine {
        StackLine(
            frames
                .iter()
                .map(|f| [f.name.0, f.file.0, f.line])
                .collect(),
        )
    }

    /// Into the model.
    pub fn into_frames(self) -> Vec<Frame> {
        self.0
            .into_iter()
            .map(|[name, file, line]| Frame {
                name: StrId(name),
                file: StrId(file),
                line,
            })
            .collect()
    }
}

/// Memory events as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct MemColumns {
    /// Time minus the previous event's time.
    t: Vec<i64>,
    /// Signed bytes.
    b: Vec<i64>,
    /// Address.
    a: Vec<Option<u64>>,
    /// Total allocated minus the prediction (previous total on the device, plus the bytes
    /// of an allocation or free).
    ta: Vec<Option<i64>>,
    /// Total reserved minus the prediction (previous total, plus a segment event's bytes).
    tr: Vec<Option<i64>>,
    /// Device index.
    d: Vec<DeviceIdx>,
    /// Thread index.
    th: Vec<ThreadIdx>,
    /// Kind code ([`kind_code`]).
    k: Vec<u8>,
    /// Stack id.
    s: Vec<Option<u32>>,
}

fn kind_code(k: MemEventKind) -> u8 {
    match k {
        MemEventKind::Alloc => 0,
        MemEventKind::Free => 1,
        MemEventKind::OutOfMemory => 2,
        MemEventKind::SegmentAlloc => 3,
        MemEventKind::SegmentFree => 4,
    }
}

fn kind_from_code(c: u8) -> Option<MemEventKind> {
    Some(match c {
        0 => MemEventKind::Alloc,
        1 => MemEventKind::Free,
        2 => MemEventKind::OutOfMemory,
        3 => MemEventKind::SegmentAlloc,
        4 => MemEventKind::SegmentFree,
        _ => return None,
    })
}

const CATEGORIES: [OpCategory; 11] = [
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

/// Running totals per device, for the predictions of [`MemColumns::ta`] and `tr`.
#[derive(Default)]
struct Totals {
    allocated: Vec<i64>,
    reserved: Vec<i64>,
}

impl Totals {
    fn slot(v: &mut Vec<i64>, device: DeviceIdx) -> &mut i64 {
        let i = device as usize;
        if v.len() <= i {
            v.resize(i + 1, 0);
        }
        &mut v[i]
    }

    /// The predicted totals of an event: (allocated, reserved).
    fn predict(&mut self, e: &MemEvent) -> (i64, i64) {
        let a = *Self::slot(&mut self.allocated, e.device);
        let r = *Self::slot(&mut self.reserved, e.device);
        let da = if e.kind.is_allocation() { e.bytes } else { 0 };
        let dr = if e.kind.is_segment() { e.bytes } else { 0 };
        (a.wrapping_add(da), r.wrapping_add(dr))
    }

    fn update(&mut self, e: &MemEvent) {
        if let Some(a) = e.total_allocated_bytes {
            *Self::slot(&mut self.allocated, e.device) = a;
        }
        if let Some(r) = e.total_reserved_bytes {
            *Self::slot(&mut self.reserved, e.device) = r;
        }
    }
}

/// Encodes memory events line by line.
#[derive(Default)]
pub struct MemEncoder {
    previous_ns: i64,
    totals: Totals,
}

impl MemEncoder {
    /// The columns of `events`, continuing from the previous line.
    pub fn encode(&mut self, events: &[MemEvent]) -> MemColumns {
        let mut c = MemColumns::default();
        for e in events {
            let (pa, pr) = self.totals.predict(e);
            c.t.push(e.time_ns.wrapping_sub(self.previous_ns));
            c.b.push(e.bytes);
            c.a.push(e.addr);
            c.ta.push(e.total_allocated_bytes.map(|v| v.wrapping_sub(pa)));
            c.tr.push(e.total_reserved_bytes.map(|v| v.wrapping_sub(pr)));
            c.d.push(e.device);
            c.th.push(e.thread);
            c.k.push(kind_code(e.kind));
            c.s.push(e.stack.map(|s| s.0));
            self.previous_ns = e.time_ns;
            self.totals.update(e);
        }
        c
    }
}

/// Ops as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct OpColumns {
    /// Name id.
    n: Vec<u32>,
    /// Category code (index into [`CATEGORIES`]).
    c: Vec<u8>,
    /// Thread index.
    th: Vec<ThreadIdx>,
    /// Start minus the previous op's start.
    s: Vec<i64>,
    /// End minus start.
    d: Vec<i64>,
}

/// Encodes ops line by line.
#[derive(Default)]
pub struct OpEncoder {
    previous_ns: i64,
}

impl OpEncoder {
    /// The columns of `spans`, continuing from the previous line.
    pub fn encode(&mut self, spans: &[OpSpan]) -> OpColumns {
        let mut c = OpColumns::default();
        for o in spans {
            c.n.push(o.name.0);
            let code = CATEGORIES.iter().position(|&k| k == o.category);
            c.c.push(code.unwrap_or(CATEGORIES.len() - 1) as u8);
            c.th.push(o.thread);
            c.s.push(o.start_ns.wrapping_sub(self.previous_ns));
            c.d.push(o.end_ns.wrapping_sub(o.start_ns));
            self.previous_ns = o.start_ns;
        }
        c
    }
}

/// NVML samples as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct GpuColumns {
    /// Time minus the previous sample's time.
    t: Vec<i64>,
    /// Device index.
    d: Vec<DeviceIdx>,
    /// Used bytes.
    u: Vec<u64>,
    /// Total bytes.
    tot: Vec<Option<u64>>,
    /// The recorded process tree's bytes.
    p: Vec<Option<u64>>,
    /// Free bytes.
    #[serde(default)]
    f: Vec<Option<u64>>,
    /// Driver-reserved bytes.
    #[serde(default)]
    r: Vec<Option<u64>>,
}

/// Encodes NVML samples line by line.
#[derive(Default)]
pub struct GpuEncoder {
    previous_ns: i64,
}

impl GpuEncoder {
    /// The columns of `samples`.
    pub fn encode(&mut self, samples: &[GpuSample]) -> GpuColumns {
        let mut c = GpuColumns::default();
        for s in samples {
            c.t.push(s.time_ns.wrapping_sub(self.previous_ns));
            c.d.push(s.device);
            c.u.push(s.used_bytes);
            c.tot.push(s.total_bytes);
            c.p.push(s.process_bytes);
            c.f.push(s.free_bytes);
            c.r.push(s.driver_reserved_bytes);
            self.previous_ns = s.time_ns;
        }
        c
    }
}

/// Per-process NVML samples as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct ProcessColumns {
    /// Time minus the previous sample's time.
    t: Vec<i64>,
    /// Device index.
    d: Vec<DeviceIdx>,
    /// Process id.
    pid: Vec<u32>,
    /// Its bytes on the GPU (null where NVML does not say).
    u: Vec<Option<u64>>,
}

/// Encodes per-process samples line by line.
#[derive(Default)]
pub struct ProcessEncoder {
    previous_ns: i64,
}

impl ProcessEncoder {
    /// The columns of `samples`.
    pub fn encode(&mut self, samples: &[GpuProcessSample]) -> ProcessColumns {
        let mut c = ProcessColumns::default();
        for s in samples {
            c.t.push(s.time_ns.wrapping_sub(self.previous_ns));
            c.d.push(s.device);
            c.pid.push(s.pid);
            c.u.push(s.used_bytes);
            self.previous_ns = s.time_ns;
        }
        c
    }
}

/// Host RSS samples as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct HostColumns {
    /// Time minus the previous sample's time.
    t: Vec<i64>,
    /// RSS bytes.
    rss: Vec<u64>,
}

/// Encodes host samples line by line.
#[derive(Default)]
pub struct HostEncoder {
    previous_ns: i64,
}

impl HostEncoder {
    /// The columns of `samples`.
    pub fn encode(&mut self, samples: &[HostSample]) -> HostColumns {
        let mut c = HostColumns::default();
        for s in samples {
            c.t.push(s.time_ns.wrapping_sub(self.previous_ns));
            c.rss.push(s.rss_bytes);
            self.previous_ns = s.time_ns;
        }
        c
    }
}

/// Decoding state across lines.
#[derive(Default)]
pub struct Decoder {
    mem_ns: i64,
    totals: Totals,
    op_ns: i64,
    gpu_ns: i64,
    process_ns: i64,
    host_ns: i64,
}

fn same_lengths(what: &str, lengths: &[usize]) -> Result<usize, String> {
    let n = lengths.first().copied().unwrap_or(0);
    if lengths.iter().any(|&l| l != n) {
        return Err(format!("{what} columns of different lengths {lengths:?}"));
    }
    Ok(n)
}

impl Decoder {
    /// Append the events of a `mem` record.
    pub fn mem(&mut self, c: MemColumns, out: &mut Vec<MemEvent>) -> Result<(), String> {
        let lengths = [
            c.t.len(),
            c.b.len(),
            c.a.len(),
            c.ta.len(),
            c.tr.len(),
            c.d.len(),
            c.th.len(),
            c.k.len(),
            c.s.len(),
        ];
        let n = same_lengths("memory event", &lengths)?;
        out.reserve(n);
        for i in 0..n {
            self.mem_ns = self.mem_ns.wrapping_add(c.t[i]);
            let kind =
                kind_from_code(c.k[i]).ok_or_else(|| format!("unknown event kind {}", c.k[i]))?;
            let mut e = MemEvent {
                time_ns: self.mem_ns,
                bytes: c.b[i],
                addr: c.a[i],
                total_allocated_bytes: None,
                total_reserved_bytes: None,
                device: c.d[i],
                thread: c.th[i],
                kind,
                stack: c.s[i].map(StackId),
            };
            let (pa, pr) = self.totals.predict(&e);
            e.total_allocated_bytes = c.ta[i].map(|v| v.wrapping_add(pa));
            e.total_reserved_bytes = c.tr[i].map(|v| v.wrapping_add(pr));
            self.totals.update(&e);
            out.push(e);
        }
        Ok(())
    }

    /// Append the spans of an `ops` record.
    pub fn ops(&mut self, c: OpColumns, out: &mut Vec<OpSpan>) -> Result<(), String> {
        let n = same_lengths(
            "op",
            &[c.n.len(), c.c.len(), c.th.len(), c.s.len(), c.d.len()],
        )?;
        out.reserve(n);
        for i in 0..n {
            self.op_ns = self.op_ns.wrapping_add(c.s[i]);
            let category = *CATEGORIES
                .get(c.c[i] as usize)
                .ok_or_else(|| format!("unknown op category {}", c.c[i]))?;
            out.push(OpSpan {
                name: StrId(c.n[i]),
                category,
                thread: c.th[i],
                start_ns: self.op_ns,
                end_ns: self.op_ns.wrapping_add(c.d[i]),
            });
        }
        Ok(())
    }

    /// Append the samples of a `gpu_samples` record.
    pub fn gpu(&mut self, c: GpuColumns, out: &mut Vec<GpuSample>) -> Result<(), String> {
        let lengths = [
            c.t.len(),
            c.d.len(),
            c.u.len(),
            c.tot.len(),
            c.p.len(),
            c.f.len(),
            c.r.len(),
        ];
        let n = same_lengths("GPU sample", &lengths)?;
        for i in 0..n {
            self.gpu_ns = self.gpu_ns.wrapping_add(c.t[i]);
            out.push(GpuSample {
                time_ns: self.gpu_ns,
                device: c.d[i],
                used_bytes: c.u[i],
                total_bytes: c.tot[i],
                process_bytes: c.p[i],
                free_bytes: c.f[i],
                driver_reserved_bytes: c.r[i],
            });
        }
        Ok(())
    }

    /// Append the samples of a `gpu_process_samples` record.
    pub fn gpu_process(
        &mut self,
        c: ProcessColumns,
        out: &mut Vec<GpuProcessSample>,
    ) -> Result<(), String> {
        let n = same_lengths(
            "GPU process sample",
            &[c.t.len(), c.d.len(), c.pid.len(), c.u.len()],
        )?;
        for i in 0..n {
            self.process_ns = self.process_ns.wrapping_add(c.t[i]);
            out.push(GpuProcessSample {
                time_ns: self.process_ns,
                device: c.d[i],
                pid: c.pid[i],
                used_bytes: c.u[i],
            });
        }
        Ok(())
    }

    /// Append the samples of a `host_samples` record.
    pub fn host(&mut self, c: HostColumns, out: &mut Vec<HostSample>) -> Result<(), String> {
        let n = same_lengths("host sample", &[c.t.len(), c.rss.len()])?;
        for i in 0..n {
            self.host_ns = self.host_ns.wrapping_add(c.t[i]);
            out.push(HostSample {
                time_ns: self.host_ns,
                rss_bytes: c.rss[i],
            });
        }
        Ok(())
    }
}

/// The allocator's state without its segments (those follow in `segments` records).
#[derive(Serialize, Deserialize)]
pub struct AllocatorLine {
    time_ns: Option<i64>,
    settings: BTreeMap<String, String>,
}

impl AllocatorLine {
    /// From the model.
    pub fn from_state(s: &AllocatorState) -> AllocatorLine {
        AllocatorLine {
            time_ns: s.time_ns,
            settings: s.settings.clone(),
        }
    }

    /// Into the model, with no segments yet.
    pub fn into_state(self) -> AllocatorState {
        AllocatorState {
            time_ns: self.time_ns,
            segments: Vec::new(),
            settings: self.settings,
        }
    }
}

/// A segment; its blocks as `[address, size, requested, state, stack]`.
#[derive(Serialize, Deserialize)]
pub struct SegmentLine {
    device: DeviceIdx,
    address: u64,
    total: u64,
    allocated: u64,
    active: u64,
    requested: u64,
    stream: u64,
    /// 0 large, 1 small, 2 other.
    pool: u8,
    expandable: bool,
    blocks: Vec<(u64, u64, u64, u8, Option<u32>)>,
}

impl SegmentLine {
    /// From the model.
    pub fn from_segment(s: &Segment) -> SegmentLine {
        let state = |b: BlockState| match b {
            BlockState::ActiveAllocated => 0,
            BlockState::ActivePendingFree => 1,
            BlockState::Inactive => 2,
        };
        SegmentLine {
            device: s.device,
            address: s.address,
            total: s.total_size_bytes,
            allocated: s.allocated_size_bytes,
            active: s.active_size_bytes,
            requested: s.requested_size_bytes,
            stream: s.stream,
            pool: match s.pool {
                SegmentPool::Large => 0,
                SegmentPool::Small => 1,
                SegmentPool::Other => 2,
            },
            expandable: s.expandable,
            blocks: s
                .blocks
                .iter()
                .map(|b| {
                    let stack = b.stack.map(|s| s.0);
                    (
                        b.address,
                        b.size_bytes,
                        b.requested_size_bytes,
                        state(b.state),
                        stack,
                    )
                })
                .collect(),
        }
    }

    /// Into the model.
    pub fn into_segment(self) -> Result<Segment, String> {
        let pool = match self.pool {
            0 => SegmentPool::Large,
            1 => SegmentPool::Small,
            2 => SegmentPool::Other,
            p => return Err(format!("unknown segment pool {p}")),
        };
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for (address, size_bytes, requested_size_bytes, state, stack) in self.blocks {
            let state = match state {
                0 => BlockState::ActiveAllocated,
                1 => BlockState::ActivePendingFree,
                2 => BlockState::Inactive,
                s => return Err(format!("unknown block state {s}")),
            };
            blocks.push(Block {
                address,
                size_bytes,
                requested_size_bytes,
                state,
                stack: stack.map(StackId),
            });
        }
        Ok(Segment {
            device: self.device,
            address: self.address,
            total_size_bytes: self.total,
            allocated_size_bytes: self.allocated,
            active_size_bytes: self.active,
            requested_size_bytes: self.requested,
            stream: self.stream,
            pool,
            expandable: self.expandable,
            blocks,
        })
    }
}

/// The last record: how many of each part the pack holds.
#[derive(Serialize, Deserialize, PartialEq, Debug)]
pub struct EndLine {
    strings: usize,
    devices: usize,
    threads: usize,
    stacks: usize,
    mem_events: usize,
    ops: usize,
    steps: usize,
    segments: usize,
    ooms: usize,
    gpu_samples: usize,
    host_samples: usize,
    #[serde(default)]
    gpu_process_samples: usize,
}

impl EndLine {
    /// The counts of `rec`.
    pub fn counting(rec: &Recording) -> EndLine {
        EndLine {
            strings: rec.strings.len(),
            devices: rec.devices.len(),
            threads: rec.threads.len(),
            stacks: rec.stacks.len(),
            mem_events: rec.mem_events.len(),
            ops: rec.ops.len(),
            steps: rec.steps.len(),
            segments: rec.allocator.as_ref().map_or(0, |a| a.segments.len()),
            ooms: rec.oom_details.len(),
            gpu_samples: rec.gpu_samples.len(),
            host_samples: rec.host_samples.len(),
            gpu_process_samples: rec.gpu_process_samples.len(),
        }
    }

    /// Whether `rec` holds exactly what the end record counts.
    pub fn verify(&self, rec: &Recording) -> Result<(), String> {
        let read = EndLine::counting(rec);
        if &read != self {
            return Err(format!(
                "the packed recording is incomplete: its end record counts {self:?} but the \
                 file holds {read:?}"
            ));
        }
        Ok(())
    }
}

/// Fail if any index in `rec` points outside its table, so analyses may index freely.
pub fn check_references(rec: &Recording) -> Result<(), String> {
    let devices = rec.devices.len();
    let threads = rec.threads.len();
    let strings = rec.strings.len();
    let stacks = rec.stacks.len();
    let bad = |what: &str, i: usize, value: usize, limit: usize| {
        Err(format!(
            "{what} {i} refers to entry {value} of {limit} (the pack is inconsistent)"
        ))
    };
    for (i, e) in rec.mem_events.iter().enumerate() {
        if e.device as usize >= devices {
            return bad("memory event", i, e.device as usize, devices);
        }
        // Sources without threads (allocator snapshots) use thread 0.
        if e.thread as usize >= threads.max(1) {
            return bad("memory event", i, e.thread as usize, threads);
        }
        if let Some(s) = e.stack.filter(|s| s.0 as usize >= stacks) {
            return bad("memory event", i, s.0 as usize, stacks);
        }
    }
    for (i, o) in rec.ops.iter().enumerate() {
        if o.name.0 as usize >= strings {
            return bad("op", i, o.name.0 as usize, strings);
        }
        if o.thread as usize >= threads {
            return bad("op", i, o.thread as usize, threads);
        }
    }
    for (i, frames) in rec.stacks.iter().enumerate() {
        if let Some(f) = frames
            .iter()
            .find(|f| f.name.0 as usize >= strings || f.file.0 as usize >= strings)
        {
            return bad("stack", i, f.name.0.max(f.file.0) as usize, strings);
        }
    }
    for (i, s) in rec.gpu_samples.iter().enumerate() {
        if s.device as usize >= devices {
            return bad("GPU sample", i, s.device as usize, devices);
        }
    }
    for (i, s) in rec.gpu_process_samples.iter().enumerate() {
        if s.device as usize >= devices {
            return bad("GPU process sample", i, s.device as usize, devices);
        }
    }
    for (i, o) in rec.oom_details.iter().enumerate() {
        if o.event as usize >= rec.mem_events.len() {
            return bad("OOM detail", i, o.event as usize, rec.mem_events.len());
        }
    }
    for (i, s) in rec.allocator.iter().flat_map(|a| &a.segments).enumerate() {
        if s.device as usize >= devices {
            return bad("segment", i, s.device as usize, devices);
        }
        if let Some(b) = s
            .blocks
            .iter()
            .find(|b| b.stack.is_some_and(|s| s.0 as usize >= stacks))
        {
            return bad("segment", i, b.stack.map_or(0, |s| s.0 as usize), stacks);
        }
    }
    Ok(())
}
