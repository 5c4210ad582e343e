//! The reading step of a dict read whole: what its bytes hold, found without changing the
//! machine ([`read_pairs`]); `None` for any other shape.

use super::super::opcodes as op;
use super::super::reader::{FALSE_ID, NONE_ID, SMALL_INTS, TRUE_ID};
use super::super::shared::{Lookup, MAX_SHARED_STR_BYTES, SharedStrs};
use super::super::{FoldValue, NodeId, Pickle};

/// Pairs read in one dict at most (a trace entry has about ten); a longer dict runs
/// opcode by opcode. The cost: reused buffers of a few KiB.
const MAX_FAST_PAIRS: usize = 32;

/// Items read in one list at most (a stack of a few dozen frames); a longer list runs
/// opcode by opcode. The cost: a reused buffer of 256 × 12 bytes.
const MAX_FAST_ITEMS: usize = 256;

/// What a dict's opcodes do besides giving values, in their order: memoize a string, make
/// a list (the value of `pairs[pair]`, a placeholder until then).
#[derive(Clone, Copy)]
pub(super) enum Pending {
    Memo(NodeId),
    List {
        pair: u32,
        items: (u32, u32),
        memoized: bool,
        /// Filled by an `APPEND` or a `MARK … APPENDS` (even of nothing).
        filled: bool,
    },
}

/// An item of a list as read: a value got from the memo, or a dict: `inner[pairs]`, its
/// strings to memoize `inner_memos[memos]`.
#[derive(Clone, Copy)]
pub(super) enum Item {
    Got(NodeId),
    Dict {
        pairs: (u32, u32),
        memos: (u32, u32),
    },
}

/// What [`read_pairs`] found of a dict: its pairs and what else its opcodes do, its lists'
/// items, and the pairs and memoized strings of the dicts in them.
#[derive(Default)]
pub(in super::super) struct DictRead {
    pub(super) pairs: Vec<(NodeId, FoldValue)>,
    pub(super) pending: Vec<Pending>,
    pub(super) items: Vec<Item>,
    pub(super) inner: Vec<(NodeId, FoldValue)>,
    pub(super) inner_memos: Vec<NodeId>,
}

impl DictRead {
    pub(super) fn clear(&mut self) {
        self.pairs.clear();
        self.pending.clear();
        self.items.clear();
        self.inner.clear();
        self.inner_memos.clear();
    }
}

/// What values are read against: the dense memo, and the strings already made.
pub(super) struct Known<'a> {
    pub(super) memo: &'a [NodeId],
    pub(super) p: &'a Pickle,
    pub(super) shared: &'a SharedStrs,
}

/// A list's value before it is made.
const PLACEHOLDER: FoldValue = FoldValue::Node(NONE_ID);

/// The `(key value)* SETITEMS` of a dict; the bytes read, or `None` for any other shape or
/// when `bytes` ends first.
pub(super) fn read_pairs(bytes: &[u8], known: &Known<'_>, read: &mut DictRead) -> Option<usize> {
    let mut at = 0;
    loop {
        let rest = bytes.get(at..)?;
        if rest.first() == Some(&op::SETITEMS) {
            return Some(at + 1);
        }
        if read.pairs.len() >= MAX_FAST_PAIRS {
            return None;
        }
        let (key, key_len) = memo_get(rest, known.memo)?;
        let rest = rest.get(key_len..)?;
        let value_len = match plain_value(rest, known.memo) {
            Some((value, len)) => {
                read.pairs.push((key, value));
                len
            }
            None if rest.first() == Some(&op::EMPTY_LIST) => {
                let pair = u32::try_from(read.pairs.len()).ok()?;
                read.pairs.push((key, PLACEHOLDER));
                read_list(rest, known, read, pair)?
            }
            None => {
                let (text, memoized, len) = known_str(rest, known)?;
                read.pairs.push((key, FoldValue::Node(text)));
                if memoized {
                    read.pending.push(Pending::Memo(text));
                }
                len
            }
        };
        at += key_len + value_len;
    }
}

/// `EMPTY_LIST [MEMOIZE]`, then nothing, `item APPEND`, or `MARK item* APPENDS`, each item a
/// memo get or a dict of plain values and known strings: the bytes read; the list is noted
/// as the value of `pairs[pair]`.
fn read_list(bytes: &[u8], known: &Known<'_>, read: &mut DictRead, pair: u32) -> Option<usize> {
    let memoized = bytes.get(1) == Some(&op::MEMOIZE);
    let mut at = 1 + usize::from(memoized);
    let start = read.items.len();
    let filled = if bytes.get(at) == Some(&op::MARK) {
        at += 1;
        loop {
            let rest = bytes.get(at..)?;
            if rest.first() == Some(&op::APPENDS) {
                at += 1;
                break true;
            }
            if read.items.len() - start >= MAX_FAST_ITEMS {
                return None;
            }
            at += read_item(rest, known, read)?;
        }
    } else {
        // One item and `APPEND`; anything else after the list is the dict's next key.
        let rest = bytes.get(at..)?;
        let (inner, memos) = (read.inner.len(), read.inner_memos.len());
        match read_item(rest, known, read) {
            Some(len) if rest.get(len) == Some(&op::APPEND) => {
                at += len + 1;
                true
            }
            _ => {
                read.items.truncate(start);
                read.inner.truncate(inner);
                read.inner_memos.truncate(memos);
                false
            }
        }
    };
    read.pending.push(Pending::List {
        pair,
        items: (
            u32::try_from(start).ok()?,
            u32::try_from(read.items.len()).ok()?,
        ),
        memoized,
        filled,
    });
    Some(at)
}

/// A list's item: a memo get, or `EMPTY_DICT MEMOIZE MARK (key value)* SETITEMS` with plain
/// values and known strings; the bytes read.
fn read_item(bytes: &[u8], known: &Known<'_>, read: &mut DictRead) -> Option<usize> {
    let [op::EMPTY_DICT, op::MEMOIZE, op::MARK, pairs @ ..] = bytes else {
        let (id, len) = memo_get(bytes, known.memo)?;
        read.items.push(Item::Got(id));
        return Some(len);
    };
    let (first, first_memo) = (read.inner.len(), read.inner_memos.len());
    let mut at = 0;
    loop {
        let rest = pairs.get(at..)?;
        if rest.first() == Some(&op::SETITEMS) {
            break;
        }
        if read.inner.len() - first >= MAX_FAST_PAIRS {
            return None;
        }
        let (key, key_len) = memo_get(rest, known.memo)?;
        let rest = rest.get(key_len..)?;
        let (value, value_len) = match plain_value(rest, known.memo) {
            Some(plain) => plain,
            None => {
                let (text, memoized, len) = known_str(rest, known)?;
                if memoized {
                    read.inner_memos.push(text);
                }
                (FoldValue::Node(text), len)
            }
        };
        read.inner.push((key, value));
        at += key_len + value_len;
    }
    let span = |a: usize, b: usize| Some((u32::try_from(a).ok()?, u32::try_from(b).ok()?));
    read.items.push(Item::Dict {
        pairs: span(first, read.inner.len())?,
        memos: span(first_memo, read.inner_memos.len())?,
    });
    Some(3 + at + 1)
}

/// `BINGET` or `LONG_BINGET` of a dense memo key: the value and the bytes read.
#[inline(always)]
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
/// bytes read. Inlined into its two callers: called, its result crossed memory in pieces
/// a 16-byte load could not take from the stores (0.3 s of 2.3 on the 537 MB snapshot).
#[inline(always)]
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
            let int = i64_from_le(rest.get(..usize::from(len))?);
            Some((FoldValue::Int(int), 2 + usize::from(len)))
        }
        [op::NONE, ..] => node(NONE_ID, 1),
        [op::NEWTRUE, ..] => node(TRUE_ID, 1),
        [op::NEWFALSE, ..] => node(FALSE_ID, 1),
        _ => None,
    }
}

/// A little-endian two's-complement integer of at most 8 bytes (`LONG1`), as
/// `scalars::int_from_le` reads it.
#[inline(always)]
fn i64_from_le(bytes: &[u8]) -> i64 {
    let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
    let mut wide = if negative { [0xff; 8] } else { [0; 8] };
    for (to, &from) in wide.iter_mut().zip(bytes) {
        *to = from;
    }
    i64::from_le_bytes(wide)
}

/// A `SHORT_BINUNICODE` or `BINUNICODE` whose text a string already made has, optionally
/// followed by `MEMOIZE`: that string, whether it is memoized, and the bytes read.
fn known_str(bytes: &[u8], known: &Known<'_>) -> Option<(NodeId, bool, usize)> {
    let (len, header) = match *bytes {
        [op::SHORT_BINUNICODE, len, ..] => (usize::from(len), 2_usize),
        [op::BINUNICODE, a, b, c, d, ..] => (u32::from_le_bytes([a, b, c, d]) as usize, 5),
        _ => return None,
    };
    if len > MAX_SHARED_STR_BYTES {
        return None; // never shared: not checked as UTF-8 here only to be read again
    }
    let end = header + len;
    let text = std::str::from_utf8(bytes.get(header..end)?).ok()?;
    let Lookup::Found(id) = known.shared.find(known.p, text) else {
        return None;
    };
    let memoized = bytes.get(end) == Some(&op::MEMOIZE);
    Some((id, memoized, end + usize::from(memoized)))
}
