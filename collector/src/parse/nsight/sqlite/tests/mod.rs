//! Unit tests of the SQLite reader: synthetic databases for each schema variant, and the
//! real nsys 2022.4 exports in `../shared/traces/nsys-cpu`.

use super::*;
use crate::model::MemEventKind;

mod hostile;

const MIB: i64 = 1 << 20;
/// `globalPid` of the real trace's process (pid 19) and its main thread's `globalTid`.
const PROCESS: i64 = 281_475_295_477_760;
const MAIN: i64 = PROCESS | 19;

pub(super) fn db(sql: &str) -> Connection {
    let conn = Connection::open_in_memory().expect("in-memory database");
    conn.execute_batch(sql).expect("schema");
    conn
}

/// The real schema's tables, trimmed to the columns the reader looks at.
pub(super) const SCHEMA: &str = "
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
        text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER);
    CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
    CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
    CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, address INTEGER NOT NULL, bytes INTEGER NOT NULL,
        memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, correlationId INTEGER);
    INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1000000, 'x', 'x');
";

fn read_db(conn: &mut Connection) -> Recording {
    read_connection(conn, 0).expect("reads")
}

fn device_totals(rec: &Recording) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = rec
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let sum = rec
                .mem_events
                .iter()
                .filter(|e| e.device as usize == i)
                .map(|e| e.bytes)
                .sum();
            (d.key.to_string(), sum)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn documented_ids_are_used_when_enum_tables_are_empty() {
    // GIVEN the --lazy=false situation: enum tables exist but hold no rows.
    let mut conn = db(SCHEMA);
    conn.execute_batch(&format!(
        "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES
            (10, {PROCESS}, 0, 4096, {m2}, 2, 0, NULL),
            (20, {PROCESS}, 0, 8192, {m8}, 1, 0, NULL),
            (30, {PROCESS}, 0, 4096, {m2}, 2, 1, NULL),
            (40, {PROCESS}, 1, 9999, {m2}, 5, 0, NULL);",
        m2 = 2 * MIB,
        m8 = 8 * MIB,
    ))
    .expect("rows");
    // WHEN read
    let rec = read_db(&mut conn);
    // THEN 0 Pageable .. 7 Unknown and 0 alloc / 1 free apply
    assert_eq!(
        device_totals(&rec),
        vec![
            ("cuda:0".to_owned(), 0),
            ("cuda:1".to_owned(), 2 * MIB),
            ("host-pinned".to_owned(), 8 * MIB)
        ]
    );
    let kinds: Vec<MemEventKind> = rec.mem_events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds[2], MemEventKind::SegmentFree);
    assert_eq!({ rec.mem_events[0].time_ns }, 1_000_010);
    assert!(rec.meta.properties["enums_documented_values"].contains("ENUM_CUDA_MEM_KIND"));
}

#[test]
fn enum_tables_win_over_documented_ids_where_filled() {
    // GIVEN enum tables whose ids differ from the documented ones
    let mut conn = db(SCHEMA);
    conn.execute_batch(&format!(
        "INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'),
            (2, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'),
            (9, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed');
         INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (5, 'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION', 'Allocation'),
            (6, 'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION', 'Deallocation');
         INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES
            (10, {PROCESS}, 3, 4096, {m}, 0, 5, NULL),
            (11, {PROCESS}, 3, 8192, {m}, 2, 5, NULL),
            (12, {PROCESS}, 3, 4096, {m}, 0, 6, NULL),
            (13, {PROCESS}, 3, 7777, {m}, 9, 5, NULL),
            (14, {PROCESS}, 3, 7777, {m}, 1, 5, NULL);",
        m = MIB,
    ))
    .expect("rows");
    let rec = read_db(&mut conn);
    assert_eq!(
        device_totals(&rec),
        vec![
            ("cuda-managed:3".to_owned(), MIB),
            ("cuda:3".to_owned(), 0),
            ("host-pinned".to_owned(), MIB),
        ]
    );
    // Kind 1 is not in this file's enum: skipped and counted.
    assert_eq!(rec.diagnostics.counts.len(), 2, "{:?}", rec.diagnostics);
    assert!(
        rec.diagnostics
            .counts
            .contains_key("CUDA memory rows with an unknown memKind or operation skipped")
    );
    assert!(rec.meta.properties["enums_from_file"].contains("ENUM_CUDA_MEM_KIND"));
}

#[test]
fn old_schemas_without_columns_still_load() {
    // GIVEN an old export without memKind, correlationId or session start
    let mut conn = db("
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER, deviceId INTEGER,
            bytes INTEGER, memoryOperationType INTEGER);
        INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (5, 0, 100, 0), ('7', 0, 40.0, 1);");
    let rec = read_db(&mut conn);
    assert_eq!(device_totals(&rec), vec![("cuda:0".to_owned(), 60)]);
    assert_eq!(
        { rec.mem_events[1].time_ns },
        7,
        "numeric text and reals are read"
    );
    assert_eq!(rec.mem_events[0].addr.get(), None);
    let notes: Vec<&str> = rec.diagnostics.counts.keys().map(String::as_str).collect();
    assert!(
        notes.iter().any(|n| n.contains("without memKind")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("no TARGET_INFO_SESSION_START_TIME"))
    );
    assert!(notes.iter().any(|n| n.contains("without a process")));

    // A table without its bytes column is reported and left out, not fatal.
    let mut conn = db(
        "CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER, deviceId INTEGER,
        memoryOperationType INTEGER); INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (1, 0, 0);",
    );
    let rec = read_db(&mut conn);
    assert!(rec.mem_events.is_empty());
    assert!(
        rec.diagnostics
            .counts
            .keys()
            .any(|k| k.contains("without column(s) bytes"))
    );
}

#[test]
fn nvtx_names_domains_and_threads() {
    let mut conn = db(SCHEMA);
    conn.execute_batch(&format!(
        "INSERT INTO StringIds VALUES (7, 'forward'), (8, 'load'), (9, 'python');
         CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
         INSERT INTO ThreadNames VALUES (9, 10, {MAIN});
         INSERT INTO NVTX_EVENTS VALUES
            (1, NULL, 75, 'io', {worker}, NULL, 4),
            (10, 50, 59, NULL, {MAIN}, 7, 0),
            (12, 20, 59, 'inline', {MAIN}, NULL, 0),
            (15, NULL, 34, 'a mark', {MAIN}, NULL, 0),
            (30, 40, 60, NULL, {worker}, 8, 4),
            (60, 55, 59, 'backwards', {MAIN}, NULL, 0);",
        worker = PROCESS | 30,
    ))
    .expect("rows");
    let rec = read_db(&mut conn);
    let spans: Vec<(&str, &str, i64, i64)> = rec
        .ops
        .iter()
        .map(|o| {
            let t = &rec.threads[o.thread as usize];
            (rec.op_name(o), t.tid.as_str(), o.start_ns, o.end_ns)
        })
        .collect();
    let s = 1_000_000;
    assert_eq!(
        spans,
        vec![
            ("forward", "19", s + 10, s + 50),
            ("inline", "19", s + 12, s + 20),
            ("io:load", "30", s + 30, s + 40),
        ]
    );
    assert!(rec.ops.iter().all(|o| o.category == OpCategory::Nvtx));
    assert_eq!(rec.threads[0].name.as_deref(), Some("python"));
    assert_eq!(rec.threads[0].pid, "19");
    assert_eq!(rec.meta.properties["nvtx_marks"], "1");
    assert_eq!(
        rec.diagnostics.total(),
        1,
        "the range that ends before it starts"
    );
    assert_eq!((rec.meta.start_ns, rec.meta.end_ns), (s + 10, s + 50));
}

#[test]
fn databases_that_are_not_nsys_exports_are_refused() {
    let mut conn = db("CREATE TABLE notes (id INTEGER, body TEXT);");
    let err = read_connection(&mut conn, 0).expect_err("not nsys");
    let message = shape_message(err);
    assert!(
        message.contains("not an nsys export: no StringIds table"),
        "{message}"
    );
    assert!(message.contains("its tables: notes"), "{message}");

    let mut conn = db("");
    let message = shape_message(read_connection(&mut conn, 0).expect_err("empty"));
    assert!(message.contains("it has no tables"), "{message}");
}

pub(super) fn shape_message(e: SourceError) -> String {
    match e.kind {
        crate::parse::LoadErrorKind::Shape(m) => m,
        other => panic!("expected a shape error, got {other:?}"),
    }
}

pub(super) fn real(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/nsys-cpu")
        .join(name)
}

#[test]
fn real_exports_of_nsys_2022_4() {
    // Session start of the real run (TARGET_INFO_SESSION_START_TIME.utcEpochNs) and the
    // earliest NVTX range start (SELECT min(start) FROM NVTX_EVENTS WHERE eventType IN (59,60)).
    let session = 1_796_205_026_671_514_422_i64;
    for (file, enums) in [
        ("run.sqlite", "enums_from_file"),
        ("run-nolazy.sqlite", "enums_documented_values"),
    ] {
        let rec = read(&real(file)).expect("real export reads");
        assert_eq!(
            rec.ops.len(),
            36 + 39,
            "{file}: push/pop + start/end ranges"
        );
        assert_eq!(rec.steps.len(), 6);
        assert!(rec.mem_events.is_empty());
        assert_eq!(rec.meta.start_ns, session + 169_400_549, "{file}");
        assert_eq!(rec.meta.end_ns, session + 2_181_128_362, "{file}");
        assert_eq!(rec.meta.properties["nsys_version"], "2022.4.2.1");
        assert_eq!(rec.meta.properties["nvtx_marks"], "41");
        assert!(rec.meta.properties.contains_key(enums), "{file}");
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
        assert_eq!(
            (main.pid.as_str(), main.name.as_deref()),
            ("19", Some("python"))
        );
        let names: Vec<&str> = rec.ops.iter().map(|o| rec.op_name(o)).collect();
        assert!(names.contains(&"dataloader:load_batch#0"));
        assert_eq!(names.iter().filter(|n| **n == "forward").count(), 6);
        assert!(
            rec.devices.is_empty(),
            "a CPU-only run describes no GPU: {:?}",
            rec.devices
        );
    }
}
