//! The line over the timeline: a legend swatch per series the device has (and the
//! compared run's), then Reset view, Fit y after a box zoom, the device-total and
//! by-category toggles and the visible range with the mouse and keyboard help on hover;
//! under it, when stacked by category, the categories' legend.

use egui::{Color32, Sense, Ui, vec2};

use super::super::Command;
use super::super::doc::Document;
use super::super::loaded::DeviceCurves;
use super::super::theme::Palette;
use super::{Other, categories};

/// The toolbar.
pub fn toolbar_ui(
    ui: &mut Ui,
    doc: &mut Document,
    other: Option<&Other<'_>>,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    let data = doc.data.clone();
    ui.horizontal(|ui| {
        let curves = data.curves.get(doc.device as usize);
        // The controls and the range take the right first; the legend gets what is left
        // and shortens its names (a long file name) to fit at 1000 points.
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            controls_ui(ui, doc, curves, palette, cmds);
            ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                legend_ui(ui, curves, other, palette);
            });
        });
    });
    let layers = doc
        .data
        .curves
        .get(doc.device as usize)
        .and_then(|c| c.categories.as_ref())
        .filter(|_| doc.timeline.show_categories);
    if let Some(c) = layers {
        let shown: Vec<_> = c.layers.iter().map(|l| l.category).collect();
        categories::legend_ui(ui, &shown, palette);
    }
}

fn legend_ui(
    ui: &mut Ui,
    curves: Option<&DeviceCurves>,
    other: Option<&Other<'_>>,
    palette: &Palette,
) {
    let has = |f: fn(&DeviceCurves) -> bool| curves.is_some_and(f);
    swatch(
        ui,
        palette.allocated,
        "allocated",
        has(|c| c.allocated.is_some()),
    );
    swatch(
        ui,
        palette.reserved,
        "reserved",
        has(|c| c.reserved.is_some()),
    );
    swatch(ui, palette.cache, "cache held", has(|c| c.cache.is_some()));
    swatch(
        ui,
        palette.nvml,
        "NVML used",
        has(|c| c.nvml_used.is_some()),
    );
    if let Some(o) = other {
        swatch(ui, palette.other_run, &format!("B: {}", o.name), true);
    }
}

/// Reset view, Fit y, the toggles and the visible range, right to left.
fn controls_ui(
    ui: &mut Ui,
    doc: &mut Document,
    curves: Option<&DeviceCurves>,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    if ui
        .button("Reset view")
        .on_hover_text("Double-click the plot")
        .clicked()
    {
        cmds.push(Command::ResetView);
    }
    if doc.timeline.y_range.is_some() && ui.button("Fit y").clicked() {
        doc.timeline.y_range = None;
    }
    if curves.is_some_and(|c| c.total_bytes.is_some()) {
        let hover = "The device's memory, from the trace (deviceProperties) or NVML: a dashed \
                     line, or said here when it is more than 4× the curves' top (drawn to \
                     scale it would flatten them)";
        // Right to left: the note reads after the checkbox.
        if let Some(note) = doc
            .timeline
            .capacity_off_scale
            .as_ref()
            .filter(|_| doc.timeline.show_total)
        {
            ui.label(egui::RichText::new(note).color(palette.weak_text))
                .on_hover_text(hover);
        }
        ui.checkbox(&mut doc.timeline.show_total, "device total")
            .on_hover_text(hover);
    }
    if curves.is_some_and(|c| c.categories.is_some()) {
        ui.checkbox(&mut doc.timeline.show_categories, "by category")
            .on_hover_text(
                "Stack the allocated memory by what it held: parameters, gradients, \
                 optimizer state, activations… (torch's memory profiler's categories)",
            );
    }
    ui.label(
        egui::RichText::new(format!(
            "{} – {}",
            doc.clock().at_in(doc.view.t0_ns.max(0.0), doc.view.span_ns()),
            doc.clock().at_in(doc.view.t1_ns, doc.view.span_ns())
        ))
        .color(palette.weak_text),
    )
    .on_hover_text(
        "wheel / W S / ↑ ↓: zoom · drag / A D / ← →: pan · shift-drag: select a range for the table · \
         ctrl- or right-drag: box zoom · click: inspect that instant · double-click: reset",
    );
}

fn swatch(ui: &mut Ui, color: Color32, label: &str, present: bool) {
    if !present {
        return;
    }
    let (rect, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
    ui.painter().rect_filled(rect.shrink(1.0), 2.0, color);
    ui.add(egui::Label::new(label).truncate())
        .on_hover_text(label);
    ui.add_space(6.0);
}
