//! Moving the time view the allocation view shares with the timeline: wheel zoom around
//! the pointer and drag pan over the bands, and the minimap under them (memory_viz's brush):
//! the whole run's allocated memory in a strip, the visible range as a brush; dragging
//! across the strip draws a new brush, dragging the brush moves it (once it is narrower
//! than the strip), a click centres the view there.

use egui::{Color32, Rect, Response, Sense, Stroke, StrokeKind, Ui};

use super::super::doc::{Document, TimeView};
use super::super::paint::{self, PlotFrame};
use super::super::theme::Palette;

/// Wheel zoom per point scrolled, as the timeline's.
const WHEEL_ZOOM_PER_POINT: f64 = 0.0025;
/// Height of the minimap strip, in points.
pub const MINIMAP_HEIGHT: f32 = 30.0;
/// A brush drawn narrower than this many points is a click, not a range.
const MIN_BRUSH_POINTS: f32 = 3.0;
/// A brush over at least this share of the strip (the whole run in view) is not moved by a
/// drag inside it: the drag draws a new one, as there is nowhere to move it.
const MOVABLE_BRUSH_SHARE: f32 = 0.9;

/// A drag on the minimap in progress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BrushDrag {
    /// Drawing a new brush from this time (ns since start).
    Draw(f64),
    /// Moving the brush.
    Move,
}

/// Wheel zoom around the pointer, drag pan: the view the timeline shares.
pub fn navigate(ui: &Ui, doc: &mut Document, response: &Response, plot: Rect) {
    let span = doc.view.span_ns();
    let ns_per_point = span / plot.width().max(1.0) as f64;
    if response.dragged() {
        doc.view
            .pan(-(response.drag_delta().x as f64) * ns_per_point);
    }
    if let Some(pos) = response.hover_pos() {
        let scroll = ui.input(|i| i.smooth_scroll_delta.y);
        if scroll != 0.0 {
            let anchor = doc.view.t0_ns + (pos.x - plot.left()) as f64 * ns_per_point;
            let factor = (-(scroll as f64) * WHEEL_ZOOM_PER_POINT).exp();
            doc.view.zoom(factor, anchor, doc.data.duration_ns());
        }
    }
}

/// The minimap in `rect` (its left and right edges the plot's): the whole run's allocated
/// curve, the brush over the visible range, and its input.
pub fn minimap_ui(ui: &mut Ui, rect: Rect, doc: &mut Document, palette: &Palette) {
    let full = TimeView::full(doc.data.duration_ns());
    let curve = (doc.data.curves.get(doc.device as usize)).and_then(|c| c.allocated.as_ref());
    let probe = PlotFrame {
        rect,
        t0_ns: full.t0_ns,
        t1_ns: full.t1_ns,
        y0: 0.0,
        y1: 1.0,
    };
    let origin = doc.data.rec.meta.start_ns;
    let cols = paint::query(curve, &probe, origin);
    let top = paint::columns_max(&cols).unwrap_or(0).max(1) as f64 * 1.05;
    let frame = PlotFrame { y1: top, ..probe };
    let response = ui.allocate_rect(rect, Sense::click_and_drag());
    brush_input(doc, &response, &frame);
    let painter = ui.painter_at(rect.expand(1.0));
    painter.rect_filled(rect, 2.0, palette.plot_bg);
    paint::fill_under(
        &painter,
        &frame,
        &cols,
        palette.allocated.gamma_multiply(0.6),
    );
    let (x0, x1) = (frame.x(doc.view.t0_ns), frame.x(doc.view.t1_ns));
    let brush = Rect::from_x_y_ranges(
        x0.max(rect.left())..=x1.min(rect.right()).max(x0.max(rect.left()) + 1.0),
        rect.y_range(),
    );
    let shade = Color32::from_black_alpha(90);
    for r in [
        Rect::from_x_y_ranges(rect.left()..=brush.left(), rect.y_range()),
        Rect::from_x_y_ranges(brush.right()..=rect.right(), rect.y_range()),
    ] {
        if r.width() > 0.0 {
            painter.rect_filled(r, 0.0, shade);
        }
    }
    let ink = ui.visuals().strong_text_color();
    painter.rect_stroke(brush, 1.0, Stroke::new(1.5, ink), StrokeKind::Inside);
    let state = &mut doc.panels.allocations;
    state.minimap = Some(frame);
    response.on_hover_text("The whole run: drag across to show a range, drag the box to move it, click to centre there");
}

/// Apply a drag or click on the minimap to the shared view.
fn brush_input(doc: &mut Document, response: &Response, frame: &PlotFrame) {
    let state = &mut doc.panels.allocations;
    // Where the press began: a drag starts only after the pointer moved a little.
    let origin = response.ctx.input(|i| i.pointer.press_origin());
    if response.drag_started()
        && let Some(p) = origin.or(response.interact_pointer_pos())
    {
        let (x0, x1) = (frame.x(doc.view.t0_ns), frame.x(doc.view.t1_ns));
        let movable = x1 - x0 < MOVABLE_BRUSH_SHARE * frame.rect.width();
        state.brush_drag = Some(if movable && (x0..=x1).contains(&p.x) {
            BrushDrag::Move
        } else {
            BrushDrag::Draw(frame.t_at(p.x))
        });
    }
    let ns_per_point = (frame.t1_ns - frame.t0_ns) / frame.rect.width().max(1.0) as f64;
    match (state.brush_drag, response.interact_pointer_pos()) {
        (Some(BrushDrag::Move), _) if response.dragged() => {
            doc.view.pan(response.drag_delta().x as f64 * ns_per_point);
        }
        (Some(BrushDrag::Draw(from)), Some(p)) if response.dragged() => {
            let to = frame.t_at(p.x.clamp(frame.rect.left(), frame.rect.right()));
            if (frame.x(to) - frame.x(from)).abs() >= MIN_BRUSH_POINTS {
                doc.view = TimeView::between(from, to);
            }
        }
        _ => {}
    }
    if response.drag_stopped() {
        state.brush_drag = None;
    }
    if response.clicked()
        && let Some(p) = response.interact_pointer_pos()
    {
        let span = doc.view.span_ns();
        doc.view
            .pan(frame.t_at(p.x) - (doc.view.t0_ns + span / 2.0));
    }
}
