//! Bounds on the work a database can make the reader do, so that any SQLite file — a real
//! export, a damaged one or one crafted to hang — is read or refused within seconds.
//!
//! The reader only ever reads real tables (views and virtual tables are refused by
//! [`Db`](super::db::Db), generated columns too), so its work is one pass over the rows it
//! asks for. What could still blow up is what SQLite does below that: a damaged b-tree whose
//! pages are shared (a page listed as the child of many others is walked many times, so a
//! file of a few KB can yield billions of rows), or a cell of gigabytes. Hence three
//! bounds, each scaled to the file where a bigger export legitimately needs more:
//! VM steps (a progress handler interrupts past the budget), rows handed to the reader,
//! and the size of one value.

use std::fmt::Write;
use std::path::Path;

use rusqlite::Connection;
use rusqlite::limits::Limit;

use super::db::db_error;
use crate::parse::SourceError;

/// SQLite VM instructions between two calls of the progress handler. A call is a counter
/// increment: at 10,000 the handler costs nothing measurable, and the budget overshoots by
/// at most this many steps.
const VM_STEPS_PER_CHECK: i32 = 10_000;

/// VM steps any database may take, however small: the whole read of a small real export
/// takes 5,100 (run.sqlite of `../shared/traces/nsys-cpu`, 580 KB) and 7,600
/// (run-nolazy.sqlite, 1 MB); 100 million take about a second.
const BASE_VM_STEPS: u64 = 100_000_000;

/// VM steps allowed per byte of the file on top of [`BASE_VM_STEPS`]. Reading an export
/// takes under half a step per file byte: 0.45 for a 49 MB one of nothing but 1M NVTX
/// ranges and 1M memory rows (the smallest rows the reader reads, NVTX_EVENTS twice),
/// 0.01 for the real ones. 16 leaves a 35x margin, while a b-tree of shared pages, which
/// multiplies rows without bytes, runs out of it within seconds.
const VM_STEPS_PER_FILE_BYTE: u64 = 16;

/// Rows any database may hand the reader, however small. Each row can become an op span
/// or memory event of about 100 bytes in the recording: 10 MB at most from a tiny file.
const BASE_ROWS: u64 = 100_000;

/// File bytes per row the reader may be handed beyond [`BASE_ROWS`]. A row of a table
/// takes at least 6 bytes of its file (cell pointer, lengths, one value) and the reader
/// reads each table at most twice (NVTX_EVENTS), so a real file never needs more than
/// one row per 3 bytes; one per 2 is the bound. It caps the recording a file can build at
/// about 50 bytes per file byte.
const FILE_BYTES_PER_ROW: u64 = 2;

/// The largest string or blob, or row, SQLite will produce (`SQLITE_LIMIT_LENGTH`;
/// SQLite's default is 1 GB). The longest value in a real export is a demangled kernel
/// name of a few KB; 16 MiB bounds what one hostile cell can make the reader copy.
pub(super) const MAX_VALUE_BYTES: i32 = 16 << 20;

/// The work a database of `content_bytes` may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Budget {
    /// SQLite VM steps over the whole read.
    pub(super) vm_steps: u64,
    /// Rows handed to the reader over the whole read.
    pub(super) rows: u64,
}

impl Budget {
    /// The budget of a file of `content_bytes`.
    pub(super) fn for_file(content_bytes: u64) -> Budget {
        Budget {
            vm_steps: BASE_VM_STEPS
                .saturating_add(content_bytes.saturating_mul(VM_STEPS_PER_FILE_BYTE)),
            rows: BASE_ROWS.saturating_add(content_bytes / FILE_BYTES_PER_ROW),
        }
    }

    /// The error of a read that took more VM steps than this budget.
    pub(super) fn steps_exceeded(self) -> SourceError {
        exceeded(self.vm_steps, "VM steps")
    }

    /// The error of a read that was handed more rows than this budget.
    pub(super) fn rows_exceeded(self) -> SourceError {
        exceeded(self.rows, "rows")
    }
}

fn exceeded(limit: u64, what: &str) -> SourceError {
    SourceError::shape(
        None,
        format!(
            "the database asks for more work than an Nsight export needs (budget {limit} \
             {what} for a file of its size): it is damaged or was not written by nsys; \
             export the report again with `nsys export --type sqlite`"
        ),
    )
}

/// `path` as an SQLite URI that opens the file `immutable`: SQLite then reads it as it is,
/// and never writes beside it — a read-only open of a WAL-mode database would otherwise
/// create `-wal` and `-shm` files next to the input and leave them there. nsys never
/// writes WAL-mode exports, so nothing a real export holds is skipped. Every byte but
/// unreserved ones and `/` is percent-encoded, so `?`, `#` and `%` in a name stay a name.
pub(super) fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/._-~".contains(&b) {
            uri.push(char::from(b));
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// Puts `budget` and the value-size limit on `conn`, and stops SQLite from running
/// functions that a schema names unless they are harmless (`trusted_schema`).
pub(super) fn guard(conn: &mut Connection, budget: Budget) -> Result<(), SourceError> {
    let checks_allowed = budget.vm_steps / VM_STEPS_PER_CHECK as u64;
    let mut checks = 0u64;
    conn.progress_handler(
        VM_STEPS_PER_CHECK,
        Some(move || {
            checks += 1;
            checks > checks_allowed
        }),
    )
    .map_err(|e| db_error("setting the work budget", &e))?;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        .map_err(|e| db_error("setting the value-size limit", &e))?;
    conn.execute_batch("PRAGMA trusted_schema = OFF")
        .map_err(|e| db_error("turning trusted_schema off", &e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_keep_odd_names_whole() {
        let uri = immutable_uri(Path::new("/tmp/a b/r?un#1%.sqlite"));
        assert_eq!(uri, "file:/tmp/a%20b/r%3Fun%231%25.sqlite?immutable=1");
    }

    #[test]
    fn budgets_grow_with_the_file() {
        assert_eq!(
            Budget::for_file(0),
            Budget {
                vm_steps: 100_000_000,
                rows: 100_000
            }
        );
        let gib = Budget::for_file(1 << 30);
        assert_eq!(gib.vm_steps, 100_000_000 + 16 * (1 << 30));
        assert_eq!(gib.rows, 100_000 + (1 << 29));
        assert_eq!(Budget::for_file(u64::MAX).vm_steps, u64::MAX);
    }
}
