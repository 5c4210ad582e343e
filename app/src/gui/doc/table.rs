//! The per-op table's state: its columns, sort, filter and the rows it shows.

use std::sync::Arc;

use collector::analysis::{OpRow, SortKey, TimeWindow};

use super::super::jobs::OpSpans;

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
}

impl OpColumn {
    /// All columns, in torch's order.
    pub const ALL: [OpColumn; 6] = [
        OpColumn::Name,
        OpColumn::SelfCpu,
        OpColumn::Cpu,
        OpColumn::SelfDevice,
        OpColumn::Device,
        OpColumn::Calls,
    ];

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
        }
    }

    /// The column's numeric value in a row (`None` for the name).
    pub fn value(self, r: &OpRow) -> Option<i64> {
        match self {
            OpColumn::Name => None,
            OpColumn::SelfDevice => Some(r.self_device_memory_usage),
            OpColumn::Device => Some(r.device_memory_usage),
            OpColumn::SelfCpu => Some(r.self_cpu_memory_usage),
            OpColumn::Cpu => Some(r.cpu_memory_usage),
            OpColumn::Calls => Some(r.calls as i64),
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
