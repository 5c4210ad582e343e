//! The stored results' revisions follow the analyses: each revision is pinned beside a hash
//! of what this build stores for real inputs, so a change to the summary, the table or the
//! spans `summary` reads fails here until its revision is bumped (packs of the old one are
//! then computed from their events, never trusted) and the hash set anew.

use super::PackLine;
use super::stored::{SUMMARY_REVISION, TABLE_REVISION, summary_record, table_record};
use super::summary_spans::{SELECTION_REVISION, selection_record};
use crate::parse::{LoadOptions, load};

/// Each record: its revision constant, the revision it had when the hash was taken, and
/// the hash of what it stores for the inputs.
const PINNED: [(&str, u32, u32, u64); 3] = [
    ("summary_spans", SELECTION_REVISION, 4, 0x0db80c483dee305b),
    ("table", TABLE_REVISION, 1, 0xc7d6ae15d6304c5f),
    ("summary", SUMMARY_REVISION, 7, 0x105b300e8d619956),
];

/// FNV-1a, 64 bits: stable across builds and machines.
fn fnv1a(bytes: &[u8], mut hash: u64) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A record's content without its revision and version.
fn content(line: &PackLine) -> Vec<u8> {
    let mut v = serde_json::to_value(line).expect("json");
    for record in v.as_object_mut().expect("object").values_mut() {
        if let Some(o) = record.as_object_mut() {
            o.remove("revision");
            o.remove("vramscope_version");
        }
    }
    serde_json::to_vec(&v).expect("bytes")
}

#[test]
fn a_change_to_what_a_pack_stores_bumps_its_revision() {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    let mut hashes = [FNV_OFFSET; 3];
    for input in super::tests_stored::inputs() {
        let mut rec = load(&input, LoadOptions::default()).expect("input");
        let (selection, summary) = selection_record(&mut rec);
        let records = [selection, table_record(&rec), summary_record(summary)];
        for (hash, record) in hashes.iter_mut().zip(&records) {
            let bytes = record.as_ref().map_or_else(Vec::new, content);
            *hash = fnv1a(&bytes, *hash);
        }
    }
    let stale: Vec<String> = (PINNED.into_iter().zip(hashes))
        .filter(|((_, revision, pinned_revision, pinned), hash)| {
            (revision, hash) != (pinned_revision, pinned)
        })
        .map(|((name, revision, _, _), hash)| format!("(\"{name}\", {revision}, {hash:#018x})"))
        .collect();
    assert!(
        stale.is_empty(),
        "what a pack stores, or its revision, changed: a change to what is stored bumps the \
         revision constant; then pin the revision and the hash in PINNED: {stale:?}"
    );
}
