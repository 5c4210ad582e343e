//! Folding: dicts handed to a consumer as they are completed, so that the bulk of a pickle
//! (a snapshot's millions of trace entries) need not live in the arena. A folded dict is
//! one slot ([`Node::Folded`]); its pairs are never stored, and the numbers made for it
//! alone are dropped. On a 537 MB snapshot of 6.2M trace entries the arena touched about
//! 150 bytes an entry before, and touching fresh memory is much of what a load costs (page
//! faults: about 2 ms a MB on the shared 2-core VM).
//!
//! The shape Python writes for most such dicts is read whole from the buffer ([`super::fast`]);
//! any other runs opcode by opcode and is offered to the folder at its `SETITEMS`.

use std::io::Read;

use super::arena::Slot;
use super::reader::Parser;
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
#[derive(Default)]
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
