//! The timeline's input: wheel and W/S (↑/↓) zoom around the pointer, drag and A/D (←/→) pan,
//! shift-drag range selection, ctrl-/right-drag box zoom, click to inspect, double-click
//! to reset, Esc to clear the selection.

use collector::analysis::TimeWindow;
use egui::{PointerButton, Rect, Response, Ui};

use super::super::Command;
use super::super::doc::{Document, TimeView};
use super::DragMode;
use super::keys::keys;

/// Zoom per point of wheel scrolling: one notch of a mouse wheel (egui: 50 points) zooms
/// by e^0.125 ≈ 1.13×, close to Perfetto's feel.
const WHEEL_ZOOM_PER_POINT: f64 = 0.0025;
/// A shift-drag shorter than this (points) selects nothing.
const MIN_SELECTION_POINTS: f64 = 2.0;

/// Screen x ↔ time for the view that was on screen when the user acted.
#[derive(Clone, Copy)]
struct Mapping {
    t0_ns: f64,
    left: f32,
    ns_per_point: f64,
}

impl Mapping {
    fn t_at(&self, x: f32) -> f64 {
        self.t0_ns + (x - self.left) as f64 * self.ns_per_point
    }
}

/// Apply this frame's input on the plot (`plot` is the curves' rect; `response` covers
/// the plot and the strip under it).
pub fn handle_input(
    ui: &Ui,
    doc: &mut Document,
    response: &Response,
    plot: Rect,
    cmds: &mut Vec<Command>,
) {
    let map = Mapping {
        t0_ns: doc.view.t0_ns,
        left: plot.left(),
        ns_per_point: doc.view.span_ns() / plot.width().max(1.0) as f64,
    };
    wheel(ui, doc, response, map);
    let anchor_ns = response
        .hover_pos()
        .map_or((doc.view.t0_ns + doc.view.t1_ns) / 2.0, |p| map.t_at(p.x));
    keys(ui, doc, anchor_ns, cmds);
    drags(ui, doc, response, plot, map, cmds);
    if response.double_clicked() {
        cmds.push(Command::ResetView);
    } else if response.clicked()
        && let Some(pos) = response.interact_pointer_pos()
    {
        cmds.push(Command::Inspect(doc.abs_ns(map.t_at(pos.x))));
    }
}

fn wheel(ui: &Ui, doc: &mut Document, response: &Response, map: Mapping) {
    let (scroll, zoom, pointer) =
        ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta(), i.pointer.hover_pos()));
    // Over NVTX lanes with more rows than fit, the wheel scrolls the rows.
    if let Some(p) = pointer
        && super::lanes::scroll(doc, p, scroll.y)
    {
        return;
    }
    let Some(pos) = response.hover_pos() else {
        return;
    };
    let duration = doc.data.duration_ns();
    let anchor = map.t_at(pos.x);
    if scroll.y != 0.0 {
        let factor = (-(scroll.y as f64) * WHEEL_ZOOM_PER_POINT).exp();
        doc.view.zoom(factor, anchor, duration);
    }
    if zoom != 1.0 {
        doc.view.zoom(1.0 / zoom as f64, anchor, duration);
    }
    if scroll.x != 0.0 {
        doc.view.pan(-(scroll.x as f64) * map.ns_per_point);
    }
}

fn drags(
    ui: &Ui,
    doc: &mut Document,
    response: &Response,
    plot: Rect,
    map: Mapping,
    cmds: &mut Vec<Command>,
) {
    if response.drag_started() {
        let (origin, modifiers) = ui.input(|i| (i.pointer.press_origin(), i.modifiers));
        let origin = origin.unwrap_or(plot.center());
        let secondary = response.drag_started_by(PointerButton::Secondary);
        doc.timeline.drag = Some(if modifiers.shift {
            DragMode::Select(map.t_at(origin.x))
        } else if modifiers.command || modifiers.ctrl || secondary {
            DragMode::BoxZoom(origin)
        } else {
            DragMode::Pan
        });
    }
    if response.dragged() && doc.timeline.drag == Some(DragMode::Pan) {
        doc.view
            .pan(-(response.drag_delta().x as f64) * map.ns_per_point);
    }
    if !response.drag_stopped() {
        return;
    }
    let end = response
        .interact_pointer_pos()
        .or(ui.input(|i| i.pointer.latest_pos()));
    match (doc.timeline.drag.take(), end) {
        (Some(DragMode::Select(from)), Some(end)) => {
            let to = map.t_at(end.x);
            if (to - from).abs() >= MIN_SELECTION_POINTS * map.ns_per_point {
                cmds.push(Command::Select(Some(TimeWindow {
                    start_ns: doc.abs_ns(from.min(to)),
                    end_ns: doc.abs_ns(from.max(to)),
                })));
            }
        }
        (Some(DragMode::BoxZoom(origin)), Some(end)) => {
            let r = Rect::from_two_pos(origin, end);
            if r.width() < 4.0 {
                return;
            }
            doc.view = TimeView::between(map.t_at(r.left()), map.t_at(r.right()));
            if r.height() >= 4.0 && plot.contains(origin) {
                let (y0, y1) = doc.timeline.last_y;
                let bytes_at =
                    |y: f32| y0 + ((plot.bottom() - y) / plot.height().max(1.0)) as f64 * (y1 - y0);
                doc.timeline.y_range = Some((bytes_at(r.bottom()).max(0.0), bytes_at(r.top())));
            }
        }
        _ => {}
    }
}
