//! One open file and how it is looked at: the data (shared, never changed), which device,
//! the visible time range and the cursor every view shares, the selected range, the bottom
//! tab; the timeline and the panels keep their own state ([`TimelineState`],
//! [`PanelStates`]) inside it.

use std::sync::Arc;

use collector::analysis::TimeWindow;
use collector::model::DeviceIdx;

use super::loaded::Loaded;
use super::panels::{self, PanelId, PanelStates};
use super::timeline::TimelineState;
use super::units;

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
    /// The visible range, shared by the timeline, the allocation view and the multiples.
    pub view: TimeView,
    /// The time under the pointer (ns since start) in the main plot or a device's small
    /// multiple: the linked cursor drawn in all of them.
    pub hover_ns: Option<f64>,
    /// The selected range (absolute ns); the table follows it.
    pub selection: Option<TimeWindow>,
    /// The bottom panel shown.
    pub tab: PanelId,
    /// The file followed while `record` still writes it.
    pub follow: Option<super::follow::Follow>,
    /// Last generation number handed out.
    pub generation: u64,
    /// The timeline's own state.
    pub timeline: TimelineState,
    /// The bottom panels' state.
    pub panels: PanelStates,
}

impl Document {
    /// A fresh view of `data`: the whole recording, the device with the largest peak.
    pub fn new(id: u64, data: Arc<Loaded>) -> Document {
        Document {
            id,
            label: data.name.clone(),
            device: data.default_device().unwrap_or(0),
            view: TimeView::full(data.duration_ns()),
            hover_ns: None,
            selection: None,
            tab: panels::opening_panel(&data),
            follow: super::follow::Follow::start(&data),
            generation: 0,
            timeline: TimelineState::default(),
            panels: PanelStates::new(&data),
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
        let p = &self.panels;
        let spans_pending = p.table.highlighted.is_some() && p.table.spans.is_none();
        p.table.pending.is_some()
            || p.inspect.pending.is_some()
            || p.advice.pending.is_some()
            || spans_pending
    }
}
