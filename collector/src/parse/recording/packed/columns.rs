//! Events as columns: memory events, ops and samples become parallel arrays, times are
//! deltas, and allocator totals are stored as their difference from what the event's size
//! predicts. The encoders here and the [`super::decode::Decoder`] carry the delta state
//! across lines, so each column holds small numbers that gzip turns into almost nothing.

use serde::{Deserialize, Serialize};

use crate::model::{
    DeviceIdx, GpuProcessSample, GpuSample, HostSample, MemEvent, MemEventKind, OpSpan, ThreadIdx,
};

/// Memory events as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct MemColumns {
    /// Time minus the previous event's time.
    pub(super) t: Vec<i64>,
    /// Signed bytes.
    pub(super) b: Vec<i64>,
    /// Address.
    pub(super) a: Vec<Option<u64>>,
    /// Total allocated minus the prediction (previous total on the device, plus the bytes
    /// of an allocation or free).
    pub(super) ta: Vec<Option<i64>>,
    /// Total reserved minus the prediction (previous total, plus a segment event's bytes).
    pub(super) tr: Vec<Option<i64>>,
    /// Device index.
    pub(super) d: Vec<DeviceIdx>,
    /// Thread index.
    pub(super) th: Vec<ThreadIdx>,
    /// Kind code ([`kind_code`]).
    pub(super) k: Vec<u8>,
    /// Stack id.
    pub(super) s: Vec<Option<u32>>,
}

fn kind_code(k: MemEventKind) -> u8 {
    match k {
        MemEventKind::Alloc => 0,
        MemEventKind::Free => 1,
        MemEventKind::OutOfMemory => 2,
        MemEventKind::SegmentAlloc => 3,
        MemEventKind::SegmentFree => 4,
    }
}

pub(super) fn kind_from_code(c: u8) -> Option<MemEventKind> {
    Some(match c {
        0 => MemEventKind::Alloc,
        1 => MemEventKind::Free,
        2 => MemEventKind::OutOfMemory,
        3 => MemEventKind::SegmentAlloc,
        4 => MemEventKind::SegmentFree,
        _ => return None,
    })
}

/// Running totals per device, for the predictions of [`MemColumns::ta`] and `tr`.
#[derive(Default)]
pub(super) struct Totals {
    allocated: Vec<i64>,
    reserved: Vec<i64>,
}

impl Totals {
    fn slot(v: &mut Vec<i64>, device: DeviceIdx) -> &mut i64 {
        let i = device as usize;
        if v.len() <= i {
            v.resize(i + 1, 0);
        }
        &mut v[i]
    }

    /// The predicted totals of an event: (allocated, reserved).
    pub(super) fn predict(&mut self, e: &MemEvent) -> (i64, i64) {
        let a = *Self::slot(&mut self.allocated, e.device);
        let r = *Self::slot(&mut self.reserved, e.device);
        let da = if e.kind.is_allocation() { e.bytes } else { 0 };
        let dr = if e.kind.is_segment() { e.bytes } else { 0 };
        (a.wrapping_add(da), r.wrapping_add(dr))
    }

    pub(super) fn update(&mut self, e: &MemEvent) {
        if let Some(a) = e.total_allocated_bytes.get() {
            *Self::slot(&mut self.allocated, e.device) = a;
        }
        if let Some(r) = e.total_reserved_bytes.get() {
            *Self::slot(&mut self.reserved, e.device) = r;
        }
    }
}

/// Encodes memory events line by line.
#[derive(Default)]
pub struct MemEncoder {
    previous_ns: i64,
    totals: Totals,
}

impl MemEncoder {
    /// The columns of `events`, continuing from the previous line.
    pub fn encode(&mut self, events: &[MemEvent]) -> MemColumns {
        let mut c = MemColumns::default();
        for e in events {
            let (pa, pr) = self.totals.predict(e);
            c.t.push(e.time_ns.wrapping_sub(self.previous_ns));
            c.b.push(e.bytes);
            c.a.push(e.addr.get());
            c.ta.push(e.total_allocated_bytes.get().map(|v| v.wrapping_sub(pa)));
            c.tr.push(e.total_reserved_bytes.get().map(|v| v.wrapping_sub(pr)));
            c.d.push(e.device);
            c.th.push(e.thread);
            c.k.push(kind_code(e.kind));
            c.s.push(e.stack.map(crate::model::StackId::index));
            self.previous_ns = e.time_ns;
            self.totals.update(e);
        }
        c
    }
}

/// Ops as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct OpColumns {
    /// Name id.
    pub(super) n: Vec<u32>,
    /// Category code ([`crate::model::OpCategory::code`]).
    pub(super) c: Vec<u8>,
    /// Thread index.
    pub(super) th: Vec<ThreadIdx>,
    /// Start minus the previous op's start.
    pub(super) s: Vec<i64>,
    /// End minus start.
    pub(super) d: Vec<i64>,
}

/// Encodes ops line by line.
#[derive(Default)]
pub struct OpEncoder {
    previous_ns: i64,
}

impl OpEncoder {
    /// The columns of `spans`, continuing from the previous line.
    pub fn encode(&mut self, spans: &[OpSpan]) -> OpColumns {
        let mut c = OpColumns::default();
        for o in spans {
            c.n.push(o.name.0);
            c.c.push(o.category.code());
            c.th.push(o.thread);
            c.s.push(o.start_ns.wrapping_sub(self.previous_ns));
            c.d.push(o.end_ns.wrapping_sub(o.start_ns));
            self.previous_ns = o.start_ns;
        }
        c
    }
}

/// NVML samples as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct GpuColumns {
    /// Time minus the previous sample's time.
    pub(super) t: Vec<i64>,
    /// Device index.
    pub(super) d: Vec<DeviceIdx>,
    /// Used bytes.
    pub(super) u: Vec<u64>,
    /// Total bytes.
    pub(super) tot: Vec<Option<u64>>,
    /// The recorded process tree's bytes.
    pub(super) p: Vec<Option<u64>>,
    /// Free bytes.
    #[serde(default)]
    pub(super) f: Vec<Option<u64>>,
    /// Driver-reserved bytes.
    #[serde(default)]
    pub(super) r: Vec<Option<u64>>,
}

/// Encodes NVML samples line by line.
#[derive(Default)]
pub struct GpuEncoder {
    previous_ns: i64,
}

impl GpuEncoder {
    /// The columns of `samples`.
    pub fn encode(&mut self, samples: &[GpuSample]) -> GpuColumns {
        let mut c = GpuColumns::default();
        for s in samples {
            c.t.push(s.time_ns.wrapping_sub(self.previous_ns));
            c.d.push(s.device);
            c.u.push(s.used_bytes);
            c.tot.push(s.total_bytes);
            c.p.push(s.process_bytes);
            c.f.push(s.free_bytes);
            c.r.push(s.driver_reserved_bytes);
            self.previous_ns = s.time_ns;
        }
        c
    }
}

/// Per-process NVML samples as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct ProcessColumns {
    /// Time minus the previous sample's time.
    pub(super) t: Vec<i64>,
    /// Device index.
    pub(super) d: Vec<DeviceIdx>,
    /// Process id.
    pub(super) pid: Vec<u32>,
    /// Its bytes on the GPU (null where NVML does not say).
    pub(super) u: Vec<Option<u64>>,
}

/// Encodes per-process samples line by line.
#[derive(Default)]
pub struct ProcessEncoder {
    previous_ns: i64,
}

impl ProcessEncoder {
    /// The columns of `samples`.
    pub fn encode(&mut self, samples: &[GpuProcessSample]) -> ProcessColumns {
        let mut c = ProcessColumns::default();
        for s in samples {
            c.t.push(s.time_ns.wrapping_sub(self.previous_ns));
            c.d.push(s.device);
            c.pid.push(s.pid);
            c.u.push(s.used_bytes);
            self.previous_ns = s.time_ns;
        }
        c
    }
}

/// Host RSS samples as columns.
#[derive(Default, Serialize, Deserialize)]
pub struct HostColumns {
    /// Time minus the previous sample's time.
    pub(super) t: Vec<i64>,
    /// RSS bytes.
    pub(super) rss: Vec<u64>,
    /// PSS bytes where read (absent in packs made before PSS was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) pss: Vec<Option<u64>>,
    /// Processes in the tree (absent in older packs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) n: Vec<Option<u32>>,
}

/// Encodes host samples line by line.
#[derive(Default)]
pub struct HostEncoder {
    previous_ns: i64,
}

impl HostEncoder {
    /// The columns of `samples`.
    pub fn encode(&mut self, samples: &[HostSample]) -> HostColumns {
        let mut c = HostColumns::default();
        for s in samples {
            c.t.push(s.time_ns.wrapping_sub(self.previous_ns));
            c.rss.push(s.rss_bytes);
            c.pss.push(s.pss_bytes);
            c.n.push(s.processes);
            self.previous_ns = s.time_ns;
        }
        c
    }
}
