use std::path::PathBuf;

use super::*;
use crate::model::DeviceType;
use crate::{LoadOptions, LoadProgress};

fn event(time_ns: i64, bytes: i64, total: Option<i64>, device: u16) -> MemEvent {
    MemEvent {
        total_allocated_bytes: total.into(),
        device,
        ..MemEvent::sized(time_ns, bytes)
    }
}

/// Each bucket's smallest and largest bytes, worked out from the events that fall in it.
fn expected(curve: &DeviceCurve, points: &[(i64, i64)]) -> Vec<Option<(i64, i64)>> {
    let mut want = vec![None; PREVIEW_BUCKETS];
    for &(t, bytes) in points {
        let slot: &mut Option<(i64, i64)> = &mut want[bucket_of(curve, t)];
        *slot = Some(slot.map_or((bytes, bytes), |(lo, hi)| (lo.min(bytes), hi.max(bytes))));
    }
    want
}

fn bucket_of(curve: &DeviceCurve, t: i64) -> usize {
    ((t - curve.origin_ns) / curve.bucket_ns) as usize
}

/// Each bucket's range with the level at its start: the bytes after the latest event
/// before it (the later in the list of two at one time), from the points sorted by time.
fn expected_levels(curve: &DeviceCurve, points: &[(i64, i64)]) -> Vec<Option<(i64, i64)>> {
    let mut sorted: Vec<(usize, i64, i64)> = points
        .iter()
        .enumerate()
        .map(|(i, &(t, b))| (i, t, b))
        .collect();
    sorted.sort_by_key(|&(i, t, _)| (t, i));
    let own = expected(curve, points);
    let mut level = None;
    let mut next = 0;
    (0..PREVIEW_BUCKETS)
        .map(|k| {
            let carried = level;
            while let Some(&(_, _, b)) = sorted.get(next).filter(|p| bucket_of(curve, p.1) == k) {
                level = Some(b);
                next += 1;
            }
            match (own[k], carried) {
                (Some((lo, hi)), Some(c)) => Some((lo.min(c), hi.max(c))),
                (Some(r), None) => Some(r),
                (None, c) => c.map(|c| (c, c)),
            }
        })
        .collect()
}

#[test]
fn buckets_hold_the_extremes_of_their_events_in_any_order() {
    let cuda = |index| DeviceId {
        device_type: DeviceType::CUDA,
        index,
    };
    let devices = [cuda(0), cuda(1)];
    // Times out of order (some before the first), totals that go up and down; device 1
    // carries no totals, so its bytes are the running sum of the sizes.
    let mut events = Vec::new();
    let (mut points0, mut points1) = (Vec::new(), Vec::new());
    let mut running1 = 0;
    for k in 0..50_000i64 {
        let t = 1_000_000 + (k * 7_919) % 3_000_017 - if k % 11 == 0 { 900_000 } else { 0 };
        let total = (k * 104_729) % 1_000_003;
        events.push(event(t, 512, Some(total), 0));
        points0.push((t, total));
        let bytes = if k % 3 == 0 { -256 } else { 512 };
        running1 += bytes;
        events.push(event(t / 2, bytes, None, 1));
        points1.push((t / 2, running1));
    }
    let preview = Preview::default();
    for batch in events.chunks(PREVIEW_EVERY_EVENTS / 5) {
        preview.add(batch, &devices);
    }
    let state = preview.snapshot();
    assert_eq!(state.events, 100_000);
    assert_eq!(state.devices.len(), 2);
    for (curve, points) in state.devices.iter().zip([&points0, &points1]) {
        let (start, end) = curve.span_ns();
        assert!(points.iter().all(|&(t, _)| t >= start && t < end));
        // Not wider than it must be: halving the buckets would not reach every time.
        let first = points.iter().map(|p| p.0).min().expect("points");
        let last = points.iter().map(|p| p.0).max().expect("points");
        assert!(last - first >= curve.bucket_ns * PREVIEW_BUCKETS as i64 / 4);
        let got: Vec<_> = (0..PREVIEW_BUCKETS).map(|k| curve.bucket(k)).collect();
        assert_eq!(got, expected(curve, points), "{:?}", curve.device);
        assert_eq!(
            curve.levels(),
            expected_levels(curve, points),
            "{:?}",
            curve.device
        );
        let peak = points.iter().map(|p| p.1).max().expect("points");
        assert_eq!(curve.peak_bytes, peak);
    }
}

#[test]
fn a_trace_read_with_a_preview_leaves_the_overview_of_its_memory_events() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/real/hta-df-index-resolver-rank1/df_index_resolver.json.gz");
    let progress = LoadProgress {
        preview: Some(std::sync::Arc::default()),
        ..LoadProgress::default()
    };
    let rec = crate::load_watched(&path, LoadOptions::default(), &progress).expect("loads");
    let state = progress.preview.as_ref().expect("asked for").snapshot();
    assert_eq!(state.events, rec.mem_events.len() as u64);
    // More than a batch: the overview was added to while the file was read, and at its end.
    assert!(
        state.events > PREVIEW_EVERY_EVENTS as u64,
        "{}",
        state.events
    );
    let mut checked = 0;
    for curve in &state.devices {
        let d = rec
            .devices
            .iter()
            .position(|d| d.key == curve.device)
            .expect("a device of the recording");
        // The preview's times are as read; the recording's have the trace's base added.
        let shift = -rec.meta.base_time_ns.unwrap_or(0);
        let points: Vec<(i64, i64)> = rec
            .mem_events
            .iter()
            .filter(|e| usize::from(e.device) == d)
            .filter(|e| matches!(e.kind, MemEventKind::Alloc | MemEventKind::Free))
            .map(|e| {
                (
                    e.time_ns + shift,
                    e.total_allocated_bytes.get().expect("totals"),
                )
            })
            .collect();
        checked += points.len();
        let got: Vec<_> = (0..PREVIEW_BUCKETS).map(|k| curve.bucket(k)).collect();
        assert_eq!(got, expected(curve, &points));
        assert_eq!(curve.levels(), expected_levels(curve, &points));
    }
    assert!(checked > 20_000, "{checked}");
}

#[test]
fn times_across_all_of_i64_fall_in_their_own_buckets() {
    let cuda = DeviceId {
        device_type: DeviceType::CUDA,
        index: 0,
    };
    let preview = Preview::default();
    let events = [
        event(0, 512, Some(5), 0),
        event(i64::MAX, 512, Some(9), 0),
        event(i64::MIN, 512, Some(1), 0),
    ];
    preview.add(&events, &[cuda]);
    let curve = &preview.snapshot().devices[0];
    assert_eq!(curve.origin_ns, i64::MIN);
    assert_eq!(curve.bucket_ns, 1 << 54);
    assert_eq!(curve.bucket(0), Some((1, 1)));
    assert_eq!(curve.bucket(PREVIEW_BUCKETS / 2), Some((5, 5)));
    assert_eq!(curve.bucket(PREVIEW_BUCKETS - 1), Some((9, 9)));
    assert_eq!(curve.peak_bytes, 9);
    // From the first bucket's start to the last one's end, clamped to the i64 range.
    assert_eq!(curve.filled_span_ns(), Some((i64::MIN, i64::MAX)));
    assert_eq!(curve.bucket_start_ns(PREVIEW_BUCKETS / 2), 0);
}
