//! The shim's status lines (`status-<pid>.jsonl` in the snapshots folder beside a
//! recording): what happened in each of the program's Python processes under
//! `--torch-memory` — torch imported, history enabled, a snapshot written, or why not — and
//! the one note a recording gets when no process recorded any history.

use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;

use super::beside::MAX_STATUS_FILE_BYTES;
use super::snapshots::{SnapshotDevice, SnapshotInfo};

/// The folder's status files: `status-<pid>.jsonl`.
pub const STATUS_PREFIX: &str = "status-";

/// One status line the shim writes (`status-<pid>.jsonl`): what happened in one process.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ShimEvent {
    /// `torch_imported`, `enabled`, `snapshot`, `no_torch`, `no_cuda`, `warning`, `error`.
    pub event: String,
    /// The process.
    pub pid: u32,
    /// When, Unix ns.
    pub t_unix_ns: i64,
    /// For `snapshot`: its file in the folder.
    #[serde(default)]
    pub file: Option<String>,
    /// For `snapshot`: `exit` or `oom`; for `error`: what was being snapshotted.
    #[serde(default)]
    pub reason: Option<String>,
    /// For `snapshot`: pickle size.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// For `snapshot`: trace entries.
    #[serde(default)]
    pub entries: Option<u64>,
    /// For `snapshot`: when `_snapshot()` was called.
    #[serde(default)]
    pub taken_unix_ns: Option<i64>,
    /// CUDA devices of the process.
    #[serde(default)]
    pub devices: Vec<SnapshotDevice>,
    /// `torch.__version__`.
    #[serde(default)]
    pub torch_version: Option<String>,
    /// For `enabled`: which `_record_memory_history` signature worked.
    #[serde(default)]
    pub api: Option<String>,
    /// For `enabled`.
    #[serde(default)]
    pub max_entries: Option<u64>,
    /// For `enabled`: whether the OOM observer could be attached.
    #[serde(default)]
    pub oom_observer: Option<bool>,
    /// For `error`/`warning`: the step.
    #[serde(default)]
    pub stage: Option<String>,
    /// For `error`/`warning`: what went wrong.
    #[serde(default)]
    pub error: Option<String>,
    /// For `snapshot`: the storage tags file written with it.
    #[serde(default)]
    pub tags_file: Option<String>,
    /// For `snapshot`: how many storages it tags.
    #[serde(default)]
    pub tags: Option<u64>,
}

impl ShimEvent {
    /// The note this event becomes in the recording, if any (`torch_imported` is implied by
    /// what follows it; `no_torch` events are summarised by [`no_torch_note`]).
    pub fn note(&self) -> Option<String> {
        let pid = self.pid;
        let version = self.torch_version.as_deref().unwrap_or("?");
        Some(match self.event.as_str() {
            "enabled" => format!(
                "torch-memory: pid {pid}: allocator history on (torch {version}, max_entries {}, OOM snapshots {}) by {}",
                self.max_entries.unwrap_or(0),
                if self.oom_observer == Some(true) {
                    "on"
                } else {
                    "unavailable"
                },
                self.api.as_deref().unwrap_or("?")
            ),
            "snapshot" => format!(
                "torch-memory: pid {pid}: {} snapshot taken ({} entries, {} bytes{})",
                self.reason.as_deref().unwrap_or("?"),
                self.entries.unwrap_or(0),
                self.bytes.unwrap_or(0),
                self.tags
                    .map(|n| format!(", {n} storage tags"))
                    .unwrap_or_default()
            ),
            "no_cuda" => format!(
                "torch-memory: pid {pid}: no allocator history: {}",
                self.reason.as_deref().unwrap_or("CUDA was not used")
            ),
            "warning" | "error" => format!(
                "torch-memory: pid {pid}: {} during {}: {}",
                self.event,
                self.stage.as_deref().unwrap_or("?"),
                self.error.as_deref().unwrap_or("?")
            ),
            _ => return None,
        })
    }

    /// The snapshot this event announces, as the recording describes it.
    pub fn snapshot_info(&self, id: u32) -> Option<SnapshotInfo> {
        (self.event == "snapshot").then(|| SnapshotInfo {
            id,
            pid: self.pid,
            reason: self.reason.clone().unwrap_or_default(),
            file: self.file.clone().unwrap_or_default(),
            bytes: self.bytes.unwrap_or(0),
            entries: self.entries,
            taken_unix_ns: self.taken_unix_ns,
            torch_version: self.torch_version.clone(),
            devices: self.devices.clone(),
            tags_file: self.tags_file.clone(),
        })
    }
}

/// One note for the Python processes that never imported torch, or `None` if there were none.
pub fn no_torch_note(events: &[ShimEvent]) -> Option<String> {
    let pids: Vec<String> = events
        .iter()
        .filter(|e| e.event == "no_torch")
        .map(|e| e.pid.to_string())
        .collect();
    match pids.len() {
        0 => None,
        1 => Some(format!(
            "torch-memory: pid {}: Python ran but never imported torch: no allocator history",
            pids[0]
        )),
        n => Some(format!(
            "torch-memory: {n} Python processes never imported torch (pids {})",
            pids.join(", ")
        )),
    }
}

/// The note when no Python process reported at all.
pub const NO_PYTHON_NOTE: &str = "torch-memory: no Python process reported (the program did not run Python, or ran it with -I, -E or -S, which skip the shim): no allocator history";

/// Every status line in the folder, by time; unreadable lines are skipped.
pub fn read_status(dir: &Path) -> io::Result<Vec<ShimEvent>> {
    let mut events = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(name) = name
            .to_str()
            .filter(|n| n.starts_with(STATUS_PREFIX) && n.ends_with(".jsonl"))
        else {
            continue;
        };
        // A status file that is a FIFO, a device or a link out of the folder is skipped.
        let Ok(file) = super::beside::open_inside(dir, name, MAX_STATUS_FILE_BYTES) else {
            continue;
        };
        let bounded = BufReader::new(file.take(MAX_STATUS_FILE_BYTES));
        for line in bounded.lines().map_while(Result::ok) {
            if let Ok(e) = serde_json::from_str::<ShimEvent>(&line) {
                events.push(e);
            }
        }
    }
    events.sort_by_key(|e| (e.t_unix_ns, e.pid));
    Ok(events)
}
