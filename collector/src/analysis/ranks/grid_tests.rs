use std::path::{Path, PathBuf};

use super::*;
use crate::analysis::ranks::summarize_files;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/torch-cpu")
        .join(name)
}

fn point(time_ns: i64, allocated_bytes: i64) -> SeriesPoint {
    SeriesPoint {
        time_ns,
        allocated_bytes,
        reserved_bytes: crate::model::Total::UNKNOWN,
        event: 0,
    }
}

#[test]
fn each_bucket_holds_the_largest_value_the_step_curve_takes_in_it() {
    // Buckets of 20 ns in 4: [0,5) [5,10) [10,15) [15,20]. 30 starts bucket 1 at its first
    // ns, so 10 is not carried in; bucket 2 holds 30 until 12; bucket 3 only 20.
    let points = [point(100, 10), point(105, 30), point(112, 20)];
    assert_eq!(
        max_per_bucket(&points, 100, 20, 4),
        [Some(10), Some(30), Some(30), Some(20)]
    );
    // Before the first point there is no curve.
    assert_eq!(
        max_per_bucket(&[point(111, 7)], 100, 20, 4),
        [None, None, Some(7), Some(7)]
    );
}

/// The largest value of the step curve in `[from, to)` (absolute ns), by brute force: the
/// points inside, and the value carried in unless a point falls on `from` itself.
fn brute_max(points: &[SeriesPoint], from: i64, to: i64) -> Option<i64> {
    let inside = points
        .iter()
        .filter(|p| p.time_ns >= from && p.time_ns < to);
    let carried = points
        .iter()
        .rev()
        .find(|p| p.time_ns < from)
        .filter(|_| !points.iter().any(|p| p.time_ns == from));
    inside.chain(carried).map(|p| p.allocated_bytes).max()
}

#[test]
fn a_real_trace_buckets_match_the_curve_and_its_peak() {
    let rec = crate::load(&fixture("k01_mlp_s1.json.gz"), LoadOptions::default()).expect("load");
    let timeline = Timeline::build(&rec);
    let summary = summarize(&rec, &timeline);
    let series = rank_series(&rec, &timeline);
    assert!(!series.devices.is_empty());
    for d in &series.devices {
        let t = timeline
            .devices
            .iter()
            .find(|t| rec.devices.get(t.device as usize).map(|i| i.key) == Some(d.device))
            .expect("device");
        let n = d.max_allocated_bytes.len();
        assert_eq!(n, GRID_BUCKETS);
        for (b, got) in d.max_allocated_bytes.iter().enumerate() {
            let from = series.start_ns + bucket_start_ns(b, series.duration_ns, n);
            let to = match b + 1 {
                next if next == n => rec.meta.end_ns + 1,
                next => series.start_ns + bucket_start_ns(next, series.duration_ns, n),
            };
            assert_eq!(*got, brute_max(&t.points, from, to), "bucket {b}");
        }
        // The row's largest value is the summary's peak allocated of that device.
        let peak = summary
            .devices
            .iter()
            .find(|s| s.device == d.device)
            .and_then(|s| s.peak_allocated_bytes);
        assert_eq!(d.max_allocated_bytes.iter().flatten().max().copied(), peak);
    }
}

#[test]
fn a_shorter_rank_fills_its_share_of_the_common_axis() {
    let d = AllocatedBuckets {
        device: DeviceId::CPU,
        max_allocated_bytes: (1..=8).map(Some).collect(),
    };
    // Same duration and as many columns: unchanged.
    assert_eq!(on_common_axis(&d, 800, 800, 8), d.max_allocated_bytes);
    // Half the span: the first four columns hold two buckets each, the rest nothing.
    assert_eq!(
        on_common_axis(&d, 400, 800, 8),
        [Some(2), Some(4), Some(6), Some(8), None, None, None, None]
    );
}

#[test]
fn the_grid_sorts_by_rank_reports_bad_files_and_agrees_with_summary() {
    let dir = std::env::temp_dir().join(format!("vramscope-grid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("rank_9.json");
    std::fs::write(&bad, b"{\"traceEvents\": [").expect("write");
    let files = vec![
        fixture("k02_mlp_stack.json.gz"),
        bad,
        fixture("k01_mlp_s1.json.gz"),
    ];
    let progress = FilesProgress::default();
    let (ranks, errors) = grid_files(&files, LoadOptions::default(), 2, &progress);
    assert_eq!(progress.done.load(std::sync::atomic::Ordering::Relaxed), 3);
    assert_eq!((ranks.len(), errors.len()), (2, 1));
    assert!(
        errors[0].to_string().contains("rank_9.json"),
        "{}",
        errors[0]
    );
    let grid = Grid::build(ranks);
    let good = [files[0].clone(), files[2].clone()];
    let mut summaries = summarize_files(&good, LoadOptions::default(), 1).expect("summaries");
    super::super::sort_inputs(&mut summaries);
    assert_eq!(grid.inputs, summaries);
    assert_eq!(grid.across, across_ranks(&summaries));
    let worst = grid.worst_row().expect("worst row");
    let w = grid.across.worst.expect("worst");
    assert_eq!(grid.rows[worst].input, w.input);
    assert_eq!(
        grid.rows[worst].cells.iter().flatten().max().copied(),
        Some(w.peak_allocated_bytes)
    );
    std::fs::remove_dir_all(&dir).expect("clean");
}
