use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::analysis::summarize;
use crate::parse::{LoadOptions, load};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn open(path: &Path) -> (Recording, Timeline) {
    let rec = load(path, LoadOptions::default()).expect("input reads");
    let timeline = Timeline::build(&rec);
    (rec, timeline)
}

/// The rows against the summary and against the events themselves: one row per event, an
/// op for exactly the events summary counts in ops, and per device the signed sizes of the
/// allocations and frees summing to the change of the allocator's own totals.
fn check_memory_rows(path: &Path) -> usize {
    let (rec, timeline) = open(path);
    let summary = summarize(&rec, &timeline);
    let mut rows = 0u64;
    let mut outside = 0u64;
    // Per device: (sum of alloc/free bytes, allocated before the first, allocated after the last).
    let mut per_device: BTreeMap<DeviceId, (i64, Option<i64>, i64)> = BTreeMap::new();
    for_each_memory_event(&rec, &timeline, |r| {
        rows += 1;
        outside += u64::from(r.op.is_none());
        if let (true, Some(after)) = (r.kind.is_allocation(), r.allocated_bytes) {
            let entry = per_device.entry(r.device).or_insert((0, None, 0));
            entry.0 += r.bytes;
            entry.1.get_or_insert(after - r.bytes);
            entry.2 = after;
        }
    });
    assert_eq!(rows, summary.memory_events, "{}", path.display());
    assert_eq!(
        outside,
        summary.memory_events - summary.memory_events_in_ops,
        "{}",
        path.display()
    );
    for (device, (sum, before, last)) in &per_device {
        let d = summary.devices.iter().find(|d| d.device == *device);
        assert_eq!(d.and_then(|d| d.final_allocated_bytes), Some(*last));
        assert_eq!(
            *sum,
            last - before.unwrap_or(0),
            "{} {device}",
            path.display()
        );
    }
    per_device.len()
}

#[test]
fn memory_rows_keep_summary_numbers_on_a_profiler_trace() {
    let devices = check_memory_rows(&repo("samples/transformer-lm-train-cpu.json.gz"));
    assert_eq!(devices, 1);
}

#[test]
fn memory_rows_keep_summary_numbers_on_snapshots() {
    for name in ["multi_gpu.pickle", "oom.pickle", "expandable.pickle"] {
        check_memory_rows(&repo("tests/fixtures/snapshot").join(name));
    }
}

#[test]
fn oom_rows_carry_the_totals_of_their_time() {
    let (rec, timeline) = open(&repo("tests/fixtures/snapshot/oom.pickle"));
    let mut ooms = 0;
    for_each_memory_event(&rec, &timeline, |r| {
        if r.kind == MemEventKind::OutOfMemory {
            ooms += 1;
            let d = timeline
                .devices
                .iter()
                .find(|d| rec.devices[d.device as usize].key == r.device)
                .expect("device");
            assert_eq!(
                r.allocated_bytes,
                Some(d.at(r.ts_ns).map_or(0, |p| p.allocated_bytes))
            );
        }
    });
    let expected = rec
        .mem_events
        .iter()
        .filter(|e| e.kind == MemEventKind::OutOfMemory)
        .count();
    assert!(expected > 0);
    assert_eq!(ooms, expected);
}

/// Depth by brute force: the spans of the same thread that contain a span and come
/// before it in (start, longest first) order.
#[test]
fn depths_match_counting_enclosing_spans() {
    let (rec, _) = open(&repo("samples/transformer-lm-train-cpu.json.gz"));
    let depths = op_depths(&rec);
    assert_eq!(depths.len(), rec.ops.len());
    let key = |i: usize| {
        (
            rec.ops.get(i).expect("an op").start_ns,
            std::cmp::Reverse(rec.ops.get(i).expect("an op").end_ns),
            i,
        )
    };
    let mut checked = 0;
    for (i, op) in rec.ops.iter().enumerate().step_by(7) {
        let enclosing = rec
            .ops
            .iter()
            .enumerate()
            .filter(|&(j, o)| {
                j != i
                    && o.thread == op.thread
                    && o.start_ns <= op.start_ns
                    && op.end_ns <= o.end_ns
                    && key(j) < key(i)
            })
            .count();
        assert_eq!(depths[i] as usize, enclosing, "op {i}");
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
    assert!(depths.iter().any(|&d| d >= 3));
}

#[test]
fn samples_are_every_reading_of_a_recording() {
    let (rec, _) = open(&repo("tests/fixtures/recording/v1-train.vsr"));
    let mut by_source: BTreeMap<&str, usize> = BTreeMap::new();
    for_each_sample(&rec, |s| {
        *by_source.entry(s.source.as_str()).or_default() += 1
    });
    assert_eq!(by_source.get("nvml").copied(), Some(rec.gpu_samples.len()));
    assert_eq!(by_source.get("rss").copied(), Some(rec.host_samples.len()));
    assert!(!rec.gpu_samples.is_empty());
}
