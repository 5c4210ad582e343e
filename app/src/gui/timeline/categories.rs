//! The allocated memory stacked by category on the timeline: one filled band per category
//! between the top of the layers under it and its own top, drawn from the layers'
//! pyramids (`gui::categories`) one column per screen point, and its legend.

use collector::analysis::categories::Category;
use egui::{Color32, Mesh, Painter, Rect, Sense, Shape, Ui, pos2, vec2};

use super::super::categories::largest_first;
use super::super::loaded::DeviceCurves;
use super::super::paint::{Columns, PlotFrame};
use super::super::theme::Palette;
use super::super::units;

/// Each shown layer's columns, bottom first.
pub type LayerColumns = Vec<(Category, Columns)>;

/// Fill each layer's band. A column's bands use each cumulative curve's maximum in the
/// column, so the stack's top is the allocated curve's maximum there (the same top as the
/// plain fill) and, the curves being cumulative, no band is ever negative.
pub fn stacked_ui(p: &Painter, frame: &PlotFrame, layers: &LayerColumns, palette: &Palette) {
    let mut mesh = Mesh::default();
    let base = frame.y(0f64.max(frame.y0));
    let columns = layers.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
    for c in 0..columns {
        let x = frame.rect.left() + c as f32;
        let mut bottom = base;
        for (category, cols) in layers {
            let Some(Some((_, hi))) = cols.get(c) else {
                continue;
            };
            let top = frame.y(*hi as f64);
            if top < bottom {
                let color = palette.categories[category.index()];
                mesh.add_colored_rect(
                    Rect::from_min_max(pos2(x, top), pos2(x + 1.0, bottom)),
                    color,
                );
                bottom = top;
            }
        }
    }
    p.add(Shape::mesh(mesh));
}

/// The legend: a swatch and name per category shown, in stacking order, top layer first
/// (as they read on the plot).
pub fn legend_ui(ui: &mut Ui, categories: &[Category], palette: &Palette) {
    ui.horizontal_wrapped(|ui| {
        ui.label(egui::RichText::new("by category:").color(palette.weak_text));
        for &c in categories.iter().rev() {
            let (rect, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
            ui.painter()
                .rect_filled(rect.shrink(1.0), 2.0, palette.categories[c.index()]);
            ui.label(c.as_str());
            ui.add_space(4.0);
        }
    });
}

/// The hover readout's lines for the stacked view: each category's bytes at `abs_ns` (the
/// series' point then), largest first, in its colour.
pub fn readout_lines(
    curves: &DeviceCurves,
    abs_ns: i64,
    palette: &Palette,
) -> Vec<(Option<Color32>, String)> {
    let Some((_, bytes)) = curves.categories.as_ref().and_then(|c| c.point_at(abs_ns)) else {
        return Vec::new();
    };
    largest_first(bytes)
        .into_iter()
        .map(|(c, b)| {
            let colour = palette.categories[c.index()];
            (
                Some(colour),
                format!("  {:<15} {}", c.as_str(), units::bytes(b)),
            )
        })
        .collect()
}
