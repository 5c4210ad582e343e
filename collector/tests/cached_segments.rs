//! The cached view's segments (memory_viz's Active Cached Memory Timeline) on the committed
//! snapshot fixtures, the real CS336 snapshots and an Nsight export: at every event the
//! live segments add up to the reserved total the timeline has then; the segments held at
//! the end are the snapshot's own list; the stacked bands' top is the reserved total; the
//! blocks placed in a segment at the end are the snapshot's blocks of it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use collector::analysis::allocations::{CacheBands, segment_lives};
use collector::model::BlockState;
use collector::{LoadOptions, Recording, Timeline, load};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixture(name: &str) -> PathBuf {
    root().join(format!("tests/fixtures/snapshot/{name}.pickle"))
}

fn real(name: &str) -> PathBuf {
    root().join("../shared/traces/real").join(name)
}

fn open(path: &Path) -> (Recording, Timeline) {
    let options = LoadOptions {
        allocator_history: true,
        ..LoadOptions::default()
    };
    let rec = load(path, options).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let timeline = Timeline::build(&rec);
    (rec, timeline)
}

/// Every snapshot at hand: the fixtures (expandable segments, several GPUs, a ring that
/// lost its start, an OOM, segments made and freed in the history) and the real ones.
fn snapshots() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["basic", "old", "multi_gpu", "ring", "oom", "expandable"]
        .iter()
        .map(|n| fixture(n))
        .collect();
    out.push(root().join("samples/cs336-transformer-snapshot.pickle"));
    for name in [
        "snapshot-cs336-magma27/memory_snapshot.pickle",
        "snapshot-cs336-bcrafton/memory_snapshot.pickle",
        "snapshots-cs336-nothanmin/memory_snapshot.pickle",
        "snapshots-cs336-nothanmin/memory_snapshot_forward.pickle",
        "snapshots-cs336-wedsonlin/medium_512_training_memory_snapshot.pickle",
        "snapshots-cs336-wedsonlin/medium_128_inference_memory_snapshot.pickle",
    ] {
        out.push(real(name));
    }
    out
}

/// At every event of every device the live segments' bytes are the reserved total.
fn live_segments_sum_to_reserved(path: &Path, rec: &Recording, timeline: &Timeline) -> usize {
    let mut checked = 0;
    for d in &timeline.devices {
        let lives = segment_lives(rec, d);
        let mut change: HashMap<u32, i64> = HashMap::new();
        for l in &lives {
            *change.entry(l.span.start_event).or_default() += l.bytes;
            if let Some(e) = l.span.end_event {
                *change.entry(e).or_default() -= l.bytes;
            }
        }
        let mut live_bytes = 0i64;
        for p in &d.points {
            live_bytes += change.get(&p.event).copied().unwrap_or(0);
            if let Some(reserved) = p.reserved_bytes.get() {
                assert_eq!(live_bytes, reserved, "{} event {}", path.display(), p.event);
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn live_segments_add_up_to_the_reserved_total_at_every_event() {
    for path in snapshots() {
        let (rec, timeline) = open(&path);
        let checked = live_segments_sum_to_reserved(&path, &rec, &timeline);
        assert!(checked > 0, "{}: no reserved totals", path.display());
    }
}

#[test]
fn the_segments_held_at_the_end_are_the_snapshots_segments() {
    for path in snapshots() {
        let (rec, timeline) = open(&path);
        let state = rec.allocator.as_ref().expect("a snapshot");
        for d in &timeline.devices {
            let lives = segment_lives(&rec, d);
            let held: Vec<_> = lives.iter().filter(|l| l.free_ns.is_none()).collect();
            let listed: Vec<_> = (state.segments.iter())
                .filter(|s| s.device == d.device)
                .collect();
            let name = format!("{} device {}", path.display(), d.device);
            let bytes = |total: u64| total as i64;
            assert_eq!(
                held.iter().map(|l| l.bytes).sum::<i64>(),
                listed
                    .iter()
                    .map(|s| bytes(s.total_size_bytes))
                    .sum::<i64>(),
                "{name}"
            );
            // An expandable segment is mapped in pieces: one band a mapping.
            if listed.iter().all(|s| !s.expandable) {
                assert_eq!(held.len(), listed.len(), "{name}");
                for s in &listed {
                    let l = held.iter().find(|l| l.addr == Some(s.address));
                    let l = l.unwrap_or_else(|| panic!("{name}: {:#x}", s.address));
                    assert_eq!(l.bytes, bytes(s.total_size_bytes), "{name}");
                    assert_eq!(l.stream, Some(s.stream), "{name}");
                }
            }
        }
    }
}

#[test]
fn the_real_snapshots_segments_were_made_before_their_history_but_one() {
    // (file, segments, made in the history): PROVENANCE.md's counts of the segment list
    // and of `segment_alloc` entries.
    let cases = [
        ("snapshot-cs336-bcrafton/memory_snapshot.pickle", 96, 0),
        ("snapshot-cs336-magma27/memory_snapshot.pickle", 216, 0),
        ("snapshots-cs336-nothanmin/memory_snapshot.pickle", 999, 0),
        (
            "snapshots-cs336-nothanmin/memory_snapshot_forward.pickle",
            1722,
            0,
        ),
        (
            "snapshots-cs336-wedsonlin/medium_512_training_memory_snapshot.pickle",
            400,
            1,
        ),
    ];
    for (name, segments, made) in cases {
        let (rec, timeline) = open(&real(name));
        let d = &timeline.devices[0];
        let lives = segment_lives(&rec, d);
        assert_eq!(lives.len(), segments, "{name}");
        let in_history = lives.iter().filter(|l| l.alloc_ns.is_some()).count();
        assert_eq!(in_history, made, "{name}");
        assert!(lives.iter().all(|l| l.stream.is_some()), "{name}");
        let cache = CacheBands::build(&rec, d).expect("segments");
        assert_eq!(cache.layout.len(), segments, "{name}");
    }
    // The one made in the history has its entry's time and stack.
    let (rec, timeline) = open(&real(
        "snapshots-cs336-wedsonlin/medium_512_training_memory_snapshot.pickle",
    ));
    let lives = segment_lives(&rec, &timeline.devices[0]);
    let made = lives.iter().find(|l| l.alloc_ns.is_some()).expect("one");
    assert!(made.alloc_ns > timeline.devices[0].points.first().map(|p| p.time_ns));
    assert!(!rec.stack(made.stack).is_empty());
}

#[test]
fn the_stacked_segments_top_is_the_reserved_total() {
    for path in snapshots() {
        let (rec, timeline) = open(&path);
        for d in &timeline.devices {
            let Some(cache) = CacheBands::build(&rec, d) else {
                continue;
            };
            let name = format!("{} device {}", path.display(), d.device);
            // No reserved bytes outside a band: the walk's bottom band stays empty.
            assert!(cache.layout.before_trace.is_empty(), "{name}");
            let bands = &cache.timeline;
            let mut times: Vec<i64> = bands.points.iter().map(|p| p.time_ns).collect();
            times.extend(d.points.iter().step_by(97).map(|p| p.time_ns));
            times.sort_unstable();
            times.dedup();
            for t in times {
                let top = (bands.allocations.iter().enumerate())
                    .filter(|(_, a)| a.alloc_ns <= t && a.free_ns.get().is_none_or(|f| f > t))
                    .map(|(i, a)| cache.layout.offset_at(bands, i, t) + a.bytes)
                    .max()
                    .unwrap_or(0);
                let reserved = d.at(t).and_then(|p| p.reserved_bytes.get()).unwrap_or(0);
                assert_eq!(top, reserved, "{name} at {t}");
            }
        }
    }
}

#[test]
fn each_segments_blocks_at_the_end_are_the_snapshots_blocks_of_it() {
    for path in snapshots() {
        let (rec, timeline) = open(&path);
        let state = rec.allocator.as_ref().expect("a snapshot");
        for d in &timeline.devices {
            let Some(cache) = CacheBands::build(&rec, d) else {
                continue;
            };
            let end = d.points.last().expect("events").time_ns;
            for s in state.segments.iter().filter(|s| s.device == d.device) {
                if s.expandable {
                    continue;
                }
                let k = (cache.lives.iter())
                    .position(|l| l.addr == Some(s.address) && l.free_ns.is_none())
                    .expect("its band");
                let held: u64 = (s.blocks.iter())
                    .filter(|b| b.state != BlockState::Inactive)
                    .map(|b| b.size_bytes)
                    .sum();
                let name = format!("{} {:#x}", path.display(), s.address);
                assert_eq!(cache.in_use_at(d, k, end), held as i64, "{name}");
            }
            // Every allocation lies in a segment, so the segments' bytes in use add up to
            // the allocated total at every instant.
            for i in 0..d.allocations.len() {
                assert!(cache.segment_of(i).is_some(), "{} {i}", path.display());
            }
            let curves: Vec<Vec<(i64, i64)>> = (0..cache.lives.len())
                .map(|s| cache.in_use_curve(d, s))
                .collect();
            let value_at = |c: &[(i64, i64)], t: i64| {
                let n = c.partition_point(|p| p.0 <= t);
                n.checked_sub(1).map_or(0, |k| c[k].1)
            };
            for p in d.points.iter().step_by(13).chain(d.points.last()) {
                let t = p.time_ns;
                let at = d.at(t).expect("a point");
                let in_use: i64 = curves.iter().map(|c| value_at(c, t)).sum();
                assert_eq!(in_use, { at.allocated_bytes }, "{} at {t}", path.display());
            }
        }
    }
}

#[test]
fn an_nsight_export_has_its_segments_made_in_the_trace() {
    let path = root().join("tests/fixtures/nsight/cuda-memory.sqlite");
    let (rec, timeline) = open(&path);
    let mut lives_seen = 0;
    for d in &timeline.devices {
        let lives = segment_lives(&rec, d);
        assert!(
            lives
                .iter()
                .all(|l| l.alloc_ns.is_some() && l.stream.is_none())
        );
        lives_seen += lives.len();
    }
    assert!(lives_seen > 0);
    live_segments_sum_to_reserved(&path, &rec, &timeline);
}

#[test]
fn a_profiler_trace_has_no_segments() {
    let path = real("tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz");
    let (rec, timeline) = open(&path);
    for d in &timeline.devices {
        assert!(segment_lives(&rec, d).is_empty());
        assert!(CacheBands::build(&rec, d).is_none());
    }
}
