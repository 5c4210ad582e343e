//! The allocation view's Cached mode (memory_viz's "Active Cached Memory Timeline"): each
//! segment of the allocator's cache a band over its lifetime in the cache's colour, stacked
//! as the collector laid them out (`CacheBands`), so the stack's top is the reserved line;
//! and in each segment the bytes its allocations held, per pixel column, as a fill of the
//! allocated colour from the band's bottom: the timeline's two colours, segment by segment.
//!
//! Why a fill of the part in use rather than the allocations drawn at their addresses in
//! the segment: a block under a pixel is not drawn (the bands' rule), and the blocks that
//! fill a segment are mostly that small (the CS336 snapshot's weights: a 148 MiB segment
//! 87% in use drew as empty), so the segments read emptier than they were. The fill is
//! exact at every zoom (each column's most, from a pyramid of the segment's bytes in use);
//! where in a segment its blocks lie at an instant is the Segments tab's.

use collector::analysis::allocations::{BandQuery, CacheBands, site_frame};
use collector::analysis::live::without_directory;
use collector::timeline::DeviceTimeline;
use egui::{Color32, Mesh, Rect, Response, Shape, Stroke, Ui};

use super::super::doc::Document;
use super::super::paint::{self, PlotFrame};
use super::super::theme::Palette;
use super::super::units;
use super::DeviceBands;
use super::draw::{BandsFrame, stretches};
use super::two_threads::on_two_threads;

/// The line between two stacked segments is drawn from this band height on, in points:
/// on thinner bands it would hide the band.
const SEPARATOR_MIN_POINTS: f32 = 4.0;
/// What the pointer is over in the Cached mode: a segment (band of the cache).
pub(super) fn segment_under(
    frame: &PlotFrame,
    cache: &CacheBands,
    origin: i64,
    pos: egui::Pos2,
) -> (i64, Option<usize>) {
    let (t, bytes) = super::pointer::at_point(frame, origin, pos);
    (t, cache.layout.band_at(&cache.timeline, t, bytes))
}

/// What one thread draws of the segments: their fill, their separators, how many
/// stretches, and the fills of their bytes in use.
#[derive(Default)]
struct Drawn {
    fill: Mesh,
    lines: Vec<Shape>,
    placed: usize,
    in_use: Mesh,
}

/// The segments, each filled as far as it is in use, and the reserved line on top.
pub(super) fn segments_ui(
    p: &egui::Painter,
    frame: &PlotFrame,
    doc: &Document,
    (bands, cache): (&DeviceBands, &CacheBands),
    reserved: &paint::Columns,
    palette: &Palette,
) -> BandsFrame {
    let origin = doc.data.rec.meta.start_ns;
    let q = query(frame, origin);
    let mut segments = Vec::new();
    cache.layout.index.visible(&q, &mut segments);
    let fill = palette.cache.gamma_multiply(0.6);
    let separator = Stroke::new(1.0, palette.plot_bg);
    let used = palette.allocated.gamma_multiply(0.8);
    let bands_of = &cache.timeline;
    // Each segment's stretches, found once (its moves) for its fill and its use; the
    // segments in view split over two threads where there are many.
    let draw = |segments: &[u32]| {
        let mut drawn = Drawn::default();
        let mut placed: Vec<(u32, Rect)> = Vec::with_capacity(segments.len());
        for &s in segments {
            let Some(a) = bands_of.allocations.get(s as usize) else {
                continue;
            };
            stretches(
                frame,
                &cache.layout,
                bands_of,
                (s as usize, a),
                origin,
                |r| {
                    let r = at_least_a_point(r);
                    drawn.fill.add_colored_rect(r, fill);
                    if r.height() >= SEPARATOR_MIN_POINTS {
                        drawn
                            .lines
                            .push(Shape::hline(r.x_range(), r.top(), separator));
                    }
                    placed.push((s, r));
                },
            );
        }
        drawn.placed = placed.len();
        drawn.in_use = super::in_use::in_use_mesh(frame, bands, (&placed, origin), (fill, used));
        drawn
    };
    let drawn = on_two_threads(&segments, draw, |mut drawn, other| {
        drawn.fill.append(other.fill);
        drawn.lines.extend(other.lines);
        drawn.placed += other.placed;
        drawn.in_use.append(other.in_use);
        drawn
    });
    let in_use_rects = drawn.in_use.vertices.len() / 4;
    p.add(Shape::mesh(drawn.fill));
    p.extend(drawn.lines);
    p.add(Shape::mesh(drawn.in_use));
    let mut out = BandsFrame {
        segments: segments.len(),
        drawn: segments.len(),
        rects: drawn.placed,
        ..BandsFrame::default()
    };
    out.rects += in_use_rects;
    paint::envelope(p, frame, reserved, palette.reserved, 1.5, None);
    out.reserved_max = paint::columns_max(reserved);
    // The segment the readout names (hovered last frame), then the selected one.
    let state = &doc.panels.allocations;
    if let Some(s) = state
        .hovered_segment
        .filter(|&h| Some(h) != state.selected_segment)
    {
        outline(p, frame, cache, origin, s, palette.weak_text);
    }
    if let Some(s) = state.selected_segment {
        outline(p, frame, cache, origin, s, palette.highlight);
    }
    out
}

/// The view's query for segments: every one at least a point wide (there are hundreds to
/// thousands, not millions: one under a point tall is drawn a point tall, over its
/// neighbours, rather than left out).
fn query(frame: &PlotFrame, origin: i64) -> BandQuery {
    let ns_per_point = (frame.t1_ns - frame.t0_ns) / frame.rect.width().max(1.0) as f64;
    BandQuery {
        t0_ns: origin + frame.t0_ns as i64,
        t1_ns: origin + frame.t1_ns as i64,
        min_bytes: 0,
        min_life_ns: ns_per_point as i64,
    }
}

/// A segment's stretch at least a point tall (its bottom where it is).
fn at_least_a_point(r: Rect) -> Rect {
    Rect::from_x_y_ranges(r.x_range(), r.top().min(r.bottom() - 1.0)..=r.bottom())
}

/// The selected segment's outline.
fn outline(
    p: &egui::Painter,
    frame: &PlotFrame,
    cache: &CacheBands,
    origin: i64,
    s: usize,
    color: Color32,
) {
    let Some(a) = cache.timeline.allocations.get(s) else {
        return;
    };
    let mut rects = Vec::new();
    stretches(frame, &cache.layout, &cache.timeline, (s, a), origin, |r| {
        rects.push(r)
    });
    for r in rects {
        p.rect_stroke(
            r.expand(1.0),
            0.0,
            Stroke::new(1.5, color),
            egui::StrokeKind::Outside,
        );
    }
}

/// Hover: the segment under the pointer read out; a click selects it (or clears on empty
/// space). Returns the readout and where the pointer is, for the caller to draw.
pub(super) fn pointer(
    frame: &PlotFrame,
    doc: &mut Document,
    cache: &CacheBands,
    response: &Response,
) -> Option<(String, egui::Pos2)> {
    let data = doc.data.clone();
    let origin = data.rec.meta.start_ns;
    let hovered = response.hover_pos().filter(|p| frame.rect.contains(*p));
    let under = hovered.map(|p| segment_under(frame, cache, origin, p));
    doc.panels.allocations.hovered_segment = under.and_then(|u| u.1);
    if response.clicked()
        && let Some(pos) = response.interact_pointer_pos()
    {
        doc.panels.allocations.selected_segment = segment_under(frame, cache, origin, pos).1;
    }
    if doc.panels.allocations.selected_segment.is_some()
        && !response.ctx.egui_wants_keyboard_input()
        && super::super::timeline::escape_for_views(&response.ctx)
    {
        doc.panels.allocations.selected_segment = None;
    }
    let d = data.timeline.devices.get(doc.device as usize)?;
    let (t, s) = under?;
    Some((readout(&data, d, cache, s?, t), hovered?))
}

/// The readout of segment `s` with the pointer at `time_ns`: its size, address and stream,
/// when it was made and freed, what of it was in use then, where it was made.
pub fn readout(
    data: &super::super::loaded::Loaded,
    d: &DeviceTimeline,
    cache: &CacheBands,
    s: usize,
    time_ns: i64,
) -> String {
    let Some(l) = cache.lives.get(s) else {
        return String::new();
    };
    let rec = &data.rec;
    let origin = rec.meta.start_ns;
    let clock = units::Clock::of(&rec.meta);
    let at = |t: i64| clock.at((t - origin) as f64);
    let address = l.addr.map_or_else(String::new, |a| format!(" at {a:#x}"));
    let stream = l
        .stream
        .map_or_else(String::new, |s| format!(" · stream {s}"));
    let made = l
        .alloc_ns
        .map_or_else(|| "before the history began".to_owned(), at);
    let freed = match l.free_ns {
        Some(f) => format!("freed {}", at(f)),
        None => "held to the end".to_owned(),
    };
    let used = cache.in_use_at(d, s, time_ns);
    let share = used as f64 * 100.0 / l.bytes.max(1) as f64;
    let in_use = match d.allocated_known {
        true => format!(
            "in use then: {} of it ({share:.0}%), {} cached free",
            units::bytes(used),
            units::bytes(l.bytes - used)
        ),
        false => NO_ALLOCATIONS.to_owned(),
    };
    let site = site_frame(rec, rec.stack(l.stack))
        .map(|f| format!("\nmade at {}", without_directory(&f)))
        .unwrap_or_default();
    format!(
        "segment of {}{address}{stream}\nmade {made} → {freed}\n{in_use}{site}",
        units::bytes(l.bytes),
    )
}

/// Where the input records no segments: the plot says what would show them.
pub(super) fn no_segments_ui(ui: &mut Ui, plot: Rect, palette: &Palette) {
    let text = egui::RichText::new(NO_SEGMENTS).color(palette.weak_text);
    ui.put(plot.shrink(24.0), egui::Label::new(text).wrap());
}

/// What the Cached mode says of a segment's use where the input records no allocations.
pub const NO_ALLOCATIONS: &str = "in use: not recorded (the input has no allocations)";

/// The hint the Cached mode shows on an input without segment events.
pub const NO_SEGMENTS: &str = "This input records no allocator segments, so there is no cache to \
    draw segment by segment: profile with torch.cuda.memory._record_memory_history() and open \
    the snapshot torch.cuda.memory._dump_snapshot() writes (the Active mode shows this input's \
    allocations).";
