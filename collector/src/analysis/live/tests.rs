//! Live groups on small synthetic recordings (GIVEN / WHEN / THEN, exact bytes); every
//! real trace and snapshot is checked in `tests/e2e/live_sums.rs`.

use super::*;
use crate::model::*;
use crate::parse::SourceFormat;

/// A one-device CPU recording of (time, bytes, addr, stack) events; `Total Allocated`
/// starts at `before_bytes`, or is left out (a legacy trace) when `None`.
fn recording(events: &[(i64, i64, Option<u64>, Option<u32>)], before: Option<i64>) -> Recording {
    let mut rec = Recording::empty(SourceFormat::TorchChromeTrace, "test");
    rec.device_index(DeviceId::CPU);
    rec.thread_index("1", "1");
    let frame = |rec: &mut Recording, file: &str, line: u32, name: &str| Frame {
        file: rec.strings.intern(file),
        line,
        name: rec.strings.intern(name),
    };
    // Stack 0: torch inside the user's model.py, called from train.py; stack 1: train.py.
    let stack0 = vec![
        frame(&mut rec, "??", 0, "c10::alloc"),
        frame(&mut rec, "/site-packages/torch/nn/functional.py", 9, "silu"),
        frame(&mut rec, "/home/me/model.py", 42, "forward"),
        frame(&mut rec, "/home/me/train.py", 7, "main"),
    ];
    let stack1 = vec![frame(&mut rec, "/home/me/train.py", 8, "main")];
    // Stacks 2 and 3: the same three user frames, called from two places further out.
    let mut deep = |outer: u32| {
        vec![
            frame(&mut rec, "a.py", 1, "f"),
            frame(&mut rec, "b.py", 2, "g"),
            frame(&mut rec, "c.py", 3, "h"),
            frame(&mut rec, "d.py", outer, "main"),
        ]
    };
    let (stack2, stack3) = (deep(4), deep(5));
    rec.stacks = vec![stack0, stack1, stack2, stack3];
    let mut total = before.unwrap_or(0);
    for &(time_ns, bytes, addr, stack) in events {
        total += bytes;
        rec.mem_events.push(MemEvent {
            addr: addr.into(),
            total_allocated_bytes: before.map(|_| total).into(),
            stack: stack.map(StackId::new),
            ..MemEvent::sized(time_ns, bytes)
        });
    }
    rec.meta.end_ns = 1000;
    rec
}

fn groups_at(rec: &Recording, time_ns: i64, by: GroupBy) -> LiveAt {
    let timeline = Timeline::build(rec);
    live_at(rec, &timeline, 0, time_ns, by)
}

fn sites(live: &LiveAt) -> Vec<(GroupKind, &str, i64)> {
    live.groups
        .iter()
        .map(|g| (g.kind, g.site.as_str(), g.bytes))
        .collect()
}

#[test]
fn bytes_from_before_the_trace_are_a_group_until_their_free() {
    // GIVEN 1000 bytes allocated before the trace, 300 of them at 0xA freed at t=30 (never
    // seen allocated), and two allocations seen: 100 (stack 0) and 50 (stack 1).
    let rec = recording(
        &[
            (10, 100, Some(0x1), Some(0)),
            (20, 50, Some(0x2), Some(1)),
            (30, -300, Some(0xA), None),
        ],
        Some(1000),
    );
    // WHEN asked at t=25, before the free
    let live = groups_at(&rec, 25, GroupBy::Site);
    // THEN the 1000 bytes from before are one group, and all sum to 1150 allocated
    assert_eq!(live.allocated_bytes, Some(1150));
    assert_eq!(
        sites(&live),
        vec![
            (
                GroupKind::BeforeTrace,
                "allocated before the trace began",
                1000
            ),
            (
                GroupKind::Stack,
                "/home/me/model.py:42 forward ← /home/me/train.py:7 main",
                100
            ),
            (GroupKind::Stack, "/home/me/train.py:8 main", 50),
        ]
    );
    assert!((live.groups[0].share - 1000.0 / 1150.0).abs() < 1e-12);
    // and the stack is whole, user code where the site begins
    assert_eq!(
        live.groups[1].frames,
        vec![
            "/site-packages/torch/nn/functional.py:9 silu",
            "/home/me/model.py:42 forward",
            "/home/me/train.py:7 main"
        ]
    );
    assert_eq!(live.groups[1].first_user_frame, 1);
    assert_eq!(
        live.groups[1].short_site(),
        "model.py:42 forward ← train.py:7 main"
    );
    // WHEN asked after the free THEN the group holds 700
    let live = groups_at(&rec, 40, GroupBy::Site);
    assert_eq!(live.allocated_bytes, Some(850));
    assert_eq!(live.groups[0].bytes, 700);
    assert_eq!(live.groups.iter().map(|g| g.bytes).sum::<i64>(), 850);
}

#[test]
fn a_rebuilt_total_counts_frees_from_before_the_trace_as_a_negative_group() {
    // GIVEN a legacy trace (no totals): 100 allocated at 0x1, then 300 freed at 0xA that was
    // never seen allocated
    let rec = recording(
        &[(10, 100, Some(0x1), None), (30, -300, Some(0xA), None)],
        None,
    );
    // WHEN asked at the end THEN the rebuilt total (-200) is 100 seen and -300 freed
    let live = groups_at(&rec, 40, GroupBy::Op);
    assert_eq!(live.allocated_bytes, Some(-200));
    assert_eq!(
        sites(&live),
        vec![
            // A recording without ops: no op to be outside of (issue 37).
            (GroupKind::Op, "(no ops recorded)", 100),
            (
                GroupKind::FreedFromBeforeTrace,
                "freed here, allocated before the trace",
                -300
            ),
        ]
    );
}

#[test]
fn allocations_without_addresses_are_one_group() {
    // GIVEN a legacy trace without addresses: 100 and 50 allocated, 100 freed
    let rec = recording(
        &[
            (10, 100, None, None),
            (20, 50, None, None),
            (30, -100, None, None),
        ],
        None,
    );
    // WHEN asked at t=25 THEN 150 bytes, all without addresses
    let live = groups_at(&rec, 25, GroupBy::Site);
    assert_eq!(
        sites(&live),
        vec![(
            GroupKind::WithoutAddress,
            "allocations without block addresses",
            150
        )]
    );
}

#[test]
fn stacks_group_whole_and_the_limit_folds_the_rest_into_one_entry() {
    // GIVEN four allocations: two with stack 0, one with stack 1, one without a stack
    let rec = recording(
        &[
            (10, 100, Some(0x1), Some(0)),
            (11, 60, Some(0x2), Some(0)),
            (12, 50, Some(0x3), Some(1)),
            (13, 7, Some(0x4), None),
        ],
        Some(1000),
    );
    // WHEN grouped by stack
    let live = groups_at(&rec, 20, GroupBy::Stack);
    let bytes: Vec<i64> = live.groups.iter().map(|g| g.bytes).collect();
    assert_eq!(bytes, vec![1000, 160, 50, 7]);
    assert_eq!(live.groups[3].site, "(no stack recorded)");
    assert_eq!(live.groups[1].blocks, 2);
    // WHEN cut to one group of allocations seen THEN the remainder stays and the other two
    // are one "2 more groups" entry, so the sum holds
    let folded = fold_after(live.groups, 1);
    assert_eq!(
        folded
            .iter()
            .map(|g| (g.kind, g.site.as_str(), g.bytes, g.blocks))
            .collect::<Vec<_>>(),
        vec![
            (
                GroupKind::BeforeTrace,
                "allocated before the trace began",
                1000,
                0
            ),
            (
                GroupKind::Stack,
                "/home/me/model.py:42 forward ← /home/me/train.py:7 main",
                160,
                2
            ),
            (GroupKind::More, "2 more groups", 57, 2),
        ]
    );
    assert_eq!(folded.iter().map(|g| g.bytes).sum::<i64>(), 1217);
}

#[test]
fn sites_are_three_user_frames_and_stacks_are_whole() {
    // GIVEN two allocations whose stacks differ only in their fourth user frame
    let rec = recording(
        &[(10, 100, Some(0x1), Some(2)), (11, 60, Some(0x2), Some(3))],
        Some(0),
    );
    // WHEN grouped by site THEN they are one group named by three frames, whose frames
    // are the first allocation's whole stack
    let live = groups_at(&rec, 20, GroupBy::Site);
    assert_eq!(
        sites(&live),
        vec![(GroupKind::Stack, "a.py:1 f ← b.py:2 g ← c.py:3 h", 160)]
    );
    assert_eq!(live.groups[0].frames.len(), 4);
    // WHEN grouped by stack THEN they are two
    let live = groups_at(&rec, 20, GroupBy::Stack);
    assert_eq!(
        sites(&live),
        vec![
            (
                GroupKind::Stack,
                "a.py:1 f ← b.py:2 g ← c.py:3 h ← d.py:4 main",
                100
            ),
            (
                GroupKind::Stack,
                "a.py:1 f ← b.py:2 g ← c.py:3 h ← d.py:5 main",
                60
            ),
        ]
    );
}
