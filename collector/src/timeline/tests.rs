use super::*;
use crate::model::*;

/// (time, bytes, addr, total allocated, total reserved)
type RawMem = (i64, i64, Option<u64>, Option<i64>, Option<i64>);

/// A recording with the given memory events (all on device 0) and ops.
pub(crate) fn recording(
    device: DeviceId,
    events: &[RawMem],
    ops: &[(&str, i64, i64)],
) -> Recording {
    let mut strings = StringTable::default();
    let ops = ops
        .iter()
        .map(|&(name, s, e)| OpSpan {
            name: strings.intern(name),
            category: OpCategory::CpuOp,
            thread: 0,
            start_ns: s,
            end_ns: e,
        })
        .collect();
    let mem_events = events
        .iter()
        .map(|&(t, bytes, addr, total, reserved)| MemEvent {
            addr: addr.into(),
            total_allocated_bytes: total.into(),
            total_reserved_bytes: reserved.into(),
            ..MemEvent::sized(t, bytes)
        })
        .collect();
    Recording {
        meta: Meta {
            format: SourceFormat::TorchChromeTrace,
            era: String::new(),
            compressed: false,
            content_bytes: 0,
            base_time_ns: None,
            start_ns: 0,
            end_ns: 100,
            event_order: false,
            distributed: None,
            properties: Default::default(),
            events_read: 0,
            spans_left_out: 0,
            memory_events_in_ops: None,
        },
        strings,
        devices: vec![DeviceInfo {
            key: device,
            name: None,
            total_memory_bytes: None,
        }],
        threads: vec![ThreadInfo {
            pid: "1".into(),
            tid: "1".into(),
            name: None,
        }],
        mem_events,
        ops,
        compact_ops: Default::default(),
        steps: vec![],
        stacks: vec![],
        allocator: None,
        oom_details: vec![],
        gpu_samples: vec![],
        host_samples: vec![],
        gpu_process_samples: vec![],
        storage_tags: vec![],
        notes: vec![],
        diagnostics: Diagnostics::default(),
    }
}

#[test]
fn reconstructs_totals_and_pairs_by_address() {
    // GIVEN allocations without totals, out of time order, and a free of an unseen block.
    let rec = recording(
        DeviceId::cuda(0),
        &[
            (30, -100, Some(1), None, None),
            (10, 100, Some(1), None, None),
            (20, 50, Some(2), None, None),
            (40, -8, Some(9), None, None),
        ],
        &[("outer", 0, 50), ("inner", 15, 25)],
    );
    // WHEN the timeline is built
    let tl = Timeline::build(&rec);
    let d = &tl.devices[0];
    // THEN the curve is the running sum in time order and the peak is found
    let curve: Vec<(i64, i64)> = d
        .points
        .iter()
        .map(|p| (p.time_ns, p.allocated_bytes))
        .collect();
    assert_eq!(curve, vec![(10, 100), (20, 150), (30, 50), (40, 42)]);
    assert_eq!(d.totals, TotalsSource::Reconstructed);
    assert_eq!(d.peak_allocated, Some(1));
    assert_eq!(d.unmatched_frees, 1);
    let live: Vec<u64> = d.live_at(25).map(|a| a.addr).collect();
    assert_eq!(live, vec![1, 2]);
    let live: Vec<u64> = d.live_at(30).map(|a| a.addr).collect();
    assert_eq!(live, vec![2]);
    assert_eq!(d.at(25).map(|p| p.allocated_bytes), Some(150));
    assert_eq!(d.at(5), None);
    // and the op running at the peak is the innermost one
    let op = tl.ops.running_at(0, 20).expect("op");
    assert_eq!(
        rec.op_name(rec.ops.get(op as usize).expect("an op")),
        "inner"
    );
    let op = tl.ops.running_at(0, 26).expect("op");
    assert_eq!(
        rec.op_name(rec.ops.get(op as usize).expect("an op")),
        "outer"
    );
    assert_eq!(tl.ops.running_at(0, 60), None);
}

#[test]
fn trace_totals_win_over_running_sums() {
    let rec = recording(
        DeviceId::cuda(0),
        &[
            (1, 10, Some(1), Some(1000), Some(4096)),
            (2, 20, Some(2), Some(1020), Some(8192)),
            (3, -10, Some(1), Some(1010), Some(8192)),
        ],
        &[],
    );
    let tl = Timeline::build(&rec);
    let d = &tl.devices[0];
    assert_eq!(d.totals, TotalsSource::Trace);
    assert_eq!(
        { d.points[d.peak_allocated.expect("peak")].allocated_bytes },
        1020
    );
    assert_eq!(
        d.points[d.peak_reserved.expect("peak")]
            .reserved_bytes
            .get(),
        Some(8192)
    );
    assert_eq!(d.peak_reserved, Some(1));
}

#[test]
fn the_state_at_each_time_is_the_state_at_it_in_any_order() {
    // Events at repeated times, so "the last point at or before" has ties to get right.
    let events: Vec<RawMem> = (0..300)
        .map(|i| {
            (
                i / 3 * 10,
                if i % 2 == 0 { 512 } else { -256 },
                None,
                None,
                None,
            )
        })
        .collect();
    let rec = recording(DeviceId::cuda(0), &events, &[]);
    let t = Timeline::build(&rec);
    let d = &t.devices[0];
    let rising: Vec<i64> = (-20..1_020).step_by(7).collect();
    let falling: Vec<i64> = rising.iter().rev().copied().collect();
    let mixed: Vec<i64> = rising.iter().map(|&x| (x * 7_919) % 1_040 - 20).collect();
    for times in [
        rising,
        falling,
        mixed,
        vec![i64::MIN, i64::MAX, 0, 990, 990],
    ] {
        let want: Vec<_> = times.iter().map(|&x| d.at(x)).collect();
        let got: Vec<_> = d.at_each(times.iter().copied()).collect();
        assert_eq!(got, want, "{times:?}");
    }
    assert!(d.at_each([5, 995]).all(|p| p.is_some()));
}

#[test]
fn a_curve_point_is_28_bytes() {
    // 40 with the reserved bytes as `Option<i64>` (`model::Total`), 32 aligned to 8: one
    // point a memory event.
    assert_eq!(std::mem::size_of::<super::SeriesPoint>(), 28);
}

#[test]
fn an_allocation_is_40_bytes() {
    // 48 with the free time as `Option<i64>`: see `FreedAt`.
    assert_eq!(std::mem::size_of::<Allocation>(), 40);
    assert_eq!(FreedAt::from(7).get(), Some(7));
    assert_eq!(FreedAt::LIVE_AT_END.get(), None);
}
