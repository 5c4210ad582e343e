//! What the bottom panels remember between frames, per open file: the table's sort and
//! rows, the inspector's instant and answer, the history's entry, the comparison, the
//! segment view's options, the advice, the allocation view. A [`Document`] holds one
//! [`PanelStates`], so switching files switches every panel's state with it.
//!
//! [`Document`]: super::super::doc::Document

use std::collections::BTreeSet;
use std::sync::Arc;

use collector::analysis::SortKey;
use collector::analysis::diff::Align;
use collector::model::DeviceIdx;

use super::super::allocations::AllocationsState;
use super::super::jobs::Inspection;
use super::super::loaded::Loaded;
use super::{AdviceState, HistoryState, compare_table};

mod table;
pub use table::{OpColumn, TableState};

/// Every panel's state in one open file.
pub struct PanelStates {
    /// The ops table.
    pub table: TableState,
    /// The inspector (Live at cursor).
    pub inspect: InspectState,
    /// The allocator history's selected entry.
    pub history: HistoryState,
    /// The comparison.
    pub compare: CompareState,
    /// The segment view's options.
    pub segments: SegmentsView,
    /// The advice panel's options and answer.
    pub advice: AdviceState,
    /// The allocation view and the icicle.
    pub allocations: AllocationsState,
    /// Ctrl+F was pressed: the shown panel's search field takes the focus next frame.
    pub focus_search: bool,
}

impl PanelStates {
    /// The panels' state for a newly opened `data`: the table on the whole run's rows.
    pub fn new(data: &Loaded) -> PanelStates {
        let rows = Arc::new(data.rows.clone());
        let sort = OpColumn::of(SortKey::default_for(&rows));
        PanelStates {
            table: TableState::new(rows, sort),
            inspect: InspectState::default(),
            history: HistoryState::default(),
            compare: CompareState {
                other: None,
                align: Align::Start,
                layout: CompareLayout::Overlay,
                picked_for_user: false,
                op_sort: None,
            },
            segments: SegmentsView {
                order: SegmentOrder::Address,
                color: SegmentColor::Stack,
                full_width: false,
                simulate: None,
            },
            advice: AdviceState::default(),
            allocations: AllocationsState::default(),
            focus_search: false,
        }
    }
}

/// What the inspector looks at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InspectTarget {
    /// Device.
    pub device: DeviceIdx,
    /// Absolute time.
    pub at_ns: i64,
    /// The snapshot's own instant (exact blocks).
    pub at_snapshot: bool,
}

/// The inspector's state.
#[derive(Default)]
pub struct InspectState {
    /// What was asked for.
    pub target: Option<InspectTarget>,
    /// The answer, once computed (may lag `target` while pending).
    pub result: Option<Box<Inspection>>,
    /// Generation in flight.
    pub pending: Option<u64>,
    /// Live groups expanded to their frames.
    pub expanded: BTreeSet<String>,
}

/// How the segment view orders its segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentOrder {
    /// By address (the allocator's own order).
    Address,
    /// Largest segment first.
    Size,
    /// Most free bytes first: where fragmentation is.
    Free,
}

/// What colours the segment view's allocated blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentColor {
    /// One colour: allocated, pending or free.
    State,
    /// The first user frame of the allocating stack (as memory_viz does).
    Stack,
    /// The allocation's memory category.
    Category,
}

/// The segment view's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentsView {
    /// Order of the rows.
    pub order: SegmentOrder,
    /// What colours the blocks.
    pub color: SegmentColor,
    /// Draw every segment across the full width instead of to scale.
    pub full_width: bool,
    /// The allocator setting whose simulated segments are drawn beside the recorded ones.
    pub simulate: Option<&'static str>,
}

/// Comparison layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareLayout {
    /// Both runs on one plot.
    Overlay,
    /// One plot per run, sharing the time axis.
    Stacked,
}

/// The comparison with another open document.
pub struct CompareState {
    /// The other document's id.
    pub other: Option<u64>,
    /// Where both clocks start.
    pub align: Align,
    /// Overlaid or stacked.
    pub layout: CompareLayout,
    /// Whether the only other open file was picked for the user already (once).
    pub picked_for_user: bool,
    /// The per-op table's order once a header was clicked (else the diff's own).
    pub op_sort: Option<compare_table::OpDiffSort>,
}
