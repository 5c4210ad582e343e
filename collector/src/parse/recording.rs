//! vramscope's own recording format (written by `vramscope record`), its writer and reader.
//!
//! Newline-delimited JSON, append-only: a header line, then one line per sample, note or
//! piece of an embedded allocator snapshot, then an end line when the run finished normally.
//! Every line is complete when written and lines are flushed at least every
//! [`FLUSH_INTERVAL`], so a recording cut by a SIGKILL (of the program or of vramscope) loses
//! at most the last interval and still opens: the reader keeps every complete line and says
//! the recording was not finalised. The format is documented in docs/FORMAT.md.
//!
//! Version 1 is still the current version: every later addition (free and driver-reserved
//! memory, per-process and MIG readings, `--torch-memory` snapshots) is new keys or new lines
//! carrying `t_ns`, which a reader that predates them skips (it sees a sample with no
//! readings), so old readers never misread new files and new readers read every v1 file.

mod absorb;
pub mod beside;
mod merge;
mod reader;
mod shim_status;
pub mod snapshots;
pub mod tags;
mod tail;
mod writer;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::SourceError;
use super::importer::{Detection, Importer, ReadContext};
use super::input::Input;
use crate::model::Recording;

pub use reader::read;
pub use snapshots::{SnapshotChunk, SnapshotDevice, SnapshotEnd, SnapshotInfo};
pub use tail::RecordingTail;
pub use writer::{RecordingWriter, open_output};

pub mod packed;

/// Diagnostics key of a recording without its end line: `record` is still writing it,
/// or was stopped first.
pub const NOT_FINALISED: &str = "recording not finalised (vramscope or the machine stopped first)";

/// Whether `rec` is a recording still open for writing (or cut short): a vramscope
/// recording whose end line was not read. The viewer follows such a file.
pub fn is_unfinished(rec: &Recording) -> bool {
    rec.meta.format == super::SourceFormat::VramscopeRecording
        && rec.diagnostics.counts.contains_key(NOT_FINALISED)
}

/// Recordings (`vramscope record`, and packs of any source) in the importer seam.
pub struct RecordingImporter;

impl Importer for RecordingImporter {
    fn detect(&self, head: &[u8]) -> Detection {
        if head.starts_with(MAGIC) {
            Detection::Certain
        } else {
            Detection::No
        }
    }

    fn read(&self, input: Input, context: &ReadContext<'_>) -> Result<Recording, SourceError> {
        read(input, context.path, context.options)
    }

    fn file_extensions(&self) -> &'static [&'static str] {
        &["vsr"]
    }

    fn memory_hint(&self) -> &'static str {
        "record with vramscope record --torch-memory on a GPU"
    }
}

/// The first bytes of every recording: the header's first key.
pub const MAGIC: &[u8] = b"{\"vramscope_recording\":";
/// The format version `record` writes. Its later additions are new keys and new lines
/// that version-1 readers skip, so recordings stay version 1.
pub const VERSION: u32 = 1;
/// The version of packed recordings ([`packed`]): a version-1 reader would take a pack's
/// records for empty samples, so packs say 2 and such a reader refuses them. Version 3
/// packs write their event columns as text numbers, which a version-2 reader would fail
/// on record by record; it refuses them up front instead. This reader reads all three.
pub const PACKED_VERSION: u32 = 3;
/// Longest time a written line may sit in memory before it reaches the file.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(500);
/// Longest line the reader accepts; a sample of 64 GPUs is a few KiB, a snapshot chunk
/// [`snapshots::CHUNK_BYTES`] of base64.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// A GPU as the header describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceHeader {
    /// NVML index.
    pub index: u32,
    /// Marketing name.
    #[serde(default)]
    pub name: Option<String>,
    /// Total memory.
    #[serde(default)]
    pub total_bytes: Option<u64>,
    /// NVML UUID (`GPU-…`).
    #[serde(default)]
    pub uuid: Option<String>,
    /// Whether MIG mode is on: memory is then also read per MIG instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<bool>,
}

/// `--torch-memory` as the header records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TorchMemoryHeader {
    /// `max_entries` given to `torch.cuda.memory._record_memory_history`.
    pub max_entries: u64,
    /// The folder, beside the recording (a name relative to the recording's folder), where
    /// the program's processes write their snapshots and status; vramscope embeds them when
    /// the run ends and removes it, so it is left only when vramscope could not finish.
    pub dir: String,
}

/// The first line of a recording.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version ([`VERSION`]); written first so the file starts with [`MAGIC`].
    pub vramscope_recording: u32,
    /// When recording started, ns since the Unix epoch; sample times are relative to it.
    pub start_unix_ns: i64,
    /// The recorded command line.
    pub command: Vec<String>,
    /// Host name.
    #[serde(default)]
    pub host: Option<String>,
    /// The recorded process.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Sampling interval.
    #[serde(default)]
    pub interval_ms: Option<u64>,
    /// NVIDIA driver version.
    #[serde(default)]
    pub driver_version: Option<String>,
    /// NVML version.
    #[serde(default)]
    pub nvml_version: Option<String>,
    /// Why there are no GPU samples, when NVML could not be used.
    #[serde(default)]
    pub nvml_unavailable: Option<String>,
    /// The GPUs sampled.
    #[serde(default)]
    pub devices: Vec<DeviceHeader>,
    /// vramscope's version.
    #[serde(default)]
    pub vramscope_version: Option<String>,
    /// PyTorch allocator capture, when `--torch-memory` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_memory: Option<TorchMemoryHeader>,
}

/// One process of the recorded tree on a GPU: `[pid, bytes]`, bytes `null` where NVML
/// reports the process but not its memory.
pub type PidReading = (u32, Option<u64>);

/// One MIG instance's reading inside a GPU reading.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MigReading {
    /// Index of the MIG device handle on its GPU.
    pub slot: u32,
    /// Used bytes of the instance.
    #[serde(default)]
    pub used: Option<u64>,
    /// Total bytes of the instance.
    #[serde(default)]
    pub total: Option<u64>,
    /// Bytes of the recorded tree on the instance.
    #[serde(default)]
    pub procs: Option<u64>,
}

/// One GPU's reading inside a sample line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    /// NVML index.
    pub index: u32,
    /// Used bytes on the device.
    pub used: u64,
    /// Total bytes.
    #[serde(default)]
    pub total: Option<u64>,
    /// Bytes used by the recorded process tree (`None` where NVML cannot attribute memory
    /// to processes).
    #[serde(default)]
    pub procs: Option<u64>,
    /// Free bytes, as NVML reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free: Option<u64>,
    /// Bytes the driver and firmware reserve (`nvmlMemory_v2_t.reserved`); not the
    /// allocator's reserved memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_reserved: Option<u64>,
    /// The recorded tree's processes on this GPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<PidReading>,
    /// Per MIG instance, when MIG mode is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigReading>,
}

/// One line after the header. Variants are tried in order (untagged), so the ones with a
/// distinguishing required key come first and `Sample` (only `t_ns` required) last.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    /// The run ended normally.
    End {
        /// ns since start.
        t_ns: i64,
        /// How it ended.
        end: EndInfo,
    },
    /// A note (a warning, a change of state).
    Note {
        /// ns since start.
        t_ns: i64,
        /// Text.
        note: String,
    },
    /// The start of an embedded allocator snapshot.
    Snapshot {
        /// ns since start (when it was embedded).
        t_ns: i64,
        /// What it is.
        snapshot: SnapshotInfo,
    },
    /// A piece of an embedded snapshot's bytes.
    SnapshotChunk {
        /// ns since start.
        t_ns: i64,
        /// The piece.
        snapshot_chunk: SnapshotChunk,
    },
    /// The end of an embedded snapshot, with its size and checksum.
    SnapshotEnd {
        /// ns since start.
        t_ns: i64,
        /// Size and checksum.
        snapshot_end: SnapshotEnd,
    },
    /// Storage tags of an embedded snapshot (between its chunks and its end line).
    StorageTags {
        /// ns since start.
        t_ns: i64,
        /// Some of the snapshot's tags.
        storage_tags: tags::StorageTagsLine,
    },
    /// A sample: GPU readings and the process tree's host memory.
    Sample {
        /// ns since `start_unix_ns`.
        t_ns: i64,
        /// Per GPU.
        #[serde(default)]
        gpus: Vec<GpuReading>,
        /// Host RSS of the process tree.
        #[serde(default)]
        rss: Option<u64>,
        /// Host PSS of the process tree: the latest reading that finished since the sample
        /// before (it is read less often than RSS; see `sampler::pss`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pss: Option<u64>,
        /// Processes in the tree at this sample (the program and its descendants).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host_processes: Option<u32>,
    },
}

impl Line {
    /// ns since the recording's start.
    pub fn t_ns(&self) -> i64 {
        match self {
            Line::End { t_ns, .. }
            | Line::Note { t_ns, .. }
            | Line::Snapshot { t_ns, .. }
            | Line::SnapshotChunk { t_ns, .. }
            | Line::SnapshotEnd { t_ns, .. }
            | Line::StorageTags { t_ns, .. }
            | Line::Sample { t_ns, .. } => *t_ns,
        }
    }
}

/// How the recorded program ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndInfo {
    /// Exit code, when it exited.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Signal number, when a signal ended it.
    #[serde(default)]
    pub signal: Option<i32>,
    /// CPU time vramscope itself used (user + system, all its threads, not the program's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vramscope_cpu_ns: Option<u64>,
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_beside;
