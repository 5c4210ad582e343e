//! The usual shape of a dict read whole from the buffer, in two steps: [`read_pairs`] reads
//! it (no state changes; `None` for anything else), then [`Parser::fast_dict`] does to the
//! machine what running its opcodes one by one would have done, without the opcodes.
//!
//! The shape is Python's for a dict of plain values: `EMPTY_DICT MEMOIZE MARK (key value)*
//! SETITEMS`, keys got from the memo, each value one of
//! - a memo get, an int of at most 64 bits, `None`, `True` or `False` (no slot is made for
//!   its int: a folded dict's values are the folder's);
//! - a string whose text was made before (a frame's function name, which the process builds
//!   anew for every stack), memoized or not: it shares that string's value, as
//!   `Parser::unicode` gives it;
//! - in the dict itself, not in a dict inside it: a list, memoized or not, empty or filled
//!   by one `APPEND` or one `MARK … APPENDS` batch of memo gets and dicts of this shape (a
//!   trace entry's frames list, new for every entry, of frame dicts).
//!
//! A dict and each dict in its list are offered to the folder as at their `SETITEMS`; one
//! it refuses gets its pairs in the arena, ints made into slots, as opcode by opcode. Any
//! other shape, a text not made before, a `FRAME` or the buffer's end inside the dict, and
//! it runs opcode by opcode. Measured on the 537 MB snapshot (`summary`, side by side):
//! 2.20 s reading plain values only, 2.02 s with strings, 1.86 s with lists (2.1M trace
//! entries with a new frames list went opcode by opcode, a third of them).

mod read;

use super::arena::{Slot, empty};
use super::opcodes as op;
use super::reader::{Parser, Res};
use super::{Fold, FoldValue, NodeId};
pub(super) use read::DictRead;
use read::{Item, Known, Pending, read_pairs};

impl<R: std::io::Read, F: Fold> Parser<R, F> {
    /// Right after `EMPTY_DICT`: the dict read whole when it has the shape above (true:
    /// everything through its `SETITEMS` is read); false, with nothing read, otherwise.
    pub(super) fn fast_dict(&mut self) -> Res<bool> {
        let window = self.data.get(self.pos..self.filled).unwrap_or_default();
        let [op::MEMOIZE, op::MARK, rest @ ..] = window else {
            return Ok(false);
        };
        let mut read = std::mem::take(&mut self.fast);
        read.clear();
        let known = Known {
            memo: &self.memo,
            p: &self.p,
            shared: &self.shared,
        };
        let done = match read_pairs(rest, &known, &mut read) {
            Some(len) => self.apply(&mut read).map(|()| {
                self.pos += 2 + len;
                true
            }),
            None => Ok(false),
        };
        self.fast = read;
        done
    }

    /// Does what the opcodes of the dict `read` holds do: the dict pushed and memoized,
    /// its strings memoized and lists made in the order they were read, the dict filled.
    fn apply(&mut self, read: &mut DictRead) -> Res<()> {
        let target = self.new_container(Slot::Dict(empty(&self.p.pairs)), true)?;
        for i in 0..read.pending.len() {
            match read.pending.get(i).copied() {
                Some(Pending::Memo(text)) => self.put_value(self.next_memo_key(), text)?,
                Some(Pending::List {
                    pair,
                    items,
                    memoized,
                    filled,
                }) => {
                    let list = self.apply_list(read, items, memoized, filled)?;
                    if let Some((_, value)) = read.pairs.get_mut(pair as usize) {
                        *value = FoldValue::Node(list);
                    }
                }
                None => break,
            }
        }
        self.fill_dict(target, &read.pairs)
    }

    /// A list's opcodes: pushed, memoized, filled with its items (each dict pushed,
    /// memoized and filled in turn); the list, taken off the stack.
    fn apply_list(
        &mut self,
        read: &DictRead,
        (start, end): (u32, u32),
        memoized: bool,
        filled: bool,
    ) -> Res<NodeId> {
        self.new_container(Slot::List(empty(&self.p.items)), memoized)?;
        let base = self.stack.len();
        for &item in read
            .items
            .get(start as usize..end as usize)
            .unwrap_or_default()
        {
            match item {
                Item::Got(id) => self.repush(id)?,
                Item::Dict { pairs, memos } => {
                    let dict = self.new_container(Slot::Dict(empty(&self.p.pairs)), true)?;
                    let memos = read.inner_memos.get(memos.0 as usize..memos.1 as usize);
                    for &text in memos.unwrap_or_default() {
                        self.put_value(self.next_memo_key(), text)?;
                    }
                    let pairs = read.inner.get(pairs.0 as usize..pairs.1 as usize);
                    self.fill_dict(dict, pairs.unwrap_or_default())?;
                }
            }
        }
        if filled {
            let target = self.below(base)?;
            self.add_items(target, base, false)?;
        }
        match self.stack.pop() {
            Some(id) => Ok(id),
            None => Err(self.underflow()),
        }
    }

    /// Pushes a new empty container, memoized when `memoized`; its id.
    fn new_container(&mut self, slot: Slot, memoized: bool) -> Res<NodeId> {
        self.push(slot)?;
        if memoized {
            self.put(self.next_memo_key())?;
        }
        self.top()
    }

    /// Dict `target`, on top of the stack, at its `SETITEMS` with `values`: folded when the
    /// folder takes them (and shared when it says so), else filled in the arena.
    fn fill_dict(&mut self, target: NodeId, values: &[(NodeId, FoldValue)]) -> Res<()> {
        let at = self.stack.len().saturating_sub(1);
        if let Some(index) = self.folder.fold(&self.p, values) {
            if let Some(slot) = self.p.nodes.get_mut(target.index()) {
                *slot = Slot::Folded(index);
            }
            if self.folder.shares(index) {
                self.share_folded(target, at, u64::from(index));
            }
            return Ok(());
        }
        let base = self.stack.len();
        for &(key, value) in values {
            self.push_id(key)?;
            match value {
                FoldValue::Node(id) => self.push_id(id)?,
                FoldValue::Int(int) => self.push_int(int)?,
            }
        }
        self.set_items(target, base)
    }
}
