//! `vramscope pack`: a pack of any input gives exactly the same summary, table and live
//! blocks as the original (and torch's own numbers where the original has them), is much
//! smaller, redacts user paths on request, and is never left half-written.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

/// Every kind of input: real traces of every era, torch truth, snapshots, Nsight exports.
fn inputs() -> Vec<PathBuf> {
    let shared = shared_traces();
    let real = std::fs::read_dir(shared.join("real")).expect("real traces");
    let mut dirs: Vec<PathBuf> = real.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.push(shared.join("torch-cpu"));
    let mut out: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.to_string_lossy();
            name.ends_with(".json.gz") || name.ends_with(".pickle")
        })
        .collect();
    out.extend(
        ["run.sqlite", "run.json"]
            .iter()
            .map(|n| shared.join("nsys-cpu").join(n)),
    );
    for f in [
        "snapshot/oom.pickle",
        "snapshot/multi_gpu.pickle",
        "snapshot/expandable.pickle",
        "nsight/cuda-memory.sqlite",
        "torch-cpu/x01_thread.json.gz",
        "recording/v1-train.vsr",
        "recording/v1-killed.vsr",
    ] {
        out.push(fixtures().join(f));
    }
    out.sort();
    out
}

pub(crate) fn pack(input: &Path, output: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "pack",
        input.to_str().expect("path"),
        "-o",
        output.to_str().expect("path"),
    ];
    args.extend(extra);
    vramscope_ok(&args)
}

/// A summary without what names the file itself.
pub(crate) fn summary_facts(path: &Path) -> Value {
    let mut s = vramscope_json(&["summary", path.to_str().expect("path")]);
    let o = s.as_object_mut().expect("object");
    o.remove("file");
    o.remove("packed");
    s
}

/// Inputs below this size may pack to 1 % more: the pack's stored table and summary
/// (a few hundred bytes, gzip'd) outweigh what packing a 1 KiB recording saves.
const TINY_INPUT_BYTES: u64 = 4096;

#[test]
fn a_pack_reads_exactly_like_its_original() {
    let dir = temp_dir("pack-same");
    let inputs = inputs();
    assert!(inputs.len() >= 20, "{inputs:?}");
    for (i, input) in inputs.iter().enumerate() {
        let packed = dir.join(format!("{i}.vsr"));
        let said = pack(input, &packed, &[]);
        assert!(said.starts_with("wrote "), "{said}");
        let what = input.display();
        assert_eq!(summary_facts(input), summary_facts(&packed), "{what}");
        let table = |p: &Path| vramscope_json(&["table", p.to_str().expect("p"), "--sort", "none"]);
        assert_eq!(table(input), table(&packed), "{what}");
        let summary = vramscope_json(&["summary", packed.to_str().expect("p")]);
        let note = summary["packed"].as_str().expect("a pack says so");
        let name = input.file_name().expect("name").to_string_lossy();
        assert!(note.contains(&*name), "{note}");
        let has_allocations = summary["devices"]
            .as_array()
            .expect("devices")
            .iter()
            .any(|d| d["allocs"].as_u64() > Some(0));
        if has_allocations {
            let live = |p: &Path| vramscope_json(&["live", p.to_str().expect("p")]);
            assert_eq!(live(input), live(&packed), "{what}");
        }
        let (a, b) = (file_len(input), file_len(&packed));
        assert!(
            b < a || (a < TINY_INPUT_BYTES && b * 100 <= a * 101),
            "{what}: the pack ({b} B) is smaller than the input ({a} B)"
        );
    }
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).expect("metadata").len()
}

#[test]
fn a_packed_table_still_equals_torchs_key_averages() {
    let dir = temp_dir("pack-truth");
    for (trace, truth) in truth_pairs(&fixtures().join("torch-cpu")).iter().take(6) {
        let packed = dir.join("t.vsr");
        pack(trace, &packed, &["--force"]);
        let got = vramscope_json(&["table", packed.to_str().expect("p"), "--sort", "none"]);
        assert_eq!(
            &got,
            &read_json(truth)["key_averages"],
            "{}",
            trace.display()
        );
    }
}

/// Signs of absolute paths: Unix directories where users keep things, and a Windows drive
/// (`D:\\Dev\\…`, as JSON escapes it, or `D:\\Dev` as text).
fn user_paths(text: &str) -> Vec<&str> {
    [
        "/root/", "/home/", "/work/", "/tmp/", "/Users/", ":\\\\", ":\\",
    ]
    .into_iter()
    .filter(|p| text.contains(p))
    .collect()
}

#[test]
fn redacted_packs_keep_the_numbers_and_drop_user_paths() {
    let dir = temp_dir("pack-redact");
    // A real trace whose metadata names a temporary file, and the real allocator snapshot
    // (frames with Windows paths of the user's project and virtualenv).
    let trace = shared_traces().join(
        "real/tracelens-h100-owlv2-large/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    );
    let snapshot = shared_traces().join("real/snapshot-cs336-magma27/memory_snapshot.pickle");
    for input in [trace, snapshot] {
        let original = String::from_utf8_lossy(&read_maybe_gz(&input)).into_owned();
        assert!(
            !user_paths(&original).is_empty(),
            "{}: the input has user paths to redact",
            input.display()
        );
        let plain = dir.join("plain.vsr");
        let redacted = dir.join("redacted.vsr");
        pack(&input, &plain, &["--force"]);
        let said = pack(&input, &redacted, &["--redact-paths", "--force"]);
        assert!(said.contains("user paths removed from"), "{said}");
        let text = String::from_utf8(read_maybe_gz(&redacted)).expect("utf-8");
        assert_eq!(user_paths(&text), Vec::<&str>::new(), "{}", input.display());
        // Same memory, same op totals: only names changed.
        assert_eq!(
            summary_facts(&plain)["devices"],
            summary_facts(&redacted)["devices"]
        );
        let total = |p: &Path, key: &str| -> i64 {
            vramscope_json(&["table", p.to_str().expect("p")])
                .as_array()
                .expect("rows")
                .iter()
                .map(|r| r[key].as_i64().expect("bytes"))
                .sum()
        };
        for key in ["self_cpu_memory_usage", "self_device_memory_usage"] {
            assert_eq!(total(&plain, key), total(&redacted, key), "{key}");
        }
        let summary = vramscope_json(&["summary", redacted.to_str().expect("p")]);
        assert!(
            summary["packed"]
                .as_str()
                .is_some_and(|n| n.contains("user paths redacted")),
            "{summary}"
        );
    }
    // Frames keep their file names: the live groups of the redacted snapshot name files
    // like `model.py`, not `/home/…/model.py`.
    let redacted = dir.join("redacted.vsr");
    let redacted = redacted.to_str().expect("p");
    let live = vramscope_ok(&["live", redacted]);
    // (The first line names the pack itself, which lives in a temporary directory.)
    let groups: String = live.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert!(groups.contains("model.py:532 silu"), "{live}");
    assert!(user_paths(&groups).is_empty(), "{live}");
    // Package frames keep their path from site-packages on, so they still count as library
    // code and the redacted snapshot groups its live blocks as the original does.
    let snapshot = shared_traces().join("real/snapshot-cs336-magma27/memory_snapshot.pickle");
    let groups = |path: &str| vramscope_json(&["live", path, "--limit", "1000"])["groups"].clone();
    let (original, redacted) = (groups(snapshot.to_str().expect("p")), groups(redacted));
    let sizes = |v: &Value| -> Vec<(i64, i64)> {
        let sizes = v.as_array().expect("groups").iter();
        sizes
            .map(|g| {
                (
                    g["bytes"].as_i64().expect("b"),
                    g["blocks"].as_i64().expect("n"),
                )
            })
            .collect()
    };
    assert_eq!(sizes(&original), sizes(&redacted));
    assert!(sizes(&original).len() > 20, "{original}");
    let frames = redacted.to_string();
    assert!(frames.contains("site-packages/torch/nn/modules/module.py:1790 _call_impl"));
    assert!(user_paths(&frames).is_empty(), "{frames}");
}

#[test]
fn pack_refuses_to_overwrite_and_reports_bad_output_paths() {
    let dir = temp_dir("pack-refuse");
    let input = fixtures().join("snapshot/basic.pickle");
    let out = dir.join("p.vsr");
    pack(&input, &out, &[]);
    let before = std::fs::read(&out).expect("pack");
    let again = vramscope(&[
        "pack",
        input.to_str().expect("p"),
        "-o",
        out.to_str().expect("p"),
    ]);
    assert_eq!(again.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("exists; pass --force"), "{stderr}");
    assert_eq!(std::fs::read(&out).expect("pack"), before, "left alone");
    pack(&input, &out, &["--force"]);

    let missing = dir.join("no/such/dir/p.vsr");
    let bad = vramscope(&[
        "pack",
        input.to_str().expect("p"),
        "-o",
        missing.to_str().expect("p"),
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("cannot write") && stderr.contains("p.vsr"),
        "{stderr}"
    );
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert_eq!(names, ["p.vsr"], "no temporary files left behind");
}

#[test]
fn a_cut_pack_is_a_clear_error_and_salvage_keeps_what_is_complete() {
    let dir = temp_dir("pack-cut");
    let input = fixtures().join("torch-cpu/k06_lm_sched.json.gz");
    let out = dir.join("p.vsr");
    pack(&input, &out, &[]);
    let bytes = std::fs::read(&out).expect("pack");
    let cut = dir.join("cut.vsr");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write");
    let r = vramscope(&["summary", cut.to_str().expect("p")]);
    assert_eq!(r.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(
        stderr.contains("cut.vsr") && stderr.contains("byte"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The raw (uncompressed) pack cut after its memory records keeps every memory event.
    let raw = read_maybe_gz(&out);
    let end = raw
        .windows(12)
        .position(|w| w == b"\n{\"ops_vlq\":")
        .expect("ops after mem")
        + 1;
    let raw_cut = dir.join("raw-cut.vsr");
    std::fs::write(&raw_cut, &raw[..end]).expect("write");
    let p = raw_cut.to_str().expect("p");
    let r = vramscope(&["summary", p]);
    assert_eq!(r.status.code(), Some(1), "no end record: an error");
    let salvaged = vramscope_json(&["summary", p, "--salvage"]);
    let original = vramscope_json(&["summary", input.to_str().expect("p")]);
    assert_eq!(salvaged["memory_events"], original["memory_events"]);
    assert_eq!(
        salvaged["devices"][0]["peak_allocated_bytes"],
        original["devices"][0]["peak_allocated_bytes"]
    );
}
