//! The stack, marks, containers and memo: the opcodes that build lists, tuples, sets and
//! dicts, and share values through the memo.

use std::io::Read;

use super::arena::{Full, Seq, Slot, at_tail, extend, room};
use super::errors::shown;
use super::opcodes as op;
use super::reader::{MAX_OPEN_MARKS, MAX_STACK_VALUES, NONE_ID, Parser, Res, SMALL_INTS};
use super::{Fold, NodeId};

impl<R: Read, F: Fold> Parser<R, F> {
    /// `BINGET`, `LONG_BINGET`, `BINPUT`, `LONG_BINPUT`: a 1- or 4-byte memo key.
    pub(super) fn binary_memo(&mut self, code: u8) -> Res<()> {
        let key = if code == op::BINGET || code == op::BINPUT {
            u64::from(self.array::<1>()?[0])
        } else {
            u32::from_le_bytes(self.array()?).into()
        };
        if code == op::BINGET || code == op::LONG_BINGET {
            self.get(key)
        } else {
            self.put(key)
        }
    }

    // ---- The stack ----

    pub(super) fn push(&mut self, slot: Slot) -> Res<()> {
        // u32::MAX itself is never handed out, so ids stay below it.
        let Some(id) = u32::try_from(self.p.nodes.len())
            .ok()
            .filter(|&i| i < u32::MAX)
        else {
            return Err(self.too_many());
        };
        if self.stack.len() >= MAX_STACK_VALUES {
            return Err(self.stack_full());
        }
        if let Err(full) = room(&mut self.p.nodes, 1) {
            return Err(self.full(full));
        }
        self.p.nodes.push(slot);
        self.stack.push(NodeId(id));
        Ok(())
    }

    /// An int; `0..=255` are shared.
    pub(super) fn push_int(&mut self, int: i64) -> Res<()> {
        match u32::try_from(int) {
            Ok(small) if small < 256 => self.push_id(NodeId(SMALL_INTS + small)),
            _ => self.push(Slot::Int(int)),
        }
    }

    pub(super) fn push_wide_int(&mut self, int: i128) -> Res<()> {
        if let Ok(narrow) = i64::try_from(int) {
            return self.push_int(narrow);
        }
        // There are no more bigints than values, whose count `push` bounds.
        let index = u32::try_from(self.p.bigints.len()).unwrap_or(u32::MAX);
        if let Err(full) = room(&mut self.p.bigints, 1) {
            return Err(self.full(full));
        }
        self.p.bigints.push(int);
        self.push(Slot::BigInt(index))
    }

    /// A `str`, its text copied into the pool.
    pub(super) fn push_str(&mut self, text: &str) -> Res<()> {
        let slot = self.p.add_str(text);
        self.push_added(slot)
    }

    /// A Python 2 `str`.
    pub(super) fn push_legacy(&mut self, bytes: &[u8]) -> Res<()> {
        let slot = self.p.add_legacy(bytes);
        self.push_added(slot)
    }

    /// The slot of a value just added to a pool, or the error of a full pool.
    pub(super) fn push_added(&mut self, slot: Result<Slot, Full>) -> Res<()> {
        match slot {
            Ok(slot) => self.push(slot),
            Err(full) => Err(self.full(full)),
        }
    }

    /// Pushes `id`; the stack holds at most [`MAX_STACK_VALUES`] (its growth by `Vec`'s
    /// doubling is then bounded, 4 MiB).
    pub(super) fn push_id(&mut self, id: NodeId) -> Res<()> {
        if self.stack.len() >= MAX_STACK_VALUES {
            return Err(self.stack_full());
        }
        self.stack.push(id);
        Ok(())
    }

    /// `MARK`: at most [`MAX_OPEN_MARKS`] open at once.
    pub(super) fn mark(&mut self) -> Res<()> {
        if self.marks.len() >= MAX_OPEN_MARKS {
            return Err(self.marks_full());
        }
        // The stack is shorter than MAX_STACK_VALUES, which fits in u32.
        self.marks.push(self.stack.len() as u32);
        self.floor = self.stack.len();
        Ok(())
    }

    pub(super) fn pop(&mut self) -> Res<NodeId> {
        match self.stack.pop() {
            Some(id) if self.stack.len() >= self.floor => Ok(id),
            _ => Err(self.underflow()),
        }
    }

    pub(super) fn top(&self) -> Res<NodeId> {
        match self.stack.last() {
            Some(&id) if self.stack.len() > self.floor => Ok(id),
            _ => Err(self.underflow()),
        }
    }

    /// The value just below stack position `base` (the container that the values above a
    /// mark go into), which must be above the enclosing mark.
    pub(super) fn below(&self, base: usize) -> Res<NodeId> {
        match base.checked_sub(1).and_then(|i| self.stack.get(i)) {
            Some(&id) if base > self.floor => Ok(id),
            _ => Err(self.underflow()),
        }
    }

    /// Drop the innermost `MARK`; returns the stack length it recorded.
    pub(super) fn pop_mark(&mut self) -> Res<usize> {
        let Some(base) = self.marks.pop().map(|b| b as usize) else {
            return Err(self.malformed("has no MARK before it".into()));
        };
        self.floor = self.marks.last().map_or(0, |&b| b as usize);
        if base > self.stack.len() {
            return Err(self.underflow());
        }
        Ok(base)
    }

    /// A new tuple, list or set of the values above stack position `base`, which leave
    /// the stack.
    pub(super) fn collect(&mut self, base: usize, make: fn(Seq) -> Slot) -> Res<()> {
        let values = self.stack.get(base..).unwrap_or_default();
        let seq = match at_tail(&mut self.p.items, values.iter().copied()) {
            Ok(seq) => seq,
            Err(full) => return Err(self.full(full)),
        };
        self.stack.truncate(base);
        self.push(make(seq))
    }

    /// `POP` with nothing above the innermost mark drops the mark, as Python does.
    pub(super) fn pop_item_or_mark(&mut self) -> Res<()> {
        if self.stack.len() > self.floor {
            self.stack.pop();
            Ok(())
        } else {
            self.pop_mark().map(|_| ())
        }
    }

    pub(super) fn tuple_of(&mut self, n: usize) -> Res<()> {
        if self.stack.len() < self.floor + n {
            return Err(self.underflow());
        }
        self.collect(self.stack.len() - n, Slot::Tuple)
    }

    // ---- Containers ----

    /// The stack position below the top `n` values, which must all be above the innermost
    /// mark (`APPEND`, `SETITEM`).
    pub(super) fn top_base(&self, n: usize) -> Res<usize> {
        match self.stack.len().checked_sub(n) {
            Some(base) if base >= self.floor => Ok(base),
            _ => Err(self.underflow()),
        }
    }

    pub(super) fn append(&mut self) -> Res<()> {
        let base = self.top_base(1)?;
        let target = self.below(base)?;
        self.add_items(target, base, false)
    }

    pub(super) fn appends(&mut self) -> Res<()> {
        let base = self.pop_mark()?;
        let target = self.below(base)?;
        self.add_items(target, base, false)
    }

    pub(super) fn additems(&mut self) -> Res<()> {
        let base = self.pop_mark()?;
        let target = self.below(base)?;
        self.add_items(target, base, true)
    }

    /// Moves the values above stack position `base` into list (or set) `target`, or hands
    /// them to the folder when they are all an empty list will hold ([`Fold::fold_list`]).
    pub(super) fn add_items(&mut self, target: NodeId, base: usize, set: bool) -> Res<()> {
        let values = self.stack.get(base..).unwrap_or_default();
        let newest = values.iter().map(|v| v.0).max().unwrap_or(0);
        if newest > target.0 {
            self.newest_contained = self.newest_contained.max(newest);
        }
        let empty_list =
            matches!(self.p.nodes.get(target.index()), Some(Slot::List(seq)) if seq.len == 0);
        if !set
            && empty_list
            && (1..PYTHON_BATCH_ITEMS).contains(&values.len())
            && let Some(index) = self.folder.fold_list(&self.p, values)
        {
            if let Some(slot) = self.p.nodes.get_mut(target.index()) {
                *slot = Slot::FoldedList(index);
            }
            self.stack.truncate(base);
            if self.folder.shares_list(index) {
                self.share_folded(target, base - 1, u64::from(index) | 1 << 32);
            }
            return Ok(());
        }
        let grown = match self.p.nodes.get_mut(target.index()) {
            Some(Slot::FoldedList(_)) if !set => {
                return Err(self.malformed(
                    "appends to a list already read whole (a stack of frames, read as soon as \
                 it is filled)"
                        .into(),
                ));
            }
            Some(Slot::List(seq)) if !set => {
                extend(&mut self.p.items, seq, values.iter().copied(), NONE_ID)
            }
            Some(Slot::Set(seq)) if set => {
                extend(&mut self.p.items, seq, values.iter().copied(), NONE_ID)
            }
            _ => {
                let expected = if set { "a set" } else { "a list" };
                return Err(self.wrong_target(target, expected));
            }
        };
        if let Err(full) = grown {
            return Err(self.full(full));
        }
        self.stack.truncate(base);
        Ok(())
    }

    pub(super) fn setitem(&mut self) -> Res<()> {
        let base = self.top_base(2)?;
        let target = self.below(base)?;
        self.set_items(target, base)
    }

    pub(super) fn setitems(&mut self) -> Res<()> {
        let base = self.pop_mark()?;
        let target = self.below(base)?;
        if self.stack.len().saturating_sub(base) % 2 != 0 {
            return Err(self.odd_items());
        }
        if self.fold_setitems(target, base) {
            return Ok(());
        }
        self.set_items(target, base)
    }

    /// Pushes `id` again (`GET`, `DUP`), noting it when newer values exist (see
    /// [`Parser::newest_repushed`]).
    pub(super) fn repush(&mut self, id: NodeId) -> Res<()> {
        if (id.0 as usize) + 1 < self.p.nodes.len() {
            self.newest_repushed = self.newest_repushed.max(id.0);
        }
        self.newest_repushed_ever = self.newest_repushed_ever.max(id.0);
        self.push_id(id)
    }

    /// Moves the keys and values above stack position `base` into dict `target`.
    pub(super) fn set_items(&mut self, target: NodeId, base: usize) -> Res<()> {
        let values = self.stack.get(base..).unwrap_or_default();
        let newest = values.iter().map(|v| v.0).max().unwrap_or(0);
        if newest > target.0 {
            self.newest_contained = self.newest_contained.max(newest);
        }
        let grown = match self.p.nodes.get_mut(target.index()) {
            Some(Slot::Dict(seq)) => {
                let pairs = values.chunks_exact(2).map(pair);
                extend(&mut self.p.pairs, seq, pairs, (NONE_ID, NONE_ID))
            }
            Some(Slot::Folded(_)) => {
                return Err(self.malformed(
                    "sets items on a dict already read whole (a trace entry, read as soon as \
                 it is filled)"
                        .into(),
                ));
            }
            _ => return Err(self.wrong_target(target, "a dict")),
        };
        if let Err(full) = grown {
            return Err(self.full(full));
        }
        self.stack.truncate(base);
        Ok(())
    }

    pub(super) fn dict(&mut self) -> Res<()> {
        let base = self.pop_mark()?;
        let values = self.stack.get(base..).unwrap_or_default();
        if values.len() % 2 != 0 {
            return Err(self.odd_items());
        }
        let seq = match at_tail(&mut self.p.pairs, values.chunks_exact(2).map(pair)) {
            Ok(seq) => seq,
            Err(full) => return Err(self.full(full)),
        };
        self.stack.truncate(base);
        self.push(Slot::Dict(seq))
    }

    // ---- The memo ----

    /// The key `MEMOIZE` gives.
    pub(super) fn next_memo_key(&self) -> u64 {
        (self.memo.len() + self.sparse_memo.len()) as u64
    }

    pub(super) fn put(&mut self, key: u64) -> Res<()> {
        let value = self.top()?;
        self.put_value(key, value)
    }

    /// Memoizes `value` under `key`.
    pub(super) fn put_value(&mut self, key: u64, value: NodeId) -> Res<()> {
        let newest = value.index() + 1 == self.p.nodes.len();
        self.memo_records.note(value, key, newest);
        let dense_len = self.memo.len();
        match usize::try_from(key) {
            Ok(k) if k < dense_len => {
                if let Some(slot) = self.memo.get_mut(k) {
                    *slot = value;
                }
            }
            Ok(k) if k == dense_len => {
                if let Err(full) = room(&mut self.memo, 1) {
                    return Err(self.full(full));
                }
                self.memo.push(value);
                if !self.sparse_memo.is_empty() {
                    self.sparse_memo.remove(&key);
                }
            }
            _ => {
                if self.sparse_memo.try_reserve(1).is_err() {
                    return Err(self.out_of_memory());
                }
                self.sparse_memo.insert(key, value);
            }
        }
        Ok(())
    }

    pub(super) fn get(&mut self, key: u64) -> Res<()> {
        let dense = usize::try_from(key).ok().and_then(|k| self.memo.get(k));
        match dense.or_else(|| self.sparse_memo.get(&key)) {
            Some(&id) => self.repush(id),
            None => Err(self.malformed(format!("asks for memo key {key}, which was never stored"))),
        }
    }

    pub(super) fn text_memo_key(&mut self) -> Res<u64> {
        let line = self.line()?;
        let line = line.as_slice();
        match std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            Some(key) => Ok(key),
            None => Err(self.malformed(format!(
                "has a memo key that is not a number: {}",
                shown(line)
            ))),
        }
    }
}

/// Items Python's pickler writes in one `APPENDS` at most: a shorter batch is a list's last.
const PYTHON_BATCH_ITEMS: usize = 1000;

fn pair(chunk: &[NodeId]) -> (NodeId, NodeId) {
    match *chunk {
        [key, value] => (key, value),
        _ => (NONE_ID, NONE_ID), // chunks_exact(2) never yields another length
    }
}
