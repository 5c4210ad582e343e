//! Search: the bands whose allocating op or allocation stack contains a text (any case),
//! and the bytes of those live over time — the curve a view draws over the dimmed rest.

use super::BandLayout;
use super::keys::op_running;
use crate::analysis::live::frame_label;
use crate::model::Recording;
use crate::timeline::{DeviceTimeline, Timeline};

/// The bands a search matched.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matches {
    /// The text searched for.
    pub query: String,
    /// Whether each band matched (parallel to the device's allocations).
    pub matched: Vec<bool>,
    /// Number of bands matched.
    pub count: usize,
    /// The bytes of the matching bands live after each change, as steps (time, bytes).
    pub curve: Vec<(i64, i64)>,
}

/// The bands of `d` whose op (the op running when allocated) or allocation stack (a frame
/// "file:line function") contains `query`, case-insensitively, and their live bytes over
/// time. Ops and stacks are tested once each, however many bands share them.
pub fn search(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
    layout: &BandLayout,
    query: &str,
) -> Matches {
    let needle = query.to_lowercase();
    let mut ops: rustc_hash::FxHashMap<String, bool> = Default::default();
    let mut stacks: rustc_hash::FxHashMap<u32, bool> = Default::default();
    let matched: Vec<bool> = (0..d.allocations.len())
        .map(|i| {
            let stack = d
                .allocations
                .get(i)
                .and_then(|a| rec.mem_events.get(a.alloc_event as usize))
                .and_then(|e| e.stack);
            let in_stack = stack.is_some_and(|s| {
                *stacks.entry(s.index()).or_insert_with(|| {
                    rec.stack(Some(s))
                        .iter()
                        .any(|f| frame_label(rec, f).to_lowercase().contains(&needle))
                })
            });
            // Only a real op's name matches: the placeholders of a band without one
            // ("(outside any op)", "(no ops recorded)") matched "op" or "any" (issue 37:
            // the search lit bands that had nothing to do with it).
            in_stack
                || op_running(rec, timeline, d, i).is_some_and(|op| {
                    *ops.entry(op.to_owned())
                        .or_insert_with(|| op.to_lowercase().contains(&needle))
                })
        })
        .collect();
    let curve = curve_of(d, layout, &matched);
    Matches {
        query: query.to_owned(),
        count: matched.iter().filter(|&&m| m).count(),
        matched,
        curve,
    }
}

/// The live bytes of the matched bands over time: their allocations (in allocation order)
/// and frees (in free order) merged, one step per time.
fn curve_of(d: &DeviceTimeline, layout: &BandLayout, matched: &[bool]) -> Vec<(i64, i64)> {
    let is = |i: usize| matched.get(i).copied().unwrap_or(false);
    let allocs = d
        .allocations
        .iter()
        .enumerate()
        .filter(|&(i, _)| is(i))
        .map(|(_, a)| (a.alloc_ns, a.bytes));
    let frees = layout
        .by_free()
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| is(i))
        .filter_map(|i| d.allocations.get(i))
        .filter_map(|a| Some((a.free_ns.get()?, -a.bytes)));
    let mut curve: Vec<(i64, i64)> = Vec::new();
    let mut live = 0i64;
    let (mut allocs, mut frees) = (allocs.peekable(), frees.peekable());
    loop {
        let next = match (allocs.peek(), frees.peek()) {
            (Some(a), Some(f)) if f.0 <= a.0 => frees.next(),
            (Some(_), _) => allocs.next(),
            (None, Some(_)) => frees.next(),
            (None, None) => break,
        };
        let Some((t, delta)) = next else { break };
        live += delta;
        match curve.last_mut() {
            Some(last) if last.0 == t => last.1 = live,
            _ => curve.push((t, live)),
        }
    }
    curve
}
