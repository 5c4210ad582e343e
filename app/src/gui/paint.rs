//! Drawing memory curves with egui's painter, one column per screen point.
//!
//! Why a painter of our own rather than egui_plot: the timeline needs a filled allocated
//! area, a reserved line, a dashed NVML line, shaded gaps between them, step bands, a peak
//! marker, OOM markers, range selection and box zoom, all fed from the min/max pyramid in
//! O(pixels). egui_plot takes point lists (it would need the decimation done anyway and
//! re-tessellates lines of 2 points per column), and its interaction model (drag = pan,
//! its own box zoom) fights the range selection the table needs. A column-per-point mesh
//! is also exact: every column shows the true min and max of the curve inside it, so no
//! peak can fall between two drawn points.

use collector::analysis::pyramid::CurvePyramid;
use collector::model::StepMarker;
use egui::{Align2, Color32, FontId, Mesh, Painter, Pos2, Rect, Shape, Stroke, pos2, vec2};

use super::axis;
use super::theme::Palette;
use super::units::Clock;

/// The row at the plot's top where the step bands' labels (and, in the y labels'
/// gutter, the run's name) are written; markers' labels keep below it.
pub const TOP_LABELS_HEIGHT: f32 = 16.0;

/// The value range of a curve in each screen column; `None` before the curve starts.
pub type Columns = Vec<Option<(i64, i64)>>;

/// How the plot maps time and bytes to the screen.
#[derive(Clone, Copy, Debug)]
pub struct PlotFrame {
    /// The plot area.
    pub rect: Rect,
    /// Left edge, ns since the start of the (first) recording.
    pub t0_ns: f64,
    /// Right edge.
    pub t1_ns: f64,
    /// Bottom of the y axis, bytes.
    pub y0: f64,
    /// Top of the y axis, bytes.
    pub y1: f64,
}

impl PlotFrame {
    /// Screen x of a time (ns since start).
    pub fn x(&self, t_ns: f64) -> f32 {
        let f = (t_ns - self.t0_ns) / (self.t1_ns - self.t0_ns).max(1e-9);
        self.rect.left() + (f * self.rect.width() as f64) as f32
    }

    /// Time (ns since start) at screen x.
    pub fn t_at(&self, x: f32) -> f64 {
        let f = ((x - self.rect.left()) / self.rect.width().max(1.0)) as f64;
        self.t0_ns + f * (self.t1_ns - self.t0_ns)
    }

    /// Screen y of a byte value, clamped to a little outside the plot.
    pub fn y(&self, bytes: f64) -> f32 {
        let f = (bytes - self.y0) / (self.y1 - self.y0).max(1.0);
        let y = self.rect.bottom() - (f * self.rect.height() as f64) as f32;
        y.clamp(self.rect.top() - 2.0, self.rect.bottom() + 2.0)
    }

    /// Number of columns (one per screen point).
    pub fn columns(&self) -> usize {
        self.rect.width().ceil().max(1.0) as usize
    }

    /// Left edge of column `c`.
    fn column_x(&self, c: usize) -> f32 {
        self.rect.left() + c as f32
    }

    /// The same frame over another rectangle (a strip under the plot).
    pub fn with_rect(&self, rect: Rect, y0: f64, y1: f64) -> PlotFrame {
        PlotFrame {
            rect,
            y0,
            y1,
            ..*self
        }
    }
}

/// Query a curve's columns for the frame; `shift_ns` maps the frame's time to the curve's
/// absolute clock (`abs = origin_ns + t`).
pub fn query(curve: Option<&CurvePyramid>, frame: &PlotFrame, origin_ns: i64) -> Columns {
    let Some(c) = curve else { return Vec::new() };
    let start = origin_ns.saturating_add(frame.t0_ns.floor() as i64);
    let end = origin_ns.saturating_add(frame.t1_ns.ceil() as i64);
    c.column_ranges(start, end, frame.columns())
}

/// The largest value in any of the columns.
pub fn columns_max(cols: &Columns) -> Option<i64> {
    cols.iter().flatten().map(|r| r.1).max()
}

/// Fill from the x axis up to each column's maximum.
pub fn fill_under(painter: &Painter, frame: &PlotFrame, cols: &Columns, color: Color32) {
    let mut mesh = Mesh::default();
    let base = frame.y(0f64.max(frame.y0));
    for (c, r) in cols.iter().enumerate() {
        if let Some((_, hi)) = r {
            let x = frame.column_x(c);
            let top = frame.y(*hi as f64);
            if top < base {
                mesh.add_colored_rect(Rect::from_min_max(pos2(x, top), pos2(x + 1.0, base)), color);
            }
        }
    }
    painter.add(Shape::mesh(mesh));
}

/// Fill the gap between a lower and an upper curve where the upper one is above the lower
/// one for the whole column (the allocator's cache between allocated and reserved; memory
/// outside PyTorch between reserved and NVML-used).
pub fn fill_between(
    painter: &Painter,
    frame: &PlotFrame,
    lower: &Columns,
    upper: &Columns,
    color: Color32,
) {
    let mut mesh = Mesh::default();
    for (c, (lo, hi)) in lower.iter().zip(upper).enumerate() {
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let (top, bottom) = (frame.y(hi.0 as f64), frame.y(lo.1 as f64));
            if top < bottom {
                let x = frame.column_x(c);
                mesh.add_colored_rect(
                    Rect::from_min_max(pos2(x, top), pos2(x + 1.0, bottom)),
                    color,
                );
            }
        }
    }
    painter.add(Shape::mesh(mesh));
}

/// Draw each column's min–max range as a vertical bar at least `width` thick: a step
/// curve at any zoom (flat runs read as a line, jumps as vertical edges). `dash` =
/// (on, off) columns draws it dashed.
pub fn envelope(
    painter: &Painter,
    frame: &PlotFrame,
    cols: &Columns,
    color: Color32,
    width: f32,
    dash: Option<(usize, usize)>,
) {
    let mut mesh = Mesh::default();
    for (c, r) in cols.iter().enumerate() {
        let Some((lo, hi)) = r else { continue };
        if let Some((on, off)) = dash
            && c % (on + off) >= on
        {
            continue;
        }
        let x = frame.column_x(c);
        let (mut top, mut bottom) = (frame.y(*hi as f64), frame.y(*lo as f64));
        if bottom - top < width {
            let mid = (top + bottom) / 2.0;
            top = mid - width / 2.0;
            bottom = mid + width / 2.0;
        }
        mesh.add_colored_rect(
            Rect::from_min_max(pos2(x, top), pos2(x + 1.0, bottom)),
            color,
        );
    }
    painter.add(Shape::mesh(mesh));
}

/// Horizontal grid lines with byte labels in the left margin.
pub fn y_grid(painter: &Painter, frame: &PlotFrame, palette: &Palette, max_ticks: usize) {
    let font = FontId::proportional(11.0);
    for (v, label) in axis::byte_ticks(frame.y0, frame.y1, max_ticks) {
        let y = frame.y(v);
        painter.hline(frame.rect.x_range(), y, Stroke::new(1.0, palette.grid));
        if y < frame.rect.top() + TOP_LABELS_HEIGHT + 4.0 {
            // The run's name is written there.
            continue;
        }
        painter.text(
            pos2(frame.rect.left() - 6.0, y),
            Align2::RIGHT_CENTER,
            label,
            font.clone(),
            palette.weak_text,
        );
    }
}

/// Vertical grid lines and time labels under the plot.
pub fn time_axis(
    painter: &Painter,
    frame: &PlotFrame,
    clock: Clock,
    axis_rect: Rect,
    palette: &Palette,
) {
    let font = FontId::proportional(11.0);
    let max_ticks = ((frame.rect.width() / 90.0) as usize).max(2);
    for (t, label) in axis::clock_ticks(clock, frame.t0_ns, frame.t1_ns, max_ticks) {
        let x = frame.x(t);
        painter.vline(x, frame.rect.y_range(), Stroke::new(1.0, palette.grid));
        // Centred under its tick, but kept inside the axis: a tick at the right end would
        // have half its label cut by the window's edge.
        let galley = painter.layout_no_wrap(label, font.clone(), palette.weak_text);
        let width = galley.size().x;
        let left = (x - width / 2.0)
            .min(axis_rect.right() - width)
            .max(axis_rect.left());
        painter.galley(pos2(left, axis_rect.top() + 2.0), galley, palette.weak_text);
    }
}

/// Steps narrower than this get no boundary line, only their band.
const MIN_STEP_LINE_POINTS: f32 = 24.0;

/// Shade training steps as alternating bands and label them where there is room. Steps
/// narrower than two points are folded: only every k-th step is drawn, so a trace with
/// 100,000 steps costs as much as one with as many steps as the plot is wide.
pub fn step_bands(
    painter: &Painter,
    frame: &PlotFrame,
    steps: &[StepMarker],
    origin_ns: i64,
    palette: &Palette,
) {
    let rel = |t: i64| (t - origin_ns) as f64;
    let first = steps.partition_point(|s| rel(s.end_ns) < frame.t0_ns);
    let last = steps.partition_point(|s| rel(s.start_ns) <= frame.t1_ns);
    let Some(visible) = steps.get(first..last) else {
        return;
    };
    let stride = (visible.len() / (frame.rect.width() as usize / 2).max(1)).max(1);
    let font = FontId::proportional(11.0);
    for (i, s) in visible.iter().enumerate().step_by(stride) {
        let (x0, x1) = (frame.x(rel(s.start_ns)), frame.x(rel(s.end_ns)));
        let band = Rect::from_x_y_ranges(
            x0.max(frame.rect.left())..=x1.min(frame.rect.right()),
            frame.rect.y_range(),
        );
        if (first + i) % 2 == 0 {
            painter.rect_filled(band, 0.0, palette.step_band);
        }
        // Boundaries only where steps are wide: 100 steps across the plot would be a barcode.
        if x1 - x0 > MIN_STEP_LINE_POINTS {
            painter.vline(x0, frame.rect.y_range(), Stroke::new(1.0, palette.grid));
        }
        if stride == 1 && x1 - x0 > 52.0 {
            painter.text(
                pos2(x0.max(frame.rect.left()) + 4.0, frame.rect.top() + 3.0),
                Align2::LEFT_TOP,
                format!("step {}", s.number),
                font.clone(),
                palette.weak_text,
            );
        }
    }
}

/// The peak marker's label font size (points).
const MARKER_FONT_POINTS: f32 = 12.0;
/// The marker triangle's half width (points).
const MARKER_SIZE: f32 = 5.0;

/// Where [`marker`] puts its label: beside the triangle, right of it unless that runs past
/// the plot, never into the step labels' row. `None` when the marker is off the plot.
pub fn marker_label_rect(
    painter: &Painter,
    frame: &PlotFrame,
    at: Pos2,
    label: &str,
) -> Option<Rect> {
    if !frame.rect.expand(1.0).contains(at) {
        return None;
    }
    let font = FontId::proportional(MARKER_FONT_POINTS);
    let size = painter
        .layout_no_wrap(label.to_owned(), font, Color32::WHITE)
        .size();
    let mut pos = at + vec2(8.0, -2.0 * MARKER_SIZE - size.y);
    if pos.x + size.x > frame.rect.right() {
        pos.x = at.x - 8.0 - size.x;
    }
    pos.y = pos.y.max(frame.rect.top() + TOP_LABELS_HEIGHT);
    Some(Rect::from_min_size(pos, size))
}

/// A marker at (t, bytes): a downward triangle with a label beside it, kept inside the plot.
pub fn marker(painter: &Painter, frame: &PlotFrame, at: Pos2, label: &str, color: Color32) {
    let Some(placed) = marker_label_rect(painter, frame, at, label) else {
        return;
    };
    let s = MARKER_SIZE;
    painter.add(Shape::convex_polygon(
        vec![at + vec2(-s, -2.0 * s), at + vec2(s, -2.0 * s), at],
        color,
        Stroke::NONE,
    ));
    let font = FontId::proportional(MARKER_FONT_POINTS);
    let galley = painter.layout_no_wrap(label.to_owned(), font, color);
    let bg = painter
        .ctx()
        .global_style()
        .visuals
        .extreme_bg_color
        .gamma_multiply(0.85);
    painter.rect_filled(placed.expand(2.0), 3.0, bg);
    painter.galley(placed.min, galley, color);
}

/// A full-height vertical line, solid or dashed, with an optional label at the top.
pub fn vertical(
    painter: &Painter,
    frame: &PlotFrame,
    x: f32,
    color: Color32,
    dashed: bool,
    label: Option<&str>,
) {
    if x < frame.rect.left() || x > frame.rect.right() {
        return;
    }
    let line = [pos2(x, frame.rect.top()), pos2(x, frame.rect.bottom())];
    if dashed {
        painter.extend(Shape::dashed_line(&line, Stroke::new(1.5, color), 5.0, 3.0));
    } else {
        painter.line_segment(line, Stroke::new(1.5, color));
    }
    if let Some(text) = label {
        // Labels go right of the line, or left of it near the plot's right edge.
        let (pos, anchor) = if x > frame.rect.right() - 48.0 {
            (pos2(x - 3.0, frame.rect.top() + 16.0), Align2::RIGHT_TOP)
        } else {
            (pos2(x + 3.0, frame.rect.top() + 16.0), Align2::LEFT_TOP)
        };
        painter.text(pos, anchor, text, FontId::proportional(11.0), color);
    }
}
