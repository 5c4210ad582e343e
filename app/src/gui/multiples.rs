//! Every device as a small multiple over the timeline: one compact plot per device (its
//! allocated filled, its reserved as a line, each on its own scale), all on the main
//! plot's time axis, with a linked cursor — the time under the pointer, in any of them or
//! in the main plot, is marked in all. Clicking one shows that device in the main plot.

use egui::{Align2, FontId, Rect, Sense, Stroke, Ui, pos2, vec2};

use super::Command;

use super::doc::Document;
use super::paint::{self, PlotFrame};
use super::theme::Palette;
use super::units;

/// Height of one device's plot.
pub const ROW_HEIGHT: f32 = 34.0;
/// Devices drawn as multiples at most (each costs the main plot [`ROW_HEIGHT`]); a
/// recording with more shows the first ones, accelerators first.
pub const MAX_DEVICES: usize = 8;
/// Height left to the main timeline (its plot, strip, lanes and axis) at least.
const MIN_PLOT_ROOM: f32 = 260.0;
/// Width of the device names left of the plots (the main plot's byte labels' margin).
const LABEL_WIDTH: f32 = 74.0;

/// Whether `doc` has devices enough to draw multiples of.
pub fn wanted(doc: &Document) -> bool {
    doc.data.shown_devices.len() > 1
}

/// Draw the multiples at the top of `ui` (when the recording has several devices) and
/// handle their hover and clicks; whether the pointer is over them.
pub fn multiples_ui(
    ui: &mut Ui,
    doc: &mut Document,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) -> bool {
    if !wanted(doc) {
        return false;
    }
    // The main plot keeps MIN_PLOT_ROOM: in a small window fewer devices are drawn.
    let fit = ((ui.available_height() - MIN_PLOT_ROOM) / ROW_HEIGHT).max(0.0) as usize;
    let devices: Vec<_> = doc
        .data
        .shown_devices
        .iter()
        .copied()
        .take(MAX_DEVICES.min(fit))
        .collect();
    if devices.len() < 2 {
        return false;
    }
    let width = ui.available_width();
    let (area, response) = ui.allocate_exact_size(
        vec2(width, devices.len() as f32 * ROW_HEIGHT + 4.0),
        Sense::click(),
    );
    let painter = ui.painter_at(area);
    let pointer = response.hover_pos();
    if let Some(p) = pointer {
        let plot_x = area.left() + LABEL_WIDTH..=area.right() - 12.0;
        doc.hover_ns = plot_x
            .contains(&p.x)
            .then(|| frame_for(doc, area, 0).t_at(p.x));
    }
    for (n, &device) in devices.iter().enumerate() {
        let rect = device_ui(&painter, doc, frame_for(doc, area, n), device, palette);
        let selected = device == doc.device;
        if response.clicked()
            && pointer.is_some_and(|p| rect.expand2(vec2(LABEL_WIDTH, 1.0)).contains(p))
            && !selected
        {
            cmds.push(Command::SetDevice(device));
        }
    }
    let hovered = response.hovered();
    if hovered {
        response.on_hover_text_at_pointer(
            "Every device on the same time axis: click one to show it below",
        );
    }
    hovered
}

/// One device's plot on `frame` (its y scale fitted to its own curves), its name and
/// top, the linked cursor; returns its rect.
fn device_ui(
    painter: &egui::Painter,
    doc: &Document,
    frame: PlotFrame,
    device: collector::model::DeviceIdx,
    palette: &Palette,
) -> Rect {
    let rect = frame.rect;
    let selected = device == doc.device;
    painter.rect_filled(rect, 2.0, palette.plot_bg);
    if selected {
        painter.rect_stroke(
            rect,
            2.0,
            Stroke::new(1.5, palette.cursor),
            egui::StrokeKind::Outside,
        );
    }
    let curves = doc.data.curves.get(device as usize);
    let origin = doc.data.rec.meta.start_ns;
    let allocated = paint::query(curves.and_then(|c| c.allocated.as_ref()), &frame, origin);
    let reserved = paint::query(curves.and_then(|c| c.reserved.as_ref()), &frame, origin);
    let top = paint::columns_max(&allocated)
        .max(paint::columns_max(&reserved))
        .unwrap_or(0)
        .max(1024);
    let frame = PlotFrame {
        y1: top as f64 * 1.1,
        ..frame
    };
    let p = painter.with_clip_rect(rect);
    paint::fill_under(&p, &frame, &allocated, palette.allocated_fill);
    paint::envelope(&p, &frame, &allocated, palette.allocated, 1.0, None);
    paint::envelope(&p, &frame, &reserved, palette.reserved, 1.0, None);
    painter.text(
        pos2(rect.left() - 6.0, rect.center().y - 6.0),
        Align2::RIGHT_CENTER,
        doc.data.device_name(device),
        FontId::proportional(11.0),
        if selected {
            palette.cursor
        } else {
            palette.weak_text
        },
    );
    painter.text(
        pos2(rect.left() - 6.0, rect.center().y + 7.0),
        Align2::RIGHT_CENTER,
        units::bytes(top),
        FontId::proportional(9.5),
        palette.weak_text,
    );
    if let Some(t) = doc.hover_ns {
        p.vline(frame.x(t), rect.y_range(), Stroke::new(1.0, palette.cursor));
    }
    rect
}

/// The frame of the `n`-th multiple in `area`, on the document's time view.
fn frame_for(doc: &Document, area: Rect, n: usize) -> PlotFrame {
    let top = area.top() + 2.0 + n as f32 * ROW_HEIGHT;
    let rect = Rect::from_min_max(
        pos2(area.left() + LABEL_WIDTH, top),
        pos2(area.right() - 12.0, top + ROW_HEIGHT - 4.0),
    );
    PlotFrame {
        rect,
        t0_ns: doc.view.t0_ns,
        t1_ns: doc.view.t1_ns,
        y0: 0.0,
        y1: 1.0,
    }
}
