//! One open file's view state: which device, the visible time range, the selected range
//! and the table that follows it, the inspector's instant, the bottom panel, the comparison.
//! The data itself (`Loaded`) is shared and never changes.

use std::collections::BTreeSet;
use std::sync::Arc;

use collector::analysis::diff::Align;
use collector::analysis::{SortKey, TimeWindow};
use collector::model::DeviceIdx;

use super::data::Loaded;
use super::jobs::Inspection;
use super::panels::{self, PanelId};
use super::units;

mod table;
pub use table::{OpColumn, TableState};

/// The visible time range, in ns since the recording's start (f64: sub-ns zoom is never
/// needed, and relative times keep full precision where absolute epoch ns would not).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeView {
    /// Left edge.
    pub t0_ns: f64,
    /// Right edge.
    pub t1_ns: f64,
}

/// The narrowest view: 100 ns across the plot.
const MIN_SPAN_NS: f64 = 100.0;

/// The most of a view that may lie before the recording's start, as a share of the
/// recording: the whole view's margin ([`TimeView::full`]); panning or zooming stops there rather than
/// into negative time, where nothing was recorded (issue 37).
const BEFORE_START_SHARE: f64 = 0.01;

impl TimeView {
    /// The whole recording with a little margin either side.
    pub fn full(duration_ns: i64) -> TimeView {
        let d = duration_ns.max(1) as f64;
        TimeView {
            t0_ns: -BEFORE_START_SHARE * d,
            t1_ns: (1.0 + BEFORE_START_SHARE) * d,
        }
    }

    /// Shifted right where it began further before the start than its margin.
    fn keep_after_start(&mut self) {
        // The whole view's margin as a share of its own span (1 % of 102 %).
        let floor = -BEFORE_START_SHARE / (1.0 + 2.0 * BEFORE_START_SHARE) * self.span_ns();
        if self.t0_ns < floor {
            let shift = floor - self.t0_ns;
            self.t0_ns += shift;
            self.t1_ns += shift;
        }
    }

    /// Width in ns.
    pub fn span_ns(&self) -> f64 {
        self.t1_ns - self.t0_ns
    }

    /// Zoom by `factor` (< 1 zooms in) keeping `anchor_ns` where it is on screen.
    pub fn zoom(&mut self, factor: f64, anchor_ns: f64, duration_ns: i64) {
        let span = (self.span_ns() * factor).clamp(MIN_SPAN_NS, 50.0 * duration_ns.max(1) as f64);
        let frac = ((anchor_ns - self.t0_ns) / self.span_ns()).clamp(0.0, 1.0);
        self.t0_ns = anchor_ns - frac * span;
        self.t1_ns = self.t0_ns + span;
        self.keep_after_start();
    }

    /// Move by `delta_ns`, no further before the start than the view's margin.
    pub fn pan(&mut self, delta_ns: f64) {
        self.t0_ns += delta_ns;
        self.t1_ns += delta_ns;
        self.keep_after_start();
    }

    /// A view of `[a, b]` (ns since start), at least [`MIN_SPAN_NS`] wide.
    pub fn between(a_ns: f64, b_ns: f64) -> TimeView {
        let (lo, hi) = (a_ns.min(b_ns), a_ns.max(b_ns));
        let pad = (MIN_SPAN_NS - (hi - lo)).max(0.0) / 2.0;
        TimeView {
            t0_ns: lo - pad,
            t1_ns: hi + pad,
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
    pub op_sort: Option<panels::compare_table::OpDiffSort>,
}

/// A drag on the timeline in progress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DragMode {
    /// Moving the view.
    Pan,
    /// Selecting a range from this time (ns since start).
    Select(f64),
    /// Box zoom from this screen position.
    BoxZoom(egui::Pos2),
}

/// One open file and how it is being looked at.
pub struct Document {
    /// Stable id (tabs, jobs).
    pub id: u64,
    /// The data.
    pub data: Arc<Loaded>,
    /// Its name on the tabs and in Compare: the file name, with directories where another
    /// open file has the same name (`ViewerApp::relabel`).
    pub label: String,
    /// The device shown.
    pub device: DeviceIdx,
    /// The visible range.
    pub view: TimeView,
    /// A y range set by box zoom; `None` fits the visible data.
    pub y_range: Option<(f64, f64)>,
    /// The y range drawn last frame (box zoom maps screen to bytes with it).
    pub last_y: (f64, f64),
    /// Where the plot was drawn last frame.
    pub last_plot_rect: Option<egui::Rect>,
    /// Where the device multiples were drawn last frame, and their rows.
    pub last_multiples: Option<(egui::Rect, super::multiples::Layout)>,
    /// Where the NVTX lanes were drawn last frame, and their rows.
    pub last_lanes: Option<(egui::Rect, super::timeline::LanesFit)>,
    /// Rows of the NVTX lanes scrolled past, where more rows than fit (the wheel over them).
    pub lanes_scroll_rows: f32,
    /// The device's capacity when it was too far above the curves to scale to last frame:
    /// what the toolbar says of it ("79.18 GiB · off scale (the curves reach 3 %)").
    pub capacity_off_scale: Option<String>,
    /// The last frames' curve columns.
    pub columns: super::timeline::ColumnCache,
    /// The selected range (absolute ns); the table follows it.
    pub selection: Option<TimeWindow>,
    /// A drag in progress.
    pub drag: Option<DragMode>,
    /// Draw the device's capacity as a ceiling (on by default: drawn wherever the
    /// capacity is known).
    pub show_total: bool,
    /// Whether the timeline draws the allocated memory stacked by category.
    pub show_categories: bool,
    /// The table.
    pub table: TableState,
    /// The inspector.
    pub inspect: InspectState,
    /// Ctrl+F was pressed: the shown panel's search field takes the focus next frame.
    pub focus_search: bool,
    /// The allocator history's selected entry.
    pub history: panels::HistoryState,
    /// The bottom panel shown.
    pub tab: PanelId,
    /// The comparison.
    pub compare: CompareState,
    /// The segment view's options.
    pub segments: SegmentsView,
    /// The advice panel's options and answer.
    pub advice: panels::AdviceState,
    /// The time under the pointer (ns since start) in the main plot or a device's small
    /// multiple: the linked cursor drawn in all of them.
    pub hover_ns: Option<f64>,
    /// The file followed while `record` still writes it.
    pub follow: Option<super::follow::Follow>,
    /// Last generation number handed out.
    pub generation: u64,
    /// The allocation view and the icicle.
    pub allocations: super::allocations::AllocationsState,
}

impl Document {
    /// A fresh view of `data`: the whole recording, the device with the largest peak.
    pub fn new(id: u64, data: Arc<Loaded>) -> Document {
        let device = data.default_device().unwrap_or(0);
        let view = TimeView::full(data.duration_ns());
        let rows = Arc::new(data.rows.clone());
        let sort = OpColumn::of(SortKey::default_for(&rows));
        Document {
            id,
            label: data.name.clone(),
            device,
            view,
            y_range: None,
            last_y: (0.0, 1.0),
            last_plot_rect: None,
            last_multiples: None,
            last_lanes: None,
            lanes_scroll_rows: 0.0,
            capacity_off_scale: None,
            columns: Default::default(),
            selection: None,
            drag: None,
            show_total: true,
            show_categories: false,
            table: TableState::new(rows, sort),
            inspect: InspectState::default(),
            history: Default::default(),
            focus_search: false,
            tab: panels::opening_panel(&data),
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
            advice: Default::default(),
            hover_ns: None,
            follow: super::follow::Follow::start(&data),
            generation: 0,
            allocations: Default::default(),
            data,
        }
    }

    /// A new generation number for a request.
    pub fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// A request for `job` on this document, with a new generation.
    pub fn request(&mut self, job: super::jobs::Job) -> super::jobs::Request {
        super::jobs::Request {
            doc: self.id,
            generation: self.next_generation(),
            data: self.data.clone(),
            job,
        }
    }

    /// Absolute ns of a time given in ns since the start.
    pub fn abs_ns(&self, rel_ns: f64) -> i64 {
        self.data
            .rec
            .meta
            .start_ns
            .saturating_add(rel_ns.round() as i64)
    }

    /// How this recording's times read (a clock, or event order).
    pub fn clock(&self) -> units::Clock {
        units::Clock::of(&self.data.rec.meta)
    }

    /// An absolute time as the viewer labels it: since the start ("12.41 s"), or its event
    /// position ("event 482") where the recording has no clock.
    pub fn at_label(&self, abs_ns: i64) -> String {
        self.clock().at(self.rel_ns(abs_ns))
    }

    /// ns since the start of an absolute time.
    pub fn rel_ns(&self, abs_ns: i64) -> f64 {
        (abs_ns - self.data.rec.meta.start_ns) as f64
    }

    /// The peak of the shown device, as the summary judges it (allocated, else reserved:
    /// [`DeviceSummary::judged_peak`]), else NVML's peak used memory: (time, bytes).
    ///
    /// [`DeviceSummary::judged_peak`]: collector::analysis::DeviceSummary::judged_peak
    pub fn peak(&self) -> Option<(i64, i64)> {
        let id = self.data.device_id(self.device)?;
        let summary = &self.data.summary;
        let judged = summary.devices.iter().find(|d| d.device == id);
        if let Some(p) = judged.and_then(|d| d.judged_peak()) {
            return Some((p.at_ns?, p.bytes));
        }
        let n = summary.nvml.iter().find(|n| n.device == id)?;
        Some((n.peak_used_at_ns, i64::try_from(n.peak_used_bytes).ok()?))
    }

    /// Whether a table or inspection is being computed.
    #[cfg(test)]
    pub fn busy(&self) -> bool {
        // A highlighted row's spans are a job too: asked for, not yet answered.
        let spans_pending = self.table.highlighted.is_some() && self.table.spans.is_none();
        self.table.pending.is_some()
            || self.inspect.pending.is_some()
            || self.advice.pending.is_some()
            || spans_pending
    }
}
