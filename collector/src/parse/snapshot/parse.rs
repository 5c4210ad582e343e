//! Reading the pickle's object graph: the trace entries per device with their interned
//! stacks, and the annotations, gathered into what the replay needs. The segment state and
//! settings are read in [`super::segments`].

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::entry::{Action, Entry, Key, Trace};
use crate::model::{Frame, OpCategory, OpSpan, Recording, Segment, SourceFormat, StackId, StrId};
use crate::parse::SourceError;
use crate::parse::pickle::{NodeId, Pickle};

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

/// Builds the recording from the pickle's object graph.
pub(super) struct Reader<'p> {
    pub(super) p: &'p Pickle,
    pub(super) rec: Recording,
    /// Per node (by [`NodeId::index`]): what a string means, or a list's stack; see
    /// [`CACHED`].
    cache: Vec<u32>,
    stack_by_content: FxHashMap<Vec<Frame>, StackId>,
    /// Reused buffer for building a stack before it is looked up.
    scratch: Vec<Frame>,
}

/// Everything the replay needs, read from the pickle.
pub(super) struct Gathered {
    pub(super) rec: Recording,
    pub(super) state: Vec<Segment>,
    pub(super) settings: BTreeMap<String, String>,
    pub(super) per_device: Vec<(i32, Trace)>,
    pub(super) annotations: Vec<OpSpan>,
    pub(super) has_time: bool,
    pub(super) any_entry: bool,
}

/// Read what the replay needs from a decoded snapshot.
pub(super) fn gather(p: &Pickle) -> Result<Gathered, SourceError> {
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
            notes: Vec::new(),
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
    pub(super) fn str_of(&self, dict: NodeId, key: &str) -> Option<&str> {
        self.p.get(dict, key).and_then(|v| self.p.as_str(v))
    }

    pub(super) fn u64_of(&self, dict: NodeId, key: &str) -> Option<u64> {
        self.p.get(dict, key).and_then(|v| self.p.as_u64(v))
    }

    /// Intern a frames list (shared lists in the pickle are interned once); 0 for none,
    /// else `StackId + 1`.
    pub(super) fn stack(&mut self, frames: Option<NodeId>) -> u32 {
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
}

impl Reader<'_> {
    /// One pass over the entry's keys (a million entries make repeated lookups costly;
    /// what each key string means is cached per string node).
    fn read_entry(&mut self, e: NodeId, trace: &mut Trace) {
        let p = self.p;
        let (mut action, mut addr, mut size, mut time_ns) = (Action::Unknown, None, 0, None);
        let (mut frames, mut device_free, mut bad_size) = (None, None, false);
        let mut metadata = None;
        for &(k, v) in p.entries(e) {
            match self.key(k).0 {
                Key::Action => {
                    action = match p.as_str(v) {
                        Some(_) => self.key(v).1,
                        None => Action::Unknown,
                    }
                }
                Key::Addr => addr = p.as_u64(v),
                Key::Size => match p.as_u64(v) {
                    Some(bytes) => size = bytes,
                    None => bad_size = true,
                },
                Key::TimeUs => time_ns = p.as_i64(v).map(|us| us.saturating_mul(1000)),
                Key::Frames => frames = Some(v),
                Key::DeviceFree => device_free = p.as_u64(v),
                Key::UserMetadata => metadata = Some(v),
                Key::Other | Key::Name | Key::Filename | Key::Line => {}
            }
        }
        if bad_size {
            // A size that is no unsigned int (corrupt or hand-edited): replaying the entry
            // with a guess would make every total after it wrong.
            self.rec
                .diagnostics
                .note("trace entries whose size is not a non-negative integer skipped");
            return;
        }
        if action == Action::Oom {
            trace.device_free.push(device_free);
        }
        // Most entries carry '' (the default): only texts are kept.
        if let Some(text) = metadata
            .filter(|&v| self.p.as_str(v).is_some_and(|t| !t.is_empty()))
            .and_then(|v| self.interned(v))
        {
            trace.notes.push((time_ns.unwrap_or(0), text));
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
                let thread = self.rec.thread_index(
                    crate::analysis::markers::ANNOTATION_THREAD,
                    &format!("cuda:{device}"),
                );
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
