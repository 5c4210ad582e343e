//! The layout, index, search and icicle on real traces and snapshots: every number checked
//! against the allocator's own totals (`Total Allocated`, the snapshot's replayed totals)
//! or a brute-force walk of the allocations.

use std::path::PathBuf;

use super::*;
use crate::analysis::live::{GroupBy, live_at, pick_device};
use crate::{LoadOptions, Recording, Timeline};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Real inputs with allocations: two allocator snapshots with stacks, the CPU training
/// sample, and the largest real H100 trace (13,474 memory events).
fn inputs() -> Vec<PathBuf> {
    let shared = repo().join("../shared/traces/real");
    vec![
        repo().join("samples/cs336-transformer-snapshot.pickle"),
        repo().join("samples/transformer-lm-train-cpu.json.gz"),
        shared.join("snapshot-cs336-magma27/memory_snapshot.pickle"),
        shared.join(
            "tracelens-h100-owlv2-large/google_owlv2-large-patch14-ensemble__1016001.json.gz",
        ),
    ]
}

fn load(path: &std::path::Path) -> (Recording, Timeline, usize) {
    let rec = crate::load(path, LoadOptions::default()).expect("loads");
    let timeline = Timeline::build(&rec);
    let device = pick_device(&rec, &timeline, None).expect("a device with allocations");
    (rec, timeline, device as usize)
}

/// About `n` instants spread over the device's events.
fn instants(d: &crate::timeline::DeviceTimeline, n: usize) -> Vec<i64> {
    let step = (d.points.len() / n).max(1);
    d.points.iter().step_by(step).map(|p| p.time_ns).collect()
}

#[test]
fn bands_stack_in_allocation_order_from_before_the_trace_to_the_allocated_total() {
    for path in inputs() {
        let (rec, timeline, device) = load(&path);
        let d = &timeline.devices[device];
        let layout = BandLayout::build(&rec, d);
        assert!(layout.len() > 100, "{}", path.display());
        for t in instants(d, 300) {
            // The allocator's total then, from the trace itself.
            let allocated = d.at(t).expect("a point").allocated_bytes;
            // Each live band starts where the one allocated before it ends, the first on
            // top of the bytes allocated before the trace.
            let mut top = layout.before_trace_at(t);
            for (i, a) in d.allocations.iter().enumerate() {
                if a.alloc_ns <= t && a.free_ns.get().is_none_or(|f| f > t) {
                    assert_eq!(
                        layout.offset_at(d, i, t),
                        top,
                        "{} band {i} at {t}",
                        path.display()
                    );
                    top += a.bytes;
                }
            }
            assert_eq!(top, allocated, "{} at {t}", path.display());
        }
    }
}

#[test]
fn a_band_keeps_its_offset_until_a_band_below_it_is_freed() {
    let (rec, timeline, device) = load(&inputs()[0]);
    let d = &timeline.devices[device];
    let layout = BandLayout::build(&rec, d);
    let mut checked = 0;
    for i in 0..layout.len() {
        let mut prev = layout.start_offset(i);
        for m in layout.moves(d, i) {
            // Every move is down, and at the free of an allocation made before this one
            // (or a change of the bytes allocated before the trace).
            let below_freed = d.allocations[..i]
                .iter()
                .any(|b| b.free_ns.get() == Some(m.time_ns));
            let rest_changed = layout.before_trace.iter().any(|s| s.0 == m.time_ns);
            assert!(
                below_freed || rest_changed,
                "band {i} moved at {}",
                m.time_ns
            );
            if !rest_changed {
                assert!(m.offset_bytes < prev, "band {i} moved up at {}", m.time_ns);
            }
            prev = m.offset_bytes;
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn the_index_returns_exactly_the_bands_a_view_asks_for() {
    let (rec, timeline, device) = load(&inputs()[3]);
    let d = &timeline.devices[device];
    let layout = BandLayout::build(&rec, d);
    let (start, end) = (d.points[0].time_ns, layout.end_ns);
    let span = end - start;
    for (k, (min_bytes, min_life_ns)) in [
        (0, 0),
        (1 << 20, 0),
        (0, span / 1000),
        (1 << 16, span / 100),
    ]
    .into_iter()
    .enumerate()
    {
        let t0_ns = start + span * k as i64 / 7;
        let q = BandQuery {
            t0_ns,
            t1_ns: t0_ns + span / 5,
            min_bytes,
            min_life_ns,
        };
        let mut got = Vec::new();
        layout.index.visible(&q, &mut got);
        got.sort_unstable();
        let want: Vec<u32> = (0..d.allocations.len())
            .filter(|&i| {
                let a = &d.allocations[i];
                let e = a.free_ns.get().unwrap_or(end);
                a.alloc_ns <= q.t1_ns
                    && e >= q.t0_ns
                    && a.bytes >= min_bytes
                    && e - a.alloc_ns >= min_life_ns
            })
            .map(|i| i as u32)
            .collect();
        assert_eq!(got, want, "query {q:?}");
        assert!(!want.is_empty());
    }
}

#[test]
fn a_search_matches_by_op_or_stack_and_its_curve_sums_the_matching_live_bytes() {
    for (path, query) in [(&inputs()[3], "aten::addmm"), (&inputs()[0], "model.py")] {
        let (rec, timeline, device) = load(path);
        let d = &timeline.devices[device];
        let layout = BandLayout::build(&rec, d);
        let m = search(&rec, &timeline, d, &layout, query);
        assert!(
            m.count > 0 && m.count < d.allocations.len(),
            "{query}: {}",
            m.count
        );
        for t in instants(d, 200) {
            let want: i64 = d
                .allocations
                .iter()
                .enumerate()
                .filter(|(i, a)| {
                    m.matched[*i] && a.alloc_ns <= t && a.free_ns.get().is_none_or(|f| f > t)
                })
                .map(|(_, a)| a.bytes)
                .sum();
            let n = m.curve.partition_point(|s| s.0 <= t);
            let got = n.checked_sub(1).map_or(0, |k| m.curve[k].1);
            assert_eq!(got, want, "{query} at {t}");
        }
    }
}

#[test]
fn the_icicle_sums_to_the_allocated_bytes_at_the_instant() {
    for path in inputs() {
        let (rec, timeline, device) = load(&path);
        let d = &timeline.devices[device];
        for t in instants(d, 5) {
            let tree = flame_at(&rec, &timeline, device as u16, t);
            let allocated = d.at(t).expect("a point").allocated_bytes;
            let root = tree.root().expect("a root");
            assert_eq!(root.bytes, allocated, "{} at {t}", path.display());
            assert_eq!(tree.allocated_bytes, allocated);
            let children: i64 = root
                .children
                .iter()
                .map(|&c| tree.nodes[c as usize].bytes)
                .sum();
            assert_eq!(children, allocated, "{} at {t}", path.display());
            // A frame holds at least what its callees hold.
            for n in &tree.nodes {
                let below: i64 = n
                    .children
                    .iter()
                    .map(|&c| tree.nodes[c as usize].bytes)
                    .sum();
                assert!(n.bytes >= below || n.bytes < 0, "{}", n.name);
            }
            // Each node's breadcrumb runs from the root down its parents, a level a step.
            for (id, n) in tree.nodes.iter().enumerate().step_by(11) {
                let path = tree.path_to(id as u32);
                assert_eq!(path.first(), Some(&0));
                assert_eq!(path.last(), Some(&(id as u32)));
                assert_eq!(path.len() as u32, n.depth + 1, "{}", n.name);
                for w in path.windows(2) {
                    assert_eq!(tree.nodes[w[1] as usize].parent, Some(w[0]));
                }
            }
            assert!(tree.path_to(tree.nodes.len() as u32).is_empty());
            // And the live groups by stack agree on the total.
            let live = live_at(&rec, &timeline, device as u16, t, GroupBy::Stack);
            assert_eq!(live.groups.iter().map(|g| g.bytes).sum::<i64>(), root.bytes);
        }
    }
}

/// memory_viz's walk, kept whole: every band's moves recorded as the stack changes.
fn walked_moves(rec: &Recording, d: &crate::timeline::DeviceTimeline) -> Vec<Vec<Move>> {
    use crate::model::MemEventKind;
    let mut moves = vec![Vec::new(); d.allocations.len()];
    let (mut stack, mut at) = (Vec::<(u32, i64)>::new(), std::collections::HashMap::new());
    let (mut next, mut seen, mut rest) = (0u32, 0i64, 0i64);
    for p in &d.points {
        let e = &rec.mem_events[p.event as usize];
        let (removed, added) = match (e.kind, e.addr.get()) {
            (MemEventKind::Alloc, Some(addr)) => (at.insert(addr, next), Some(next)),
            (MemEventKind::Free, Some(addr)) => (at.remove(&addr), None),
            _ => (None, None),
        };
        next += u32::from(added.is_some());
        let bytes = |id: u32| d.allocations[id as usize].bytes;
        let pos = removed.map_or(stack.len(), |id| {
            let k = stack.iter().position(|s| s.0 == id).expect("live");
            stack.remove(k);
            k
        });
        let gone = removed.map_or(0, bytes);
        seen += added.map_or(0, bytes) - gone;
        let delta = p.allocated_bytes - seen - rest;
        rest += delta;
        for (k, (id, offset)) in stack.iter_mut().enumerate() {
            let shift = delta - if k >= pos { gone } else { 0 };
            if shift != 0 {
                *offset += shift;
                moves[*id as usize].push(Move {
                    time_ns: p.time_ns,
                    offset_bytes: *offset,
                });
            }
        }
        if let Some(id) = added {
            stack.push((id, p.allocated_bytes - bytes(id)));
        }
    }
    moves
}

#[test]
fn each_bands_moves_are_the_ones_memory_vizs_walk_records() {
    let mut paths = inputs();
    paths.push(
        repo().join("../shared/traces/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz"),
    );
    for path in paths {
        let (rec, timeline, device) = load(&path);
        let d = &timeline.devices[device];
        let layout = BandLayout::build(&rec, d);
        let walked = walked_moves(&rec, d);
        let mut total = 0;
        for (i, want) in walked.iter().enumerate() {
            assert_eq!(layout.moves(d, i), *want, "{} band {i}", path.display());
            total += want.len();
        }
        // The HTA trace: 13,385 allocations make 1.2 M moves, none of them stored.
        assert!(total > 0, "{}", path.display());
    }
}

#[test]
fn a_views_moves_are_the_bands_moves_one_a_column() {
    let (rec, timeline, device) = load(
        &repo().join("../shared/traces/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz"),
    );
    let d = &timeline.devices[device];
    let layout = BandLayout::build(&rec, d);
    let (start, end) = (d.points[0].time_ns, layout.end_ns);
    let mut checked = 0;
    for i in (0..layout.len()).step_by(97) {
        let exact = layout.moves(d, i);
        // At a nanosecond a column: every move, those at one instant as one.
        let mut by_time: Vec<Move> = Vec::new();
        for m in &exact {
            match by_time.last_mut() {
                Some(last) if last.time_ns == m.time_ns => *last = *m,
                _ => by_time.push(*m),
            }
        }
        let (at_start, moves) = layout.moves_in(d, i, (start, end), 1);
        assert_eq!(moves, by_time, "band {i}");
        assert_eq!(at_start, layout.offset_at(d, i, start), "band {i}");
        // Coarser: just before each column's end, the drawn offset is the band's offset.
        for (t0, t1, columns) in [
            (start, end, 1_600),
            (start + (end - start) / 3, start + (end - start) / 2, 700),
        ] {
            let res = (t1 - t0) / columns;
            let (at_t0, drawn) = layout.moves_in(d, i, (t0, t1), res);
            assert!(
                drawn.len() <= columns as usize + 1,
                "band {i}: {}",
                drawn.len()
            );
            let a = &d.allocations[i];
            let life_end = a.free_ns.get().unwrap_or(end).min(t1);
            let mut t = t0 + res - 1;
            while t < life_end {
                if t >= a.alloc_ns {
                    let n = drawn.partition_point(|m| m.time_ns <= t);
                    let shown = n.checked_sub(1).map_or(at_t0, |k| drawn[k].offset_bytes);
                    assert_eq!(shown, layout.offset_at(d, i, t), "band {i} at {t}");
                    checked += 1;
                }
                t += res;
            }
        }
    }
    assert!(checked > 5_000, "{checked}");
}

#[test]
fn a_bands_offset_at_any_time_is_where_its_moves_left_it() {
    for (path, every) in [
        (repo().join("samples/cs336-transformer-snapshot.pickle"), 1),
        (
            repo().join(
                "../shared/traces/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz",
            ),
            53,
        ),
    ] {
        let (rec, timeline, device) = load(&path);
        let d = &timeline.devices[device];
        let layout = BandLayout::build(&rec, d);
        let mut checked = 0;
        for i in (0..layout.len()).step_by(every) {
            let moves = layout.moves(d, i);
            let walked = |t: i64| {
                let n = moves.partition_point(|m| m.time_ns <= t);
                n.checked_sub(1)
                    .map_or(layout.start_offset(i), |k| moves[k].offset_bytes)
            };
            let alloc_ns = d.allocations[i].alloc_ns;
            let times = moves.iter().flat_map(|m| [m.time_ns - 1, m.time_ns]);
            for t in std::iter::once(alloc_ns).chain(times) {
                assert_eq!(layout.offset_at(d, i, t), walked(t), "band {i} at {t}");
                checked += 1;
            }
        }
        assert!(checked > 1_000, "{}: {checked}", path.display());
    }
}

#[test]
fn a_search_matches_no_band_by_the_placeholder_of_a_missing_op() {
    // GIVEN a snapshot (no ops) and a trace (allocations outside any op)
    for path in inputs() {
        let (rec, timeline, device) = load(&path);
        let d = &timeline.devices[device];
        let layout = BandLayout::build(&rec, d);
        // WHEN searched for words of "(outside any op)" and "(no ops recorded)"
        for query in ["outside any", "no ops recorded"] {
            let m = search(&rec, &timeline, d, &layout, query);
            // THEN only a real op or stack frame could match: none says these
            assert_eq!(m.count, 0, "{query:?} on {}", path.display());
        }
    }
}
