//! The Segments view's summary line (segments, reserved, free, the largest free block)
//! with its colour key, and which segment holds the largest free block.

use collector::analysis::segments::{BlockUse, SegmentLayout};
use egui::{Sense, Stroke, Ui, vec2};

use super::super::super::theme::Palette;
use super::super::super::units;

/// The segment holding the largest free block.
pub(super) fn largest_free_block(layout: &[SegmentLayout]) -> Option<usize> {
    layout
        .iter()
        .enumerate()
        .filter(|(_, s)| s.largest_free_bytes() > 0)
        .max_by_key(|(i, s)| (s.largest_free_bytes(), std::cmp::Reverse(*i)))
        .map(|(i, _)| i)
}

pub(super) fn summary_ui(ui: &mut Ui, layout: &[SegmentLayout], palette: &Palette) {
    let reserved: i64 = layout.iter().map(|s| s.size_bytes).sum();
    let free: i64 = layout.iter().map(SegmentLayout::free_bytes).sum();
    let free_blocks = layout
        .iter()
        .flat_map(|s| &s.blocks)
        .filter(|b| b.state == BlockUse::Free)
        .count();
    let largest = layout
        .iter()
        .map(SegmentLayout::largest_free_bytes)
        .max()
        .unwrap_or(0);
    ui.horizontal_wrapped(|ui| {
        ui.label(format!(
            "{} segments · {} reserved · {} free in {} blocks · largest free block {}",
            layout.len(),
            units::bytes(reserved),
            units::bytes(free),
            free_blocks,
            units::bytes(largest)
        ));
        ui.separator();
        for (color, name) in [
            (palette.allocated, "allocated"),
            (palette.pending_free, "freed, pending (other stream)"),
            (palette.free_block, "free"),
        ] {
            let (r, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
            ui.painter().rect_filled(r, 2.0, color);
            ui.label(name);
        }
        let (r, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
        ui.painter().rect_stroke(
            r,
            2.0,
            Stroke::new(2.0, palette.alert),
            egui::StrokeKind::Inside,
        );
        ui.label("largest free block");
    });
}
