//! What colours a band: its stack (the first user frame of its allocation stack), the op
//! running when it was allocated, or its memory category — one key per band and a name per
//! key, so a view picks a colour per key and a legend names them.

use crate::analysis::categories::allocation_categories;
use crate::analysis::live::{frame_label, is_library_file};
use crate::model::{Frame, Recording};
use crate::timeline::{DeviceTimeline, Timeline};

/// What a band's colour follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ColorBy {
    /// The first user frame of the allocation's stack (the op, where it has none).
    #[default]
    Stack,
    /// The op running when it was allocated.
    Op,
    /// Its memory category.
    Category,
}

impl ColorBy {
    /// Every choice, for selectors.
    pub const ALL: [ColorBy; 3] = [ColorBy::Stack, ColorBy::Op, ColorBy::Category];

    /// Its label.
    pub fn as_str(self) -> &'static str {
        match self {
            ColorBy::Stack => "stack",
            ColorBy::Op => "op",
            ColorBy::Category => "category",
        }
    }

    /// Why this colouring tells no bands apart on `rec`, where it cannot (issue 37: "by
    /// stack" on a trace without stacks drew every band in one colour): `None` when it can.
    pub fn unavailable(self, rec: &Recording) -> Option<&'static str> {
        match self {
            ColorBy::Stack if rec.stacks.is_empty() => {
                Some("this source records no call stacks (profile with with_stack=True)")
            }
            ColorBy::Op if rec.ops.is_empty() => Some(NO_OPS),
            _ => None,
        }
    }

    /// The first colouring that tells bands apart on `rec` (category always does).
    pub fn first_available(rec: &Recording) -> ColorBy {
        ColorBy::ALL
            .into_iter()
            .find(|c| c.unavailable(rec).is_none())
            .unwrap_or(ColorBy::Category)
    }
}

/// What a source without op spans (an allocator snapshot) says where an op would be named.
pub const NO_OPS: &str = "this source records no ops";

/// Each band's key (parallel to the device's allocations) and each key's name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BandKeys {
    /// Band → key.
    pub key: Vec<u32>,
    /// Key → name.
    pub names: Vec<String>,
    /// Key → bytes of all its bands (for a legend's order).
    pub bytes: Vec<i64>,
}

/// The op running when allocation `i` was made, by name ("(outside any op)"; "(no ops
/// recorded)" for a source without ops, where every allocation is outside any op).
pub fn op_of(rec: &Recording, timeline: &Timeline, d: &DeviceTimeline, i: usize) -> String {
    if d.allocations.get(i).is_none() {
        return String::new();
    }
    if rec.ops.is_empty() {
        return "(no ops recorded)".to_owned();
    }
    op_running(rec, timeline, d, i).map_or("(outside any op)".to_owned(), str::to_owned)
}

/// The op running when allocation `i` was made, where one was.
pub fn op_running<'r>(
    rec: &'r Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
    i: usize,
) -> Option<&'r str> {
    let a = d.allocations.get(i)?;
    let op = timeline.ops.running_at(a.thread, a.alloc_ns)?;
    rec.ops.get(op as usize).map(|o| rec.op_name(o))
}

/// The frame a stack is named by: its first frame in user code, else its first frame with
/// a file; `None` for an empty stack.
pub fn site_frame(rec: &Recording, frames: &[Frame]) -> Option<String> {
    let useful = |f: &&Frame| {
        let file = rec.strings.get(f.file);
        file != "??" && !file.is_empty()
    };
    frames
        .iter()
        .filter(useful)
        .find(|f| !is_library_file(rec.strings.get(f.file)))
        .or_else(|| frames.iter().find(useful))
        .or(frames.first())
        .map(|f| frame_label(rec, f))
}

/// Every band's key `by`.
pub fn band_keys(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
    by: ColorBy,
) -> BandKeys {
    let mut keys = BandKeys::default();
    let mut index: rustc_hash::FxHashMap<String, u32> = Default::default();
    let categories = match by {
        ColorBy::Category => allocation_categories(rec, timeline, d),
        _ => Vec::new(),
    };
    let mut by_stack: rustc_hash::FxHashMap<u32, String> = Default::default();
    for (i, a) in d.allocations.iter().enumerate() {
        let name = match by {
            ColorBy::Category => categories
                .get(i)
                .map_or("unknown", |c| c.as_str())
                .to_owned(),
            ColorBy::Op => op_of(rec, timeline, d, i),
            ColorBy::Stack => {
                let stack = rec
                    .mem_events
                    .get(a.alloc_event as usize)
                    .and_then(|e| e.stack);
                match stack {
                    Some(s) => by_stack
                        .entry(s.index())
                        .or_insert_with(|| {
                            site_frame(rec, rec.stack(Some(s)))
                                .unwrap_or_else(|| "(no stack recorded)".to_owned())
                        })
                        .clone(),
                    None => op_of(rec, timeline, d, i),
                }
            }
        };
        let next = keys.names.len() as u32;
        let k = *index.entry(name).or_insert_with_key(|name| {
            keys.names.push(name.clone());
            keys.bytes.push(0);
            next
        });
        if let Some(b) = keys.bytes.get_mut(k as usize) {
            *b += a.bytes;
        }
        keys.key.push(k);
    }
    keys
}
