//! The database side of the SQLite reader: listing tables and columns, selecting the
//! columns a table has (alternatives per column, `NULL` when absent), loosely typed cells,
//! and the file's enum ids. Only plain tables are read: a view, virtual table or generated
//! column where the reader looks for an nsys table is refused, and every query runs
//! within the file's [`Budget`].

use std::borrow::Cow;
use std::cell::Cell;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use rustc_hash::{FxHashMap, FxHashSet};

use super::super::builder::{Builder, MemKind, MemOp};
use super::super::{event_class, event_type};
use super::guard::{Budget, MAX_VALUE_BYTES};
use crate::parse::SourceError;

/// A clear message for a database error while doing `what`.
pub(super) fn db_error(what: &str, e: &rusqlite::Error) -> SourceError {
    let why = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => "the database is damaged or cut short: ",
        Some(rusqlite::ErrorCode::NotADatabase) => "not a readable SQLite database: ",
        Some(rusqlite::ErrorCode::TooBig) => {
            return SourceError::shape(
                None,
                format!(
                    "a value in the database is larger than {} MiB, more than any Nsight \
                     export holds (SQLite error while {what}: {e}): it is damaged or was not \
                     written by nsys; export the report again with `nsys export --type sqlite`",
                    MAX_VALUE_BYTES >> 20
                ),
            );
        }
        _ => "",
    };
    SourceError::shape(None, format!("{why}SQLite error while {what}: {e}"))
}

/// The message for a schema object the reader will not read in place of an nsys table.
fn refusal(name: &str, what: &str) -> SourceError {
    SourceError::shape(
        None,
        format!(
            "{name} is {what}: nsys exports hold plain tables only, and vramscope does not \
             run a file's views or expressions (they can ask for unbounded work); export the \
             report again with `nsys export --type sqlite`"
        ),
    )
}

/// An integer cell, tolerating reals and numeric text (SQLite columns are loosely typed).
pub(super) fn int(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Integer(v) => Some(v),
        ValueRef::Real(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18 => {
            Some(f as i64)
        }
        ValueRef::Text(t) => std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        _ => None,
    })
}

/// A text cell.
pub(super) fn text(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    })
}

/// The string table (`StringIds`).
pub(super) type Strings = FxHashMap<i64, Box<str>>;

/// A name from a column that holds either a `StringIds` id or the text itself.
/// Borrowed from the string table, so million-row tables allocate no name per row.
pub(super) fn name_cell<'s>(
    row: &Row<'_>,
    i: usize,
    strings: &'s Strings,
) -> rusqlite::Result<Option<Cow<'s, str>>> {
    if let Some(t) = text(row, i)?
        && t.parse::<i64>().is_err()
    {
        return Ok(Some(Cow::Owned(t)));
    }
    Ok(int(row, i)?.and_then(|id| strings.get(&id).map(|s| Cow::Borrowed(&**s))))
}

/// An NVTX name: the `text` column (unregistered strings), else `textId` → `StringIds`.
pub(super) fn nvtx_text<'s>(
    row: &Row<'_>,
    text_col: usize,
    id_col: usize,
    strings: &'s Strings,
) -> rusqlite::Result<Option<Cow<'s, str>>> {
    match text(row, text_col)? {
        Some(t) => Ok(Some(Cow::Owned(t))),
        None => name_cell(row, id_col, strings),
    }
}

/// Enum ids of this file: from its `ENUM_*` tables where filled, else the documented ones.
pub(super) struct Enums {
    pub(super) mem_kinds: FxHashMap<i64, MemKind>,
    pub(super) mem_ops: FxHashMap<i64, MemOp>,
    pub(super) push_pop: i64,
    pub(super) start_end: i64,
    pub(super) domain_create: i64,
    pub(super) mark: i64,
    pub(super) driver_class: i64,
}

impl Enums {
    pub(super) fn read(db: &Db<'_>, b: &mut Builder) -> Result<Enums, SourceError> {
        let mut from_file = Vec::new();
        let mut documented = Vec::new();
        let mut mem_kinds: FxHashMap<i64, MemKind> = FxHashMap::default();
        for (id, name, label) in db.enum_rows("ENUM_CUDA_MEM_KIND")? {
            if let Some(k) =
                MemKind::from_enum_name(&name).or_else(|| MemKind::from_enum_name(&label))
            {
                mem_kinds.insert(id, k);
            }
        }
        let mut mem_ops: FxHashMap<i64, MemOp> = FxHashMap::default();
        for (id, name, label) in db.enum_rows("ENUM_CUDA_DEV_MEM_EVENT_OPER")? {
            if let Some(op) = MemOp::from_enum_name(&name).or_else(|| MemOp::from_enum_name(&label))
            {
                mem_ops.insert(id, op);
            }
        }
        for (table, filled) in [
            ("ENUM_CUDA_MEM_KIND", !mem_kinds.is_empty()),
            ("ENUM_CUDA_DEV_MEM_EVENT_OPER", !mem_ops.is_empty()),
        ] {
            if filled {
                from_file.push(table)
            } else {
                documented.push(table)
            }
        }
        if mem_kinds.is_empty() {
            mem_kinds = (0..8)
                .filter_map(|i| Some((i, MemKind::from_documented_id(i)?)))
                .collect();
        }
        if mem_ops.is_empty() {
            mem_ops = (0..2)
                .filter_map(|i| Some((i, MemOp::from_documented_id(i)?)))
                .collect();
        }
        let types: FxHashMap<String, i64> = db
            .enum_rows("ENUM_NSYS_EVENT_TYPE")?
            .into_iter()
            .map(|(id, name, _)| (name, id))
            .collect();
        let classes: FxHashMap<String, i64> = db
            .enum_rows("ENUM_NSYS_EVENT_CLASS")?
            .into_iter()
            .map(|(id, name, _)| (name, id))
            .collect();
        for (table, map) in [
            ("ENUM_NSYS_EVENT_TYPE", &types),
            ("ENUM_NSYS_EVENT_CLASS", &classes),
        ] {
            if map.is_empty() {
                documented.push(table)
            } else {
                from_file.push(table)
            }
        }
        let of = |name: &str, fallback: i64| types.get(name).copied().unwrap_or(fallback);
        if !from_file.is_empty() {
            b.property("enums_from_file", from_file.join(", "));
        }
        if !documented.is_empty() {
            b.property("enums_documented_values", documented.join(", "));
        }
        Ok(Enums {
            mem_kinds,
            mem_ops,
            push_pop: of("NvtxPushPopRange", event_type::NVTX_PUSH_POP_RANGE),
            start_end: of("NvtxStartEndRange", event_type::NVTX_START_END_RANGE),
            domain_create: of("NvtxDomainCreate", event_type::NVTX_DOMAIN_CREATE),
            mark: of("NvtxMark", event_type::NVTX_MARK),
            driver_class: classes
                .get("TRACE_PROCESS_EVENT_CUDA_DRIVER")
                .copied()
                .unwrap_or(event_class::CUDA_DRIVER),
        })
    }
}

/// The database, its table names (lowercase → as written), and the work left to it.
pub(super) struct Db<'c> {
    conn: &'c Connection,
    pub(super) tables: FxHashMap<String, String>,
    /// Views and virtual tables (lowercase → name and what it is): never read, and an
    /// error when the reader asks for one of their names.
    refused: FxHashMap<String, (String, &'static str)>,
    budget: Budget,
    rows_left: Cell<u64>,
}

impl<'c> Db<'c> {
    /// The tables of the database behind `conn`, to be read within `budget`.
    pub(super) fn new(conn: &'c Connection, budget: Budget) -> Result<Db<'c>, SourceError> {
        let mut db = Db {
            conn,
            tables: FxHashMap::default(),
            refused: FxHashMap::default(),
            budget,
            rows_left: Cell::new(budget.rows),
        };
        let (mut tables, mut refused) = (FxHashMap::default(), FxHashMap::default());
        let sql = "SELECT name, type FROM pragma_table_list \
                   WHERE schema = 'main' AND name <> 'sqlite_schema'";
        db.rows(sql, "listing the tables", |row| {
            let (Some(name), Some(kind)) = (text(row, 0)?, text(row, 1)?) else {
                return Ok(());
            };
            let key = name.to_ascii_lowercase();
            match kind.as_str() {
                "table" => {
                    tables.insert(key, name);
                }
                "view" => {
                    refused.insert(key, (name, "a view, not a table"));
                }
                "virtual" => {
                    refused.insert(key, (name, "a virtual table, not a plain table"));
                }
                _ => {
                    refused.insert(key, (name, "not a plain table"));
                }
            }
            Ok(())
        })?;
        db.tables = tables;
        db.refused = refused;
        Ok(db)
    }

    /// The name of `table` as the file writes it; `None` when it has no such table, an
    /// error when the name is a view or a virtual table.
    pub(super) fn real(&self, table: &str) -> Result<Option<&String>, SourceError> {
        let key = table.to_ascii_lowercase();
        if let Some((name, what)) = self.refused.get(&key) {
            return Err(refusal(name, what));
        }
        Ok(self.tables.get(&key))
    }

    pub(super) fn has(&self, table: &str) -> bool {
        self.tables.contains_key(&table.to_ascii_lowercase())
    }

    /// Lowercase column names of `table` (empty if it does not exist). A generated column
    /// is refused: nsys writes none, and computing one runs the file's expression per row.
    pub(super) fn columns(&self, table: &str) -> Result<FxHashSet<String>, SourceError> {
        let mut cols = FxHashSet::default();
        let mut generated = None;
        if let Some(real) = self.real(table)? {
            let sql = format!("PRAGMA table_xinfo(\"{real}\")");
            self.rows(&sql, "reading a table's columns", |row| {
                if let Some(c) = text(row, 1)? {
                    // `hidden`: 2 and 3 are generated columns (virtual, stored).
                    if matches!(int(row, 6)?, Some(2 | 3)) {
                        generated.get_or_insert_with(|| c.clone());
                    }
                    cols.insert(c.to_ascii_lowercase());
                }
                Ok(())
            })?;
            if let Some(column) = generated {
                let what = format!("a table with a generated column ({column})");
                return Err(refusal(real, &what));
            }
        }
        Ok(cols)
    }

    /// `SELECT` of the first present alternative of each wanted column (`NULL` if none),
    /// or `None` when the table is missing. Names come from this file's fixed lists only.
    pub(super) fn select(
        &self,
        table: &str,
        wanted: &[&[&str]],
        rest: &str,
    ) -> Result<Option<String>, SourceError> {
        let Some(real) = self.real(table)? else {
            return Ok(None);
        };
        let cols = self.columns(table)?;
        let picked: Vec<String> = wanted
            .iter()
            .map(|alts| {
                alts.iter()
                    .find(|c| cols.contains(&c.to_ascii_lowercase()))
                    .map_or_else(|| "NULL".to_owned(), |c| format!("\"{c}\""))
            })
            .collect();
        Ok(Some(format!(
            "SELECT {} FROM \"{real}\" {rest}",
            picked.join(", ")
        )))
    }

    /// Run `sql` and hand each row to `f`; returns the number of rows. Fails once the
    /// whole read has taken more rows or VM steps than the budget.
    pub(super) fn rows(
        &self,
        sql: &str,
        what: &str,
        mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<()>,
    ) -> Result<u64, SourceError> {
        let err = |e: rusqlite::Error| match e.sqlite_error_code() {
            // Only the budget's progress handler interrupts.
            Some(rusqlite::ErrorCode::OperationInterrupted) => self.budget.steps_exceeded(),
            _ => db_error(what, &e),
        };
        let mut stmt = self.conn.prepare(sql).map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        let mut n = 0;
        while let Some(row) = rows.next().map_err(err)? {
            let Some(left) = self.rows_left.get().checked_sub(1) else {
                return Err(self.budget.rows_exceeded());
            };
            self.rows_left.set(left);
            f(row).map_err(err)?;
            n += 1;
        }
        Ok(n)
    }

    pub(super) fn enum_rows(&self, table: &str) -> Result<Vec<(i64, String, String)>, SourceError> {
        let mut out = Vec::new();
        if let Some(sql) = self.select(table, &[&["id"], &["name"], &["label"]], "")? {
            self.rows(&sql, &format!("reading {table}"), |row| {
                if let Some(id) = int(row, 0)? {
                    out.push((
                        id,
                        text(row, 1)?.unwrap_or_default(),
                        text(row, 2)?.unwrap_or_default(),
                    ));
                }
                Ok(())
            })?;
        }
        Ok(out)
    }
}
