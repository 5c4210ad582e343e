//! What a snapshot's outputs say about it: why its table is one `[memory]` row, a peak
//! "from the start", and the damaged entries it skipped.

use crate::support::*;

/// A snapshot has no ops: `table` says why everything is one `[memory]` row and the report
/// leaves the top-ops table out; reserved memory at its maximum before the history began
/// peaks "from the start", not "at 0.000 µs".
#[test]
fn a_snapshot_explains_its_table_and_a_peak_from_the_start() {
    let snapshot = shared_traces().join("real/snapshot-cs336-magma27/memory_snapshot.pickle");
    let path = snapshot.to_str().expect("utf-8");
    let table = vramscope_ok(&["table", path]);
    assert!(
        table.starts_with("note: a PyTorch allocator snapshot records allocations but no ops"),
        "{table}"
    );
    let summary = vramscope_ok(&["summary", path]);
    assert!(
        summary.contains("peak reserved    13.21 GiB from the start"),
        "{summary}"
    );
    let json = vramscope_json(&["summary", path]);
    assert_eq!(json["devices"][0]["peak_reserved_at_us"], 0.0);
    let dir = temp_dir("snapshot-report");
    vramscope_ok(&["report", path, "-o", dir.to_str().expect("utf-8")]);
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(!md.contains("Top ops"), "{md}");
    assert!(!dir.join("top-ops.png").exists());
    assert!(
        md.contains("| peak reserved | 13.21 GiB (14180941824 B) from the start |"),
        "{md}"
    );
}

/// Nothing silently wrong: a trace entry whose size is not an unsigned int is skipped and
/// counted (replaying a guess would make every later total wrong), and a `segments` entry
/// that is not a dict is skipped and counted instead of becoming a phantom segment.
#[test]
fn bad_snapshot_entries_are_skipped_and_counted() {
    let dir = temp_dir("bad-entries");
    let out = dir.join("bad.pickle");
    let script = r#"
import pickle, sys
snap = pickle.load(open(sys.argv[1], 'rb'))
entries = [e for trace in snap['device_traces'] for e in trace if e.get('action') == 'alloc']
entries[0]['size'] = 'twelve'
entries[1]['size'] = -512
segments = len(snap['segments'])
snap['segments'].append(42)
pickle.dump(snap, open(sys.argv[2], 'wb'), protocol=4)
print(segments)
"#;
    let made = std::process::Command::new(crate::record_support::python3())
        .args(["-c", script])
        .arg(fixtures().join("snapshot/basic.pickle"))
        .arg(&out)
        .output()
        .expect("python3");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let segments: u64 = String::from_utf8_lossy(&made.stdout)
        .trim()
        .parse()
        .expect("segment count");
    let summary = vramscope_json(&["summary", out.to_str().expect("utf-8")]);
    let warnings = &summary["warnings"];
    assert_eq!(
        warnings["trace entries whose size is not a non-negative integer skipped"], 2,
        "{summary}"
    );
    assert_eq!(
        warnings["entries of \"segments\" that are not dicts skipped"], 1,
        "{summary}"
    );
    let fragmentation = summary["fragmentation"].as_array().expect("fragmentation");
    let at_snapshot = fragmentation
        .iter()
        .find(|f| f["source"] == "snapshot")
        .expect("the snapshot's own fragmentation");
    assert_eq!(at_snapshot["segments"], segments, "no phantom segment");
}

/// Bytes after a snapshot's pickle (Python's `pickle.load` stops at STOP and never sees
/// them) are counted in a warning with the offset where the pickle ended; the snapshot reads
/// as without them.
#[test]
fn bytes_after_the_pickle_are_a_warning() {
    let original = fixtures().join("snapshot/oom.pickle");
    let bytes = std::fs::read(&original).expect("fixture");
    let dir = temp_dir("pickle-trailing");
    let padded = dir.join("padded.pickle");
    let mut with_junk = bytes.clone();
    with_junk.extend_from_slice(b"not part of it\n");
    std::fs::write(&padded, &with_junk).expect("write");
    let json = vramscope_json(&["summary", padded.to_str().expect("utf-8")]);
    let what = format!(
        "bytes after the end of the pickle at byte {} ignored",
        group(bytes.len())
    );
    assert_eq!(json["warnings"][what.as_str()], 15, "{}", json["warnings"]);
    let clean = vramscope_json(&["summary", original.to_str().expect("utf-8")]);
    assert_eq!(json["devices"], clean["devices"]);
    assert!(clean["warnings"].as_object().is_none_or(|w| w.is_empty()));
}

/// `n` with thousands separators, as warnings write offsets.
fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
