//! The mapping from nsys records to the neutral model, shared by the SQLite and JSON
//! readers so both turn the same record into the same events.

use rustc_hash::FxHashMap;

use super::GlobalId;
use crate::model::{
    DeviceId, DeviceType, MemEvent, MemEventKind, OpCategory, OpSpan, Recording, SourceFormat,
    StepMarker, ThreadIdx, Total,
};

/// `ENUM_CUDA_MEM_KIND`: where a CUDA allocation lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    /// Pageable host memory.
    Pageable,
    /// Page-locked (pinned) host memory (`cudaMallocHost`, `cudaHostAlloc`).
    Pinned,
    /// Device memory (`cudaMalloc`): what the caching allocator reserves.
    Device,
    /// A CUDA array (`cudaMallocArray`).
    Array,
    /// Managed (unified) memory (`cudaMallocManaged`).
    Managed,
    /// Statically allocated device memory (`__device__` variables).
    DeviceStatic,
    /// Statically allocated managed memory (`__managed__` variables).
    ManagedStatic,
    /// The driver could not tell.
    Unknown,
}

impl MemKind {
    /// The documented ids (0 Pageable … 7 Unknown), for files whose enum table is empty.
    pub fn from_documented_id(id: i64) -> Option<MemKind> {
        Some(match id {
            0 => MemKind::Pageable,
            1 => MemKind::Pinned,
            2 => MemKind::Device,
            3 => MemKind::Array,
            4 => MemKind::Managed,
            5 => MemKind::DeviceStatic,
            6 => MemKind::ManagedStatic,
            7 => MemKind::Unknown,
            _ => return None,
        })
    }

    /// From an enum symbol (`CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC`) or label (`Device Static`).
    pub fn from_enum_name(name: &str) -> Option<MemKind> {
        let upper = name.to_ascii_uppercase().replace(' ', "_");
        let symbol = upper.rsplit("MEMORY_KIND_").next().unwrap_or(&upper);
        Some(match symbol {
            "PAGEABLE" => MemKind::Pageable,
            "PINNED" => MemKind::Pinned,
            "DEVICE" => MemKind::Device,
            "ARRAY" => MemKind::Array,
            "MANAGED" => MemKind::Managed,
            "DEVICE_STATIC" => MemKind::DeviceStatic,
            "MANAGED_STATIC" => MemKind::ManagedStatic,
            "UNKNOWN" => MemKind::Unknown,
            _ => return None,
        })
    }

    /// The device its bytes count on, or `None` for kinds vramscope does not chart.
    ///
    /// Arrays are left out so that `cuda:N` reserved memory is exactly the running sum of
    /// Device-kind allocations (the caching allocator's segments); unknown memory has no
    /// place to go.
    fn device(self, device_id: i32) -> Option<DeviceId> {
        let device_type = match self {
            MemKind::Device | MemKind::DeviceStatic => DeviceType::CUDA,
            MemKind::Pinned => DeviceType::HOST_PINNED,
            MemKind::Pageable => DeviceType::HOST_PAGEABLE,
            MemKind::Managed | MemKind::ManagedStatic => DeviceType::CUDA_MANAGED,
            MemKind::Array | MemKind::Unknown => return None,
        };
        let index = match self {
            MemKind::Pinned | MemKind::Pageable => -1,
            _ => device_id,
        };
        Some(DeviceId { device_type, index })
    }
}

/// `ENUM_CUDA_DEV_MEM_EVENT_OPER`: allocation or deallocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOp {
    /// Memory was allocated.
    Alloc,
    /// Memory was freed.
    Free,
}

impl MemOp {
    /// The documented ids: 0 Allocation, 1 Deallocation.
    pub fn from_documented_id(id: i64) -> Option<MemOp> {
        match id {
            0 => Some(MemOp::Alloc),
            1 => Some(MemOp::Free),
            _ => None,
        }
    }

    /// From `CUDA_DEV_MEM_EVENT_OPR_ALLOCATION` / `Deallocation` and the like.
    pub fn from_enum_name(name: &str) -> Option<MemOp> {
        let upper = name.to_ascii_uppercase();
        if upper.contains("DEALLOC") || upper.contains("FREE") {
            Some(MemOp::Free)
        } else if upper.contains("ALLOC") {
            Some(MemOp::Alloc)
        } else {
            None
        }
    }
}

/// One `CUDA_GPU_MEMORY_USAGE_EVENTS` row, decoded.
#[derive(Clone, Copy, Debug)]
pub struct MemRow {
    /// `start`, ns since the session start.
    pub rel_ns: i64,
    /// `deviceId`.
    pub device_id: i64,
    /// `memKind`.
    pub kind: MemKind,
    /// `memoryOperationType`.
    pub op: MemOp,
    /// `bytes` (always positive in nsys; the sign comes from `op`).
    pub bytes: i64,
    /// `address`.
    pub address: Option<u64>,
    /// `globalPid`, where the export has it.
    pub process: Option<GlobalId>,
    /// `correlationId` of the CUDA API call that did it.
    pub correlation: Option<u64>,
}

/// Builds a [`Recording`] from decoded nsys records.
pub struct Builder {
    rec: Recording,
    /// Session start in epoch ns (SQLite), added to every relative time.
    session_start_ns: i64,
    threads: FxHashMap<GlobalId, ThreadIdx>,
    streams: FxHashMap<(u64, i64, i64), ThreadIdx>,
    thread_names: FxHashMap<GlobalId, String>,
    /// CUDA API calls by (pid, correlationId), to find the thread of a memory event.
    api_threads: FxHashMap<(u64, u64), ThreadIdx>,
    /// Memory events whose thread is settled at the end: (index, process, correlation).
    unplaced: Vec<(usize, Option<GlobalId>, Option<u64>)>,
    start_ns: Option<i64>,
    end_ns: Option<i64>,
    /// Rows or records read.
    pub events_read: u64,
}

impl Builder {
    /// A builder for `format`, with times relative to `session_start_ns`.
    pub fn new(format: SourceFormat, era: &str, session_start_ns: i64) -> Builder {
        Builder {
            rec: Recording::empty(format, era),
            session_start_ns,
            threads: FxHashMap::default(),
            streams: FxHashMap::default(),
            thread_names: FxHashMap::default(),
            api_threads: FxHashMap::default(),
            unplaced: Vec::new(),
            start_ns: None,
            end_ns: None,
            events_read: 0,
        }
    }

    /// Count something skipped or odd.
    pub fn note(&mut self, what: &str) {
        self.rec.diagnostics.note(what);
    }

    /// Record a fact about the source.
    pub fn property(&mut self, key: &str, value: impl Into<String>) {
        self.rec
            .meta
            .properties
            .insert(key.to_owned(), value.into());
    }

    /// Set the era line (known only once the file's metadata is read).
    pub fn set_era(&mut self, era: String) {
        self.rec.meta.era = era;
    }

    /// Absolute ns of a time relative to the session start.
    fn absolute(&self, rel_ns: i64) -> Option<i64> {
        self.session_start_ns.checked_add(rel_ns)
    }

    fn see_time(&mut self, start_ns: i64, end_ns: i64) {
        self.start_ns = Some(self.start_ns.map_or(start_ns, |s| s.min(start_ns)));
        self.end_ns = Some(self.end_ns.map_or(end_ns, |e| e.max(end_ns)));
    }

    /// The thread of a `globalTid`.
    pub fn thread(&mut self, global_tid: GlobalId) -> ThreadIdx {
        if let Some(&t) = self.threads.get(&global_tid) {
            return t;
        }
        let pid = global_tid.pid().to_string();
        let tid = global_tid.tid().to_string();
        let t = self.rec.thread_index(&pid, &tid);
        self.threads.insert(global_tid, t);
        t
    }

    /// The lane of a GPU stream: process pid, `cuda:N stream S`.
    pub fn stream(
        &mut self,
        process: Option<GlobalId>,
        device_id: i64,
        stream_id: i64,
    ) -> ThreadIdx {
        let pid = process.map_or(0, GlobalId::pid);
        if let Some(&t) = self.streams.get(&(pid, device_id, stream_id)) {
            return t;
        }
        let lane = format!("cuda:{device_id} stream {stream_id}");
        let t = self.rec.thread_index(&pid.to_string(), &lane);
        if let Some(info) = self.rec.threads.get_mut(t as usize) {
            info.name = Some(lane);
        }
        self.streams.insert((pid, device_id, stream_id), t);
        t
    }

    /// Name a thread (`ThreadNames`); applied at the end to the threads that have events.
    pub fn name_thread(&mut self, global_tid: GlobalId, name: &str) {
        self.thread_names.insert(global_tid, name.to_owned());
    }

    /// Describe a GPU (`TARGET_INFO_GPU`): it is listed even without memory events.
    pub fn describe_gpu(&mut self, device_id: i64, name: Option<String>, total_bytes: Option<u64>) {
        let Ok(index) = i32::try_from(device_id) else {
            self.note("GPU descriptions with an out-of-range device id skipped");
            return;
        };
        let d = self.rec.device_index(DeviceId::cuda(index));
        if let Some(info) = self.rec.devices.get_mut(d as usize) {
            info.name = name.or(info.name.take());
            info.total_memory_bytes = total_bytes.or(info.total_memory_bytes);
        }
    }

    /// Add a span; `end_rel_ns` is `None` for a range that never ended.
    pub fn span(
        &mut self,
        name: &str,
        category: OpCategory,
        thread: ThreadIdx,
        start_rel_ns: i64,
        end_rel_ns: Option<i64>,
    ) {
        let what = match category {
            OpCategory::Nvtx => "NVTX ranges",
            OpCategory::Kernel => "kernels",
            _ => "CUDA API calls",
        };
        let Some(end_rel_ns) = end_rel_ns else {
            self.note(&format!("{what} without an end skipped"));
            return;
        };
        if end_rel_ns < start_rel_ns {
            self.note(&format!("{what} that end before they start skipped"));
            return;
        }
        let (Some(start_ns), Some(end_ns)) =
            (self.absolute(start_rel_ns), self.absolute(end_rel_ns))
        else {
            self.note(&format!("{what} with out-of-range times skipped"));
            return;
        };
        self.see_time(start_ns, end_ns);
        if category == OpCategory::Nvtx
            && let Some(step) = StepMarker::from_span(name, start_ns, end_ns)
        {
            self.rec.steps.push(step);
        }
        let name = self.rec.strings.intern(name);
        self.rec.ops.push(OpSpan {
            name,
            category,
            thread,
            start_ns,
            end_ns,
        });
    }

    /// Remember which thread made CUDA API call `correlation`, for memory events.
    pub fn api_call(&mut self, global_tid: GlobalId, correlation: u64) {
        let thread = self.thread(global_tid);
        self.api_threads
            .insert((global_tid.pid(), correlation), thread);
    }

    /// Add one memory-usage row as a segment event.
    pub fn memory(&mut self, row: MemRow) {
        let Ok(device_id) = i32::try_from(row.device_id) else {
            self.note("CUDA memory rows with an out-of-range deviceId skipped");
            return;
        };
        let Some(key) = row.kind.device(device_id) else {
            self.note(&format!(
                "CUDA memory rows of kind {:?} skipped (only Device, host and Managed kinds are charted)",
                row.kind
            ));
            return;
        };
        if row.bytes < 0 {
            self.note("CUDA memory rows with negative bytes skipped");
            return;
        }
        let Some(time_ns) = self.absolute(row.rel_ns) else {
            self.note("CUDA memory rows with out-of-range times skipped");
            return;
        };
        self.see_time(time_ns, time_ns);
        let device = self.rec.device_index(key);
        let (bytes, kind) = match row.op {
            MemOp::Alloc => (row.bytes, MemEventKind::SegmentAlloc),
            MemOp::Free => (-row.bytes, MemEventKind::SegmentFree),
        };
        self.unplaced
            .push((self.rec.mem_events.len(), row.process, row.correlation));
        self.rec.mem_events.push(MemEvent {
            time_ns,
            bytes,
            addr: row.address.into(),
            total_allocated_bytes: Total::UNKNOWN,
            total_reserved_bytes: Total::UNKNOWN,
            device,
            thread: 0,
            kind,
            stack: None,
        });
    }

    /// Put each memory event on the thread of its CUDA API call; without one, on its
    /// process's main thread.
    fn place_memory_events(&mut self) {
        for (index, process, correlation) in std::mem::take(&mut self.unplaced) {
            let by_call = process
                .zip(correlation)
                .and_then(|(p, c)| self.api_threads.get(&(p.pid(), c)).copied());
            let thread = match (by_call, process) {
                (Some(t), _) => t,
                (None, Some(p)) => {
                    self.note("CUDA memory rows without a matching CUDA API call: put on the process's main thread");
                    self.thread(p.main_thread())
                }
                (None, None) => {
                    self.note("CUDA memory rows without a process: put on an unknown thread");
                    self.rec.thread_index("?", "?")
                }
            };
            if let Some(e) = self.rec.mem_events.get_mut(index) {
                e.thread = thread;
            }
        }
    }

    /// The finished recording.
    pub fn finish(mut self, compressed: bool, content_bytes: u64) -> Recording {
        self.place_memory_events();
        for (gid, thread) in &self.threads {
            if let (Some(name), Some(info)) = (
                self.thread_names.get(gid),
                self.rec.threads.get_mut(*thread as usize),
            ) {
                info.name = Some(name.clone());
            }
        }
        self.rec.steps.sort_by_key(|s| (s.start_ns, s.number));
        let start_ns = self.start_ns.unwrap_or(self.session_start_ns);
        precapture::reserve_before_capture(&mut self.rec, start_ns);
        let meta = &mut self.rec.meta;
        meta.start_ns = start_ns;
        meta.end_ns = self.end_ns.unwrap_or(meta.start_ns);
        meta.events_read = self.events_read;
        meta.compressed = compressed;
        meta.content_bytes = content_bytes;
        self.rec
    }
}

mod precapture;
#[cfg(test)]
mod tests;
