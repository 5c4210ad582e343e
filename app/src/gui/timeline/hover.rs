//! The pointer over the timeline: a marker's or a lane's text where it rests on one,
//! else the readout; the linked cursor (the time under the pointer, shared with the small
//! multiples).

use egui::Rect;

use super::super::doc::Document;
use super::super::paint::PlotFrame;
use super::super::theme::Palette;
use super::overlay::readout_ui;
use super::{Other, lanes, markers};

/// The markers' and lanes' hovers, else the readout; the linked cursor of a small
/// multiple hovered above.
pub fn hover_ui(
    painter: &egui::Painter,
    doc: &mut Document,
    (frame, plot_area, lanes_rect): (&PlotFrame, Rect, Rect),
    response: egui::Response,
    (multiples_hovered, other): (bool, Option<&Other<'_>>),
    palette: &Palette,
) {
    let frame = *frame;
    let pointer = response.hover_pos();
    let mut hover = markers::markers_ui(painter, doc, &frame, pointer, palette);
    doc.timeline.last_lanes = (lanes_rect.height() > 0.0).then(|| {
        (
            lanes_rect,
            lanes::fit(lanes_rect.height(), lanes::rows(doc).len()),
        )
    });
    if lanes_rect.height() > 0.0 {
        let lane_hover = lanes::lanes_ui(painter, doc, &frame, lanes_rect, pointer, palette);
        hover = hover.or(lane_hover);
    }
    match pointer {
        Some(p) if plot_area.x_range().contains(p.x) => doc.hover_ns = Some(frame.t_at(p.x)),
        _ if !multiples_hovered => doc.hover_ns = None,
        _ => {}
    }
    if let (None, Some(t)) = (pointer, doc.hover_ns) {
        // The linked cursor of a small multiple hovered above.
        painter.vline(
            frame.x(t),
            Rect::from_min_max(plot_area.min, lanes_rect.max).y_range(),
            egui::Stroke::new(1.0, palette.cursor),
        );
    }
    if let Some(text) = hover {
        response.on_hover_ui_at_pointer(|ui| {
            ui.label(egui::RichText::new(text).font(markers::hover_font()));
        });
    } else if let Some(pos) = pointer {
        readout_ui(painter, doc, &frame, plot_area, pos, other, palette);
    }
}
