//! Allocator snapshots: replayed timelines against an independent replay (Python, a
//! restricted unpickler), fragmentation, OOM verdicts, live blocks, growth, and refusal of
//! pickles that would run code.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::*;

fn fixture_dir() -> PathBuf {
    fixtures().join("snapshot")
}

fn snapshots() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixture_dir())
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pickle"))
        .collect();
    out.sort();
    assert!(out.len() >= 6, "generated snapshots missing");
    out.push(shared_traces().join("real/snapshot-cs336-magma27/memory_snapshot.pickle"));
    // The bundled sample a new user opens first.
    out.push(repo_root().join("samples/cs336-transformer-snapshot.pickle"));
    out
}

/// tests/fixtures/snapshot/replay.py: an independent replay in Python.
fn python_replay(path: &Path) -> Value {
    let out = Command::new("python3")
        .arg(fixture_dir().join("replay.py"))
        .arg(path)
        .output()
        .expect("python3 is needed for the independent replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("replay JSON")
}

#[test]
fn replay_matches_an_independent_replay() {
    for path in snapshots() {
        let p = path.to_str().expect("path");
        let want = python_replay(&path);
        let summary = vramscope_json(&["summary", p]);
        assert_eq!(summary["format"], "pytorch-allocator-snapshot");
        let devices = summary["devices"].as_array().expect("devices");
        let want = want.as_object().expect("object");
        assert_eq!(devices.len(), want.len(), "{p}");
        for d in devices {
            let w = &want[d["device"].as_str().expect("device")];
            assert_eq!(
                d["peak_allocated_bytes"], w["peak_allocated"],
                "{p} {}",
                d["device"]
            );
            assert_eq!(d["final_allocated_bytes"], w["final_allocated"], "{p}");
            assert_eq!(d["peak_requested_bytes"], w["peak_requested"], "{p}");
            assert_eq!(d["final_requested_bytes"], w["final_requested"], "{p}");
            assert_eq!(d["peak_reserved_bytes"], w["peak_reserved"], "{p}");
            assert_eq!(d["final_reserved_bytes"], w["final_reserved"], "{p}");
            assert_eq!(d["ooms"], w["ooms"], "{p}");
        }
        // The replay ends exactly in the snapshot's state: no inconsistency was noted.
        let warnings = summary["warnings"].as_object().expect("warnings");
        assert!(
            !warnings.keys().any(|k| k.contains("replay ends")),
            "{p}: {warnings:?}"
        );
        // Fragmentation at the snapshot comes from the allocator's own blocks.
        for f in summary["fragmentation"]
            .as_array()
            .expect("fragmentation")
            .iter()
            .filter(|f| f["source"] == "snapshot")
        {
            let w = &want[f["device"].as_str().expect("device")];
            assert_eq!(f["reserved_bytes"], w["final_reserved"], "{p}");
            assert_eq!(f["allocated_bytes"], w["final_allocated"], "{p}");
            assert_eq!(f["segments"], w["segments"], "{p}");
        }
    }
}

#[test]
fn real_snapshot_facts() {
    let path = shared_traces().join("real/snapshot-cs336-magma27/memory_snapshot.pickle");
    let summary = vramscope_json(&["summary", path.to_str().expect("p")]);
    // PROVENANCE.md: 216 segments (208 large, 8 small), 5163 entries of alloc/free_requested/
    // free_completed (1721 each); reserved 14,180,941,824 B, allocated 1,377,753,600 B.
    let f = summary["fragmentation"]
        .as_array()
        .expect("f")
        .iter()
        .find(|f| f["source"] == "snapshot")
        .expect("snapshot")
        .clone();
    assert_eq!(f["segments"], 216);
    assert_eq!(f["small_pool"]["segments"], 8);
    assert_eq!(f["large_pool"]["segments"], 208);
    assert_eq!(f["reserved_bytes"], 14_180_941_824i64);
    let d = &summary["devices"][0];
    assert_eq!(d["device"], "cuda:0");
    // 1721 alloc entries, plus the blocks already live when the surviving history begins.
    let pre_existing = summary["warnings"]
        .as_object()
        .expect("warnings")
        .iter()
        .find(|(k, _)| k.contains("before the snapshot's history began"))
        .map_or(0, |(_, v)| v.as_u64().expect("count"));
    assert_eq!(d["allocs"].as_u64(), Some(1721 + pre_existing));
    assert_eq!(d["frees"], 1721);
    assert_eq!(
        summary["allocator_settings"]["expandable_segments"],
        "False"
    );
    assert!(summary["era"].as_str().expect("era").contains("time_us"));
    // Frames are Windows paths in this file: they survive as written.
    let live = vramscope_json(&[
        "live",
        path.to_str().expect("p"),
        "--at",
        "peak",
        "--limit",
        "3",
    ]);
    assert_eq!(live["allocated_bytes"], d["peak_allocated_bytes"]);
    assert_eq!(live["live_bytes"], live["allocated_bytes"]);
    let site = live["groups"][0]["site"].as_str().expect("site");
    assert!(site.contains(".py:"), "{site}");
}

#[test]
fn live_blocks_at_the_peak_are_grouped_by_user_frames() {
    let path = fixture_dir().join("basic.pickle");
    let p = path.to_str().expect("p");
    let live = vramscope_json(&["live", p, "--at", "peak"]);
    let groups = live["groups"].as_array().expect("groups");
    assert!(groups.len() > 2);
    let sizes: Vec<i64> = groups
        .iter()
        .map(|g| g["bytes"].as_i64().expect("bytes"))
        .collect();
    assert!(
        sizes.windows(2).all(|w| w[0] >= w[1]),
        "largest first: {sizes:?}"
    );
    assert_eq!(
        sizes.iter().sum::<i64>(),
        live["allocated_bytes"].as_i64().expect("allocated")
    );
    for g in groups {
        let site = g["site"].as_str().expect("site");
        assert!(!site.contains("??") && site.contains("fn_"), "{site}");
    }
    let text = vramscope_ok(&["live", p, "--at", "end", "--limit", "2"]);
    assert!(
        text.contains("cuda:0 at end") && text.contains("blocks"),
        "{text}"
    );
}

#[test]
fn oom_verdicts() {
    let path = fixture_dir().join("oom.pickle");
    let summary = vramscope_json(&["summary", path.to_str().expect("p")]);
    let ooms = summary["ooms"].as_array().expect("ooms");
    assert_eq!(ooms.len(), 2);
    // gen_snapshots.py: ten 18 MiB tensors, each in its own 18 MiB segment (requests of
    // 10 MiB or more get a segment rounded to 2 MiB), every other one freed: five 18 MiB
    // holes. Then a 60 MiB request with 12 MiB free on the device: enough memory in total,
    // no block big enough.
    assert_eq!(ooms[0]["cause"], "fragmentation");
    assert_eq!(ooms[0]["requested_bytes"], 60 << 20);
    assert_eq!(ooms[0]["largest_free_block_bytes"], 18 << 20);
    assert_eq!(ooms[0]["cache_free_bytes"], 5 * (18 << 20));
    assert_eq!(ooms[0]["device_free_bytes"], 12 << 20);
    assert!(
        ooms[0]["verdict"]
            .as_str()
            .expect("v")
            .contains("expandable_segments:True")
    );
    // Then 300 MiB with 30 MiB free: live tensors fill the device.
    assert_eq!(ooms[1]["cause"], "capacity");
    assert!(
        !ooms[1]["largest_live"]
            .as_array()
            .expect("groups")
            .is_empty()
    );
    let live = vramscope_json(&["live", path.to_str().expect("p"), "--at", "oom"]);
    assert_eq!(live["live_bytes"], ooms[0]["allocated_bytes"]);
}

#[test]
fn steady_growth_is_flagged() {
    // basic.pickle keeps a 3 MiB tensor alive from every one of its 5 annotated steps.
    let summary = vramscope_json(&[
        "summary",
        fixture_dir().join("basic.pickle").to_str().expect("p"),
    ]);
    let g = &summary["growth"][0];
    assert_eq!(g["steady_growth"], true);
    assert_eq!(g["average_growth_bytes"], 3 << 20);
    assert_eq!(
        g["allocated_at_step_end"].as_array().expect("steps").len(),
        5
    );
    assert_eq!(summary["steps"], 5);
    // ring.pickle lost its early history: frees of blocks allocated before it still balance.
    let ring = vramscope_json(&[
        "summary",
        fixture_dir().join("ring.pickle").to_str().expect("p"),
    ]);
    assert!(
        ring["warnings"]
            .as_object()
            .expect("w")
            .keys()
            .any(|k| k.contains("before the snapshot's history began"))
    );
}

#[test]
fn bad_pickles_are_refused_clearly() {
    let dir = temp_dir("badpickle");
    let basic = std::fs::read(fixture_dir().join("basic.pickle")).expect("read");
    let cut = dir.join("cut.pickle");
    std::fs::write(&cut, &basic[..basic.len() / 2]).expect("write");
    let out = vramscope(&["summary", cut.to_str().expect("p")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cut.pickle") && stderr.contains("byte"),
        "{stderr}"
    );
    // A pickle of something else.
    let other = dir.join("list.pickle");
    // pickle.dumps([1, 2], protocol=4)
    std::fs::write(
        &other,
        b"\x80\x04\x95\x09\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x4b\x01\x4b\x02\x65\x2e",
    )
    .expect("write");
    let out = vramscope(&["summary", other.to_str().expect("p")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("not a PyTorch allocator snapshot"),
        "{stderr}"
    );
}

#[test]
fn self_containing_and_shared_settings_are_printed_bounded() {
    // The memo lets a pickle put a list inside itself and share one list 2^40 times over.
    // allocator_settings are printed as text: that must neither recurse forever nor grow
    // without bound. Built by hand: {"segments": [], "device_traces": [],
    // "allocator_settings": {"a": L (L.append(L)), "b": L40}}, L(i) = [L(i-1), L(i-1)].
    let mut b: Vec<u8> = b"\x80\x04}\x94(".to_vec();
    let key = |b: &mut Vec<u8>, k: &str| {
        b.push(0x8c);
        b.push(k.len() as u8);
        b.extend_from_slice(k.as_bytes());
    };
    key(&mut b, "segments");
    b.push(b']');
    key(&mut b, "device_traces");
    b.push(b']');
    key(&mut b, "allocator_settings");
    b.extend_from_slice(b"}\x94("); // memo 1
    key(&mut b, "a");
    b.extend_from_slice(b"]\x94h\x02a"); // memo 2 = L; L.append(L)
    key(&mut b, "b");
    b.extend_from_slice(b"]\x940"); // memo 3 = L(0), popped
    for level in 3u8..43 {
        // memo level+1 = [memo level, memo level], popped
        b.extend_from_slice(&[b'(', b'h', level, b'h', level, b'l', 0x94, b'0']);
    }
    b.extend_from_slice(&[b'h', 43, b'u', b'u', b'.']);
    let dir = temp_dir("cyclic-settings");
    let path = dir.join("cyclic.pickle");
    std::fs::write(&path, &b).expect("write");
    let started = std::time::Instant::now();
    let out = vramscope(&["summary", path.to_str().expect("p"), "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("overflow") && !stderr.contains("panicked"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        started.elapsed().as_secs() < 30,
        "took {:?}",
        started.elapsed()
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let settings = &v["allocator_settings"];
    let a = settings["a"].as_str().expect("a as text");
    assert!(a.starts_with("[[[[") && a.contains('…'), "{a}");
    let deep = settings["b"].as_str().expect("b as text");
    assert!(
        deep.len() < 8192 && deep.contains('…'),
        "{} chars",
        deep.len()
    );
}

#[test]
fn code_running_pickles_are_refused_and_nothing_runs() {
    let dir = fixtures().join("pickle");
    let evil: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("pickle fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("evil"))
        })
        .collect();
    assert!(
        !evil.is_empty(),
        "no evil*.pickle fixtures in {}",
        dir.display()
    );
    let marker = Path::new("/tmp/vramscope-pwned");
    let _ = std::fs::remove_file(marker);
    for p in evil {
        let out = vramscope(&["summary", p.to_str().expect("p")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(!marker.exists(), "{} ran code", p.display());
        // Protocol 2+ pickles are read and refused at the opcode; protocol 0/1 ones (no
        // PROTO header, never written by torch) are not recognised as snapshots at all.
        if std::fs::read(&p).expect("read").first() == Some(&0x80) {
            assert!(
                stderr.contains("run code") && stderr.contains("byte"),
                "{stderr}"
            );
        } else {
            assert!(stderr.contains("not a format vramscope reads"), "{stderr}");
        }
    }
}
