//! What the simulated allocator asks of the CUDA driver: segments (`cudaMalloc`,
//! `cudaFree`), and for expandable segments address space and pages. Two drivers: a device
//! of a given capacity that hands out fresh addresses (predictions), and the recorded run's
//! own segments, in order (the proof).

use std::collections::VecDeque;

/// Where a device's fresh segments start (any address far from 0: only order matters).
const FIRST_SEGMENT_ADDR: u64 = 0x7f00_0000_0000;
/// Where expandable segments' address space starts, apart from plain segments.
const FIRST_RESERVATION_ADDR: u64 = 0x5000_0000_0000;
/// Fresh segments start at multiples of this (as the driver's do).
const SEGMENT_ALIGN_BYTES: u64 = 2 << 20;

/// The driver calls the allocator makes.
pub(super) trait Driver {
    /// `cudaMalloc(bytes)` with `reserved_bytes` already held: its address, or `None`
    /// when the device has no room.
    fn malloc(&mut self, bytes: u64, reserved_bytes: u64) -> Option<u64>;
    /// `cudaFree` of a segment.
    fn free(&mut self, addr: u64, bytes: u64);
    /// Address space for an expandable segment (no memory behind it yet).
    fn reserve_address_space(&mut self, bytes: u64) -> u64;
    /// Map `bytes` of pages at `addr` with `reserved_bytes` already held: false when the
    /// device has no room.
    fn map(&mut self, addr: u64, bytes: u64, reserved_bytes: u64) -> bool;
    /// The memory the allocator may hold, where known (garbage collection's base).
    fn allowed_bytes(&self) -> Option<u64>;
}

/// A device of a given capacity (or none: unlimited), handing out increasing addresses.
pub(super) struct Device {
    pub(super) capacity_bytes: Option<u64>,
    /// Memory held outside the model (allocated before a trace began and never freed in
    /// it): counted against the capacity.
    pub(super) held_bytes: u64,
    /// Let the next request past the capacity (to go on after a predicted OOM).
    pub(super) over_capacity_once: bool,
    next_addr: u64,
    next_reservation: u64,
}

impl Device {
    pub(super) fn new(capacity_bytes: Option<u64>, held_bytes: u64) -> Device {
        Device {
            capacity_bytes,
            held_bytes,
            over_capacity_once: false,
            next_addr: FIRST_SEGMENT_ADDR,
            next_reservation: FIRST_RESERVATION_ADDR,
        }
    }

    fn room(&mut self, bytes: u64, reserved_bytes: u64) -> bool {
        if std::mem::take(&mut self.over_capacity_once) {
            return true;
        }
        self.capacity_bytes
            .is_none_or(|c| reserved_bytes.saturating_add(bytes + self.held_bytes) <= c)
    }
}

impl Driver for Device {
    fn malloc(&mut self, bytes: u64, reserved_bytes: u64) -> Option<u64> {
        if !self.room(bytes, reserved_bytes) {
            return None;
        }
        let addr = self.next_addr;
        self.next_addr = addr
            .saturating_add(bytes.next_multiple_of(SEGMENT_ALIGN_BYTES))
            .saturating_add(SEGMENT_ALIGN_BYTES);
        Some(addr)
    }

    fn free(&mut self, _addr: u64, _bytes: u64) {}

    fn reserve_address_space(&mut self, bytes: u64) -> u64 {
        let addr = self.next_reservation;
        self.next_reservation = addr.saturating_add(bytes.next_multiple_of(SEGMENT_ALIGN_BYTES));
        addr
    }

    fn map(&mut self, _addr: u64, bytes: u64, reserved_bytes: u64) -> bool {
        self.room(bytes, reserved_bytes)
    }

    fn allowed_bytes(&self) -> Option<u64> {
        self.capacity_bytes
    }
}

/// The recorded run's segments: each `segment_alloc` of the history, handed out in order
/// when the simulated allocator asks for a segment of its size. A request with none waiting
/// gets a phantom address (the simulation diverged: the real allocator reused a block).
pub(super) struct Recorded {
    pub(super) waiting: VecDeque<(u64, u64)>,
    next_phantom: u64,
}

/// Phantom segments (asked for where the real allocator made none) start here.
pub(super) const FIRST_PHANTOM_ADDR: u64 = 0xf000_0000_0000_0000;

impl Recorded {
    pub(super) fn new() -> Recorded {
        Recorded {
            waiting: VecDeque::new(),
            next_phantom: FIRST_PHANTOM_ADDR,
        }
    }
}

impl Driver for Recorded {
    fn malloc(&mut self, bytes: u64, _reserved_bytes: u64) -> Option<u64> {
        if let Some(at) = self.waiting.iter().position(|&(_, size)| size == bytes) {
            return self.waiting.remove(at).map(|(addr, _)| addr);
        }
        let addr = self.next_phantom;
        self.next_phantom = addr.saturating_add(bytes.next_multiple_of(SEGMENT_ALIGN_BYTES));
        Some(addr)
    }

    fn free(&mut self, _addr: u64, _bytes: u64) {}

    fn reserve_address_space(&mut self, bytes: u64) -> u64 {
        self.malloc(bytes, 0).unwrap_or(FIRST_PHANTOM_ADDR)
    }

    fn map(&mut self, _addr: u64, _bytes: u64, _reserved_bytes: u64) -> bool {
        true
    }

    fn allowed_bytes(&self) -> Option<u64> {
        None
    }
}
