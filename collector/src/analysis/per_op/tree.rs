//! Nesting (torch's steps 3–4): events sorted by (start, −end), nested per thread, and
//! same-name only children folded into their parents (`_remove_dup_nodes`).

use super::events::FunctionEvent;
use crate::model::ThreadIdx;

/// Sort events by start, longest first at equal starts, keeping push order for ties (a
/// stable sort, as torch's `sorted`) — through a permutation of 4-byte indices applied in
/// place, so the 48-byte events are never copied into a second buffer (a stable
/// `sort_by_key` on them takes a scratch buffer of half their size).
pub(super) fn sort_in_place(events: &mut [FunctionEvent]) {
    let mut order: Vec<u32> = (0..events.len() as u32).collect();
    order.sort_by_key(|&i| {
        let e = &events[i as usize];
        (e.start_ns, std::cmp::Reverse(e.end_ns))
    });
    // Position k receives the event at order[k]: follow each cycle of the permutation,
    // marking visited positions by setting their entry to u32::MAX.
    for start in 0..order.len() {
        if order[start] == u32::MAX {
            continue;
        }
        let mut k = start;
        loop {
            let from = order[k] as usize;
            order[k] = u32::MAX;
            if from == start {
                break;
            }
            events.swap(k, from);
            k = from;
        }
    }
}

/// Children lists in one flat array: event `i`'s children are
/// `flat[ranges[i].0 .. ranges[i].0 + ranges[i].1]`. Torch only ever *reassigns* a child
/// list (never edits one), so folding is a copy of a range — 8 bytes per event instead
/// of a `Vec` each.
pub(super) struct Tree {
    flat: Vec<u32>,
    ranges: Vec<(u32, u32)>,
    parent: Vec<u32>,
}

const NO_PARENT: u32 = u32::MAX;

impl Tree {
    pub(super) fn children(&self, i: usize) -> &[u32] {
        let (start, len) = self.ranges[i];
        &self.flat[start as usize..(start + len) as usize]
    }
}

/// Per-thread nesting of host events (`_populate_cpu_children`).
pub(super) fn nest(events: &[FunctionEvent]) -> Tree {
    let mut parent = vec![NO_PARENT; events.len()];
    let mut stacks: rustc_hash::FxHashMap<ThreadIdx, Vec<u32>> = Default::default();
    for (i, e) in events.iter().enumerate() {
        if !e.host() {
            continue;
        }
        let stack = stacks.entry(e.thread()).or_default();
        while let Some(&top) = stack.last() {
            let p = &events[top as usize];
            if e.start_ns >= p.end_ns || e.end_ns > p.end_ns {
                stack.pop();
            } else {
                parent[i] = top;
                break;
            }
        }
        stack.push(i as u32);
    }
    // Children in event order, grouped by parent (counting sort).
    let mut counts = vec![0u32; events.len()];
    for &p in &parent {
        if p != NO_PARENT {
            counts[p as usize] += 1;
        }
    }
    let mut ranges = Vec::with_capacity(events.len());
    let mut next = 0u32;
    for &c in &counts {
        ranges.push((next, c));
        next += c;
    }
    let mut flat = vec![0u32; next as usize];
    // `counts` becomes each list's fill position.
    let mut fill = counts;
    for (f, r) in fill.iter_mut().zip(&ranges) {
        *f = r.0;
    }
    for (i, &p) in parent.iter().enumerate() {
        if p != NO_PARENT {
            flat[fill[p as usize] as usize] = i as u32;
            fill[p as usize] += 1;
        }
    }
    drop(fill);
    Tree {
        flat,
        ranges,
        parent,
    }
}

/// `_remove_dup_nodes`: fold an only child that has its parent's name into the parent,
/// pass after pass until a pass folds nothing. Returns which events remain.
pub(super) fn fold_duplicates(events: &[FunctionEvent], tree: &mut Tree) -> Vec<bool> {
    let mut alive = vec![true; events.len()];
    loop {
        let mut folded = Vec::new();
        for idx in 0..events.len() {
            let p = tree.parent[idx];
            if !alive[idx] || p == NO_PARENT {
                continue;
            }
            let p = p as usize;
            if events[p].name == events[idx].name && tree.ranges[p].1 == 1 {
                let (start, len) = tree.ranges[idx];
                for k in start..start + len {
                    let g = tree.flat[k as usize];
                    tree.parent[g as usize] = p as u32;
                }
                tree.ranges[p] = (start, len);
                folded.push(idx);
            }
        }
        if folded.is_empty() {
            return alive;
        }
        for idx in folded {
            alive[idx] = false;
        }
    }
}
