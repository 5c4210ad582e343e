//! Moving the time view the allocation view shares with the timeline: wheel zoom around
//! the pointer and drag pan over the bands.

use egui::{Rect, Response, Ui};

use super::super::doc::Document;

/// Wheel zoom per point scrolled, as the timeline's.
const WHEEL_ZOOM_PER_POINT: f64 = 0.0025;

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
