use std::io::Write;
use std::path::{Path, PathBuf};

use super::*;
use crate::model::{GpuProcessSample, GpuSample, HostSample, SourceFormat, StrId};
use crate::parse::{LoadOptions, load};

pub(super) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

pub(super) fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vramscope-pack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    dir.join(name)
}

pub(super) fn packed_bytes(rec: &Recording) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rec = rec.clone();
    write(&mut out, &mut rec, &PackInfo::default()).expect("pack");
    out
}

pub(super) fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).expect("gzip");
    enc.finish().expect("gzip")
}

pub(super) fn read_back(
    name: &str,
    bytes: &[u8],
    options: LoadOptions,
) -> Result<Recording, String> {
    let path = temp(name);
    std::fs::write(&path, bytes).expect("write");
    load(&path, options).map_err(|e| e.to_string())
}

/// Every part of the model, field by field.
pub(super) fn assert_same(a: &Recording, b: &Recording, what: &str) {
    assert_eq!(a.meta.format, b.meta.format, "{what}: format");
    assert_eq!(a.meta.era, b.meta.era, "{what}: era");
    assert_eq!(a.meta.start_ns, b.meta.start_ns, "{what}: start");
    assert_eq!(a.meta.end_ns, b.meta.end_ns, "{what}: end");
    assert_eq!(a.meta.base_time_ns, b.meta.base_time_ns, "{what}");
    assert_eq!(a.meta.distributed, b.meta.distributed, "{what}");
    assert_eq!(a.meta.events_read, b.meta.events_read, "{what}");
    let mut props = b.meta.properties.clone();
    assert!(
        props.remove("vramscope_pack").is_some(),
        "{what}: pack noted"
    );
    assert_eq!(a.meta.properties, props, "{what}: properties");
    assert_eq!(a.strings.len(), b.strings.len(), "{what}: strings");
    for i in 0..a.strings.len() as u32 {
        assert_eq!(a.strings.get(StrId(i)), b.strings.get(StrId(i)), "{what}");
    }
    assert_eq!(a.devices, b.devices, "{what}: devices");
    assert_eq!(a.threads, b.threads, "{what}: threads");
    assert_eq!(a.mem_events, b.mem_events, "{what}: memory events");
    assert_eq!(a.ops, b.ops, "{what}: ops");
    assert_eq!(a.steps, b.steps, "{what}: steps");
    assert_eq!(a.stacks, b.stacks, "{what}: stacks");
    assert_eq!(a.allocator, b.allocator, "{what}: allocator");
    assert_eq!(a.oom_details, b.oom_details, "{what}: ooms");
    assert_eq!(a.gpu_samples, b.gpu_samples, "{what}: gpu samples");
    assert_eq!(a.host_samples, b.host_samples, "{what}: host samples");
    assert_eq!(
        a.gpu_process_samples, b.gpu_process_samples,
        "{what}: process samples"
    );
    assert_eq!(a.diagnostics, b.diagnostics, "{what}: diagnostics");
}

#[test]
fn every_fixture_survives_the_round_trip_exactly() {
    let inputs = [
        "torch-cpu/k02_mlp_stack.json.gz",
        "torch-cpu/k08_lm_ckpt_sched.json.gz",
        "torch-cpu/x01_thread.json.gz",
        "snapshot/basic.pickle",
        "snapshot/oom.pickle",
        "snapshot/expandable.pickle",
        "snapshot/multi_gpu.pickle",
        "snapshot/ring.pickle",
        "nsight/cuda-memory.sqlite",
    ];
    for name in inputs {
        let original = load(&fixtures().join(name), LoadOptions::default()).expect(name);
        assert!(
            !original.mem_events.is_empty() || !original.ops.is_empty(),
            "{name}: a fixture with content"
        );
        let bytes = packed_bytes(&original);
        let plain = read_back("plain.vsr", &bytes, LoadOptions::default()).expect(name);
        assert_same(&original, &plain, name);
        let packed = read_back("packed.vsr.gz", &gzip(&bytes), LoadOptions::default());
        assert_same(&original, &packed.expect(name), name);
        // Packing a pack changes nothing but the note.
        let mut again = plain.clone();
        again.meta.properties.remove("vramscope_pack");
        assert_eq!(
            packed_bytes(&again),
            bytes,
            "{name}: packing is deterministic"
        );
    }
}

#[test]
fn samples_round_trip() {
    let mut rec = Recording::empty(SourceFormat::VramscopeRecording, "format version 1");
    let d = rec.device_index(crate::model::DeviceId::cuda(1));
    for i in 0..(EVENTS_PER_LINE as i64 + 10) {
        rec.gpu_samples.push(GpuSample {
            time_ns: 1_700_000_000_000_000_000 + i * 100_000_000,
            device: d,
            used_bytes: (i as u64) << 20,
            total_bytes: Some(80 << 30),
            process_bytes: (i % 3 != 0).then_some((i as u64) << 19),
            free_bytes: Some((80 << 30) - ((i as u64) << 20)),
            driver_reserved_bytes: (i % 2 == 0).then_some(512 << 20),
        });
        rec.gpu_process_samples.push(GpuProcessSample {
            time_ns: 1_700_000_000_000_000_000 + i * 100_000_000,
            device: d,
            pid: 4000 + (i % 4) as u32,
            used_bytes: (i % 5 != 0).then_some((i as u64) << 18),
        });
        rec.host_samples.push(HostSample {
            time_ns: 1_700_000_000_000_000_000 + i * 100_000_000,
            rss_bytes: 1 << 30,
            pss_bytes: (i % 3 == 0).then_some((i as u64) << 20),
            processes: (i % 7 != 0).then_some(1 + (i % 4) as u32),
        });
    }
    let back = read_back("samples.vsr", &packed_bytes(&rec), LoadOptions::default());
    assert_same(&rec, &back.expect("samples"), "samples");
}

pub(super) fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn a_pack_cut_short_is_an_error_unless_salvaging() {
    let original = load(
        &fixtures().join("torch-cpu/k01_mlp_s1.json.gz"),
        LoadOptions::default(),
    )
    .expect("fixture");
    let all = lines(&packed_bytes(&original));
    let without_end: Vec<u8> = all[..all.len() - 1].concat();
    let err = read_back("cut.vsr", &without_end, LoadOptions::default()).expect_err("cut");
    assert!(err.contains("without its end record"), "{err}");
    assert!(
        err.contains(&format!("at byte {}", without_end.len())),
        "{err}"
    );
    let salvage = LoadOptions {
        salvage_truncated: true,
        ..LoadOptions::default()
    };
    let kept = read_back("cut.vsr", &without_end, salvage).expect("salvaged");
    assert_eq!(kept.mem_events, original.mem_events);

    // A line cut in the middle.
    let mut mid = all[..3].concat();
    mid.extend_from_slice(&all[3][..all[3].len() / 2]);
    let err = read_back("mid.vsr", &mid, LoadOptions::default()).expect_err("cut");
    assert!(err.contains("ends early"), "{err}");
    let offset: usize = all[..3].iter().map(Vec::len).sum();
    assert!(err.contains(&format!("at byte {offset}")), "{err}");

    // A whole line missing: the end record's counts say so.
    let mut dropped = all.clone();
    let mem = dropped
        .iter()
        .position(|l| l.starts_with(b"{\"mem_vlq\""))
        .expect("a mem line");
    dropped.remove(mem);
    let err = read_back("dropped.vsr", &dropped.concat(), LoadOptions::default())
        .expect_err("incomplete");
    assert!(err.contains("incomplete"), "{err}");
}

/// The uncompressed lines of the version-2 pack `name` in `tests/fixtures/pack`.
pub(super) fn version_2_lines(name: &str) -> Vec<Vec<u8>> {
    let file = std::fs::File::open(fixtures().join("pack").join(name)).expect(name);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(file), &mut bytes).expect(name);
    lines(&bytes)
}

/// `lines` with the first line starting with `prefix` changed by `edit`.
pub(super) fn edited(
    lines: &[Vec<u8>],
    prefix: &str,
    edit: impl Fn(&mut serde_json::Value),
) -> Vec<u8> {
    let mut out = lines.to_vec();
    let i = out
        .iter()
        .position(|l| l.starts_with(prefix.as_bytes()))
        .expect("line");
    let mut value: serde_json::Value = serde_json::from_slice(&out[i]).expect("json");
    edit(&mut value);
    out[i] = serde_json::to_vec(&value).expect("json");
    out[i].push(b'\n');
    out.concat()
}

#[test]
fn hostile_packs_are_errors_not_panics() {
    use serde_json::json;
    // Version-2 records (JSON arrays), edited; version 3's text columns: tests_v3.rs.
    let rec = &version_2_lines("oom.v2.vsr");
    let cases = [
        (
            edited(rec, "{\"mem\"", |v| v["mem"]["t"] = json!([1, 2])),
            "different lengths",
        ),
        (
            edited(rec, "{\"mem\"", |v| v["mem"]["k"][0] = json!(9)),
            "unknown event kind 9",
        ),
        (
            edited(rec, "{\"mem\"", |v| v["mem"]["d"][0] = json!(7)),
            "memory event 0 refers to entry 7 of 1",
        ),
        (
            edited(rec, "{\"mem\"", |v| v["mem"]["s"][0] = json!(1_000_000)),
            "refers to entry 1000000",
        ),
        (
            edited(rec, "{\"segments\"", |v| {
                v["segments"][0]["pool"] = json!(7)
            }),
            "unknown segment pool 7",
        ),
        (
            edited(rec, "{\"meta\"", |v| {
                v["meta"]["format"] = json!("word-doc")
            }),
            "unknown source format \"word-doc\"",
        ),
        (
            edited(rec, "{\"meta\"", |v| v["meta"] = json!({"format": 1})),
            "bad packed record",
        ),
        (
            edited(rec, "{\"end\"", |v| v["end"]["ops"] = json!(5)),
            "incomplete",
        ),
        (
            edited(rec, "{\"ooms\"", |v| {
                v["ooms"][0][0] = json!(4_000_000_000u64)
            }),
            "OOM detail 0 refers to entry 4000000000",
        ),
        // Times and totals at the edge of i64 wrap instead of overflowing.
        (
            edited(rec, "{\"mem\"", |v| {
                v["mem"]["t"][0] = json!(i64::MAX);
                v["mem"]["t"][1] = json!(i64::MAX);
                v["mem"]["ta"][1] = json!(i64::MAX);
                v["mem"]["d"][2] = json!(3);
            }),
            "refers to entry 3",
        ),
    ];
    for (bytes, expected) in cases {
        let err = read_back("hostile.vsr", &bytes, LoadOptions::default()).expect_err(expected);
        assert!(err.contains(expected), "{expected}: {err}");
        assert!(err.contains("hostile.vsr"), "names the file: {err}");
    }
}
