//! Decoded trace entries, and what the strings of an entry's keys and actions mean.

use crate::model::StackId;

/// One trace entry, decoded: 32 bytes (a million entries are read before the replay).
/// An `oom` entry's `device_free` is kept apart, in [`Trace::device_free`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Entry {
    pub(super) addr: u64,
    pub(super) size: u64,
    pub(super) time_ns: i64,
    /// `StackId + 1`, or 0 for none.
    pub(super) stack: u32,
    pub(super) action: Action,
    pub(super) has_addr: bool,
    pub(super) has_time: bool,
}

impl Entry {
    /// The entry's stream, from its trace's [`Trace::streams`] (0, the default stream,
    /// where it names none).
    pub(super) fn stream_in(trace: &Trace, index: usize) -> u64 {
        match trace
            .streams
            .binary_search_by_key(&(index as u32), |&(i, _)| i)
        {
            Ok(at) => trace.streams[at].1,
            Err(_) => 0,
        }
    }

    pub(super) fn addr(&self) -> Option<u64> {
        self.has_addr.then_some(self.addr)
    }

    pub(super) fn time_ns(&self) -> Option<i64> {
        self.has_time.then_some(self.time_ns)
    }

    pub(super) fn stack(&self) -> Option<StackId> {
        self.stack.checked_sub(1).map(StackId::new)
    }
}

/// One device's trace entries, and the `device_free` of its `oom` entries in order.
#[derive(Default)]
pub(super) struct Trace {
    pub(super) entries: Vec<Entry>,
    pub(super) device_free: Vec<Option<u64>>,
    /// The entries on a stream other than the default one (0): (index in `entries`,
    /// stream), in order. Most runs use the default stream alone: nothing is kept for it.
    pub(super) streams: Vec<(u32, u64)>,
    /// The non-empty `user_metadata` texts: (entry time, interned text).
    pub(super) notes: Vec<(i64, crate::model::StrId)>,
}

/// What a trace-entry key or an action string is, cached per string node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(super) enum Key {
    Other = 0,
    Action,
    Addr,
    Size,
    TimeUs,
    Frames,
    DeviceFree,
    UserMetadata,
    Stream,
    /// Keys of a frame dict.
    Name,
    Filename,
    Line,
}

impl Key {
    pub(super) fn parse(s: &str) -> Key {
        match s {
            "action" => Key::Action,
            "addr" => Key::Addr,
            "size" => Key::Size,
            "time_us" => Key::TimeUs,
            "frames" => Key::Frames,
            "device_free" => Key::DeviceFree,
            "user_metadata" => Key::UserMetadata,
            "stream" => Key::Stream,
            "name" => Key::Name,
            "filename" => Key::Filename,
            "line" => Key::Line,
            _ => Key::Other,
        }
    }

    pub(super) const ALL: [Key; 12] = [
        Key::Other,
        Key::Action,
        Key::Addr,
        Key::Size,
        Key::TimeUs,
        Key::Frames,
        Key::DeviceFree,
        Key::UserMetadata,
        Key::Stream,
        Key::Name,
        Key::Filename,
        Key::Line,
    ];
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(super) enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    Unknown,
}

impl Action {
    pub(super) fn parse(s: &str) -> Action {
        match s {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "snapshot" => Action::Snapshot,
            "oom" => Action::Oom,
            _ => Action::Unknown,
        }
    }

    pub(super) const ALL: [Action; 10] = [
        Action::Alloc,
        Action::FreeRequested,
        Action::FreeCompleted,
        Action::SegmentAlloc,
        Action::SegmentFree,
        Action::SegmentMap,
        Action::SegmentUnmap,
        Action::Snapshot,
        Action::Oom,
        Action::Unknown,
    ];
}
