//! Folding: dicts handed to a consumer as they are completed, so that the bulk of a pickle
//! (a snapshot's millions of trace entries) need not live in the arena. A folded dict is
//! one slot ([`Node::Folded`]); its pairs are never stored, and the numbers made for it
//! alone are dropped. On a 537 MB snapshot of 6.2M trace entries the arena touched about
//! 150 bytes an entry before, and touching fresh memory is much of what a load costs (page
//! faults: about 2 ms a MB on the shared 2-core VM).
//!
//! The shape Python writes for most such dicts, `EMPTY_DICT MEMOIZE MARK (key value)*
//! SETITEMS` with memo-got keys and plain values, is read straight from the buffer
//! ([`Parser::fast_dict`]): no stack traffic and no slot for its ints. A plain value may be
//! a string whose text was made before (a frame's function name, which the process builds
//! anew for every stack), memoized or not: it shares that string's value, as
//! `Parser::unicode` would give it (on the 537 MB snapshot: 2.20 → 2.02 s). Any other
//! shape, a new text, or a dict split by the buffer's end runs opcode by opcode and is
//! offered to the folder at its `SETITEMS`.

use std::io::Read;

use super::arena::Slot;
use super::opcodes as op;
use super::reader::{FALSE_ID, NONE_ID, Parser, Res, SMALL_INTS, TRUE_ID};
use super::scalars::int_from_le;
use super::shared::{Lookup, SharedStrs};
use super::{Node, NodeId, Pickle};

/// A consumer of dicts as the reader completes them.
pub trait Fold {
    /// `pairs` are about to fill a dict that was empty: take them over and return an
    /// index (the dict becomes [`Node::Folded`]), or `None` to leave the dict to the
    /// arena. Setting items on a folded dict later is an error.
    fn fold(&mut self, p: &Pickle, pairs: &[(NodeId, FoldValue)]) -> Option<u32>;

    /// The arena dropped every value from `len` on (only numbers made for the last folded
    /// dict, which nothing else refers to): forget what was noted about those ids.
    fn forget_from(&mut self, len: usize);

    /// `items` are all a list that was empty will hold (a batch shorter than Python's 1,000,
    /// which its pickler writes last): take them over and return an index (the list becomes
    /// [`Node::FoldedList`]), or `None` to leave the list to the arena. Appending to a
    /// folded list later is an error.
    fn fold_list(&mut self, _p: &Pickle, _items: &[NodeId]) -> Option<u32> {
        None
    }

    /// Dicts folded to `index` are all equal (the folder gives equal dicts one index): one
    /// slot may stand for them all (see `Parser::share_folded`).
    fn shares(&self, _index: u32) -> bool {
        false
    }

    /// [`Fold::shares`] for the lists folded to `index`.
    fn shares_list(&self, _index: u32) -> bool {
        false
    }
}

impl<T: Fold + ?Sized> Fold for &mut T {
    fn fold(&mut self, p: &Pickle, pairs: &[(NodeId, FoldValue)]) -> Option<u32> {
        (**self).fold(p, pairs)
    }

    fn fold_list(&mut self, p: &Pickle, items: &[NodeId]) -> Option<u32> {
        (**self).fold_list(p, items)
    }

    fn shares(&self, index: u32) -> bool {
        (**self).shares(index)
    }

    fn shares_list(&self, index: u32) -> bool {
        (**self).shares_list(index)
    }

    fn forget_from(&mut self, len: usize) {
        (**self).forget_from(len);
    }
}

/// Folds nothing: every dict stays in the arena.
pub struct NoFold;

impl Fold for NoFold {
    fn fold(&mut self, _: &Pickle, _: &[(NodeId, FoldValue)]) -> Option<u32> {
        None
    }

    fn forget_from(&mut self, _: usize) {}
}

/// A value of a dict being folded: a value of the arena, or an int read without making one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldValue {
    /// A value in the arena.
    Node(NodeId),
    /// An `int` that fits in 64 bits.
    Int(i64),
}

impl FoldValue {
    /// The arena value, if it is one.
    pub fn node(self) -> Option<NodeId> {
        match self {
            FoldValue::Node(id) => Some(id),
            FoldValue::Int(_) => None,
        }
    }
}

/// Pairs the fast path reads in one dict at most (a trace entry has about ten); a longer
/// dict runs opcode by opcode. The cost: a reused buffer of 32 × 24 bytes.
const MAX_FAST_PAIRS: usize = 32;

impl Pickle {
    /// The index the [`Fold`] gave dict `id` when it took it over.
    pub fn folded(&self, id: NodeId) -> Option<u32> {
        match self.node(id) {
            Node::Folded(index) => Some(index),
            _ => None,
        }
    }

    /// The index the [`Fold`] gave list `id` when it took it over.
    pub fn folded_list(&self, id: NodeId) -> Option<u32> {
        match self.slot(id) {
            Slot::FoldedList(index) => Some(index),
            _ => None,
        }
    }

    /// [`Pickle::as_u64`] of a folded dict's value.
    pub fn fold_u64(&self, v: FoldValue) -> Option<u64> {
        match v {
            FoldValue::Node(id) => self.as_u64(id),
            FoldValue::Int(i) => u64::try_from(i).ok(),
        }
    }

    /// [`Pickle::as_i64`] of a folded dict's value.
    pub fn fold_i64(&self, v: FoldValue) -> Option<i64> {
        match v {
            FoldValue::Node(id) => self.as_i64(id),
            FoldValue::Int(i) => Some(i),
        }
    }
}

impl Slot {
    /// A number: what a folded dict's values alone may make, and may be dropped with it.
    fn is_number(&self) -> bool {
        matches!(self, Slot::Int(_) | Slot::BigInt(_) | Slot::Float(_))
    }
}

impl<R: Read, F: Fold> Parser<R, F> {
    /// Right after `EMPTY_DICT`: the usual dict shape read whole from the buffer and
    /// offered to the folder. True when the folder took it (everything through its
    /// `SETITEMS` is then read); false, with nothing read, otherwise.
    pub(super) fn fast_dict(&mut self) -> Res<bool> {
        let window = self.data.get(self.pos..self.filled).unwrap_or_default();
        let [op::MEMOIZE, op::MARK, rest @ ..] = window else {
            return Ok(false);
        };
        let mut pairs = std::mem::take(&mut self.fold_pairs);
        let mut memoized = std::mem::take(&mut self.fold_memoized);
        pairs.clear();
        memoized.clear();
        let known = Known {
            memo: &self.memo,
            p: &self.p,
            shared: &self.shared,
        };
        let folded = read_pairs(rest, &known, &mut pairs, &mut memoized)
            .and_then(|read| Some((self.folder.fold(&self.p, &pairs)?, read)));
        self.fold_pairs = pairs;
        let Some((index, read)) = folded else {
            self.fold_memoized = memoized;
            return Ok(false);
        };
        self.push(Slot::Folded(index))?;
        self.put((self.memo.len() + self.sparse_memo.len()) as u64)?;
        // The strings' MEMOIZEs come after the dict's, in the order they were read.
        let put = memoized.iter().try_for_each(|&text| {
            let key = (self.memo.len() + self.sparse_memo.len()) as u64;
            self.put_value(key, text)
        });
        self.fold_memoized = memoized;
        put?;
        self.pos += 2 + read;
        if self.folder.shares(index)
            && let Some(at) = self.stack.len().checked_sub(1)
            && let Some(&target) = self.stack.get(at)
        {
            self.share_folded(target, at, u64::from(index));
        }
        Ok(true)
    }

    /// At `SETITEMS`: offers the pairs that fill empty dict `target` to the folder; true
    /// when it took them. The numbers made since the dict, when nothing but the dict can
    /// refer to them (nothing newer than it was memoized, re-pushed, or put in an older
    /// container), are dropped: their ids are made again.
    pub(super) fn fold_setitems(&mut self, target: NodeId, base: usize) -> bool {
        let empty =
            matches!(self.p.nodes.get(target.index()), Some(Slot::Dict(seq)) if seq.len == 0);
        if !empty {
            return false;
        }
        let mut pairs = std::mem::take(&mut self.fold_pairs);
        pairs.clear();
        let values = self.stack.get(base..).unwrap_or_default();
        pairs.extend(values.chunks_exact(2).filter_map(|kv| match *kv {
            [k, v] => Some((k, FoldValue::Node(v))),
            _ => None,
        }));
        let folded = self.folder.fold(&self.p, &pairs);
        self.fold_pairs = pairs;
        let Some(index) = folded else {
            return false;
        };
        if let Some(slot) = self.p.nodes.get_mut(target.index()) {
            *slot = Slot::Folded(index);
        }
        self.stack.truncate(base);
        let after = target.index() + 1;
        let unreferenced = self.memo_records.newest() <= target.0
            && self.newest_repushed < target.0
            && self.newest_contained <= target.0;
        let made = self.p.nodes.get(after..).unwrap_or_default();
        if unreferenced && !made.is_empty() && made.iter().all(Slot::is_number) {
            self.drop_from(after);
        }
        if self.folder.shares(index) {
            self.share_folded(target, base - 1, u64::from(index));
        }
        true
    }
}

/// What the fast path reads values against: the dense memo, and the strings already made
/// (a string whose text is new is left to the opcode-by-opcode path, which makes it).
struct Known<'a> {
    memo: &'a [NodeId],
    p: &'a Pickle,
    shared: &'a SharedStrs,
}

/// The `(key value)* SETITEMS` of a dict, keys got from the memo and values plain; the
/// bytes read, or `None` for any other shape or when `bytes` ends first. `memoized` gets
/// the strings to memoize after the dict, in order.
fn read_pairs(
    bytes: &[u8],
    known: &Known<'_>,
    pairs: &mut Vec<(NodeId, FoldValue)>,
    memoized: &mut Vec<NodeId>,
) -> Option<usize> {
    let mut at = 0;
    loop {
        let rest = bytes.get(at..)?;
        if rest.first() == Some(&op::SETITEMS) {
            return Some(at + 1);
        }
        if pairs.len() >= MAX_FAST_PAIRS {
            return None;
        }
        let (key, key_len) = memo_get(rest, known.memo)?;
        let rest = rest.get(key_len..)?;
        let (value, value_len) = match plain_value(rest, known.memo) {
            Some(plain) => plain,
            None => known_str(rest, known, memoized)?,
        };
        pairs.push((key, value));
        at += key_len + value_len;
    }
}

/// A `SHORT_BINUNICODE` or `BINUNICODE` whose text a string already made has, optionally
/// followed by `MEMOIZE` (noted in `memoized`): that string and the bytes read. As
/// [`Parser::unicode`] reads it: the same text shares the first string's value.
fn known_str(
    bytes: &[u8],
    known: &Known<'_>,
    memoized: &mut Vec<NodeId>,
) -> Option<(FoldValue, usize)> {
    let (len, header) = match *bytes {
        [op::SHORT_BINUNICODE, len, ..] => (usize::from(len), 2_usize),
        [op::BINUNICODE, a, b, c, d, ..] => (u32::from_le_bytes([a, b, c, d]) as usize, 5),
        _ => return None,
    };
    let end = header.checked_add(len)?;
    let text = std::str::from_utf8(bytes.get(header..end)?).ok()?;
    let Lookup::Found(id) = known.shared.find(known.p, text) else {
        return None;
    };
    if bytes.get(end) == Some(&op::MEMOIZE) {
        memoized.push(id);
        return Some((FoldValue::Node(id), end + 1));
    }
    Some((FoldValue::Node(id), end))
}

/// `BINGET` or `LONG_BINGET` of a dense memo key: the value and the bytes read.
fn memo_get(bytes: &[u8], memo: &[NodeId]) -> Option<(NodeId, usize)> {
    match *bytes {
        [op::BINGET, key, ..] => Some((*memo.get(usize::from(key))?, 2)),
        [op::LONG_BINGET, a, b, c, d, ..] => {
            let key = u32::from_le_bytes([a, b, c, d]) as usize;
            Some((*memo.get(key)?, 5))
        }
        _ => None,
    }
}

/// A memo get, an int of at most 64 bits, `None`, `True` or `False`: the value and the
/// bytes read.
fn plain_value(bytes: &[u8], memo: &[NodeId]) -> Option<(FoldValue, usize)> {
    if let Some((id, read)) = memo_get(bytes, memo) {
        return Some((FoldValue::Node(id), read));
    }
    let node = |id: NodeId, read: usize| Some((FoldValue::Node(id), read));
    match *bytes {
        [op::BININT1, small, ..] => node(NodeId(SMALL_INTS + u32::from(small)), 2),
        [op::BININT2, a, b, ..] => Some((FoldValue::Int(u16::from_le_bytes([a, b]).into()), 3)),
        [op::BININT, a, b, c, d, ..] => {
            let int = i32::from_le_bytes([a, b, c, d]);
            Some((FoldValue::Int(int.into()), 5))
        }
        [op::LONG1, len, ref rest @ ..] if len <= 8 => {
            let int = int_from_le(rest.get(..usize::from(len))?)?;
            Some((
                FoldValue::Int(i64::try_from(int).ok()?),
                2 + usize::from(len),
            ))
        }
        [op::NONE, ..] => node(NONE_ID, 1),
        [op::NEWTRUE, ..] => node(TRUE_ID, 1),
        [op::NEWFALSE, ..] => node(FALSE_ID, 1),
        _ => None,
    }
}
