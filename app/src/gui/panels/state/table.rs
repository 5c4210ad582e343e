//! The per-op table's state: its columns, sort, filter and the rows it shows.

use std::sync::Arc;

use collector::analysis::{OpRow, SortKey, TimeWindow};

use super::super::super::jobs::OpSpans;

/// The per-op table's columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpColumn {
    /// "Name".
    Name,
    /// "Self CUDA Mem".
    SelfDevice,
    /// "CUDA Mem".
    Device,
    /// "Self CPU Mem".
    SelfCpu,
    /// "CPU Mem".
    Cpu,
    /// "# of Calls".
    Calls,
    /// In the range (the whole run without one): CPU bytes the row's ops allocated themselves.
    CpuAllocated,
    /// In the range (the whole run without one): CPU bytes they freed.
    CpuFreed,
    /// In the range (the whole run without one): CPU bytes allocated − freed.
    CpuNet,
    /// In the range (the whole run without one): device bytes the row's ops allocated themselves.
    DeviceAllocated,
    /// In the range (the whole run without one): device bytes they freed.
    DeviceFreed,
    /// In the range (the whole run without one): device bytes allocated − freed.
    DeviceNet,
}

impl OpColumn {
    /// All columns: torch's in its order, then the net change (TensorBoard's).
    pub const ALL: [OpColumn; 12] = [
        OpColumn::Name,
        OpColumn::SelfCpu,
        OpColumn::Cpu,
        OpColumn::SelfDevice,
        OpColumn::Device,
        OpColumn::Calls,
        OpColumn::CpuAllocated,
        OpColumn::CpuFreed,
        OpColumn::CpuNet,
        OpColumn::DeviceAllocated,
        OpColumn::DeviceFreed,
        OpColumn::DeviceNet,
    ];

    /// What the header's tooltip says.
    pub fn hint(self) -> &'static str {
        match self {
            OpColumn::CpuAllocated | OpColumn::DeviceAllocated => {
                "Bytes the op allocated itself in the range or the run (not in the ops it calls)"
            }
            OpColumn::CpuFreed | OpColumn::DeviceFreed => {
                "Bytes the op freed itself in the range or the run (not in the ops it calls)"
            }
            OpColumn::CpuNet | OpColumn::DeviceNet => {
                "Allocated − freed in the range or the run: what the op left allocated. \
                 The rows add up to the change of allocated memory over it"
            }
            _ => "Sort by this column",
        }
    }

    /// The column of a sort key of torch's `table(sort_by=...)`.
    pub fn of(key: SortKey) -> OpColumn {
        match key {
            SortKey::SelfDeviceMemory => OpColumn::SelfDevice,
            SortKey::DeviceMemory => OpColumn::Device,
            SortKey::SelfCpuMemory => OpColumn::SelfCpu,
            SortKey::CpuMemory => OpColumn::Cpu,
            SortKey::Calls => OpColumn::Calls,
        }
    }

    /// Header text, as torch prints it.
    pub fn title(self) -> &'static str {
        match self {
            OpColumn::Name => "Name",
            OpColumn::SelfDevice => "Self CUDA Mem",
            OpColumn::Device => "CUDA Mem",
            OpColumn::SelfCpu => "Self CPU Mem",
            OpColumn::Cpu => "CPU Mem",
            OpColumn::Calls => "# of Calls",
            OpColumn::CpuAllocated => "CPU Alloc",
            OpColumn::CpuFreed => "CPU Freed",
            OpColumn::CpuNet => "CPU Net",
            OpColumn::DeviceAllocated => "CUDA Alloc",
            OpColumn::DeviceFreed => "CUDA Freed",
            OpColumn::DeviceNet => "CUDA Net",
        }
    }

    /// The column's numeric value in a row (`None` for the name, and for the net change
    /// columns of rows without it).
    pub fn value(self, r: &OpRow) -> Option<i64> {
        let net = r.net;
        match self {
            OpColumn::Name => None,
            OpColumn::SelfDevice => Some(r.self_device_memory_usage),
            OpColumn::Device => Some(r.device_memory_usage),
            OpColumn::SelfCpu => Some(r.self_cpu_memory_usage),
            OpColumn::Cpu => Some(r.cpu_memory_usage),
            OpColumn::Calls => Some(r.calls as i64),
            OpColumn::CpuAllocated => net.map(|n| n.host.allocated),
            OpColumn::CpuFreed => net.map(|n| n.host.freed),
            OpColumn::CpuNet => net.map(|n| n.host.net()),
            OpColumn::DeviceAllocated => net.map(|n| n.device.allocated),
            OpColumn::DeviceFreed => net.map(|n| n.device.freed),
            OpColumn::DeviceNet => net.map(|n| n.device.net()),
        }
    }
}

/// The per-op table: its rows (for the whole run or a range), sorting and filter.
pub struct TableState {
    /// The range the rows cover; `None` for the whole recording.
    pub window: Option<TimeWindow>,
    /// The rows.
    pub rows: Arc<Vec<OpRow>>,
    /// Generation of the table request in flight.
    pub pending: Option<u64>,
    /// Sorted column.
    pub sort: OpColumn,
    /// Largest first.
    pub descending: bool,
    /// Case-insensitive name filter.
    pub filter: String,
    /// Row indices after filtering and sorting; rebuilt when `dirty`.
    pub order: Vec<usize>,
    /// Whether `order` must be rebuilt.
    pub dirty: bool,
    /// The row whose op spans are highlighted on the timeline.
    pub highlighted: Option<String>,
    /// Those spans, once computed.
    pub spans: Option<Arc<OpSpans>>,
    /// How long the last range's table took to compute, ms.
    pub last_compute_ms: Option<f64>,
}

impl TableState {
    /// A table of `rows` (the whole recording), sorted by `sort`, largest first.
    pub fn new(rows: Arc<Vec<OpRow>>, sort: OpColumn) -> TableState {
        TableState {
            window: None,
            rows,
            pending: None,
            sort,
            descending: true,
            filter: String::new(),
            order: Vec::new(),
            dirty: true,
            highlighted: None,
            spans: None,
            last_compute_ms: None,
        }
    }
}
