//! Databases made to hang the reader or exhaust its memory: each is read or refused with a
//! clear message within seconds.

use std::time::{Duration, Instant};

use super::{SCHEMA, db, real, shape_message};
use crate::parse::nsight::sqlite::db::Db;
use crate::parse::nsight::sqlite::guard::{Budget, guard};
use crate::parse::nsight::sqlite::{Connection, read_connection};

/// Hostile inputs must fail within this (they take well under a second here).
const PROMPT: Duration = Duration::from_secs(10);

/// A view that counts forever, named like `table`.
fn endless_view(table: &str) -> String {
    format!(
        "CREATE VIEW {table} AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)
         SELECT x AS start, x AS end, 59 AS eventType, 'spin' AS text, 1 AS globalTid,
                x AS id, 'v' AS value, x AS utcEpochNs FROM r;"
    )
}

/// The message of a failed read of `conn`, and how long the read took.
fn failure(conn: &mut Connection) -> (String, Duration) {
    let started = Instant::now();
    let err = read_connection(conn, 0).expect_err("a hostile database is refused");
    (shape_message(err), started.elapsed())
}

#[test]
fn recursive_views_named_like_nsys_tables_are_refused_at_once() {
    // GIVEN an export whose NVTX_EVENTS is an endless recursive view
    let mut conn = db(&SCHEMA.replace(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
        text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER);",
        &endless_view("NVTX_EVENTS"),
    ));
    // WHEN read, THEN it is refused by name, before the view runs
    let (message, took) = failure(&mut conn);
    assert!(
        message.starts_with("NVTX_EVENTS is a view, not a table: nsys exports hold plain tables"),
        "{message}"
    );
    assert!(message.contains("nsys export --type sqlite"), "{message}");
    assert!(took < PROMPT, "{took:?}");

    // GIVEN a database whose only nsys names are views: refused the same way, not read
    // as "not an nsys export"
    for table in ["StringIds", "TARGET_INFO_SESSION_START_TIME"] {
        let mut conn = db(&endless_view(table));
        let (message, took) = failure(&mut conn);
        assert!(
            message.starts_with(&format!("{table} is a view, not a table")),
            "{message}"
        );
        assert!(took < PROMPT, "{took:?}");
    }
}

#[test]
fn views_of_other_names_are_never_run() {
    // GIVEN a real export's tables beside an endless view and a view on itself
    let mut conn = db(&format!(
        "{SCHEMA} {} CREATE VIEW a AS SELECT * FROM a;",
        endless_view("spin")
    ));
    // WHEN read, THEN the views are not touched
    let rec = read_connection(&mut conn, 0).expect("reads");
    assert_eq!(rec.meta.properties["session_start_epoch_ns"], "1000000");
}

#[test]
fn generated_columns_are_refused() {
    let mut conn = db(&SCHEMA.replace(
        "correlationId INTEGER);",
        "correlationId INTEGER, spin TEXT AS (printf('%.*c', 900000000, 'x')));",
    ));
    conn.execute_batch(
        "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (1, 1, 0, 4096, 1024, 0, 0, NULL);",
    )
    .expect("row");
    let (message, took) = failure(&mut conn);
    assert!(
        message.starts_with(
            "CUDA_GPU_MEMORY_USAGE_EVENTS is a table with a generated column (spin): nsys"
        ),
        "{message}"
    );
    assert!(took < PROMPT, "{took:?}");
}

#[test]
fn the_vm_step_budget_stops_endless_queries() {
    // GIVEN a connection under the budget of an empty file (100 million steps)
    let mut conn = db("");
    let budget = Budget::for_file(0);
    guard(&mut conn, budget).expect("guarded");
    let db = Db::new(&conn, budget).expect("lists");
    // WHEN a query counts forever (the reader never writes one; a damaged b-tree can act
    // like one)
    let started = Instant::now();
    let endless = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) \
                   SELECT count(*) FROM r";
    let err = db
        .rows(endless, "counting", |_| Ok(()))
        .expect_err("stopped");
    // THEN it stops with the budget named
    let message = shape_message(err);
    assert_eq!(
        message,
        "the database asks for more work than an Nsight export needs (budget 100000000 VM \
         steps for a file of its size): it is damaged or was not written by nsys; export the \
         report again with `nsys export --type sqlite`"
    );
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
}

#[test]
fn the_row_budget_stops_tables_larger_than_their_file() {
    // GIVEN 100,001 StringIds rows, read under the budget of an empty file (100,000 rows)
    let mut conn = db(SCHEMA);
    conn.execute_batch(
        "INSERT INTO StringIds WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r
         LIMIT 100001) SELECT x, 's' || x FROM r;",
    )
    .expect("rows");
    let (message, _) = failure(&mut conn);
    assert!(
        message.contains("(budget 100000 rows for a file of its size)"),
        "{message}"
    );
    // The same rows under the budget of their real size read: 100,001 rows need 200 KB.
    read_connection(&mut conn, 200_000).expect("within budget");
}

#[test]
fn values_over_16_mib_are_refused() {
    let mut conn = db(SCHEMA);
    conn.execute_batch(&format!(
        "INSERT INTO StringIds VALUES (1, printf('%.*c', {}, 'x'));",
        (16 << 20) + 1
    ))
    .expect("row");
    let (message, _) = failure(&mut conn);
    assert!(
        message.starts_with("a value in the database is larger than 16 MiB"),
        "{message}"
    );
    // A row just under 16 MiB is read.
    conn.execute_batch(&format!(
        "UPDATE StringIds SET value = printf('%.*c', {}, 'x');",
        (16 << 20) - 64
    ))
    .expect("row");
    read_connection(&mut conn, 0).expect("16 MiB reads");
}

#[test]
fn a_real_export_fits_the_smallest_budget() {
    let path = real("run-nolazy.sqlite");
    let bytes = std::fs::metadata(&path).expect("real export").len();
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let mut conn = Connection::open_with_flags(&path, flags).expect("opens");
    // Its 7,600 VM steps and its rows fit the budget of an empty file.
    let rec = read_connection(&mut conn, 0).expect("reads within the smallest budget");
    assert_eq!((rec.ops.len(), bytes), (75, 1_036_288));
}

#[test]
fn virtual_tables_named_like_nsys_tables_are_refused() {
    let mut conn = db(&SCHEMA.replace(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);",
        "CREATE VIRTUAL TABLE StringIds USING fts5(id, value);",
    ));
    let (message, took) = failure(&mut conn);
    assert!(
        message.starts_with("StringIds is a virtual table, not a plain table: nsys"),
        "{message}"
    );
    assert!(took < PROMPT, "{took:?}");
}
