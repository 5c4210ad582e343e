//! Facts about where a recording came from: its format, devices, distributed setup,
//! producer metadata, and the oddities met while reading it.

use std::collections::BTreeMap;

use super::DeviceId;

/// A device that memory events refer to.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// Type and ordinal.
    pub key: DeviceId,
    /// Marketing name ("NVIDIA H100 80GB HBM3"), where the source has device properties.
    pub name: Option<String>,
    /// Total memory of the device in bytes, where known.
    pub total_memory_bytes: Option<u64>,
}

/// Distributed-training facts of the process that wrote the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DistributedInfo {
    /// `nccl`, `gloo`, …
    pub backend: Option<String>,
    /// This process's rank.
    pub rank: Option<i64>,
    /// Number of ranks.
    pub world_size: Option<i64>,
}

/// Which file format a recording came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceFormat {
    /// PyTorch profiler Chrome trace (Kineto JSON), plain or gzip.
    TorchChromeTrace,
    /// PyTorch CUDA caching-allocator snapshot (`torch.cuda.memory._dump_snapshot` pickle).
    TorchSnapshot,
    /// Nsight Systems `nsys export --type sqlite`.
    NsightSqlite,
    /// Nsight Systems `nsys export --type json`.
    NsightJson,
    /// vramscope's own recording (`vramscope record`).
    VramscopeRecording,
}

impl SourceFormat {
    /// Every format, in the order detection asks their importers
    /// (`parse::importer::importer` maps each to its reader).
    pub const ALL: [SourceFormat; 5] = [
        SourceFormat::TorchChromeTrace,
        SourceFormat::TorchSnapshot,
        SourceFormat::NsightSqlite,
        SourceFormat::NsightJson,
        SourceFormat::VramscopeRecording,
    ];

    /// The format whose [`as_str`](Self::as_str) is `id`.
    pub fn from_id(id: &str) -> Option<SourceFormat> {
        SourceFormat::ALL.into_iter().find(|f| f.as_str() == id)
    }

    /// Stable identifier for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceFormat::TorchChromeTrace => "pytorch-chrome-trace",
            SourceFormat::TorchSnapshot => "pytorch-allocator-snapshot",
            SourceFormat::NsightSqlite => "nsight-systems-sqlite",
            SourceFormat::NsightJson => "nsight-systems-json",
            SourceFormat::VramscopeRecording => "vramscope-recording",
        }
    }

    /// What to call it in prose.
    pub fn describe(self) -> &'static str {
        match self {
            SourceFormat::TorchChromeTrace => "PyTorch profiler trace",
            SourceFormat::TorchSnapshot => "PyTorch allocator snapshot",
            SourceFormat::NsightSqlite => "Nsight Systems export (SQLite)",
            SourceFormat::NsightJson => "Nsight Systems export (JSON)",
            SourceFormat::VramscopeRecording => "vramscope recording",
        }
    }
}

/// Facts about the source.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// File format.
    pub format: SourceFormat,
    /// Producer era, e.g. "torch 2.x (relative µs, baseTimeNanoseconds)".
    pub era: String,
    /// Whether the input was gzip-compressed.
    pub compressed: bool,
    /// Size of the (decompressed) content in bytes.
    pub content_bytes: u64,
    /// `baseTimeNanoseconds` of modern traces.
    pub base_time_ns: Option<i64>,
    /// Earliest timestamp seen; "time since trace start" is measured from here.
    pub start_ns: i64,
    /// Latest end timestamp seen.
    pub end_ns: i64,
    /// Distributed facts, where present.
    pub distributed: Option<DistributedInfo>,
    /// Free-form key/value facts from the source (`traceName`, `profile_memory`, versions…).
    pub properties: BTreeMap<String, String>,
    /// Total number of trace events read.
    pub events_read: u64,
}

/// Recoverable oddities met while reading: counted, reported, never fatal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diagnostics {
    /// What was skipped or repaired, by kind, with counts.
    pub counts: BTreeMap<String, u64>,
    /// Set when the input ended early and the complete prefix was kept (salvage mode).
    pub truncated_at: Option<u64>,
}

impl Diagnostics {
    /// Count one occurrence of `what`.
    pub fn note(&mut self, what: &str) {
        self.note_n(what, 1);
    }

    /// Count `n` occurrences of `what`.
    pub fn note_n(&mut self, what: &str, n: u64) {
        if n == 0 {
            return;
        }
        match self.counts.get_mut(what) {
            Some(c) => *c += n,
            None => {
                self.counts.insert(what.to_owned(), n);
            }
        }
    }

    /// Total number of noted oddities.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}
