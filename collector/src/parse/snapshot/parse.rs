//! Reading the pickle's object graph: the trace entries per device with their interned
//! stacks, and the annotations, gathered into what the replay needs. The segment state and
//! settings are read in [`super::segments`].

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::budget::{MIN_RECORD_BYTES, sizes_in_range};
use super::entry::{Action, Entry, Key, Trace};
use super::fold::{CACHED, Decoded, EntryFolder, Extra, decode, key_of};
use super::frames::{FRAME_TAG, FoldedStacks};
use crate::model::{Frame, OpCategory, OpSpan, Recording, Segment, SourceFormat, StackId, StrId};
use crate::parse::SourceError;
use crate::parse::pickle::{FoldValue, NodeId, Pickle};

/// Builds the recording from the pickle's object graph.
pub(super) struct Reader<'p> {
    pub(super) p: &'p Pickle,
    pub(super) rec: Recording,
    /// Per node (by [`NodeId::index`]): what a string means as a key; see [`CACHED`].
    keys: Vec<u32>,
    /// The interned id of each string node met (a million trace entries name the same few
    /// hundred file and function strings: each is validated and hashed once).
    strs: FxHashMap<u32, StrId>,
    /// The stack of each arena list met (`StackId + 1`, or 0 for none).
    lists: FxHashMap<u32, u32>,
    /// The frames and stacks folded as the pickle was read, and per folded stack its
    /// `CACHED | (StackId + 1)` once met (0 before).
    folded: FoldedStacks,
    folded_ids: Vec<u32>,
    stack_by_content: FxHashMap<Vec<Frame>, StackId>,
    /// Reused buffer for building a stack before it is looked up.
    scratch: Vec<Frame>,
    /// Records (segments, blocks, trace entries, annotations) still to be taken from lists
    /// ([`MIN_RECORD_BYTES`]).
    pub(super) records_left: u64,
    /// The pickle's size, for the error once the budget is spent.
    pub(super) pickle_bytes: u64,
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

/// Read what the replay needs from a decoded snapshot and the entries folded while it was
/// parsed.
pub(super) fn gather(p: &Pickle, folder: EntryFolder) -> Result<Gathered, SourceError> {
    let root = p.root();
    let (Some(segments), Some(traces)) = (p.get(root, "segments"), p.get(root, "device_traces"))
    else {
        return Err(SourceError::shape(
            None,
            "a pickle, but not a PyTorch allocator snapshot: no 'segments' and 'device_traces'",
        ));
    };
    let EntryFolder {
        cache: keys,
        stacks,
        entries: mut folded,
        extras,
    } = folder;
    let mut r = Reader {
        p,
        rec: Recording::empty(SourceFormat::TorchSnapshot, ""),
        keys,
        strs: FxHashMap::default(),
        lists: FxHashMap::default(),
        folded_ids: vec![0; stacks.stack_count()],
        folded: stacks,
        stack_by_content: FxHashMap::default(),
        scratch: Vec::new(),
        records_left: p.end_offset / MIN_RECORD_BYTES,
        pickle_bytes: p.end_offset,
    };
    let state = r.read_segments(segments)?;
    let settings = p
        .get(root, "allocator_settings")
        .map(|s| r.read_settings(s))
        .unwrap_or_default();
    let lists = p.items(traces);
    // The usual snapshot: one list holds every folded entry, in order. It takes them
    // without a copy (32 bytes an entry of fresh memory saved).
    let sole = lists
        .iter()
        .position(|&l| holds_all_in_order(p, l, folded.len()));
    let mut has_time = false;
    let mut any_entry = false;
    let mut per_device = Vec::new();
    for (index, &list) in lists.iter().enumerate() {
        let trace = if sole == Some(index) {
            let mut trace = Trace {
                entries: std::mem::take(&mut folded),
                ..Trace::default()
            };
            r.finish_in_place(&mut trace, &extras);
            trace
        } else {
            r.read_trace(list, &folded, &extras)?
        };
        has_time |= trace.entries.iter().any(|e| e.has_time);
        any_entry |= !trace.entries.is_empty();
        per_device.push((index as i32, trace));
    }
    sizes_in_range(&per_device, &state)?;
    let annotations = p
        .get(root, "external_annotations")
        .map(|a| r.read_annotations(a))
        .transpose()?
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

/// Whether `list`'s items are the folded entries `0..count`, in order.
fn holds_all_in_order(p: &Pickle, list: NodeId, count: usize) -> bool {
    let items = p.items(list);
    count > 0
        && items.len() == count
        && (items.iter().enumerate()).all(|(i, &e)| p.folded(e) == Some(i as u32))
}

impl Reader<'_> {
    pub(super) fn str_of(&self, dict: NodeId, key: &str) -> Option<&str> {
        self.p.get(dict, key).and_then(|v| self.p.as_str(v))
    }

    pub(super) fn u64_of(&self, dict: NodeId, key: &str) -> Option<u64> {
        self.p.get(dict, key).and_then(|v| self.p.as_u64(v))
    }

    /// Intern a frames list (shared lists in the pickle, and folded stacks, are interned
    /// once); 0 for none, else `StackId + 1`.
    pub(super) fn stack(&mut self, frames: Option<NodeId>) -> u32 {
        let Some(frames) = frames else { return 0 };
        let p = self.p;
        if let Some(index) = p.folded_list(frames) {
            return self.folded_stack(index);
        }
        if let Some(&encoded) = self.lists.get(&(frames.index() as u32)) {
            return encoded;
        }
        let mut list = std::mem::take(&mut self.scratch);
        list.clear();
        for &f in p.items(frames) {
            list.push(self.frame(f));
        }
        let encoded = self.intern_stack(list);
        if self.lists.try_reserve(1).is_ok() {
            self.lists.insert(frames.index() as u32, encoded);
        }
        encoded
    }

    /// [`Reader::stack`] of a folded stack: its frames met in the order of the list's.
    fn folded_stack(&mut self, index: u32) -> u32 {
        let cached = self.folded_ids.get(index as usize).copied().unwrap_or(0);
        if cached & CACHED != 0 {
            return cached & !CACHED;
        }
        let mut list = std::mem::take(&mut self.scratch);
        list.clear();
        for i in 0..self.folded.frames_of(index).len() {
            let frame = self.folded.frames_of(index).get(i).copied();
            if let Some(frame) = frame.and_then(|f| self.folded_frame(f)) {
                list.push(frame);
            }
        }
        let encoded = self.intern_stack(list);
        if let Some(slot) = self.folded_ids.get_mut(index as usize) {
            *slot = CACHED | encoded;
        }
        encoded
    }

    /// A folded frame, its name interned before its file (the order of the dict's keys).
    fn folded_frame(&mut self, index: u32) -> Option<Frame> {
        let f = *self.folded.frames.get(index as usize)?;
        Some(Frame {
            name: self.interned(f.name)?,
            file: self.interned(f.file)?,
            line: f.line,
        })
    }

    /// `StackId + 1` of the stack `list` holds (0 when empty), which is kept as the
    /// scratch buffer.
    fn intern_stack(&mut self, list: Vec<Frame>) -> u32 {
        // Equal stacks in different list objects share one id.
        let id = if list.is_empty() {
            None
        } else if let Some(&id) = self.stack_by_content.get(list.as_slice()) {
            Some(id)
        } else {
            let id = StackId::new(self.rec.stacks.len() as u32);
            self.rec.stacks.push(list.clone());
            self.stack_by_content.insert(list.clone(), id);
            Some(id)
        };
        self.scratch = list;
        id.map_or(0, |id| id.index() + 1)
    }

    fn frame(&mut self, f: NodeId) -> Frame {
        let p = self.p;
        let folded = p.folded(f).filter(|&i| i & FRAME_TAG != 0);
        if let Some(frame) = folded.and_then(|i| self.folded_frame(i & !FRAME_TAG)) {
            return frame;
        }
        let (mut name, mut file, mut line) = (None, None, 0u32);
        for &(k, v) in p.entries(f) {
            match key_of(&mut self.keys, p, k).0 {
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
        if let Some(&sid) = self.strs.get(&(id.index() as u32)) {
            return Some(sid);
        }
        let sid = self.rec.strings.intern(self.p.as_str(id)?);
        if self.strs.try_reserve(1).is_ok() {
            self.strs.insert(id.index() as u32, sid);
        }
        Some(sid)
    }
}

impl Reader<'_> {
    /// What needs the whole snapshot, for an entry in a device's trace: its size checked
    /// (a size that is no unsigned int, corrupt or hand-edited, skips the entry: replaying
    /// it with a guess would make every total after it wrong), an `oom`'s free memory, a
    /// metadata note, its stack interned. False when the entry is skipped.
    fn finish(&mut self, d: &mut Decoded, trace: &mut Trace, index: usize) -> bool {
        if d.extra.bad_size {
            self.rec
                .diagnostics
                .note("trace entries whose size is not a non-negative integer skipped");
            return false;
        }
        if d.entry.action == Action::Oom {
            trace.device_free.push(d.extra.device_free);
        }
        if d.extra.stream != 0 {
            trace.streams.push((index as u32, d.extra.stream));
        }
        if let Some(text) = d.extra.metadata.and_then(|v| self.interned(v)) {
            trace.notes.push((d.entry.time_ns().unwrap_or(0), text));
        }
        let frames = d.entry.stack.checked_sub(1).map(NodeId::from_index);
        d.entry.stack = self.stack(frames);
        true
    }

    /// A device's trace from its list: each folded entry copied, any other item read from
    /// the arena.
    fn read_trace(
        &mut self,
        list: NodeId,
        folded: &[Entry],
        extras: &FxHashMap<u32, Extra>,
    ) -> Result<Trace, SourceError> {
        let p = self.p;
        let items = p.items(list);
        let mut trace = Trace::default();
        self.take_records(&mut trace.entries, items.len(), "trace entries")?;
        for &e in items {
            let decoded = match p.folded(e) {
                Some(i) => folded.get(i as usize).map(|&entry| Decoded {
                    entry,
                    extra: extras.get(&i).copied().unwrap_or_default(),
                    is_entry: true,
                }),
                None => {
                    let pairs = p.entries(e).iter().map(|&(k, v)| (k, FoldValue::Node(v)));
                    Some(decode(&mut self.keys, p, pairs))
                }
            };
            let index = trace.entries.len();
            if let Some(mut d) = decoded
                && self.finish(&mut d, &mut trace, index)
            {
                trace.entries.push(d.entry);
            }
        }
        Ok(trace)
    }

    /// [`Reader::finish`] over `trace.entries` (the folded entries `0..`), in place.
    fn finish_in_place(&mut self, trace: &mut Trace, extras: &FxHashMap<u32, Extra>) {
        let mut entries = std::mem::take(&mut trace.entries);
        let mut kept = 0;
        for i in 0..entries.len() {
            let Some(&entry) = entries.get(i) else { break };
            let extra = extras.get(&(i as u32)).copied().unwrap_or_default();
            let mut d = Decoded {
                entry,
                extra,
                is_entry: true,
            };
            if self.finish(&mut d, trace, kept)
                && let Some(slot) = entries.get_mut(kept)
            {
                *slot = d.entry;
                kept += 1;
            }
        }
        entries.truncate(kept);
        trace.entries = entries;
    }

    fn read_annotations(&mut self, list: NodeId) -> Result<Vec<OpSpan>, SourceError> {
        // START/END pairs per (device, name), in order.
        let mut open: FxHashMap<(i64, String), Vec<i64>> = FxHashMap::default();
        let mut spans = Vec::new();
        let items: Vec<NodeId> = self.p.items(list).to_vec();
        self.take_records(&mut spans, items.len() / 2, "annotations")?;
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
        Ok(spans)
    }
}
