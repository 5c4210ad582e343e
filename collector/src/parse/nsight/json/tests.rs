//! Unit tests of the JSON reader: the real 2022.4 exports, and hand-written lines for
//! what no real sample had (CUDA records, strings after events, bad input).

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::*;
use crate::model::MemEventKind;

fn input(text: &str) -> Input {
    Input {
        reader: Box::new(Cursor::new(text.as_bytes().to_vec())),
        compressed: false,
        file_bytes_read: Arc::new(AtomicU64::new(0)),
        file_len: text.len() as u64,
        head: Vec::new(),
    }
}

fn read_text(text: &str) -> Result<Recording, SourceError> {
    read(input(text), LoadOptions::default())
}

fn spans(rec: &Recording, shift_ns: i64) -> Vec<(String, String, i64, i64)> {
    let mut out: Vec<_> = rec
        .ops
        .iter()
        .map(|o| {
            let t = &rec.threads[o.thread as usize];
            let thread = format!("{}/{}", t.pid, t.tid);
            (
                rec.op_name(o).to_owned(),
                thread,
                o.start_ns - shift_ns,
                o.end_ns - shift_ns,
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn numbers_may_be_strings_negative_or_above_i64() {
    let n: Num = serde_json::from_str("\"18446744073699065856\"").expect("u64 string");
    assert_eq!((n.u64(), n.i64()), (Some(18_446_744_073_699_065_856), None));
    let n: Num = serde_json::from_str("\"-251878564\"").expect("negative string");
    assert_eq!(n.i64(), Some(-251_878_564));
    let n: Num = serde_json::from_str("212").expect("bare number");
    assert_eq!(n.u64(), Some(212));
    assert!(serde_json::from_str::<Num>("\"x1\"").is_err());
    assert!(serde_json::from_str::<Num>("1.5").is_err());
}

#[test]
fn real_json_exports_match_the_sqlite_export() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/nsys-cpu");
    let sqlite = super::super::sqlite::read(&dir.join("run.sqlite")).expect("sqlite");
    let session: i64 = sqlite.meta.properties["session_start_epoch_ns"]
        .parse()
        .expect("session start");
    let want = spans(&sqlite, session);
    assert_eq!(want.len(), 75);
    for file in ["run.json", "run-sepstr.json"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("real file");
        let rec = read_text(&text).expect("reads");
        assert_eq!(
            spans(&rec, 0),
            want,
            "{file}: same ranges, threads and times"
        );
        assert_eq!(rec.steps.len(), 6);
        assert_eq!(rec.meta.properties["nvtx_marks"], "41", "{file}");
        assert!(
            rec.diagnostics.counts.is_empty(),
            "{file}: {:?}",
            rec.diagnostics
        );
        let main = rec
            .threads
            .iter()
            .find(|t| t.tid == "19")
            .expect("main thread");
        assert_eq!(main.name.as_deref(), Some("python"), "{file}");
        assert!(rec.meta.properties["json_records_not_read"].contains("Type 41 ×1160"));
        // Both exports count the records of the kinds vramscope reads (120 NVTX events
        // here), not the OS-runtime, scheduling and process records only JSON holds.
        assert_eq!(rec.meta.events_read, sqlite.meta.events_read, "{file}");
        assert_eq!(rec.meta.events_read, 120, "{file}");
        assert!((text.lines().count() as u64) > rec.meta.events_read);
    }
}

#[test]
fn strings_may_come_after_the_events() {
    let text = r#"{"Type":75,"NvtxEvent":{"Type":75,"Timestamp":"1","Text":"dl","GlobalTid":"281475295477790","DomainId":"1"}}
{"Type":59,"NvtxEvent":{"Type":59,"Timestamp":"10","EndTimestamp":"30","TextId":2,"GlobalTid":"281475295477779","DomainId":"0"}}
{"Type":60,"NvtxEvent":{"Type":60,"Timestamp":"12","EndTimestamp":"14","TextId":1,"GlobalTid":"281475295477790","DomainId":"1"}}
{"Type":59,"NvtxEvent":{"Type":59,"Timestamp":"40","EndTimestamp":"50","TextId":99,"GlobalTid":"281475295477779","DomainId":"0"}}
{"data":["[Unknown]","load","step"]}
{"data":[{"nameIdx":"2","priority":"10","globalTid":"281475295477779"}]}
"#;
    let rec = read_text(text).expect("reads");
    let got = spans(&rec, 0);
    let want = [
        ("[string 99]", "19/19", 40, 50),
        ("dl:load", "19/30", 12, 14),
        ("step", "19/19", 10, 30),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|(n, t, s, e)| (n.to_string(), t.to_string(), *s, *e))
        .collect();
    assert_eq!(got, want);
    assert_eq!(rec.threads[0].name.as_deref(), Some("step"));
    assert_eq!(
        rec.diagnostics.total(),
        1,
        "one name missing from the table"
    );
}

#[test]
fn separate_strings_thread_names_and_cuda_records() {
    let text = r#"{"type":"String","id":"0","value":"cudaMalloc_v3020"}
{"type":"String","id":"1","value":"fx_kernel"}
{"type":"String","id":"2","value":"worker"}
{"type":"Stream","globalPid":"281475295477760","filename":"x","content":""}
{"Type":48,"TraceProcessEvent":{"startNs":"100","endNs":"110","correlationId":7,"eventClass":0,"name":"0","returnValue":0,"globalTid":"281475295477790"}}
{"Type":48,"TraceProcessEvent":{"startNs":"100","endNs":"110","correlationId":0,"eventClass":27,"name":"0","globalTid":"281475295477790"}}
{"Type":117,"CudaEvent":{"startNs":"105","deviceId":1,"globalPid":"281475295477760","correlationId":7,"memoryUsage":{"address":"140000","bytes":"2097152","memKind":2,"memoryOperationType":0}}}
{"Type":117,"CudaEvent":{"startNs":"200","deviceId":1,"globalPid":"281475295477760","correlationId":8,"address":"140000","bytes":"2097152","memKind":"2","memoryOperationType":"1"}}
{"Type":79,"CudaEvent":{"startNs":"120","endNs":"150","deviceId":1,"streamId":7,"globalPid":"281475295477760","kernel":{"shortName":"1","demangledName":1}}}
{"Type":80,"CudaEvent":{"startNs":"120","endNs":"150","memcpy":{"sizebytes":"4"}}}
{"type":"ThreadName","globalTid":"281475295477790","nameId":"2","priority":"10"}
"#;
    let rec = read_text(text).expect("reads");
    assert!(rec.meta.era.contains("--separate-strings"));
    let names: Vec<(&str, OpCategory)> = rec
        .ops
        .iter()
        .map(|o| (rec.op_name(o), o.category))
        .collect();
    assert_eq!(
        names,
        vec![
            ("cudaMalloc_v3020", OpCategory::Runtime),
            ("fx_kernel", OpCategory::Kernel)
        ]
    );
    let kernel_lane = &rec.threads[rec.ops.get(1).expect("an op").thread as usize];
    assert_eq!(kernel_lane.tid, "cuda:1 stream 7");
    let mem: Vec<(i64, MemEventKind, String)> = rec
        .mem_events
        .iter()
        .map(|e| {
            let t = &rec.threads[e.thread as usize];
            (
                e.bytes,
                e.kind,
                format!("{}/{}", t.tid, t.name.clone().unwrap_or_default()),
            )
        })
        .collect();
    assert_eq!(
        mem,
        vec![
            (
                2_097_152,
                MemEventKind::SegmentAlloc,
                "30/worker".to_owned()
            ),
            (-2_097_152, MemEventKind::SegmentFree, "19/".to_owned()),
        ]
    );
    assert_eq!(rec.devices[0].key.to_string(), "cuda:1");
    assert_eq!(rec.mem_events[0].addr.get(), Some(140_000));
    let not_read = &rec.meta.properties["json_records_not_read"];
    assert_eq!(not_read, "Type 48 ×1, Type 80 ×1");
}

#[test]
fn bad_lines_fail_with_their_record_and_offset() {
    let text = "{\"Type\":34,\"NvtxEvent\":{}}\nthis is not json\n";
    let err = read_text(text).expect_err("garbage");
    // Line 2 starts at byte 27; serde stops at the first byte it cannot take ('h' of "this").
    assert_eq!(err.offset, Some(28));
    match err.kind {
        crate::parse::LoadErrorKind::Syntax(m) => assert!(m.contains("record 2"), "{m}"),
        other => panic!("unexpected {other:?}"),
    }
    // Valid JSON of the wrong shape is skipped and counted.
    let text = "{\"data\":[]}\n{\"Type\":59,\"NvtxEvent\":{\"Timestamp\":true}}\n[1]\n";
    let rec = read_text(text).expect("reads");
    assert_eq!(
        rec.diagnostics.counts["records with unexpected field types skipped"],
        2
    );
    // NDJSON that is not nsys output.
    let err = read_text("{\"type\":\"Feature\",\"id\":1}\n").expect_err("not nsys");
    match err.kind {
        crate::parse::LoadErrorKind::Shape(m) => {
            assert!(
                m.contains("not an nsys export") && m.contains("\"Feature\""),
                "{m}"
            )
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn cut_exports_fail_or_keep_their_complete_records() {
    let text = "{\"data\":[\"a\"]}\n{\"Type\":59,\"NvtxEvent\":{\"Timestamp\":\"1\",\"EndTimestamp\":\"2\",\"TextId\":0,\"GlobalTid\":\"5\"}}\n{\"Type\":59,\"NvtxEv";
    let err = read_text(text).expect_err("cut");
    assert!(matches!(
        err.kind,
        crate::parse::LoadErrorKind::Truncated(_)
    ));
    assert_eq!(err.offset, Some(text.len() as u64));
    let options = LoadOptions {
        salvage_truncated: true,
        ..LoadOptions::default()
    };
    let rec = read(input(text), options).expect("salvaged");
    assert_eq!(rec.ops.len(), 1);
    assert_eq!(rec.diagnostics.truncated_at, Some(text.len() as u64));
}
