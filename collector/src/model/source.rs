//! Facts about where a recording came from: its format, devices, distributed setup,
//! producer metadata, and the oddities met while reading it.

use std::collections::BTreeMap;

use super::{DeviceId, SourceFormat};

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
    /// The times are positions in the source's event order, 1 ns apart, not a clock
    /// (torch 2.0–2.1 snapshots wrote no `time_us`): show them as events, never as ns.
    pub event_order: bool,
    /// Distributed facts, where present.
    pub distributed: Option<DistributedInfo>,
    /// Free-form key/value facts from the source (`traceName`, `profile_memory`, versions…).
    pub properties: BTreeMap<String, String>,
    /// Total number of trace events read.
    pub events_read: u64,
    /// Op spans read but not kept ([`crate::parse::SpanFilter::Summary`]).
    pub spans_left_out: u64,
    /// Memory events inside a span naming work, counted over spans that are not all kept:
    /// as a pack stored the count when its spans are not read (`summary` of a pack that
    /// stores the spans its answer reads), or as `summarize_compact` counted over the
    /// compressed spans; else `None` (`summarize` counts over `Recording::ops`).
    pub memory_events_in_ops: Option<u64>,
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
