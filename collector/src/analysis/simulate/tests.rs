//! The model against the rules' worked examples, and against real snapshots: replayed
//! with their own settings, every allocation where the real allocator put it and the
//! same segments at the end.

use std::path::{Path, PathBuf};

use super::allocator::{Allocator, allocation_size};
use super::config::AllocatorConfig;
use super::driver::Device;
use super::*;
use crate::model::{DeviceHistory, HistoryAction, HistoryEntry};

const MIB: u64 = 1 << 20;

/// A history of allocations (positive) and frees (negative, of the allocation that
/// many steps back's index) from an empty allocator.
fn history(steps: &[i64]) -> DeviceHistory {
    let mut entries = Vec::new();
    let mut addrs = Vec::new();
    for (i, &s) in steps.iter().enumerate() {
        let (action, addr, size) = if s > 0 {
            addrs.push(i as u64 + 1);
            (HistoryAction::Alloc, i as u64 + 1, s as u64)
        } else {
            let index = (-s) as usize;
            (HistoryAction::FreeCompleted, addrs[index], 0)
        };
        entries.push(HistoryEntry {
            time_ns: i as i64,
            action,
            addr,
            size_bytes: size,
            stream: 0,
            device_free_bytes: None,
            stack: None,
        });
    }
    DeviceHistory {
        device: 0,
        start: Vec::new(),
        entries,
        carried_bytes: 0,
    }
}

/// `n` allocations of `bytes`, then all freed: the steps for [`history`].
fn all_then_freed(first: usize, n: usize, bytes: u64) -> Vec<i64> {
    let mut steps: Vec<i64> = vec![bytes as i64; n];
    steps.extend((first..first + n).map(|i| -(i as i64)));
    steps
}

fn reserved_peak(steps: &[i64], conf: &str) -> u64 {
    let config = AllocatorConfig::parse(conf).expect("conf");
    predict(&history(steps), &config, None).reserved_peak_bytes
}

#[test]
fn order_of_sizes_decides_the_reserved_memory() {
    // 8 × 16 MiB, freed, then 4 × 32 MiB: no cached 16 MiB block holds 32 MiB and
    // segments never merge, so four more segments: 256 MiB. The other order splits each
    // 32 MiB block in two: 128 MiB.
    let mut small_first = all_then_freed(0, 8, 16 * MIB);
    small_first.extend(all_then_freed(8, 4, 32 * MIB));
    assert_eq!(reserved_peak(&small_first, ""), 256 * MIB);
    let mut large_first = all_then_freed(0, 4, 32 * MIB);
    large_first.extend(all_then_freed(4, 8, 16 * MIB));
    assert_eq!(reserved_peak(&large_first, ""), 128 * MIB);
    // One growable segment in 20 MiB pages: 128 MiB rounded up to 7 pages, reused whole.
    assert_eq!(
        reserved_peak(&small_first, "expandable_segments:True"),
        140 * MIB
    );
}

#[test]
fn segment_sizes_around_the_pool_boundaries() {
    let a = Allocator::new(AllocatorConfig::default());
    let segment = |asked: u64| allocation_size(a.round_size(asked));
    assert_eq!(segment(1), 2 * MIB);
    assert_eq!(a.round_size(1), 512);
    assert_eq!(a.round_size(513), 1024);
    assert_eq!(segment(MIB), 2 * MIB);
    assert_eq!(segment(MIB + 1), 20 * MIB);
    assert_eq!(segment(10 * MIB - 512), 20 * MIB);
    assert_eq!(segment(10 * MIB - 1), 10 * MIB);
    assert_eq!(segment(10 * MIB), 10 * MIB);
    assert_eq!(segment(11 * MIB), 12 * MIB);
    // Small requests share one 2 MiB segment; a 1.5 MiB one gets a 20 MiB segment that
    // the next 1.5 MiB request shares.
    assert_eq!(reserved_peak(&[100_000, 200_000, 300_000], ""), 2 * MIB);
    assert_eq!(
        reserved_peak(&[3 * MIB as i64 / 2, 3 * MIB as i64 / 2], ""),
        20 * MIB
    );
}

#[test]
fn max_split_size_keeps_oversize_blocks_whole() {
    // A 200 MiB block freed, then 50 MiB asked: by default it is split from the cached
    // block; with max_split_size_mb:100 the oversize block is not handed out for it.
    let steps = [200 * MIB as i64, -0, 50 * MIB as i64];
    assert_eq!(reserved_peak(&steps, ""), 200 * MIB);
    assert_eq!(reserved_peak(&steps, "max_split_size_mb:100"), 250 * MIB);
    // A request within 20 MiB of an oversize block takes it whole.
    let close = [200 * MIB as i64, -0, 190 * MIB as i64];
    assert_eq!(reserved_peak(&close, "max_split_size_mb:100"), 200 * MIB);
}

#[test]
fn roundup_power2_divisions_round_as_c10_does() {
    let four = Allocator::new(AllocatorConfig::parse("roundup_power2_divisions:4").expect("conf"));
    // Above 512 × divisions bytes, the next of 4 steps between powers of two.
    assert_eq!(four.round_size(1200), 1536);
    assert_eq!(four.round_size(5000), 5120);
    assert_eq!(four.round_size(4096), 4096);
    assert_eq!(four.round_size(3 * MIB + 1), 3 * MIB + MIB / 2);
    let table = AllocatorConfig::parse("roundup_power2_divisions:[1:2,2:4,>:8]").expect("conf");
    assert_eq!(table.divisions_for(MIB), 2);
    assert_eq!(table.divisions_for(3 * MIB), 4);
    assert_eq!(table.divisions_for(64 * MIB), 8);
    assert_eq!(
        AllocatorConfig::parse("expandable_segments:True,max_split_size_mb:128")
            .expect("conf")
            .to_string(),
        "expandable_segments:True,max_split_size_mb:128"
    );
    assert!(AllocatorConfig::parse("expandable_segment:True").is_err());
}

#[test]
fn capacity_decides_an_out_of_memory() {
    // 100 MiB asked on a device of 150 MiB holding 80 MiB allocated and a cached 40 MiB:
    // the cache is released and the request retried before it fails.
    let steps = [80 * MIB as i64, 40 * MIB as i64, -1, 100 * MIB as i64];
    let config = AllocatorConfig::default();
    let run = predict(&history(&steps), &config, Some(200 * MIB));
    assert!(run.ooms.is_empty(), "{:?}", run.ooms);
    assert_eq!(run.reserved_peak_bytes, 180 * MIB);
    let tight = predict(&history(&steps), &config, Some(150 * MIB));
    assert_eq!(tight.ooms.len(), 1);
    assert_eq!(tight.ooms[0].short_by_bytes, Some(30 * MIB));
    let mut a = Allocator::new(config);
    let mut device = Device::new(Some(150 * MIB), 0);
    a.malloc(80 * MIB, 0, &mut device).expect("room");
    let cached = a.malloc(40 * MIB, 0, &mut device).expect("room");
    let addr = a.blocks.get(cached).addr;
    a.free(addr);
    assert!(a.malloc(60 * MIB, 0, &mut device).is_ok());
    assert_eq!(
        a.totals.device_frees, 1,
        "the cached 40 MiB segment was released"
    );
}

fn real_snapshots() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/real");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "pickle") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn real_snapshots_are_replayed_address_by_address() {
    let snapshots = real_snapshots();
    assert!(snapshots.len() >= 13, "{snapshots:?}");
    let options = crate::parse::LoadOptions {
        allocator_history: true,
        ..Default::default()
    };
    for path in snapshots {
        let rec = crate::parse::load(&path, options).expect("snapshot");
        let sim = simulate(&rec, &SimulateOptions::default()).expect("history");
        for d in &sim.devices {
            let p = d
                .proof
                .as_ref()
                .expect("a snapshot's simulation is checked");
            println!("{}: {}", path.display(), described(p));
            assert!(p.allocations > 1000, "{}", path.display());
            assert_eq!(
                (p.placed_as_recorded, p.first_divergence, p.stopped_at_entry),
                (p.allocations, None, None),
                "{}",
                path.display()
            );
            assert!(
                p.final_segments_identical,
                "{}: {:?}",
                path.display(),
                p.first_segment_difference
            );
            assert_eq!(p.unknown_frees, 0);
            // The recorded settings replayed from the live blocks alone (the cache before
            // the history dropped, the live blocks taken in address order) land near the
            // reserved peak the run measured.
            let measured = d.measured_reserved_peak_bytes.expect("measured") as f64;
            let simulated = d.runs[0].reserved_peak_bytes as f64;
            assert!(
                (simulated / measured - 1.0).abs() < 0.05,
                "{}: {simulated} vs {measured}",
                path.display()
            );
        }
    }
}

fn described(p: &Proof) -> String {
    format!(
        "{} of {} placed as recorded, {} start blocks resized, final segments identical: {}",
        p.placed_as_recorded, p.allocations, p.start_blocks_resized, p.final_segments_identical
    )
}

#[test]
fn expandable_segments_avoid_an_oom_that_fragmentation_causes() {
    // 60 MiB allocated and freed; 40 and 15 MiB split from its segment; the 40 MiB freed:
    // 45 MiB free in the cache, the largest 40 MiB, and the segment cannot be released (a
    // block of it is in use). 50 MiB more on a 100 MiB device: by default a 50 MiB
    // segment does not fit beside the 60 MiB one, an OOM. With expandable segments the
    // free pages are unmapped and mapped again after the block in use.
    let entry = |action, addr, size_bytes| HistoryEntry {
        time_ns: 0,
        action,
        addr,
        size_bytes,
        stream: 0,
        device_free_bytes: None,
        stack: None,
    };
    let history = DeviceHistory {
        device: 0,
        start: Vec::new(),
        entries: vec![
            entry(HistoryAction::Alloc, 1, 60 * MIB),
            entry(HistoryAction::FreeCompleted, 1, 60 * MIB),
            entry(HistoryAction::Alloc, 2, 40 * MIB),
            entry(HistoryAction::Alloc, 3, 15 * MIB),
            entry(HistoryAction::FreeCompleted, 2, 40 * MIB),
            entry(HistoryAction::Oom, 0, 50 * MIB),
        ],
        carried_bytes: 0,
    };
    let default = predict(&history, &AllocatorConfig::default(), Some(100 * MIB));
    let oom = default.ooms[0];
    assert_eq!((oom.recorded, oom.happens), (true, Some(true)));
    assert_eq!(oom.short_by_bytes, Some(10 * MIB));
    assert_eq!(default.reserved_peak_bytes, 60 * MIB);
    let expandable = AllocatorConfig::parse("expandable_segments:True").expect("conf");
    let run = predict(&history, &expandable, Some(100 * MIB));
    assert_eq!(run.ooms[0].happens, Some(false));
    assert_eq!(run.ooms[0].headroom_bytes, Some(20 * MIB));
    assert!(run.device_frees >= 1, "free pages were unmapped");
}

#[test]
fn garbage_collection_releases_the_oldest_cached_segments_first() {
    // A 60 MiB segment cached, then an 80 MiB one; a 100 MiB request fits neither. Past
    // garbage_collection_threshold:0.5 of a 200 MiB device (140 MiB reserved > 100 MiB),
    // the older cached segment goes first and that is enough (40 MiB to reclaim): the
    // 80 MiB one stays cached. Without it, the 100 MiB request finds the device full and
    // every cached segment is released.
    let steps = [60 * MIB as i64, -0, 80 * MIB as i64, -1, 100 * MIB as i64];
    let sizes = |conf: &str| -> Vec<u64> {
        let config = AllocatorConfig::parse(conf).expect("conf");
        let run = predict(&history(&steps), &config, Some(200 * MIB));
        assert!(run.ooms.is_empty(), "{conf}: {:?}", run.ooms);
        let mut sizes: Vec<u64> = run.final_segments.iter().map(|s| s.total_size).collect();
        sizes.sort_unstable();
        sizes
    };
    assert_eq!(
        sizes("garbage_collection_threshold:0.5"),
        [80 * MIB, 100 * MIB]
    );
    assert_eq!(sizes(""), [100 * MIB]);
}

#[test]
fn a_request_larger_than_the_device_is_an_oom_under_every_setting() {
    // 40 MiB asked of a 1 MiB device: an OOM each time (the replay goes on past each one),
    // with plain and with expandable segments, whose address space is sized by the device.
    let steps = [40 * MIB as i64, -0, 60 * MIB as i64];
    for conf in ["", "expandable_segments:True"] {
        let config = AllocatorConfig::parse(conf).expect("conf");
        let run = predict(&history(&steps), &config, Some(MIB));
        let failed: Vec<u64> = (run.ooms.iter())
            .filter(|o| o.happens == Some(true))
            .map(|o| o.requested_bytes)
            .collect();
        assert_eq!(failed.first(), Some(&(40 * MIB)), "{conf}: {:?}", run.ooms);
    }
}

#[test]
fn simulated_segments_at_an_instant_hold_the_live_blocks() {
    // A real snapshot, at its end and halfway: under the recorded settings the allocated
    // blocks are the live ones; expandable segments split every remainder of 512 B or
    // more (c10's should_split), so the same tensors hold fewer bytes, in fewer segments.
    let path = real_snapshots()
        .into_iter()
        .find(|p| p.ends_with("snapshots-cs336-nothanmin/memory_snapshot.pickle"))
        .expect("the real snapshot");
    let options = crate::parse::LoadOptions {
        allocator_history: true,
        ..Default::default()
    };
    let rec = crate::parse::load(&path, options).expect("snapshot");
    let timeline = crate::timeline::Timeline::build(&rec);
    let d = &timeline.devices[0];
    let entries = &rec.allocator.as_ref().expect("allocator").history[0].entries;
    let (first, last) = (entries[0].time_ns, entries[entries.len() - 1].time_ns);
    for at_ns in [first + (last - first) / 2, last] {
        let live = d.at(at_ns).expect("a point").allocated_bytes;
        let plain = simulated_layout_at(&rec, d.device, &AllocatorConfig::default(), at_ns)
            .expect("history");
        let conf = AllocatorConfig::parse("expandable_segments:True").expect("conf");
        let expandable = simulated_layout_at(&rec, d.device, &conf, at_ns).expect("history");
        assert!(
            (plain.allocated_bytes - live).abs() <= live / 1000,
            "{} vs {live}",
            plain.allocated_bytes
        );
        assert!(expandable.allocated_bytes <= plain.allocated_bytes);
        assert!(expandable.allocated_bytes >= live - live / 20);
        for l in [&plain, &expandable] {
            assert!(
                l.reserved_bytes >= l.allocated_bytes,
                "{}",
                l.allocator_conf
            );
        }
        assert!(expandable.segments.len() < plain.segments.len());
    }
}
