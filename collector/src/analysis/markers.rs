//! What happened at instants of a device's history, to mark on a timeline: the
//! allocator's own history (segments reserved and released, allocations that failed),
//! the program's annotations (`external_annotations` of a snapshot: named ranges) and the
//! texts it attached to its history (`user_metadata`). As memory_viz shows them, read
//! from the recording only.

use crate::model::{DeviceIdx, MemEventKind, Recording, StrId};
use crate::timeline::Timeline;

/// The thread (`pid`) the snapshot reader puts a snapshot's annotations on, one per
/// device (`tid` `cuda:N`).
pub const ANNOTATION_THREAD: &str = "annotations";

/// What a marker marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    /// The allocator reserved a segment (`cudaMalloc`, or an expandable segment mapped
    /// more pages).
    SegmentAlloc {
        /// Bytes reserved.
        bytes: i64,
        /// The segment's address, where known.
        addr: Option<u64>,
    },
    /// The allocator released a segment back to the driver.
    SegmentFree {
        /// Bytes released (positive).
        bytes: i64,
        /// The segment's address, where known.
        addr: Option<u64>,
    },
    /// An allocation failed.
    Oom {
        /// Bytes asked for.
        requested_bytes: i64,
        /// Free bytes on the device as the driver said, where known.
        device_free_bytes: Option<u64>,
    },
    /// A named range of the program, until `end_ns`.
    Annotation {
        /// Its name.
        name: StrId,
        /// When it ended.
        end_ns: i64,
    },
    /// A text the program attached to this instant (`user_metadata`).
    Note {
        /// The text.
        text: StrId,
    },
}

/// One marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    /// When (for a range, when it began), ns on the recording's clock.
    pub time_ns: i64,
    /// What.
    pub kind: MarkerKind,
}

/// Every marker of `device`, in time order (ties in the order: allocator history, then
/// annotations, then notes).
pub fn markers(rec: &Recording, timeline: &Timeline, device: DeviceIdx) -> Vec<Marker> {
    let mut out = Vec::new();
    if let Some(d) = timeline.devices.get(device as usize) {
        for p in &d.points {
            let Some(e) = rec.mem_events.get(p.event as usize) else {
                continue;
            };
            let kind = match e.kind {
                MemEventKind::SegmentAlloc => MarkerKind::SegmentAlloc {
                    bytes: e.bytes,
                    addr: e.addr.get(),
                },
                MemEventKind::SegmentFree => MarkerKind::SegmentFree {
                    bytes: -e.bytes,
                    addr: e.addr.get(),
                },
                _ => continue,
            };
            out.push(Marker {
                time_ns: e.time_ns,
                kind,
            });
        }
        for &oom in &d.ooms {
            let Some(e) = rec.mem_events.get(oom as usize) else {
                continue;
            };
            let device_free_bytes = rec
                .oom_details
                .iter()
                .find(|o| o.event == oom)
                .and_then(|o| o.device_free_bytes);
            out.push(Marker {
                time_ns: e.time_ns,
                kind: MarkerKind::Oom {
                    requested_bytes: e.bytes.abs(),
                    device_free_bytes,
                },
            });
        }
    }
    let lane = rec.devices.get(device as usize).map(|d| d.key.to_string());
    for op in &rec.ops {
        let Some(t) = rec.threads.get(op.thread as usize) else {
            continue;
        };
        if t.pid == ANNOTATION_THREAD && Some(&t.tid) == lane.as_ref() {
            out.push(Marker {
                time_ns: op.start_ns,
                kind: MarkerKind::Annotation {
                    name: op.name,
                    end_ns: op.end_ns,
                },
            });
        }
    }
    for n in rec.notes.iter().filter(|n| n.device == device) {
        out.push(Marker {
            time_ns: n.time_ns,
            kind: MarkerKind::Note { text: n.text },
        });
    }
    // Stable: the order pushed breaks ties.
    out.sort_by_key(|m| m.time_ns);
    out
}

/// The markers of `markers` (in time order) from `from_ns` to `to_ns`, both included.
pub fn markers_between(markers: &[Marker], from_ns: i64, to_ns: i64) -> &[Marker] {
    let a = markers.partition_point(|m| m.time_ns < from_ns);
    let b = markers.partition_point(|m| m.time_ns <= to_ns);
    &markers[a..b.max(a)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LoadOptions;

    #[test]
    fn a_snapshots_ooms_and_segments_are_markers() {
        // gen_snapshots.py's oom layout, as Python's pickle reads its trace: ten
        // segment_alloc of 18 MiB, an oom of 60 MiB with device_free 12 MiB, a
        // segment_alloc of 40 MiB, an oom of 300 MiB with device_free 30 MiB.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/snapshot/oom.pickle");
        let rec = crate::load(&path, LoadOptions::default()).expect("loads");
        let timeline = Timeline::build(&rec);
        let all = markers(&rec, &timeline, 0);
        let ooms: Vec<(i64, Option<u64>)> = all
            .iter()
            .filter_map(|m| match m.kind {
                MarkerKind::Oom {
                    requested_bytes,
                    device_free_bytes,
                } => Some((requested_bytes, device_free_bytes)),
                _ => None,
            })
            .collect();
        assert_eq!(
            ooms,
            [(60 << 20, Some(12 << 20)), (300 << 20, Some(30 << 20))]
        );
        let reserved: Vec<i64> = all
            .iter()
            .filter_map(|m| match m.kind {
                MarkerKind::SegmentAlloc { bytes, .. } => Some(bytes),
                _ => None,
            })
            .collect();
        assert_eq!(reserved.len(), 11);
        assert_eq!(reserved.iter().filter(|&&b| b == 18 << 20).count(), 10);
        assert_eq!(reserved.last(), Some(&(40 << 20)));
        assert!(all.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        // The last OOM comes after the 40 MiB tensor's segment.
        assert!(matches!(
            all.last().map(|m| m.kind),
            Some(MarkerKind::Oom { .. })
        ));
    }
}
