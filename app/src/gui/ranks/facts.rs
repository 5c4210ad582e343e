//! The rank grid's facts (ranks, the worst, skew, OOMs), its legend, the time basis it
//! reads on, the inputs it could not read, and its tab.

use collector::analysis::ranks::RankInput;
use collector::analysis::ranks::grid::Grid;
use egui::{Rect, RichText, Sense, Ui, pos2, vec2};

use super::super::theme::Palette;
use super::super::{Command, units};
use super::{RankGrid, heat};
use crate::output::text::plural;

/// Width and height of the legend's colour bar.
const LEGEND_SIZE: [f32; 2] = [220.0, 12.0];

/// Which way the time axis reads, said in the window.
pub const TIME_BASIS: &str = "time since each rank's own start (clocks across hosts are not compared; rank tabs opened here share the cursor on the same basis)";

/// The tab that shows the grid.
pub fn grid_tab_ui(ui: &mut Ui, g: &RankGrid, cmds: &mut Vec<Command>) {
    let label = match (&g.grid, &g.load) {
        (Some(grid), _) => format!("▦ Ranks ({})", grid.inputs.len()),
        _ => "▦ Ranks".to_owned(),
    };
    if ui
        .selectable_label(g.shown, RichText::new(label).strong())
        .on_hover_text("Every rank's allocated memory over time")
        .clicked()
    {
        cmds.push(Command::ShowGrid(true));
    }
    ui.separator();
}

/// The grid's facts, its legend and the time basis.
pub fn facts_ui(ui: &mut Ui, grid: &Grid, palette: &Palette) {
    ui.horizontal_wrapped(|ui| {
        ui.label(
            RichText::new(format!(
                "{} · {}",
                plural(grid.inputs.len() as u64, "rank", "ranks"),
                plural(grid.rows.len() as u64, "row", "rows")
            ))
            .strong(),
        );
        if let Some(w) = grid.across.worst {
            let name = grid
                .inputs
                .get(w.input)
                .map_or_else(String::new, input_name);
            ui.separator();
            ui.label(
                RichText::new(format!(
                    "▶ worst: {name} {} peak {}",
                    w.device,
                    units::bytes(w.peak_allocated_bytes)
                ))
                .color(palette.alert),
            );
        }
        if let Some(s) = grid.across.skew_max_over_median {
            ui.separator();
            ui.label(format!("skew {s:.2}× (worst over median peak)"));
        }
        if !grid.across.oom_inputs.is_empty() {
            ui.separator();
            ui.label(
                RichText::new(format!(
                    "{} ran out of memory",
                    plural(grid.across.oom_inputs.len() as u64, "rank", "ranks")
                ))
                .color(palette.alert),
            );
        }
    });
    ui.horizontal_wrapped(|ui| {
        legend_ui(ui, grid.max_cell_bytes().unwrap_or(0), palette);
        ui.separator();
        ui.label(RichText::new(format!("⏱ {TIME_BASIS}")).color(palette.weak_text));
    });
}

/// The colour bar: allocated bytes, from none to the largest cell.
fn legend_ui(ui: &mut Ui, max_bytes: i64, palette: &Palette) {
    ui.label("allocated (largest in each cell):");
    ui.label(RichText::new("0 B").color(palette.weak_text));
    let (rect, _) = ui.allocate_exact_size(vec2(LEGEND_SIZE[0], LEGEND_SIZE[1]), Sense::hover());
    let steps = 64;
    let w = rect.width() / steps as f32;
    for i in 0..steps {
        let x = rect.left() + i as f32 * w;
        let r = Rect::from_min_max(pos2(x, rect.top()), pos2(x + w + 0.5, rect.bottom()));
        ui.painter()
            .rect_filled(r, 0.0, heat::colour(i as f64 / (steps - 1) as f64));
    }
    ui.label(RichText::new(units::bytes(max_bytes)).color(palette.weak_text));
}

pub fn errors_ui(ui: &mut Ui, g: &RankGrid) {
    if g.errors.is_empty() && g.skipped == 0 {
        return;
    }
    let title = format!(
        "⚠ {} could not be read · {} skipped",
        plural(g.errors.len() as u64, "input", "inputs"),
        plural(g.skipped, "other file", "other files")
    );
    egui::CollapsingHeader::new(RichText::new(title).color(ui.visuals().warn_fg_color))
        .id_salt("rank-grid-errors")
        .show(ui, |ui| {
            for e in &g.errors {
                ui.label(e);
            }
        });
}

/// "rank 3", or the file's name when the input has no rank.
pub fn input_name(input: &RankInput) -> String {
    match input.rank {
        Some(r) => format!("rank {r}"),
        None => input.path.file_name().map_or_else(
            || input.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
    }
}
