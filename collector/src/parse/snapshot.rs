//! PyTorch CUDA caching-allocator snapshots (`torch.cuda.memory._dump_snapshot` pickles).
//!
//! The pickle is read by [`super::pickle`], which executes nothing. The snapshot holds the
//! allocator's segments and blocks at one instant plus, per device, a ring buffer of trace
//! entries that may have lost its early history. So the history is first walked *backwards*
//! from the segment state at snapshot time to find what was already allocated and reserved
//! when the surviving history begins (as torch's `_memory_viz.py` does); that state becomes
//! synthetic events just before the first entry, and the entries are then replayed forwards
//! with allocator totals. A block counts as allocated from `alloc` to `free_completed`;
//! segments (`segment_alloc`/`segment_map` … `segment_free`/`segment_unmap`) are reserved.

use std::collections::BTreeMap;
use std::io::{self, Read};

use rustc_hash::FxHashMap;

use super::input::Input;
use super::pickle::{self, NodeId, Pickle};
use super::{LoadErrorKind, LoadOptions, SourceError};
use crate::model::{
    AllocatorState, Block, BlockState, DeviceIdx, DeviceKey, Frame, MemEvent, MemEventKind,
    OomDetail, OpCategory, OpSpan, Recording, Segment, SegmentPool, SourceFormat, StackId,
    StepMarker, StrId,
};

/// Largest snapshot read. The pickle is parsed as it is read (its memo refers to values,
/// not to bytes), so this only stops a runaway decompression.
pub const MAX_SNAPSHOT_BYTES: u64 = 16 << 30;

/// Diagnostics key for the blocks found live before the surviving history begins.
pub const PRE_EXISTING_BLOCKS: &str =
    "blocks allocated before the snapshot's history began (shown as allocated at its start)";

/// One trace entry, decoded: 32 bytes (a million entries are read before the replay).
/// An `oom` entry's `device_free` is kept apart, in [`Trace::device_free`].
struct Entry {
    addr: u64,
    size: u64,
    time_ns: i64,
    /// `StackId + 1`, or 0 for none.
    stack: u32,
    action: Action,
    has_addr: bool,
    has_time: bool,
}

impl Entry {
    fn addr(&self) -> Option<u64> {
        self.has_addr.then_some(self.addr)
    }

    fn time_ns(&self) -> Option<i64> {
        self.has_time.then_some(self.time_ns)
    }

    fn stack(&self) -> Option<StackId> {
        self.stack.checked_sub(1).map(StackId)
    }
}

/// One device's trace entries, and the `device_free` of its `oom` entries in order.
#[derive(Default)]
struct Trace {
    entries: Vec<Entry>,
    device_free: Vec<Option<u64>>,
}

/// What a trace-entry key or an action string is, cached per string node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Key {
    Other = 0,
    Action,
    Addr,
    Size,
    TimeUs,
    Frames,
    DeviceFree,
    /// Keys of a frame dict.
    Name,
    Filename,
    Line,
}

impl Key {
    fn parse(s: &str) -> Key {
        match s {
            "action" => Key::Action,
            "addr" => Key::Addr,
            "size" => Key::Size,
            "time_us" => Key::TimeUs,
            "frames" => Key::Frames,
            "device_free" => Key::DeviceFree,
            "name" => Key::Name,
            "filename" => Key::Filename,
            "line" => Key::Line,
            _ => Key::Other,
        }
    }

    const ALL: [Key; 10] = [
        Key::Other,
        Key::Action,
        Key::Addr,
        Key::Size,
        Key::TimeUs,
        Key::Frames,
        Key::DeviceFree,
        Key::Name,
        Key::Filename,
        Key::Line,
    ];
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    Unknown,
}

impl Action {
    fn parse(s: &str) -> Action {
        match s {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "snapshot" => Action::Snapshot,
            "oom" => Action::Oom,
            _ => Action::Unknown,
        }
    }

    const ALL: [Action; 10] = [
        Action::Alloc,
        Action::FreeRequested,
        Action::FreeCompleted,
        Action::SegmentAlloc,
        Action::SegmentFree,
        Action::SegmentMap,
        Action::SegmentUnmap,
        Action::Snapshot,
        Action::Oom,
        Action::Unknown,
    ];
}

/// Per-node cache entries ([`Reader::cache`]): 0 until computed. A `str` node caches
/// `CACHED | key | action << 4` (what it means as a key and as an action) and, once it was
/// interned, `INTERNED | StrId << 8` — a million trace entries name the same few hundred
/// file and function strings, so each is validated and hashed once (measured: 6 % of a
/// 1M-entry snapshot's load). A list node caches its stack as `CACHED | (StackId + 1)`, or
/// `CACHED` alone for none.
const CACHED: u32 = 1 << 31;
/// A `str` node's interned id is cached (see [`CACHED`]).
const INTERNED: u32 = 1 << 30;
/// Interned ids that fit in the cache entry; larger ones are looked up each time.
const STR_ID_MASK: u32 = (1 << 22) - 1;
/// The key and action bits of a `str` node's entry.
const KEY_ACTION_MASK: u32 = 0xff;

/// Read an allocator snapshot pickle.
pub fn read(input: Input, _options: LoadOptions) -> Result<Recording, SourceError> {
    let compressed = input.compressed;
    // Parsed as it is read, through a small buffer: the file is never held whole.
    let hint = input.file_len.min(MAX_SNAPSHOT_BYTES) as usize;
    let mut reader = Counted {
        inner: input.reader.take(MAX_SNAPSHOT_BYTES + 1),
        read: 0,
    };
    let parsed = pickle::parse_from(&mut reader, hint);
    // The rest of the content (after STOP, or after a parse error) is read too, as when the
    // file was read whole first: it counts towards the size, and a read error wins.
    let drained = match &parsed {
        Err(pickle::ReadError::Io { .. }) => Ok(0),
        _ => io::copy(&mut reader, &mut io::sink()),
    };
    let content_bytes = reader.read;
    let pickle = match (parsed, drained) {
        (Err(pickle::ReadError::Io { offset, error }), _) => {
            return Err(SourceError {
                offset: Some(offset),
                kind: LoadErrorKind::Io(error),
            });
        }
        (_, Err(error)) => {
            return Err(SourceError {
                offset: Some(content_bytes),
                kind: LoadErrorKind::Io(error),
            });
        }
        _ if content_bytes > MAX_SNAPSHOT_BYTES => {
            return Err(SourceError::shape(
                None,
                format!("larger than {} GiB", MAX_SNAPSHOT_BYTES >> 30),
            ));
        }
        (Err(pickle::ReadError::Pickle(e)), _) => {
            return Err(SourceError {
                offset: Some(e.offset),
                kind: match e.kind {
                    pickle::PickleErrorKind::Truncated => LoadErrorKind::Truncated(e.message),
                    _ => LoadErrorKind::Shape(e.message),
                },
            });
        }
        (Ok(pickle), Ok(_)) => pickle,
    };
    // The replay needs only what was read from the pickle: its arena (hundreds of MB for a
    // million entries) is freed on a second thread meanwhile (measured: 10 ms of a 0.7 s
    // load), and joined before returning.
    let read = gather(&pickle)?;
    let freeing = std::thread::Builder::new()
        .name("vramscope-free".into())
        .spawn(move || drop(pickle));
    let mut rec = read.replay();
    if let Ok(handle) = freeing {
        let _ = handle.join();
    }

    rec.meta.compressed = compressed;
    rec.meta.content_bytes = content_bytes;
    Ok(rec)
}

/// A reader that counts the bytes it hands out.
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Builds the recording from the pickle's object graph.
struct Reader<'p> {
    p: &'p Pickle,
    rec: Recording,
    /// Per node (by [`NodeId::index`]): what a string means, or a list's stack; see
    /// [`CACHED`].
    cache: Vec<u32>,
    stack_by_content: FxHashMap<Vec<Frame>, StackId>,
    /// Reused buffer for building a stack before it is looked up.
    scratch: Vec<Frame>,
}

/// Map a decoded snapshot into a [`Recording`].
pub fn from_pickle(p: &Pickle) -> Result<Recording, SourceError> {
    Ok(gather(p)?.replay())
}

/// Everything the replay needs, read from the pickle.
struct Gathered {
    rec: Recording,
    state: Vec<Segment>,
    settings: BTreeMap<String, String>,
    per_device: Vec<(i32, Trace)>,
    annotations: Vec<OpSpan>,
    has_time: bool,
    any_entry: bool,
}

impl Gathered {
    fn replay(self) -> Recording {
        let Gathered {
            rec,
            state,
            settings,
            per_device,
            annotations,
            has_time,
            any_entry,
        } = self;
        let mut r = Replayer { rec };
        for (index, trace) in per_device {
            r.replay_device(index, &trace, &state, has_time);
        }
        r.rec.ops = annotations;
        r.rec.steps = steps_from(&r.rec);
        r.rec.allocator = Some(AllocatorState {
            time_ns: None,
            segments: state,
            settings,
        });
        r.finish_meta(has_time, any_entry);
        r.rec
    }
}

/// Replays the entries into the recording's events.
struct Replayer {
    rec: Recording,
}

/// Read what the replay needs from a decoded snapshot.
fn gather(p: &Pickle) -> Result<Gathered, SourceError> {
    let root = p.root();
    let (Some(segments), Some(traces)) = (p.get(root, "segments"), p.get(root, "device_traces"))
    else {
        return Err(SourceError::shape(
            None,
            "a pickle, but not a PyTorch allocator snapshot: no 'segments' and 'device_traces'",
        ));
    };
    let mut r = Reader {
        p,
        rec: Recording::empty(SourceFormat::TorchSnapshot, ""),
        cache: vec![0; p.node_count()],
        stack_by_content: FxHashMap::default(),
        scratch: Vec::new(),
    };
    let state = r.read_segments(segments);
    let settings = p
        .get(root, "allocator_settings")
        .map(|s| r.read_settings(s))
        .unwrap_or_default();
    let mut has_time = false;
    let mut any_entry = false;
    let mut per_device = Vec::new();
    for (index, list) in p.items(traces).iter().enumerate() {
        let items = p.items(*list);
        let mut trace = Trace {
            entries: Vec::with_capacity(items.len()),
            device_free: Vec::new(),
        };
        for &e in items {
            r.read_entry(e, &mut trace);
        }
        has_time |= trace.entries.iter().any(|e| e.has_time);
        any_entry |= !trace.entries.is_empty();
        per_device.push((index as i32, trace));
    }
    let annotations = p
        .get(root, "external_annotations")
        .map(|a| r.read_annotations(a))
        .unwrap_or_default();
    Ok(Gathered {
        rec: r.rec,
        state,
        settings,
        per_device,
        annotations,
        has_time,
        any_entry,
    })
}

impl Reader<'_> {
    fn str_of(&self, dict: NodeId, key: &str) -> Option<&str> {
        self.p.get(dict, key).and_then(|v| self.p.as_str(v))
    }

    fn u64_of(&self, dict: NodeId, key: &str) -> Option<u64> {
        self.p.get(dict, key).and_then(|v| self.p.as_u64(v))
    }

    /// Intern a frames list (shared lists in the pickle are interned once); 0 for none,
    /// else `StackId + 1`.
    fn stack(&mut self, frames: Option<NodeId>) -> u32 {
        let Some(frames) = frames else { return 0 };
        let cached = self.cache.get(frames.index()).copied().unwrap_or(0);
        if cached & CACHED != 0 {
            return cached & !CACHED;
        }
        let p = self.p;
        let mut list = std::mem::take(&mut self.scratch);
        list.clear();
        for &f in p.items(frames) {
            list.push(self.frame(f));
        }
        // Equal stacks in different list objects share one id.
        let id = if list.is_empty() {
            None
        } else if let Some(&id) = self.stack_by_content.get(list.as_slice()) {
            Some(id)
        } else {
            let id = StackId(self.rec.stacks.len() as u32);
            self.rec.stacks.push(list.clone());
            self.stack_by_content.insert(list.clone(), id);
            Some(id)
        };
        self.scratch = list;
        let encoded = id.map_or(0, |id| id.0 + 1);
        if let Some(slot) = self.cache.get_mut(frames.index()) {
            *slot = CACHED | encoded;
        }
        encoded
    }

    /// What string node `id` means as a trace-entry key and as an action.
    fn key(&mut self, id: NodeId) -> (Key, Action) {
        let cached = self.cache.get(id.index()).copied().unwrap_or(0);
        let code = if cached & CACHED != 0 {
            cached
        } else {
            let (key, action) = match self.p.as_str(id) {
                Some(s) => (Key::parse(s), Action::parse(s)),
                None => (Key::Other, Action::Unknown),
            };
            let code = CACHED | key as u32 | (action as u32) << 4;
            if let Some(slot) = self.cache.get_mut(id.index()) {
                *slot = code | (*slot & (INTERNED | STR_ID_MASK << 8));
            }
            code
        };
        let key = Key::ALL.get((code & 15) as usize).copied();
        let action = Action::ALL.get((code >> 4 & 15) as usize).copied();
        (key.unwrap_or(Key::Other), action.unwrap_or(Action::Unknown))
    }

    fn frame(&mut self, f: NodeId) -> Frame {
        let p = self.p;
        let (mut name, mut file, mut line) = (None, None, 0u32);
        for &(k, v) in p.entries(f) {
            match self.key(k).0 {
                Key::Name => name = self.interned(v),
                Key::Filename => file = self.interned(v),
                Key::Line => line = p.as_u64(v).unwrap_or(0).min(u64::from(u32::MAX)) as u32,
                _ => {}
            }
        }
        Frame {
            name: name.unwrap_or_else(|| self.rec.strings.intern("?")),
            file: file.unwrap_or_else(|| self.rec.strings.intern("??")),
            line,
        }
    }

    /// The interned id of string node `id` (`None` if it is not a string).
    fn interned(&mut self, id: NodeId) -> Option<StrId> {
        let cached = self.cache.get(id.index()).copied().unwrap_or(0);
        if cached & INTERNED != 0 {
            return Some(StrId(cached >> 8 & STR_ID_MASK));
        }
        let sid = self.rec.strings.intern(self.p.as_str(id)?);
        if sid.0 <= STR_ID_MASK
            && let Some(slot) = self.cache.get_mut(id.index())
        {
            *slot = (*slot & (CACHED | KEY_ACTION_MASK)) | INTERNED | sid.0 << 8;
        }
        Some(sid)
    }

    fn read_segments(&mut self, segments: NodeId) -> Vec<Segment> {
        let mut out = Vec::new();
        for &s in self.p.items(segments) {
            let device = self.u64_of(s, "device").unwrap_or(0) as i32;
            let device = self.rec.device_index(DeviceKey::cuda(device));
            let mut blocks = Vec::new();
            if let Some(list) = self.p.get(s, "blocks") {
                for &b in self.p.items(list) {
                    let state = match self.str_of(b, "state") {
                        Some("active_allocated") => BlockState::ActiveAllocated,
                        Some("active_pending_free") => BlockState::ActivePendingFree,
                        _ => BlockState::Inactive,
                    };
                    let frames = self.p.get(b, "frames");
                    let stack = self.stack(frames).checked_sub(1).map(StackId);
                    blocks.push(Block {
                        address: self.u64_of(b, "address").unwrap_or(0),
                        size_bytes: self.u64_of(b, "size").unwrap_or(0),
                        requested_size_bytes: self.u64_of(b, "requested_size").unwrap_or(0),
                        state,
                        stack,
                    });
                }
            }
            let pool = match self.str_of(s, "segment_type") {
                Some("large") => SegmentPool::Large,
                Some("small") => SegmentPool::Small,
                _ => SegmentPool::Other,
            };
            let address = self.u64_of(s, "address").unwrap_or(0);
            // Older snapshots lack some sizes; blocks give them.
            let total = self
                .u64_of(s, "total_size")
                .unwrap_or_else(|| blocks.iter().map(|b| b.size_bytes).sum());
            let allocated = self.u64_of(s, "allocated_size").unwrap_or_else(|| {
                blocks
                    .iter()
                    .filter(|b| b.state == BlockState::ActiveAllocated)
                    .map(|b| b.size_bytes)
                    .sum()
            });
            out.push(Segment {
                device,
                address,
                total_size_bytes: total,
                allocated_size_bytes: allocated,
                active_size_bytes: self.u64_of(s, "active_size").unwrap_or(allocated),
                requested_size_bytes: self.u64_of(s, "requested_size").unwrap_or(0),
                stream: self.u64_of(s, "stream").unwrap_or(0),
                pool,
                expandable: self
                    .p
                    .get(s, "is_expandable")
                    .and_then(|v| self.p.as_bool(v))
                    .unwrap_or(false),
                blocks,
            });
        }
        out
    }

    fn read_settings(&self, settings: NodeId) -> BTreeMap<String, String> {
        self.p
            .entries(settings)
            .iter()
            .filter_map(|&(k, v)| Some((self.p.as_str(k)?.to_owned(), display(self.p, v))))
            .collect()
    }

    /// One pass over the entry's keys (a million entries make repeated lookups costly;
    /// what each key string means is cached per string node).
    fn read_entry(&mut self, e: NodeId, trace: &mut Trace) {
        let p = self.p;
        let (mut action, mut addr, mut size, mut time_ns) = (Action::Unknown, None, 0, None);
        let (mut frames, mut device_free) = (None, None);
        for &(k, v) in p.entries(e) {
            match self.key(k).0 {
                Key::Action => {
                    action = match p.as_str(v) {
                        Some(_) => self.key(v).1,
                        None => Action::Unknown,
                    }
                }
                Key::Addr => addr = p.as_u64(v),
                Key::Size => size = p.as_u64(v).unwrap_or(0),
                Key::TimeUs => time_ns = p.as_i64(v).map(|us| us.saturating_mul(1000)),
                Key::Frames => frames = Some(v),
                Key::DeviceFree => device_free = p.as_u64(v),
                Key::Other | Key::Name | Key::Filename | Key::Line => {}
            }
        }
        if action == Action::Oom {
            trace.device_free.push(device_free);
        }
        let stack = self.stack(frames);
        trace.entries.push(Entry {
            addr: addr.unwrap_or(0),
            size,
            time_ns: time_ns.unwrap_or(0),
            stack,
            action,
            has_addr: addr.is_some(),
            has_time: time_ns.is_some(),
        });
    }

    fn read_annotations(&mut self, list: NodeId) -> Vec<OpSpan> {
        // START/END pairs per (device, name), in order.
        let mut open: FxHashMap<(i64, String), Vec<i64>> = FxHashMap::default();
        let mut spans = Vec::new();
        let items: Vec<NodeId> = self.p.items(list).to_vec();
        for a in items {
            let (Some(stage), Some(name)) = (self.str_of(a, "stage"), self.str_of(a, "name"))
            else {
                continue;
            };
            let (stage, name) = (stage.to_owned(), name.to_owned());
            let device = self
                .p
                .get(a, "device")
                .and_then(|d| self.p.as_i64(d))
                .unwrap_or(0);
            let Some(t) = self.p.get(a, "time_us").and_then(|t| self.p.as_i64(t)) else {
                continue;
            };
            let t = t.saturating_mul(1000);
            if stage == "START" {
                open.entry((device, name)).or_default().push(t);
            } else if let Some(start) = open.get_mut(&(device, name.clone())).and_then(Vec::pop) {
                let thread = self
                    .rec
                    .thread_index("annotations", &format!("cuda:{device}"));
                let name = self.rec.strings.intern(&name);
                spans.push(OpSpan {
                    name,
                    category: OpCategory::UserAnnotation,
                    thread,
                    start_ns: start,
                    end_ns: t,
                });
            } else {
                self.rec
                    .diagnostics
                    .note("annotation ends without a start skipped");
            }
        }
        spans.sort_by_key(|s| (s.start_ns, std::cmp::Reverse(s.end_ns)));
        spans
    }
}

impl Replayer {
    /// Replay one device: synthesize the state before the surviving history, then the history.
    fn replay_device(&mut self, index: i32, trace: &Trace, state: &[Segment], has_time: bool) {
        let entries = &trace.entries[..];
        let mut device_free = trace.device_free.iter().copied();
        let device = self.rec.device_index(DeviceKey::cuda(index));
        let thread = self.rec.thread_index("allocator", &format!("cuda:{index}"));
        // The state at snapshot time.
        let mut live: BTreeMap<u64, (u64, Option<StackId>)> = BTreeMap::new();
        let mut pieces: BTreeMap<u64, u64> = BTreeMap::new();
        for s in state.iter().filter(|s| s.device == device) {
            pieces.insert(s.address, s.total_size_bytes);
            for b in s.blocks.iter().filter(|b| b.state != BlockState::Inactive) {
                live.insert(b.address, (b.size_bytes, b.stack));
            }
        }
        let final_allocated: i64 = live.values().map(|&(size, _)| size as i64).sum();
        // Trace entries carry the size the caller asked for; the allocator's block may be
        // larger (rounding, unsplit remainders). A block still live at the snapshot takes its
        // true size from the snapshot, so the replay ends exactly in the snapshot's state.
        let mut survivor_size: Vec<Option<u64>> = vec![None; entries.len()];
        let mut touched_later: rustc_hash::FxHashSet<u64> = Default::default();
        for (i, e) in entries.iter().enumerate().rev() {
            let Some(addr) = e.addr() else { continue };
            match e.action {
                Action::Alloc if touched_later.insert(addr) => {
                    survivor_size[i] = live.get(&addr).map(|&(size, _)| size);
                }
                Action::FreeCompleted => {
                    touched_later.insert(addr);
                }
                _ => {}
            }
        }
        let final_reserved: i64 = pieces.values().map(|&s| s as i64).sum();
        // Walk back to the first surviving entry.
        for e in entries.iter().rev() {
            match (e.action, e.addr()) {
                (Action::Alloc, Some(addr)) if live.remove(&addr).is_none() => {
                    self.rec
                        .diagnostics
                        .note("alloc entries whose block is not in the later state");
                }
                (Action::FreeCompleted, Some(addr)) => {
                    live.insert(addr, (e.size, e.stack()));
                }
                (Action::SegmentAlloc | Action::SegmentMap, Some(addr))
                    if !unreserve(&mut pieces, addr, e.size) =>
                {
                    self.rec
                        .diagnostics
                        .note("segment entries not found in the later segments");
                }
                (Action::SegmentFree | Action::SegmentUnmap, Some(addr)) => {
                    pieces.insert(addr, e.size);
                }
                _ => {}
            }
        }
        let first_time = entries.iter().find_map(Entry::time_ns);
        let start = match (has_time, first_time) {
            (true, Some(t)) => t - 1,
            _ => -1,
        };
        let mut allocated: i64 = 0;
        let mut reserved_now: i64 = 0;
        let push = |rec: &mut Recording,
                    kind,
                    bytes: i64,
                    addr,
                    time_ns,
                    stack,
                    allocated: i64,
                    reserved: i64| {
            rec.mem_events.push(MemEvent {
                time_ns,
                bytes,
                addr,
                total_allocated_bytes: Some(allocated),
                total_reserved_bytes: Some(reserved),
                device,
                thread,
                kind,
                stack,
            });
        };
        for (&addr, &size) in &pieces {
            reserved_now += size as i64;
            push(
                &mut self.rec,
                MemEventKind::SegmentAlloc,
                size as i64,
                Some(addr),
                start,
                None,
                allocated,
                reserved_now,
            );
        }
        self.rec
            .mem_events
            .reserve(pieces.len() + live.len() + entries.len());
        let pre_existing = live.len() as u64;
        let mut current: FxHashMap<u64, u64> = FxHashMap::default();
        for (&addr, &(size, stack)) in &live {
            current.insert(addr, size);
            allocated += size as i64;
            push(
                &mut self.rec,
                MemEventKind::Alloc,
                size as i64,
                Some(addr),
                start,
                stack,
                allocated,
                reserved_now,
            );
        }
        self.rec
            .diagnostics
            .note_n(PRE_EXISTING_BLOCKS, pre_existing);
        let mut last_time = start;
        for (i, e) in entries.iter().enumerate() {
            // Old snapshots have no times: the entry's position is its time.
            let time_ns = if has_time {
                e.time_ns().unwrap_or(last_time)
            } else {
                i as i64
            };
            last_time = time_ns;
            let mut size = e.size.min(i64::MAX as u64) as i64;
            let kind = match e.action {
                Action::Alloc => {
                    if let Some(true_size) = survivor_size[i] {
                        size = true_size.min(i64::MAX as u64) as i64;
                    }
                    if let Some(addr) = e.addr() {
                        current.insert(addr, size as u64);
                    }
                    allocated += size;
                    MemEventKind::Alloc
                }
                Action::FreeCompleted => {
                    // A free gives back what its allocation took.
                    if let Some(taken) = e.addr().and_then(|a| current.remove(&a)) {
                        size = taken.min(i64::MAX as u64) as i64;
                    }
                    allocated -= size;
                    MemEventKind::Free
                }
                Action::SegmentAlloc | Action::SegmentMap => {
                    reserved_now += size;
                    MemEventKind::SegmentAlloc
                }
                Action::SegmentFree | Action::SegmentUnmap => {
                    reserved_now -= size;
                    MemEventKind::SegmentFree
                }
                Action::Oom => {
                    self.rec.oom_details.push(OomDetail {
                        event: self.rec.mem_events.len() as u32,
                        device_free_bytes: device_free.next().flatten(),
                    });
                    MemEventKind::OutOfMemory
                }
                Action::FreeRequested | Action::Snapshot => continue,
                Action::Unknown => {
                    self.rec
                        .diagnostics
                        .note("trace entries with an unknown action skipped");
                    continue;
                }
            };
            let bytes = match kind {
                MemEventKind::Free | MemEventKind::SegmentFree => -size,
                _ => size,
            };
            push(
                &mut self.rec,
                kind,
                bytes,
                e.addr(),
                time_ns,
                e.stack(),
                allocated,
                reserved_now,
            );
        }
        if (allocated, reserved_now) != (final_allocated, final_reserved) {
            self.rec.diagnostics.note(&format!(
                "cuda:{index}: replay ends at {allocated} allocated / {reserved_now} reserved bytes, the snapshot's segments hold {final_allocated} / {final_reserved}"
            ));
        }
    }

    fn finish_meta(&mut self, has_time: bool, any_entry: bool) {
        let times = self
            .rec
            .mem_events
            .iter()
            .map(|e| e.time_ns)
            .chain(self.rec.ops.iter().flat_map(|o| [o.start_ns, o.end_ns]));
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for t in times {
            lo = lo.min(t);
            hi = hi.max(t);
        }
        if lo > hi {
            (lo, hi) = (0, 0);
        }
        self.rec.meta.start_ns = lo;
        self.rec.meta.end_ns = hi;
        self.rec.meta.events_read = self.rec.mem_events.len() as u64;
        self.rec.meta.era = match (any_entry, has_time) {
            (false, _) => "segments only (no allocation history recorded)".to_owned(),
            (true, true) => "torch ≥ 2.1 (trace entries with time_us)".to_owned(),
            (true, false) => {
                "torch 2.0–2.1 (no time_us: event order stands in for time)".to_owned()
            }
        };
        if let Some(s) = &self.rec.allocator
            && s.segments.iter().any(|s| s.expandable)
        {
            self.rec.meta.era.push_str(", expandable segments");
        }
    }
}

/// Walking back over a reservation of `size` bytes at `addr`: the range did not exist before.
/// Expandable segments map pages inside a larger range, so a partial range shrinks the
/// range that contains it. Returns false when no range holds `addr`.
fn unreserve(pieces: &mut BTreeMap<u64, u64>, addr: u64, size: u64) -> bool {
    let Some((&base, &len)) = pieces.range(..=addr).next_back() else {
        return false;
    };
    if addr >= base.saturating_add(len) {
        return false;
    }
    pieces.remove(&base);
    let end = base.saturating_add(len);
    if addr > base {
        pieces.insert(base, addr - base);
    }
    let tail = addr.saturating_add(size);
    if tail < end {
        pieces.insert(tail, end - tail);
    }
    true
}

/// A setting's value as text: scalars as Python prints them, containers as `{…}`/`[…]`.
/// The memo lets a hostile pickle nest a container in itself, or share one many times
/// over (exponential when printed): depth and length are bounded, and what is cut shows
/// as `…`.
fn display(p: &Pickle, v: NodeId) -> String {
    let mut out = String::new();
    display_into(p, v, 0, &mut out);
    out
}

/// Containers printed inside one another, at most.
const DISPLAY_DEPTH: usize = 8;
/// Characters of one setting's text, about.
const DISPLAY_CHARS: usize = 4096;

fn display_into(p: &Pickle, v: NodeId, depth: usize, out: &mut String) {
    if out.len() >= DISPLAY_CHARS {
        if !out.ends_with('…') {
            out.push('…');
        }
        return;
    }
    if let Some(s) = p.as_str(v) {
        let room = DISPLAY_CHARS.saturating_sub(out.len());
        match s.char_indices().nth(room) {
            Some((cut, _)) => {
                out.push_str(&s[..cut]);
                out.push('…');
            }
            None => out.push_str(s),
        }
        return;
    }
    if let Some(b) = p.as_bool(v) {
        out.push_str(if b { "True" } else { "False" });
        return;
    }
    if let Some(i) = p.as_i64(v) {
        out.push_str(&i.to_string());
        return;
    }
    if let Some(f) = p.as_f64(v) {
        out.push_str(&f.to_string());
        return;
    }
    let entries = p.entries(v);
    let dict = !entries.is_empty();
    out.push(if dict { '{' } else { '[' });
    if depth >= DISPLAY_DEPTH {
        out.push('…');
    } else if dict {
        for (n, &(k, v)) in entries.iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            display_into(p, k, depth + 1, out);
            out.push_str(": ");
            display_into(p, v, depth + 1, out);
            if out.len() >= DISPLAY_CHARS {
                break;
            }
        }
    } else {
        for (n, &i) in p.items(v).iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            display_into(p, i, depth + 1, out);
            if out.len() >= DISPLAY_CHARS {
                break;
            }
        }
    }
    out.push(if dict { '}' } else { ']' });
}

/// Steps from annotations: repeated names (`ProfilerStep#N`, `step`, …).
fn steps_from(rec: &Recording) -> Vec<StepMarker> {
    rec.ops
        .iter()
        .filter_map(|op| StepMarker::from_span(rec.strings.get(op.name), op.start_ns, op.end_ns))
        .collect()
}

/// The device index a segment belongs to.
pub fn segment_device(rec: &Recording, s: &Segment) -> Option<DeviceIdx> {
    rec.devices.get(s.device as usize).map(|_| s.device)
}
