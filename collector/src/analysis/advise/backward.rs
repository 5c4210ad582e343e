//! The run's backward passes: from autograd's engine spans where a trace has them, else
//! from the phases the classifier gave the allocations (allocator snapshots).

use crate::analysis::categories;

/// Backward passes where no span marks them (allocator snapshots): each run of
/// allocations the classifier puts in backward, from its first to its last, in time order.
pub(super) fn from_phases(
    allocations: &[crate::timeline::Allocation],
    classified: &[categories::Classified],
) -> Vec<(i64, i64)> {
    let mut order: Vec<(i64, bool)> = allocations
        .iter()
        .zip(classified)
        .map(|(a, c)| (a.alloc_ns, c.phase == categories::Phase::Backward))
        .collect();
    order.sort_unstable_by_key(|&(t, _)| t);
    let mut out: Vec<(i64, i64)> = Vec::new();
    let mut open: Option<(i64, i64)> = None;
    for (t, backward) in order {
        match (backward, open.as_mut()) {
            (true, Some(w)) => w.1 = t,
            (true, None) => open = Some((t, t)),
            (false, Some(_)) => out.extend(open.take()),
            (false, None) => {}
        }
    }
    out.extend(open);
    out
}

/// Overlapping intervals (nested backward nodes) merged into disjoint ones.
pub(super) fn merge(spans: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}
