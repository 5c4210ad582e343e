use std::io::Write;

use crate::model::{DeviceId, MemEventKind, OpCategory, Recording, StepMarker};
use crate::parse::{LoadErrorKind, LoadOptions, load};

fn write_temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vramscope-chrome-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).expect("create");
    f.write_all(bytes).expect("write");
    path
}

fn load_str(name: &str, text: &str) -> Recording {
    load(&write_temp(name, text.as_bytes()), LoadOptions::default()).expect("loads")
}

const MODERN: &str = r#"{
  "schemaVersion": 1,
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 7, "tid": 7, "ts": 100.000, "dur": 50.5},
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 7, "tid": 7, "ts": 101.25, "dur": 2,
     "args": {"Input Dims": [[2, 3]], "External id": 4}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 102.001,
     "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512, "Addr": 139000000000000,
              "Device Id": 0, "Device Type": 1, "Ev Idx": 9}},
    {"ph": "s", "id": 1, "pid": 7, "tid": 7, "ts": 101.25, "cat": "fwdbwd", "name": "fwdbwd"},
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "args": {"name": "python main"}},
    {"ph": "Z", "name": "odd", "pid": 7, "tid": 7, "ts": 1}
  ],
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045477376}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
  "baseTimeNanoseconds": 1700000000000000000
}"#;

#[test]
fn modern_trace_keys_in_any_order() {
    let rec = load_str("modern.json", MODERN);
    assert_eq!(rec.meta.base_time_ns, Some(1_700_000_000_000_000_000));
    assert!(rec.meta.era.starts_with("torch 2.x"), "{}", rec.meta.era);
    assert_eq!(rec.ops.len(), 2);
    assert_eq!(
        rec.ops.get(0).expect("an op").start_ns,
        1_700_000_000_000_100_000
    );
    assert_eq!(
        rec.ops.get(0).expect("an op").end_ns,
        1_700_000_000_000_150_500
    );
    assert_eq!(
        rec.ops.get(1).expect("an op").start_ns,
        1_700_000_000_000_101_250
    );
    assert_eq!(
        rec.steps,
        vec![StepMarker {
            number: 3,
            start_ns: rec.ops.get(0).expect("an op").start_ns,
            end_ns: rec.ops.get(0).expect("an op").end_ns
        }]
    );
    assert_eq!(rec.mem_events.len(), 1);
    let m = &rec.mem_events[0];
    assert_eq!({ m.time_ns }, 1_700_000_000_000_102_001);
    assert_eq!(
        (
            m.bytes,
            m.addr.get(),
            m.total_allocated_bytes.get(),
            m.total_reserved_bytes.get()
        ),
        (512, Some(139_000_000_000_000), Some(512), Some(2_097_152))
    );
    let dev = &rec.devices[m.device as usize];
    assert_eq!(dev.key, DeviceId::cuda(0));
    assert_eq!(dev.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(dev.total_memory_bytes, Some(85_045_477_376));
    let dist = rec.meta.distributed.as_ref().expect("distributed");
    assert_eq!(
        (dist.backend.as_deref(), dist.rank, dist.world_size),
        (Some("nccl"), Some(1), Some(2))
    );
    assert_eq!(
        rec.threads[rec.ops.get(0).expect("an op").thread as usize]
            .name
            .as_deref(),
        Some("python main")
    );
    assert_eq!(
        rec.diagnostics
            .counts
            .get("events with unknown phase \"Z\" skipped"),
        Some(&1)
    );
    assert_eq!(rec.meta.events_read, 6);
}

#[test]
fn legacy_string_tids_match_int_tids() {
    let text = r#"{"traceEvents": [
      {"ph": "X", "cat": "Operator", "name": "aten::add", "pid": 5, "tid": "25738", "ts": 1623143089861000, "dur": 10},
      {"name": "[memory]", "pid": 5, "tid": 25738, "ts": 1623143089861005, "ph": "i", "s": "t",
       "args": {"Device Type": 1, "Device Id": 0, "Bytes": 1024}},
      {"name": "[memory]", "pid": 5, "tid": 25738, "ts": 1623143089861006, "ph": "i", "s": "t",
       "args": {"Device Type": 0, "Device Id": -1, "Bytes": -64}}
    ]}"#;
    let rec = load_str("legacy.json", text);
    assert!(rec.meta.era.contains("legacy"), "{}", rec.meta.era);
    assert_eq!(
        rec.ops.get(0).expect("an op").thread,
        rec.mem_events[0].thread
    );
    assert_eq!(rec.ops.get(0).expect("an op").category, OpCategory::CpuOp);
    assert_eq!(rec.mem_events[0].addr.get(), None);
    assert_eq!(rec.mem_events[1].kind, MemEventKind::Free);
    assert_eq!(
        rec.devices[rec.mem_events[1].device as usize].key,
        DeviceId::CPU
    );
    assert_eq!(rec.meta.start_ns, 1_623_143_089_861_000_000);
}

#[test]
fn bare_array_without_closing_bracket_loads() {
    let rec = load_str(
        "bare.json",
        r#"[{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
            {"ph": "X", "name": "b", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 4, "dur": 2},"#,
    );
    assert_eq!(rec.ops.len(), 2);
    assert_eq!(rec.diagnostics.total(), 1);
}

#[test]
fn wrong_types_skip_one_event_and_go_on() {
    let rec = load_str(
        "types.json",
        r#"{"traceEvents": [
            {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1, "args": {"Bytes": "lots", "Device Type": 0}},
            17,
            {"ph": "X", "name": "ok", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2}
        ]}"#,
    );
    assert_eq!(rec.ops.len(), 1);
    assert!(rec.mem_events.is_empty());
    let counts = &rec.diagnostics.counts;
    assert_eq!(
        counts.get("trace events with unexpected field types skipped"),
        Some(&1)
    );
    assert_eq!(
        counts.get("memory events with unreadable args skipped"),
        Some(&1)
    );
}

#[test]
fn truncated_object_fails_with_offset_or_salvages() {
    let text = r#"{"traceEvents": [{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2}, {"ph": "X", "na"#;
    let path = write_temp("cut.json", text.as_bytes());
    let err = load(&path, LoadOptions::default()).expect_err("must fail");
    assert!(matches!(err.kind, LoadErrorKind::Truncated(_)), "{err}");
    assert_eq!(err.offset, Some(text.len() as u64));
    let msg = err.to_string();
    assert!(
        msg.contains("cut.json")
            && msg.contains("ends early")
            && msg.contains(&format!("byte {}", text.len())),
        "{msg}"
    );

    let rec = load(
        &path,
        LoadOptions {
            salvage_truncated: true,
            ..LoadOptions::default()
        },
    )
    .expect("salvage");
    assert_eq!(rec.ops.len(), 1);
    assert!(rec.diagnostics.truncated_at.is_some());
}

#[test]
fn not_a_trace_is_a_clear_error() {
    let cases: &[(&str, &str, &str)] = &[
        ("obj.json", r#"{"hello": [1, 2]}"#, "no \"traceEvents\""),
        ("num.json", "42", "not a format vramscope reads"),
        ("events.json", r#"{"traceEvents": 5}"#, "not an array"),
        (
            "garbage.json",
            r#"{"traceEvents": [{"ph": "X"} {"ph": "X"}]}"#,
            "expected ',' or ']'",
        ),
        (
            "badjson.json",
            r#"{"traceEvents": [{"ph": X}]}"#,
            "invalid JSON",
        ),
        ("empty.json", "", "empty"),
    ];
    for (name, text, want) in cases {
        let err = load(&write_temp(name, text.as_bytes()), LoadOptions::default()).expect_err(name);
        let msg = err.to_string();
        assert!(msg.contains(want) && msg.contains(name), "{name}: {msg}");
    }
}

#[test]
fn syntax_error_offset_is_exact() {
    let text = r#"{"traceEvents": [{"ph": "X", "name": "a"}, {"ph": X}]}"#;
    let err = load(
        &write_temp("syn.json", text.as_bytes()),
        LoadOptions::default(),
    )
    .expect_err("fails");
    let at = text.find("X}").expect("marker") as u64;
    assert_eq!(err.offset, Some(at), "{err}");
}

#[test]
fn cut_gzip_names_the_problem() {
    use flate2::Compression;
    use flate2::write::GzEncoder;
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    let mut body = String::from("{\"traceEvents\": [");
    for i in 0..20_000 {
        body.push_str(&format!("{{\"ph\": \"X\", \"name\": \"op{i}\", \"cat\": \"cpu_op\", \"pid\": 1, \"tid\": 1, \"ts\": {i}, \"dur\": 1}},"));
    }
    body.push_str("{}]}");
    enc.write_all(body.as_bytes()).expect("gzip");
    let gz = enc.finish().expect("gzip");
    let cut = &gz[..gz.len() / 2];
    let path = write_temp("cut.json.gz", cut);
    let err = load(&path, LoadOptions::default()).expect_err("fails");
    assert!(matches!(err.kind, LoadErrorKind::Gzip(_)), "{err}");
    assert!(err.to_string().contains("cut.json.gz"), "{err}");
    let rec = load(
        &path,
        LoadOptions {
            salvage_truncated: true,
            ..LoadOptions::default()
        },
    )
    .expect("salvage");
    assert!(
        rec.ops.len() > 1000 && rec.ops.len() < 20_000,
        "{}",
        rec.ops.len()
    );
}

#[test]
fn huge_claimed_value_does_not_allocate_forever() {
    // A string that never ends: the reader must stop at its cap, not buffer the disk.
    let mut text = String::from("{\"traceEvents\": [{\"name\": \"");
    text.push_str(&"a".repeat(3 << 20));
    let err = load(
        &write_temp("endless.json", text.as_bytes()),
        LoadOptions::default(),
    )
    .expect_err("fails");
    assert!(matches!(err.kind, LoadErrorKind::Truncated(_)), "{err}");
}
