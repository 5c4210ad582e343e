//! The records of a packed recording that carry the model's tables and state as serde
//! structs: metadata and diagnostics, devices, threads, stacks, the allocator state and
//! the end record that counts every part.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{
    AllocatorState, Block, BlockState, DeviceId, DeviceIdx, DeviceInfo, DeviceType,
    DistributedInfo, Frame, Recording, RequestedTotals, Segment, SegmentPool, SourceFormat,
    StackId, StrId, ThreadInfo,
};

/// The source's facts ([`crate::model::Meta`]) and diagnostics.
#[derive(Serialize, Deserialize)]
pub struct MetaLine {
    format: String,
    era: String,
    compressed: bool,
    content_bytes: u64,
    base_time_ns: Option<i64>,
    start_ns: i64,
    end_ns: i64,
    /// Absent from packs written before it: real times.
    #[serde(default)]
    event_order: bool,
    distributed: Option<(Option<String>, Option<i64>, Option<i64>)>,
    properties: BTreeMap<String, String>,
    events_read: u64,
    diagnostics: BTreeMap<String, u64>,
    truncated_at: Option<u64>,
}

impl MetaLine {
    /// The facts of `rec`.
    pub fn from_meta(rec: &Recording) -> MetaLine {
        let m = &rec.meta;
        MetaLine {
            format: m.format.as_str().to_owned(),
            era: m.era.clone(),
            compressed: m.compressed,
            content_bytes: m.content_bytes,
            base_time_ns: m.base_time_ns,
            start_ns: m.start_ns,
            end_ns: m.end_ns,
            event_order: m.event_order,
            distributed: m
                .distributed
                .as_ref()
                .map(|d| (d.backend.clone(), d.rank, d.world_size)),
            properties: m.properties.clone(),
            events_read: m.events_read,
            diagnostics: rec.diagnostics.counts.clone(),
            truncated_at: rec.diagnostics.truncated_at,
        }
    }

    /// Put the facts back into `rec`.
    pub fn apply(self, rec: &mut Recording) -> Result<(), String> {
        let format = SourceFormat::from_id(&self.format)
            .ok_or_else(|| format!("a pack of an unknown source format {:?}", self.format))?;
        let m = &mut rec.meta;
        m.format = format;
        m.era = self.era;
        m.compressed = self.compressed;
        m.content_bytes = self.content_bytes;
        m.base_time_ns = self.base_time_ns;
        m.start_ns = self.start_ns;
        m.end_ns = self.end_ns;
        m.event_order = self.event_order;
        m.distributed = self
            .distributed
            .map(|(backend, rank, world_size)| DistributedInfo {
                backend,
                rank,
                world_size,
            });
        m.properties = self.properties;
        m.events_read = self.events_read;
        rec.diagnostics.counts = self.diagnostics;
        rec.diagnostics.truncated_at = self.truncated_at;
        Ok(())
    }
}

/// A device: `[c10 type, ordinal, name, total bytes]`.
#[derive(Serialize, Deserialize)]
pub struct DeviceLine(i16, i32, Option<String>, Option<u64>);

impl DeviceLine {
    /// From the model.
    pub fn from_info(d: &DeviceInfo) -> DeviceLine {
        DeviceLine(
            d.key.device_type.0,
            d.key.index,
            d.name.clone(),
            d.total_memory_bytes,
        )
    }

    /// Into the model.
    pub fn into_info(self) -> DeviceInfo {
        DeviceInfo {
            key: DeviceId {
                device_type: DeviceType(self.0),
                index: self.1,
            },
            name: self.2,
            total_memory_bytes: self.3,
        }
    }
}

/// A thread: `[pid, tid, name]`.
#[derive(Serialize, Deserialize)]
pub struct ThreadLine(String, String, Option<String>);

impl ThreadLine {
    /// From the model.
    pub fn from_info(t: &ThreadInfo) -> ThreadLine {
        ThreadLine(t.pid.clone(), t.tid.clone(), t.name.clone())
    }

    /// Into the model.
    pub fn into_info(self) -> ThreadInfo {
        ThreadInfo {
            pid: self.0,
            tid: self.1,
            name: self.2,
        }
    }
}

/// A call stack: frames as `[name id, file id, line]`, innermost first.
#[derive(Serialize, Deserialize)]
pub struct StackLine(Vec<[u32; 3]>);

impl StackLine {
    /// From the model.
    pub fn from_frames(frames: &[Frame]) -> StackLine {
        StackLine(
            frames
                .iter()
                .map(|f| [f.name.0, f.file.0, f.line])
                .collect(),
        )
    }

    /// Into the model.
    pub fn into_frames(self) -> Vec<Frame> {
        self.0
            .into_iter()
            .map(|[name, file, line]| Frame {
                name: StrId(name),
                file: StrId(file),
                line,
            })
            .collect()
    }
}

/// The allocator's state without its segments (those follow in `segments` records).
#[derive(Serialize, Deserialize)]
pub struct AllocatorLine {
    time_ns: Option<i64>,
    settings: BTreeMap<String, String>,
    /// Requested totals per device (packs before them lack the key).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    requested: Vec<RequestedTotals>,
}

impl AllocatorLine {
    /// From the model.
    pub fn from_state(s: &AllocatorState) -> AllocatorLine {
        AllocatorLine {
            time_ns: s.time_ns,
            settings: s.settings.clone(),
            requested: s.requested.clone(),
        }
    }

    /// Into the model, with no segments yet.
    pub fn into_state(self) -> AllocatorState {
        AllocatorState {
            time_ns: self.time_ns,
            segments: Vec::new(),
            settings: self.settings,
            requested: self.requested,
            history: Vec::new(),
        }
    }
}

/// A segment; its blocks as `[address, size, requested, state, stack]`.
#[derive(Serialize, Deserialize)]
pub struct SegmentLine {
    device: DeviceIdx,
    address: u64,
    total: u64,
    allocated: u64,
    active: u64,
    requested: u64,
    stream: u64,
    /// 0 large, 1 small, 2 other.
    pool: u8,
    expandable: bool,
    blocks: Vec<(u64, u64, u64, u8, Option<u32>)>,
    /// A private pool's id (older packs have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    private_pool: Option<(u64, u64)>,
}

impl SegmentLine {
    /// From the model.
    pub fn from_segment(s: &Segment) -> SegmentLine {
        let state = |b: BlockState| match b {
            BlockState::ActiveAllocated => 0,
            BlockState::ActivePendingFree => 1,
            BlockState::Inactive => 2,
        };
        SegmentLine {
            device: s.device,
            address: s.address,
            total: s.total_size_bytes,
            allocated: s.allocated_size_bytes,
            active: s.active_size_bytes,
            requested: s.requested_size_bytes,
            stream: s.stream,
            pool: match s.pool {
                SegmentPool::Large => 0,
                SegmentPool::Small => 1,
                SegmentPool::Other => 2,
            },
            expandable: s.expandable,
            private_pool: s.private_pool,
            blocks: s
                .blocks
                .iter()
                .map(|b| {
                    let stack = b.stack.map(StackId::index);
                    (
                        b.address,
                        b.size_bytes,
                        b.requested_size_bytes,
                        state(b.state),
                        stack,
                    )
                })
                .collect(),
        }
    }

    /// Into the model.
    pub fn into_segment(self) -> Result<Segment, String> {
        let pool = match self.pool {
            0 => SegmentPool::Large,
            1 => SegmentPool::Small,
            2 => SegmentPool::Other,
            p => return Err(format!("unknown segment pool {p}")),
        };
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for (address, size_bytes, requested_size_bytes, state, stack) in self.blocks {
            let state = match state {
                0 => BlockState::ActiveAllocated,
                1 => BlockState::ActivePendingFree,
                2 => BlockState::Inactive,
                s => return Err(format!("unknown block state {s}")),
            };
            blocks.push(Block {
                address,
                size_bytes,
                requested_size_bytes,
                state,
                stack: stack.map(StackId::new),
            });
        }
        Ok(Segment {
            device: self.device,
            address: self.address,
            total_size_bytes: self.total,
            allocated_size_bytes: self.allocated,
            active_size_bytes: self.active,
            requested_size_bytes: self.requested,
            stream: self.stream,
            pool,
            expandable: self.expandable,
            private_pool: self.private_pool,
            blocks,
        })
    }
}

/// The last record: how many of each part the pack holds.
#[derive(Serialize, Deserialize, PartialEq, Debug)]
pub struct EndLine {
    strings: usize,
    devices: usize,
    threads: usize,
    stacks: usize,
    mem_events: usize,
    ops: usize,
    steps: usize,
    segments: usize,
    ooms: usize,
    gpu_samples: usize,
    host_samples: usize,
    #[serde(default)]
    gpu_process_samples: usize,
    /// Packs made before storage tags were packed have none.
    #[serde(default)]
    storage_tags: usize,
    /// Allocator history entries (packs made before histories were packed have none;
    /// written only where there are some, so packs without a history keep their size).
    #[serde(default, skip_serializing_if = "is_zero")]
    history_entries: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl EndLine {
    /// The counts of `rec`.
    pub fn counting(rec: &Recording) -> EndLine {
        EndLine {
            strings: rec.strings.len(),
            devices: rec.devices.len(),
            threads: rec.threads.len(),
            stacks: rec.stacks.len(),
            mem_events: rec.mem_events.len(),
            ops: rec.ops.len(),
            steps: rec.steps.len(),
            segments: rec.allocator.as_ref().map_or(0, |a| a.segments.len()),
            ooms: rec.oom_details.len(),
            gpu_samples: rec.gpu_samples.len(),
            host_samples: rec.host_samples.len(),
            gpu_process_samples: rec.gpu_process_samples.len(),
            storage_tags: rec.storage_tags.len(),
            history_entries: (rec.allocator.iter())
                .flat_map(|a| &a.history)
                .map(|h| h.entries.len())
                .sum(),
        }
    }

    /// Whether `rec` holds exactly what the end record counts, with `ops_read` spans read
    /// (a reader that keeps some of them holds fewer in `rec.ops`).
    pub fn verify(&self, rec: &Recording, ops_read: usize) -> Result<(), String> {
        let read = EndLine {
            ops: ops_read,
            ..EndLine::counting(rec)
        };
        if &read != self {
            return Err(format!(
                "the packed recording is incomplete: its end record counts {self:?} but the \
                 file holds {read:?}"
            ));
        }
        Ok(())
    }
}

/// A storage tag (`record --torch-memory`): device, address, bytes, role, since (ns).
#[derive(Serialize, Deserialize)]
pub struct TagLine(DeviceIdx, u64, u64, String, i64);

impl TagLine {
    /// The line of `t`.
    pub fn from_tag(t: &crate::model::StorageTag) -> TagLine {
        TagLine(
            t.device,
            t.addr,
            t.bytes,
            t.role.as_str().to_owned(),
            t.since_ns,
        )
    }

    /// The tag, or what is wrong with it.
    pub fn into_tag(self) -> Result<crate::model::StorageTag, String> {
        let TagLine(device, addr, bytes, role, since_ns) = self;
        let role = crate::model::TensorRole::from_name(&role)
            .ok_or_else(|| format!("a storage tag of an unknown role {role:?}"))?;
        Ok(crate::model::StorageTag {
            device,
            addr,
            bytes,
            role,
            since_ns,
        })
    }
}
