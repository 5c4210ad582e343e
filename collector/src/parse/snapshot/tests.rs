//! Trace entries, frames and stacks folded while the pickle is read (`fold`, `frames`)
//! must come out exactly as the arena would give them, and the real snapshot must keep its
//! numbers.

use std::path::PathBuf;

use super::fold::EntryFolder;
use super::parse::{Gathered, gather};
use crate::parse::pickle;

fn snapshots() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let names = [
        "basic",
        "old",
        "multi_gpu",
        "ring",
        "oom",
        "expandable",
        "graphs",
    ];
    let mut out: Vec<PathBuf> = names
        .iter()
        .map(|n| root.join(format!("tests/fixtures/snapshot/{n}.pickle")))
        .collect();
    out.push(root.join("../shared/traces/real/snapshot-cs336-magma27/memory_snapshot.pickle"));
    out
}

/// Everything `gather` hands the replay, as comparable text.
fn described(g: &Gathered) -> String {
    let mut out = format!("{:?}\n{:?}\n", g.rec.stacks, g.state);
    for (device, t) in &g.per_device {
        out += &format!(
            "{device}: {:?} {:?} {:?} {:?}\n",
            t.entries, t.device_free, t.notes, t.streams
        );
    }
    let strings: Vec<&str> = (0..g.rec.strings.len() as u32)
        .map(|i| g.rec.strings.get(crate::model::StrId(i)))
        .collect();
    out + &format!("{strings:?} {:?}", g.rec.diagnostics)
}

#[test]
fn folded_entries_are_read_as_the_arena_reads_them() {
    for path in snapshots() {
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Every dict left in the arena, opcode by opcode, every entry read from it.
        let whole = pickle::parse_opcode_by_opcode(&bytes[..], bytes.len(), &mut pickle::NoFold)
            .expect("pickle");
        let reference = gather(&whole, EntryFolder::default()).expect("snapshot");
        // Entries, frames and stacks folded as they are parsed (the fast path and
        // SETITEMS both).
        let mut folder = EntryFolder::default();
        let folded = pickle::parse_folding(&bytes[..], bytes.len(), &mut folder).expect("pickle");
        assert!(!folder.entries.is_empty(), "{}", path.display());
        let read = gather(&folded, folder).expect("snapshot");
        assert_eq!(
            described(&read),
            described(&reference),
            "{}",
            path.display()
        );
        // Folded at SETITEMS only, every dict opcode by opcode.
        let mut folder = EntryFolder::default();
        let slow = pickle::parse_opcode_by_opcode(&bytes[..], bytes.len(), &mut folder);
        let read = gather(&slow.expect("pickle"), folder).expect("snapshot");
        assert_eq!(
            described(&read),
            described(&reference),
            "{}",
            path.display()
        );
    }
}

#[test]
fn the_real_snapshot_keeps_its_numbers() {
    let path = snapshots().pop().expect("real");
    let rec = crate::load(&path, crate::LoadOptions::default()).expect("load");
    let timeline = crate::Timeline::build(&rec);
    let summary = crate::analysis::summarize(&rec, &timeline);
    let d = &summary.devices[0];
    // Measured before entries were folded (vramscope summary, 2026-12-06).
    assert_eq!(rec.mem_events.len(), 3887);
    assert_eq!(d.peak_allocated_bytes, Some(13_927_832_064));
    assert_eq!(d.final_allocated_bytes, Some(1_377_753_600));
    assert_eq!(d.peak_reserved_bytes, Some(14_180_941_824));
    assert_eq!(d.final_reserved_bytes, Some(14_180_941_824));
}

#[test]
fn frames_and_stacks_fold_into_a_smaller_arena() {
    let mut counts = Vec::new();
    for path in snapshots() {
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let whole = pickle::parse(&bytes).expect("pickle");
        let mut folder = EntryFolder::default();
        let folded = pickle::parse_folding(&bytes[..], bytes.len(), &mut folder).expect("pickle");
        counts.push((
            whole.node_count(),
            folded.node_count(),
            folder.stacks.frames.len(),
            folder.stacks.stack_count(),
        ));
    }
    // (values in the arena unfolded, folded; distinct frames and stacks folded), measured
    // 2026-12-06; the real snapshot last (18,347 folded before its entries, each with a
    // new frames list, were read whole: their ints make no slots).
    let want = [
        (1918, 810, 19, 6),
        (1732, 793, 16, 5),
        (3412, 1270, 16, 5),
        (1492, 748, 19, 6),
        (637, 504, 7, 2),
        (1636, 731, 16, 5),
        (1513, 793, 19, 6),
        (27430, 11083, 55, 54),
    ];
    assert_eq!(counts, want);
}

#[test]
fn blocks_live_before_the_history_begins_start_it_in_address_order() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/snapshot/ring.pickle");
    let rec = crate::load(&path, crate::LoadOptions::default()).expect("load");
    let pre_existing = rec.diagnostics.counts[super::PRE_EXISTING_BLOCKS];
    // The synthetic events before the history: segments, then the blocks live then.
    let start = rec.mem_events[0].time_ns;
    let addrs: Vec<u64> = (rec.mem_events.iter())
        .take_while(|e| e.time_ns == start)
        .filter(|e| e.kind == crate::model::MemEventKind::Alloc)
        .filter_map(|e| e.addr.get())
        .collect();
    assert_eq!(addrs.len() as u64, pre_existing);
    assert!(addrs.len() >= 8, "{addrs:?}");
    assert!(addrs.is_sorted(), "{addrs:x?}");
}
