//! Inputs crafted to hang the reader or exhaust its memory: each ends within seconds with
//! one line naming the file, what is wrong and what to do, and exit code 1.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::record_support::run_python;
use crate::support::*;

fn arg(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A hostile input must be refused within this (it takes well under a second here).
const PROMPT: Duration = Duration::from_secs(10);

/// Runs `summary` and `table` on `path`: exit 1 within [`PROMPT`], one line naming the
/// file, with every needle.
fn refused_promptly(path: &Path, needles: &[&str]) {
    for cmd in ["summary", "table"] {
        let started = Instant::now();
        let out = vramscope(&[cmd, arg(path)]);
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {stderr}");
        assert!(took < PROMPT, "{cmd} took {took:?}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(arg(path)), "names the file: {stderr}");
        for n in needles {
            assert!(stderr.contains(n), "missing {n:?} in {stderr}");
        }
    }
}

/// The fixture export with `table` replaced by `CREATE VIEW table AS view_sql`.
fn export_with_view(dir: &Path, table: &str, view_sql: &str) -> std::path::PathBuf {
    let path = dir.join(format!("view-{table}.sqlite"));
    std::fs::copy(fixtures().join("nsight/cuda-memory.sqlite"), &path).expect("copy");
    let script = format!(
        "import sqlite3, sys\n\
         db = sqlite3.connect(sys.argv[1])\n\
         db.executescript('DROP TABLE {table}; CREATE VIEW {table} AS {view_sql};')\n\
         db.close()\n"
    );
    run_python(&["-c", &script, arg(&path)]);
    path
}

#[test]
fn nsys_tables_replaced_by_endless_views_are_refused() {
    let dir = temp_dir("hostile-sqlite");
    let endless = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) \
                   SELECT x AS start, 0 AS deviceId, x AS address, 512 AS bytes, \
                   0 AS memKind, 0 AS memoryOperationType, 1 AS globalPid, x AS id, \
                   x AS value FROM r";
    for table in ["CUDA_GPU_MEMORY_USAGE_EVENTS", "StringIds"] {
        let path = export_with_view(&dir, table, endless);
        refused_promptly(
            &path,
            &[
                &format!("{table} is a view, not a table"),
                "export the report again with `nsys export --type sqlite`",
            ],
        );
    }
}

#[test]
fn wal_mode_databases_read_without_files_beside_them() {
    // GIVEN a copy of the fixture export switched to WAL mode, under a name with URI
    // characters in it
    let dir = temp_dir("wal-sqlite");
    let path = dir.join("a run?x=1#%20.sqlite");
    std::fs::copy(fixtures().join("nsight/cuda-memory.sqlite"), &path).expect("copy");
    let script = "import sqlite3, sys\n\
                  db = sqlite3.connect(sys.argv[1])\n\
                  assert db.execute('PRAGMA journal_mode=WAL').fetchone()[0] == 'wal'\n\
                  db.close()\n";
    run_python(&["-c", script, arg(&path)]);
    // WHEN summarized, THEN it reads as the original does and leaves no -wal or -shm file
    let original = fixtures().join("nsight/cuda-memory.sqlite");
    let expected = vramscope_json(&["summary", arg(&original)]);
    let got = vramscope_json(&["summary", arg(&path)]);
    assert_eq!(got["devices"], expected["devices"]);
    assert_eq!(got["devices"][0]["peak_reserved_bytes"], 88_080_384);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a run?x=1#%20.sqlite"]);
}

#[test]
fn floods_of_one_byte_pickle_opcodes_stop_at_the_reader_caps() {
    // 4 MiB of MARK (took 8 bytes of memory per byte) and of None (4 per byte; 4 GiB of
    // them aborted the process): each stops at its cap, named with the byte offset.
    let dir = temp_dir("hostile-pickle");
    for (name, opcode, needles) in [
        (
            "marks.pickle",
            b'(',
            [
                "MARK would open more than 65536 marks",
                "MAX_OPEN_MARKS",
                "at byte 65538",
            ],
        ),
        (
            "nones.pickle",
            b'N',
            [
                "NONE would put more than 1048576 values on the stack",
                "MAX_STACK_VALUES",
                "at byte 1048578",
            ],
        ),
    ] {
        let path = dir.join(name);
        let mut bytes = vec![0x80, 2];
        bytes.resize(2 + (4 << 20), opcode);
        std::fs::write(&path, bytes).expect("write");
        refused_promptly(&path, &needles);
    }
}

#[test]
fn references_repeated_to_one_record_stop_at_the_records_budget() {
    // GIVEN snapshots of 4 MB whose blocks, or trace entries, are 2 million 2-byte
    // references to one dict (made by tests/hostile/amplified_snapshot.py; at 5e7 such
    // references a 100 MB file took 3.5 GB and aborted)
    let dir = temp_dir("hostile-amplified");
    for kind in ["blocks", "entries"] {
        let path = dir.join(format!("{kind}.pickle"));
        let script = repo_root().join("tests/hostile/amplified_snapshot.py");
        run_python(&[
            arg(&script),
            arg(&path),
            "--refs",
            "2000000",
            "--kind",
            kind,
        ]);
        // WHEN read, THEN refused promptly, saying what is wrong and what to do
        let what = if kind == "blocks" {
            "its blocks"
        } else {
            "its trace entries"
        };
        refused_promptly(
            &path,
            &[
                &format!("{what} repeat references to the same records"),
                "than a pickle of 4004564 bytes holds (at most 125142, one per 32 bytes)",
                "take the snapshot again",
            ],
        );
    }
}
