//! `nsys export --type sqlite`: tables and columns are detected, never assumed, because
//! schemas differ between nsys versions and export modes (a default *lazy* export leaves
//! out empty tables; `--lazy=false` has them all but can leave `ENUM_*` tables empty).

use std::borrow::Cow;
use std::path::Path;

mod db;
mod guard;

use rusqlite::{Connection, OpenFlags};
use rustc_hash::FxHashMap;

use super::builder::{Builder, MemKind, MemRow};
use super::{GlobalId, qualified_nvtx_name};
use crate::model::{OpCategory, Recording, SourceFormat};
use crate::parse::SourceError;
use db::{Db, Enums, Strings, db_error, int, name_cell, nvtx_text, text};
use guard::{Budget, guard, immutable_uri};

/// Tables only nsys writes; a database with none of them is not an nsys export.
const NSYS_TABLES: &[&str] = &[
    "StringIds",
    "TARGET_INFO_SESSION_START_TIME",
    "NVTX_EVENTS",
    "CUDA_GPU_MEMORY_USAGE_EVENTS",
    "EXPORT_META_DATA",
    "META_DATA_EXPORT",
];

/// Read the export at `path`, opened read-only and immutable (nothing is written beside it).
pub fn read(path: &Path) -> Result<Recording, SourceError> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        // The importer was picked from the first bytes, already read from the pipe.
        return Err(SourceError::shape(
            None,
            "an Nsight Systems export (SQLite) read from a pipe or device: SQLite seeks in \
             the file, so it must be a regular file; save it to a file and pass that",
        ));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let mut conn = Connection::open_with_flags(immutable_uri(path), flags)
        .map_err(|e| db_error("opening the database", &e))?;
    let content_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    read_connection(&mut conn, content_bytes)
}

/// Read an export from an open connection, within the work budget of a file of
/// `content_bytes` (which also sizes the recording's memory estimate).
pub fn read_connection(
    conn: &mut Connection,
    content_bytes: u64,
) -> Result<Recording, SourceError> {
    let budget = Budget::for_file(content_bytes);
    guard(conn, budget)?;
    let db = Db::new(conn, budget)?;
    for table in NSYS_TABLES {
        db.real(table)?; // a view named like an nsys table is refused, not skipped
    }
    if !NSYS_TABLES.iter().any(|t| db.has(t)) {
        let mut found: Vec<&str> = db.tables.values().map(String::as_str).collect();
        found.sort_unstable();
        let listed = match found.len() {
            0 => "it has no tables".to_owned(),
            n if n <= 8 => format!("its tables: {}", found.join(", ")),
            n => format!("its {n} tables begin {}, …", found[..8].join(", ")),
        };
        return Err(SourceError::shape(
            None,
            format!(
                "an SQLite database, but not an nsys export: no StringIds table, \
                 no TARGET_INFO_SESSION_START_TIME, NVTX_EVENTS or \
                 CUDA_GPU_MEMORY_USAGE_EVENTS ({listed})"
            ),
        ));
    }
    let session = db.session_start()?;
    let mut b = Builder::new(SourceFormat::NsightSqlite, "", session.unwrap_or(0));
    match session {
        Some(ns) => {
            b.property("session_start_epoch_ns", ns.to_string());
            b.property("time_base", "epoch ns (session start + relative ns)");
        }
        None => {
            b.note("no TARGET_INFO_SESSION_START_TIME: times are relative to the session start");
            b.property("time_base", "ns relative to the session start");
        }
    }
    let era = db.metadata(&mut b)?;
    b.set_era(era);
    let strings = db.strings()?;
    let enums = Enums::read(&db, &mut b)?;
    db.gpus(&mut b)?;
    db.thread_names(&strings, &mut b)?;
    db.api_calls(&strings, &enums, &mut b)?;
    db.kernels(&strings, &mut b)?;
    db.nvtx(&strings, &enums, &mut b)?;
    db.memory(&enums, &mut b)?;
    Ok(b.finish(false, content_bytes))
}

impl Db<'_> {
    fn session_start(&self) -> Result<Option<i64>, SourceError> {
        let mut start = None;
        let table = "TARGET_INFO_SESSION_START_TIME";
        if let Some(sql) = self.select(table, &[&["utcEpochNs"]], "LIMIT 1")? {
            self.rows(&sql, "reading TARGET_INFO_SESSION_START_TIME", |row| {
                start = int(row, 0)?;
                Ok(())
            })?;
        }
        Ok(start)
    }

    /// Export facts into properties; returns the era line.
    fn metadata(&self, b: &mut Builder) -> Result<String, SourceError> {
        let mut facts: FxHashMap<String, String> = FxHashMap::default();
        for table in ["EXPORT_META_DATA", "META_DATA_EXPORT"] {
            if let Some(sql) = self.select(table, &[&["name"], &["value"]], "")? {
                self.rows(&sql, &format!("reading {table}"), |row| {
                    if let (Some(k), Some(v)) = (text(row, 0)?, text(row, 1)?) {
                        facts.insert(k, v);
                    }
                    Ok(())
                })?;
            }
        }
        let version = facts.get("EXPORT_PRODUCT_VERSION").cloned();
        let schema = facts.get("EXPORT_SCHEMA_VERSION").cloned();
        for (key, prop) in [
            ("EXPORT_PRODUCT_VERSION", "nsys_version"),
            ("EXPORT_SCHEMA_VERSION", "export_schema_version"),
            ("EXPORT_LAZY", "export_lazy"),
        ] {
            if let Some(v) = facts.get(key) {
                b.property(prop, v.clone());
            }
        }
        let lazy = match facts.get("EXPORT_LAZY").map(String::as_str) {
            Some("true") => ", lazy",
            Some("false") => ", --lazy=false",
            _ => "",
        };
        Ok(match (version, schema) {
            (Some(v), Some(s)) => format!("Nsight Systems {v} (export schema {s}{lazy})"),
            (Some(v), None) => format!("Nsight Systems {v}{lazy}"),
            _ => "Nsight Systems (version not recorded)".to_owned(),
        })
    }

    fn strings(&self) -> Result<Strings, SourceError> {
        let mut strings = Strings::default();
        if let Some(sql) = self.select("StringIds", &[&["id"], &["value"]], "")? {
            self.rows(&sql, "reading StringIds", |row| {
                if let (Some(id), Some(v)) = (int(row, 0)?, text(row, 1)?) {
                    strings.insert(id, v.into());
                }
                Ok(())
            })?;
        }
        Ok(strings)
    }

    fn gpus(&self, b: &mut Builder) -> Result<(), SourceError> {
        for table in ["TARGET_INFO_GPU", "TARGET_INFO_CUDA_DEVICE"] {
            let wanted: &[&[&str]] = &[
                &["cuDevice", "cudaId", "id"],
                &["name"],
                &["totalMemory", "totalGlobalMem", "totalMem"],
            ];
            if let Some(sql) = self.select(table, wanted, "")? {
                self.rows(&sql, &format!("reading {table}"), |row| {
                    if let Some(id) = int(row, 0)? {
                        let total = int(row, 2)?.and_then(|t| u64::try_from(t).ok());
                        b.describe_gpu(id, text(row, 1)?, total);
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    fn thread_names(&self, strings: &Strings, b: &mut Builder) -> Result<(), SourceError> {
        if let Some(sql) = self.select("ThreadNames", &[&["globalTid"], &["nameId"]], "")? {
            self.rows(&sql, "reading ThreadNames", |row| {
                if let (Some(g), Some(name)) = (int(row, 0)?, name_cell(row, 1, strings)?) {
                    b.name_thread(GlobalId(g as u64), &name);
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    fn api_calls(
        &self,
        strings: &Strings,
        enums: &Enums,
        b: &mut Builder,
    ) -> Result<(), SourceError> {
        let wanted: &[&[&str]] = &[
            &["start"],
            &["end"],
            &["eventClass"],
            &["globalTid"],
            &["correlationId"],
            &["nameId", "name"],
        ];
        let Some(sql) = self.select("CUPTI_ACTIVITY_KIND_RUNTIME", wanted, "")? else {
            return Ok(());
        };
        let n = self.rows(&sql, "reading CUPTI_ACTIVITY_KIND_RUNTIME", |row| {
            let (Some(start), Some(g)) = (int(row, 0)?, int(row, 3)?) else {
                b.note("CUDA API calls without a start or thread skipped");
                return Ok(());
            };
            let gid = GlobalId(g as u64);
            if let Some(c) = int(row, 4)? {
                b.api_call(gid, c as u64);
            }
            let category = if int(row, 2)? == Some(enums.driver_class) {
                OpCategory::Driver
            } else {
                OpCategory::Runtime
            };
            let name =
                name_cell(row, 5, strings)?.unwrap_or(Cow::Borrowed("[unnamed CUDA API call]"));
            let thread = b.thread(gid);
            b.span(&name, category, thread, start, int(row, 1)?);
            Ok(())
        })?;
        b.events_read += n;
        b.property("cuda_api_calls", n.to_string());
        Ok(())
    }

    fn kernels(&self, strings: &Strings, b: &mut Builder) -> Result<(), SourceError> {
        let wanted: &[&[&str]] = &[
            &["start"],
            &["end"],
            &["deviceId"],
            &["streamId"],
            &["globalPid"],
            &["demangledName", "shortName", "name"],
        ];
        let Some(sql) = self.select("CUPTI_ACTIVITY_KIND_KERNEL", wanted, "")? else {
            return Ok(());
        };
        let n = self.rows(&sql, "reading CUPTI_ACTIVITY_KIND_KERNEL", |row| {
            let Some(start) = int(row, 0)? else {
                b.note("kernels without a start skipped");
                return Ok(());
            };
            let process = int(row, 4)?.map(|g| GlobalId(g as u64));
            let lane = b.stream(
                process,
                int(row, 2)?.unwrap_or(0),
                int(row, 3)?.unwrap_or(0),
            );
            let name = name_cell(row, 5, strings)?.unwrap_or(Cow::Borrowed("[unnamed kernel]"));
            b.span(&name, OpCategory::Kernel, lane, start, int(row, 1)?);
            Ok(())
        })?;
        b.events_read += n;
        b.property("kernels", n.to_string());
        Ok(())
    }

    fn nvtx(&self, strings: &Strings, enums: &Enums, b: &mut Builder) -> Result<(), SourceError> {
        let wanted: &[&[&str]] = &[
            &["start"],
            &["end"],
            &["eventType"],
            &["text"],
            &["textId"],
            &["globalTid"],
            &["domainId"],
        ];
        let Some(sql) = self.select("NVTX_EVENTS", wanted, "")? else {
            return Ok(());
        };
        if !self.columns("NVTX_EVENTS")?.contains("eventtype") {
            b.note("NVTX_EVENTS without an eventType column not read");
            return Ok(());
        }
        // Domain names first: a range's name is "domain:text" outside the default domain,
        // as `nsys stats` shows it. The id is an integer of our own, safe to format.
        let mut domains: FxHashMap<(u64, i64), String> = FxHashMap::default();
        let creates = format!("{sql} WHERE \"eventType\" = {}", enums.domain_create);
        self.rows(&creates, "reading NVTX_EVENTS", |row| {
            if let (Some(g), Some(d)) = (int(row, 5)?, int(row, 6)?)
                && let Some(name) = nvtx_text(row, 3, 4, strings)?
            {
                domains.insert((GlobalId(g as u64).pid(), d), name.into_owned());
            }
            Ok(())
        })?;
        let (mut ranges, mut marks) = (0u64, 0u64);
        let n = self.rows(&sql, "reading NVTX_EVENTS", |row| {
            let kind = int(row, 2)?;
            if kind == Some(enums.mark) {
                marks += 1;
            }
            if kind != Some(enums.push_pop) && kind != Some(enums.start_end) {
                return Ok(());
            }
            let (Some(start), Some(g)) = (int(row, 0)?, int(row, 5)?) else {
                b.note("NVTX ranges without a start or thread skipped");
                return Ok(());
            };
            let gid = GlobalId(g as u64);
            let Some(label) = nvtx_text(row, 3, 4, strings)? else {
                b.note("NVTX ranges without a name skipped");
                return Ok(());
            };
            let domain = int(row, 6)?.and_then(|d| domains.get(&(gid.pid(), d)));
            let name = qualified_nvtx_name(domain.map(String::as_str), &label);
            let thread = b.thread(gid);
            b.span(&name, OpCategory::Nvtx, thread, start, int(row, 1)?);
            ranges += 1;
            Ok(())
        })?;
        b.events_read += n;
        b.property("nvtx_ranges", ranges.to_string());
        b.property("nvtx_marks", marks.to_string());
        Ok(())
    }

    fn memory(&self, enums: &Enums, b: &mut Builder) -> Result<(), SourceError> {
        let table = "CUDA_GPU_MEMORY_USAGE_EVENTS";
        let wanted: &[&[&str]] = &[
            &["start"],
            &["deviceId"],
            &["address"],
            &["bytes"],
            &["memKind"],
            &["memoryOperationType"],
            &["globalPid"],
            &["correlationId"],
        ];
        let cols = self.columns(table)?;
        let missing: Vec<&str> = ["start", "deviceId", "bytes", "memoryOperationType"]
            .into_iter()
            .filter(|c| self.has(table) && !cols.contains(&c.to_ascii_lowercase()))
            .collect();
        if !missing.is_empty() {
            b.note(&format!(
                "{table} without column(s) {} not read",
                missing.join(", ")
            ));
            return Ok(());
        }
        if self.has(table) && !cols.contains("memkind") {
            b.note("CUDA memory rows without memKind (old export) taken as Device memory");
        }
        let Some(sql) = self.select(table, wanted, "")? else {
            return Ok(());
        };
        let n = self.rows(&sql, "reading CUDA_GPU_MEMORY_USAGE_EVENTS", |row| {
            let (Some(rel_ns), Some(bytes), Some(op)) = (int(row, 0)?, int(row, 3)?, int(row, 5)?)
            else {
                b.note("CUDA memory rows without start, bytes or operation skipped");
                return Ok(());
            };
            let kind = match int(row, 4)? {
                Some(k) => enums.mem_kinds.get(&k).copied(),
                None => Some(MemKind::Device),
            };
            let (Some(kind), Some(op)) = (kind, enums.mem_ops.get(&op).copied()) else {
                b.note("CUDA memory rows with an unknown memKind or operation skipped");
                return Ok(());
            };
            b.memory(MemRow {
                rel_ns,
                device_id: int(row, 1)?.unwrap_or(0),
                kind,
                op,
                bytes,
                address: int(row, 2)?.map(|a| a as u64),
                process: int(row, 6)?.map(|g| GlobalId(g as u64)),
                correlation: int(row, 7)?.map(|c| c as u64),
            });
            Ok(())
        })?;
        b.events_read += n;
        b.property("cuda_memory_rows", n.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests;
