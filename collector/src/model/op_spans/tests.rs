use super::*;

fn span(category: OpCategory, thread: u32, start_ns: i64, end_ns: i64) -> OpSpan {
    OpSpan {
        name: StrId(thread.wrapping_mul(7)),
        category,
        thread,
        start_ns,
        end_ns,
    }
}

#[test]
fn spans_come_back_exactly_whether_they_fit_the_columns_or_not() {
    let base = 1_700_000_000_000_000_000i64;
    let mut want = Vec::new();
    for i in 0..1_000i64 {
        want.push(span(
            OpCategory::CpuOp,
            3,
            base + i * 1_500,
            base + i * 1_500 + 700,
        ));
    }
    // Those that do not fit: far from the block's base, long, backwards, a huge thread.
    want.push(span(
        OpCategory::Kernel,
        1,
        base + 3_000_000_000,
        base + 3_000_000_001,
    ));
    want.push(span(
        OpCategory::UserAnnotation,
        2,
        base,
        base + 5_000_000_000,
    ));
    want.push(span(OpCategory::PythonFunction, 2, base + 10, base + 5));
    want.push(span(OpCategory::Nvtx, u32::MAX, base, base));
    want.push(span(OpCategory::Other, 0, i64::MIN, i64::MAX));
    want.push(span(
        OpCategory::Runtime,
        0,
        base + 20,
        base + 20 + i64::from(SIDE),
    ));
    let spans: OpSpans = want.clone().into();
    assert_eq!(spans.len(), want.len());
    assert_eq!(spans.iter().collect::<Vec<_>>(), want);
    assert_eq!(spans.side.len(), 6);
    // 16 bytes a span, and the side table.
    assert!(
        spans.heap_bytes() < 1_006 * 16 + 6 * 64 + 1_024,
        "{}",
        spans.heap_bytes()
    );
    // Changed in place: spans move in and out of the side table.
    let mut moved = spans.clone();
    moved.update(|s| {
        s.start_ns = s.start_ns.saturating_add(4_000_000_000);
        s.end_ns = s.end_ns.saturating_add(4_000_000_000);
    });
    let shifted: Vec<OpSpan> = want
        .iter()
        .map(|s| OpSpan {
            start_ns: s.start_ns.saturating_add(4_000_000_000),
            end_ns: s.end_ns.saturating_add(4_000_000_000),
            ..*s
        })
        .collect();
    assert_eq!(moved.iter().collect::<Vec<_>>(), shifted);
    let mut by_base = spans.clone();
    by_base.shift_times(4_000_000_000);
    assert_eq!(by_base, moved);
    // Moving the bases keeps the spans that fit in the columns (span by span, every
    // span would be too far from its unmoved base).
    assert_eq!(moved.side.len(), want.len());
    assert_eq!(by_base.side.len(), 6);
    by_base.truncate(1_001);
    assert_eq!(by_base.len(), 1_001);
    assert_eq!(by_base.get(1_000), Some(shifted[1_000]));
    assert_eq!(by_base.get(1_001), None);
    assert_eq!(by_base.side.len(), 1);
}

#[test]
fn clamping_passes_over_blocks_far_inside_and_reaches_every_span_outside() {
    let limit = crate::model::TIME_LIMIT_NS;
    let mut want = Vec::new();
    // A block of ordinary times, a block whose base is near the limit (its spans inside
    // and out), and side-table spans in the ordinary block that reach past the limit.
    for i in 0..300i64 {
        want.push(span(
            OpCategory::CpuOp,
            1,
            1_000_000 + i * 10,
            1_000_000 + i * 10 + 5,
        ));
    }
    want.push(span(OpCategory::Kernel, 2, 1_000_000, limit + 7));
    want.push(span(OpCategory::Kernel, 2, -limit - 9, 1_000_000));
    for i in 0..256i64 {
        want.push(span(
            OpCategory::CpuOp,
            1,
            limit - 1_000 + i * 10,
            limit - 995 + i * 10,
        ));
    }
    let clamp = |t: &mut i64, n: &mut u64| {
        if !(-limit..=limit).contains(t) {
            *t = (*t).clamp(-limit, limit);
            *n += 1;
        }
    };
    let (mut every, mut outside) = (OpSpans::from(want.clone()), OpSpans::from(want));
    let (mut n_every, mut n_outside) = (0, 0);
    every.update(|s| {
        clamp(&mut s.start_ns, &mut n_every);
        clamp(&mut s.end_ns, &mut n_every);
    });
    outside.update_outside((-limit, limit), |s| {
        clamp(&mut s.start_ns, &mut n_outside);
        clamp(&mut s.end_ns, &mut n_outside);
    });
    assert_eq!(outside, every);
    // Two side-table ends, and the near-limit spans' starts and ends past it.
    assert_eq!(n_every, 2 + 2 * 155 + 1);
    assert_eq!(n_outside, n_every);
}
