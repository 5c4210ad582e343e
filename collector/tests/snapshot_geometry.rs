//! Fragmentation rebuilt from the replayed timeline (segment ranges minus live blocks, by
//! address) must match, at the snapshot instant, the allocator's own block list.

use std::path::PathBuf;

use collector::analysis::fragmentation::{fragmentation_at, fragmentation_at_snapshot};
use collector::{LoadOptions, Timeline, load};

fn snapshots() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out: Vec<PathBuf> = ["basic", "old", "multi_gpu", "ring", "oom", "expandable"]
        .iter()
        .map(|n| root.join(format!("tests/fixtures/snapshot/{n}.pickle")))
        .collect();
    out.push(root.join("../shared/traces/real/snapshot-cs336-magma27/memory_snapshot.pickle"));
    out
}

#[test]
fn reconstruction_matches_the_snapshot_blocks() {
    for path in snapshots() {
        let rec = load(&path, LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let timeline = Timeline::build(&rec);
        for (i, d) in timeline.devices.iter().enumerate() {
            let Some(exact) = fragmentation_at_snapshot(&rec, i as u16) else {
                continue;
            };
            let end = d.points.last().map(|p| p.time_ns).expect("events");
            let rebuilt = fragmentation_at(&rec, &timeline, i as u16, end).expect("geometry");
            let name = format!("{} {}", path.display(), exact.device);
            assert_eq!(rebuilt.reserved_bytes, exact.reserved_bytes, "{name}");
            assert_eq!(rebuilt.allocated_bytes, exact.allocated_bytes, "{name}");
            assert_eq!(rebuilt.cache_free_bytes, exact.cache_free_bytes, "{name}");
            assert_eq!(
                rebuilt.largest_free_block_bytes, exact.largest_free_block_bytes,
                "{name}"
            );
            assert_eq!(rebuilt.free_blocks, exact.free_blocks, "{name}");
            assert_eq!(rebuilt.small_pool, exact.small_pool, "{name}");
            assert_eq!(rebuilt.large_pool, exact.large_pool, "{name}");
        }
    }
}
