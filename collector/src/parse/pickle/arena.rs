//! The arena a pickle's values live in: one 16-byte slot per value, text and bytes pooled,
//! container elements in shared flat arrays (see the module docs).

use super::{Node, NodeId};

/// A container's elements: the first `len` of the `cap` slots reserved at `start` of its
/// flat array ([`Pickle::items`] or [`Pickle::pairs`]). Reserved ranges never overlap;
/// slots past `len` hold a filler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Seq {
    pub(super) start: u32,
    pub(super) len: u32,
    pub(super) cap: u32,
}

impl Seq {
    pub(super) fn range(self) -> std::ops::Range<usize> {
        let start = self.start as usize;
        start..start + self.len as usize
    }
}

/// One value in the arena: 16 bytes, no heap allocation of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Slot {
    None,
    Bool(bool),
    Int(i64),
    /// Index into [`Pickle::bigints`].
    BigInt(u32),
    Float(f64),
    /// `text[start..start + len]`.
    Str {
        start: u64,
        len: u32,
    },
    /// A `str` of 4 GiB or more: index into [`Pickle::long`], a range of `text`.
    LongStr(u32),
    /// `blobs[start..start + len]`.
    Bytes {
        start: u64,
        len: u32,
    },
    /// A `bytes` of 4 GiB or more: index into [`Pickle::long`], a range of `blobs`.
    LongBytes(u32),
    List(Seq),
    Tuple(Seq),
    Set(Seq),
    Dict(Seq),
    /// A dict taken over by the [`super::Fold`] as it was completed: the folder's index.
    Folded(u32),
    /// A list taken over by the [`super::Fold`] as it was filled: the folder's index.
    FoldedList(u32),
}

const _: () = assert!(std::mem::size_of::<Slot>() == 16);

impl Slot {
    pub(super) fn type_name(self) -> &'static str {
        match self {
            Slot::None => "None",
            Slot::Bool(_) => "bool",
            Slot::Int(_) | Slot::BigInt(_) => "int",
            Slot::Float(_) => "float",
            Slot::Str { .. } | Slot::LongStr(_) => "str",
            Slot::Bytes { .. } | Slot::LongBytes(_) => "bytes",
            Slot::List(_) | Slot::FoldedList(_) => "list",
            Slot::Tuple(_) => "tuple",
            Slot::Dict(_) | Slot::Folded(_) => "dict",
            Slot::Set(_) => "set",
        }
    }
}

/// A parsed pickle: every value in one arena, and the value the pickle returns.
#[derive(Clone, Debug)]
pub struct Pickle {
    /// Where the pickle ends: the offset just past its `STOP` opcode (Python's
    /// `pickle.load` stops there too, and leaves what follows unread).
    pub end_offset: u64,
    pub(super) nodes: Vec<Slot>,
    /// The elements of every list, tuple and set.
    pub(super) items: Vec<NodeId>,
    /// The key/value pairs of every dict.
    pub(super) pairs: Vec<(NodeId, NodeId)>,
    /// The text of every `str`.
    pub(super) text: String,
    /// The content of every `bytes`.
    pub(super) blobs: Vec<u8>,
    /// Ints outside the 64-bit range.
    pub(super) bigints: Vec<i128>,
    /// Ranges of `text` or `blobs` too long for a slot.
    pub(super) long: Vec<(usize, usize)>,
    pub(super) root: NodeId,
}

impl Pickle {
    /// The value the pickle returns (the one on the stack at `STOP`).
    pub fn root(&self) -> NodeId {
        self.root
    }

    pub(super) fn slot(&self, id: NodeId) -> Slot {
        self.nodes.get(id.index()).copied().unwrap_or(Slot::None)
    }

    /// The value `id` refers to. An id from another [`Pickle`] that is out of range
    /// answers `None` rather than panicking.
    pub fn node(&self, id: NodeId) -> Node<'_> {
        match self.slot(id) {
            Slot::None => Node::None,
            Slot::Bool(b) => Node::Bool(b),
            Slot::Int(i) => Node::Int(i),
            Slot::BigInt(i) => self
                .bigints
                .get(i as usize)
                .map_or(Node::None, |&i| Node::BigInt(i)),
            Slot::Float(f) => Node::Float(f),
            Slot::Str { .. } | Slot::LongStr(_) => self.as_str(id).map_or(Node::None, Node::Str),
            Slot::Bytes { start, len } => self
                .blobs
                .get(span(start, len))
                .map_or(Node::None, Node::Bytes),
            Slot::LongBytes(i) => self
                .long
                .get(i as usize)
                .and_then(|&(a, b)| self.blobs.get(a..b))
                .map_or(Node::None, Node::Bytes),
            Slot::List(_) => Node::List(self.items(id)),
            Slot::Tuple(_) => Node::Tuple(self.items(id)),
            Slot::Set(_) => Node::Set(self.items(id)),
            Slot::Dict(_) => Node::Dict(self.entries(id)),
            Slot::Folded(index) => Node::Folded(index),
            Slot::FoldedList(index) => Node::FoldedList(index),
        }
    }

    /// How many values the arena holds (shared values count once, and so do `None`,
    /// the bools and the ints `0..=255`, which are made once).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The Python type name of `id`'s value.
    pub fn type_name(&self, id: NodeId) -> &'static str {
        self.slot(id).type_name()
    }

    /// The value under string key `key` of dict `dict`; `None` when `dict` is not a dict
    /// or has no such key. A linear scan: snapshot dicts have a dozen keys at most.
    pub fn get(&self, dict: NodeId, key: &str) -> Option<NodeId> {
        let entries = self.entries(dict).iter().rev();
        entries
            .filter(|(k, _)| self.as_str(*k) == Some(key))
            .map(|&(_, value)| value)
            .next()
    }

    /// The text of a `str`.
    pub fn as_str(&self, id: NodeId) -> Option<&str> {
        match self.slot(id) {
            Slot::Str { start, len } => self.text.get(span(start, len)),
            Slot::LongStr(i) => {
                let &(a, b) = self.long.get(i as usize)?;
                self.text.get(a..b)
            }
            _ => None,
        }
    }

    pub(super) fn big(&self, i: u32) -> Option<i128> {
        self.bigints.get(i as usize).copied()
    }

    /// An `int` that fits in `i64`. A `bool` is not an int here.
    pub fn as_i64(&self, id: NodeId) -> Option<i64> {
        match self.slot(id) {
            Slot::Int(i) => Some(i),
            Slot::BigInt(i) => i64::try_from(self.big(i)?).ok(),
            _ => None,
        }
    }

    /// An `int` in `0..=u64::MAX`: device addresses and sizes, which may exceed `i64`.
    pub fn as_u64(&self, id: NodeId) -> Option<u64> {
        match self.slot(id) {
            Slot::Int(i) => u64::try_from(i).ok(),
            Slot::BigInt(i) => u64::try_from(self.big(i)?).ok(),
            _ => None,
        }
    }

    /// A `float`, or an `int` converted to the nearest `f64`.
    pub fn as_f64(&self, id: NodeId) -> Option<f64> {
        match self.slot(id) {
            Slot::Float(f) => Some(f),
            Slot::Int(i) => Some(i as f64),
            Slot::BigInt(i) => Some(self.big(i)? as f64),
            _ => None,
        }
    }

    /// A `bool`.
    pub fn as_bool(&self, id: NodeId) -> Option<bool> {
        match self.slot(id) {
            Slot::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The elements of a list, tuple or set; empty for any other value.
    pub fn items(&self, id: NodeId) -> &[NodeId] {
        match self.slot(id) {
            Slot::List(seq) | Slot::Tuple(seq) | Slot::Set(seq) => {
                self.items.get(seq.range()).unwrap_or_default()
            }
            _ => &[],
        }
    }

    /// The key/value pairs of a dict in file order; empty for any other value (a folded
    /// dict's pairs went to its folder).
    pub fn entries(&self, id: NodeId) -> &[(NodeId, NodeId)] {
        match self.slot(id) {
            Slot::Dict(seq) => self.pairs.get(seq.range()).unwrap_or_default(),
            _ => &[],
        }
    }
}

impl Pickle {
    /// The slot of a new `str`, its text copied into the pool.
    pub(super) fn add_str(&mut self, text: &str) -> Result<Slot, Full> {
        let start = self.text.len();
        if self.text.capacity() - start < text.len() {
            self.text
                .try_reserve(text.len())
                .map_err(|_| Full::Memory)?;
        }
        self.text.push_str(text);
        match u32::try_from(text.len()) {
            Ok(len) => Ok(Slot::Str {
                start: start as u64,
                len,
            }),
            Err(_) => {
                // At most 4 of these fit in the 16 GiB an input may hold.
                let index = u32::try_from(self.long.len()).unwrap_or(u32::MAX);
                room(&mut self.long, 1)?;
                self.long.push((start, self.text.len()));
                Ok(Slot::LongStr(index))
            }
        }
    }

    /// The slot of a new `bytes`, copied into the pool.
    pub(super) fn add_bytes(&mut self, bytes: &[u8]) -> Result<Slot, Full> {
        let start = self.blobs.len();
        room(&mut self.blobs, bytes.len())?;
        self.blobs.extend_from_slice(bytes);
        match u32::try_from(bytes.len()) {
            Ok(len) => Ok(Slot::Bytes {
                start: start as u64,
                len,
            }),
            Err(_) => {
                let index = u32::try_from(self.long.len()).unwrap_or(u32::MAX);
                room(&mut self.long, 1)?;
                self.long.push((start, self.blobs.len()));
                Ok(Slot::LongBytes(index))
            }
        }
    }

    /// The slot of a Python 2 `str`: text when it is UTF-8 (Python 3 reads it as ASCII by
    /// default), else the bytes.
    pub(super) fn add_legacy(&mut self, bytes: &[u8]) -> Result<Slot, Full> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.add_str(text),
            Err(_) => self.add_bytes(bytes),
        }
    }
}

/// Why the arena (or the machine's stack or memo) could not take another value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Full {
    /// Past 4 billion values or slots (ids and ranges are `u32`).
    Count,
    /// The allocator refused the memory: the pickle fails with an error instead of
    /// aborting the process, as a plain `Vec` push would.
    Memory,
}

/// Room for `additional` more elements in `flat`, grown as `Vec` grows (doubling), or
/// [`Full::Memory`] when the allocator refuses.
pub(super) fn room<T>(flat: &mut Vec<T>, additional: usize) -> Result<(), Full> {
    if flat.capacity() - flat.len() < additional {
        flat.try_reserve(additional).map_err(|_| Full::Memory)?;
    }
    Ok(())
}

/// The range of a pool that a slot's `start` and `len` name.
pub(super) fn span(start: u64, len: u32) -> std::ops::Range<usize> {
    let start = start as usize;
    start..start.saturating_add(len as usize)
}

/// A container with nothing in it yet, at the end of `flat`.
pub(super) fn empty<T>(flat: &[T]) -> Seq {
    let start = u32::try_from(flat.len()).unwrap_or(u32::MAX);
    Seq {
        start,
        len: 0,
        cap: 0,
    }
}

/// A new container holding `values`, at the end of `flat`; [`Full`] past 4 billion slots
/// or when memory runs out.
pub(super) fn at_tail<T>(
    flat: &mut Vec<T>,
    values: impl ExactSizeIterator<Item = T>,
) -> Result<Seq, Full> {
    let start = u32::try_from(flat.len()).map_err(|_| Full::Count)?;
    let len = u32::try_from(values.len()).map_err(|_| Full::Count)?;
    start.checked_add(len).ok_or(Full::Count)?;
    room(flat, len as usize)?;
    flat.extend(values);
    Ok(Seq {
        start,
        len,
        cap: len,
    })
}

/// Appends `values` to container `seq` of `flat`: in place while its range is the last
/// one or has room, otherwise moved to the end with twice its room (filled with
/// `filler`), so filling a container batch by batch costs amortized linear time and
/// `flat` stays within 4x the items it holds. [`Full`] (nothing changed) past 4 billion
/// slots or when memory runs out.
pub(super) fn extend<T: Copy>(
    flat: &mut Vec<T>,
    seq: &mut Seq,
    values: impl IntoIterator<Item = T, IntoIter: ExactSizeIterator>,
    filler: T,
) -> Result<(), Full> {
    let values = values.into_iter();
    let added = values.len();
    let Some(len) = u32::try_from(added)
        .ok()
        .and_then(|n| seq.len.checked_add(n))
    else {
        return Err(Full::Count);
    };
    let used = seq.range();
    if used.end == flat.len() {
        // The last range (no room reserved past `len`): grow the array.
        if seq.start.checked_add(len).is_none() {
            return Err(Full::Count);
        }
        room(flat, added)?;
        flat.extend(values);
        seq.len = len;
        seq.cap = len;
        return Ok(());
    }
    if len <= seq.cap {
        let free = flat.get_mut(used.end..).unwrap_or_default();
        for (slot, value) in free.iter_mut().zip(values) {
            *slot = value;
        }
        seq.len = len;
        return Ok(());
    }
    let cap = if seq.len == 0 {
        len
    } else {
        len.max(seq.cap.saturating_mul(2))
    };
    let Some(start) = u32::try_from(flat.len())
        .ok()
        .filter(|start| start.checked_add(cap).is_some())
    else {
        return Err(Full::Count);
    };
    room(flat, cap as usize)?;
    flat.extend_from_within(used);
    flat.extend(values);
    flat.resize(start as usize + cap as usize, filler);
    *seq = Seq { start, len, cap };
    Ok(())
}
