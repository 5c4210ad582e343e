//! Drawing the rank grid: the heat map (one row per rank and device,
//! the worst rank's row outlined), the time ruler that moves the linked cursor, the hover
//! readout; clicks push [`Command`]s.

use std::sync::Arc;

use collector::analysis::ranks::grid::Grid;
use egui::{Align2, Color32, FontId, Rect, ScrollArea, Sense, Stroke, Ui, pos2, vec2};

use super::super::theme::Palette;
use super::super::{Command, axis, units};
use super::facts::{errors_ui, facts_ui, input_name};
use super::{HoverCell, RankGrid, heat};

/// Width of the rank labels left of the heat map.
const LABEL_WIDTH: f32 = 150.0;
/// Height of the time ruler under the heat map.
const RULER_HEIGHT: f32 = 24.0;
/// Rows are at least this tall (a taller grid scrolls) and at most this tall.
const MIN_ROW_HEIGHT: f32 = 4.0;
const MAX_ROW_HEIGHT: f32 = 24.0;
/// Rows shorter than this get a label only every few rows.
const LABELLED_ROW_HEIGHT: f32 = 12.0;
/// The grid in the rest of `ui`.
pub fn grid_ui(ui: &mut Ui, g: &mut RankGrid, palette: &Palette, cmds: &mut Vec<Command>) {
    if let Some(load) = &g.load {
        let (done, total) = load.counts();
        ui.add_space(24.0);
        ui.vertical_centered(|ui| {
            ui.heading("Loading ranks");
            let what = match total {
                0 => "finding the inputs…".to_owned(),
                n => format!("{done} of {n} inputs read"),
            };
            ui.label(format!("{what} · {:.1} s", load.elapsed().as_secs_f64()));
            let fraction = if total == 0 {
                0.0
            } else {
                done as f32 / total as f32
            };
            ui.add(
                egui::ProgressBar::new(fraction)
                    .desired_width(320.0)
                    .show_percentage(),
            );
            if ui.button("Cancel").clicked() {
                cmds.push(Command::CancelGrid);
            }
        });
        ui.ctx()
            .request_repaint_after(std::time::Duration::from_millis(100));
        return;
    }
    let Some(grid) = g.grid.clone() else {
        errors_ui(ui, g);
        return;
    };
    facts_ui(ui, &grid, palette);
    errors_ui(ui, g);
    ui.separator();
    let dark = ui.visuals().dark_mode;
    if g.textures.as_ref().is_none_or(|t| t.0 != dark) {
        g.textures = Some((dark, heat::textures(ui.ctx(), &grid, palette.plot_bg)));
    }
    body_ui(ui, g, &grid, palette, cmds);
}

fn body_ui(
    ui: &mut Ui,
    g: &mut RankGrid,
    grid: &Arc<Grid>,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    let avail = ui.available_size();
    let rows = grid.rows.len().max(1);
    let rows_height = (avail.y - RULER_HEIGHT).max(MIN_ROW_HEIGHT);
    let row_h = (rows_height / rows as f32).clamp(MIN_ROW_HEIGHT, MAX_ROW_HEIGHT);
    g.row_height = row_h;
    let heat_w = (avail.x - LABEL_WIDTH - 8.0).max(40.0);
    g.hover = None;
    ScrollArea::vertical()
        .id_salt("rank-grid-rows")
        .max_height(rows_height)
        .auto_shrink([false, true])
        .show(ui, |ui| {
            let (rect, _) = ui.allocate_exact_size(
                vec2(LABEL_WIDTH + heat_w, row_h * rows as f32),
                Sense::hover(),
            );
            let heat = Rect::from_min_max(pos2(rect.left() + LABEL_WIDTH, rect.top()), rect.max);
            g.last_heat_rect = Some(heat);
            rows_ui(ui, g, grid, (rect, heat), palette, cmds);
        });
    ruler_ui(ui, g, grid, heat_w, palette, cmds);
}

/// The heat map, the labels, the worst row, the cursor, and the hover and clicks.
fn rows_ui(
    ui: &mut Ui,
    g: &mut RankGrid,
    grid: &Grid,
    (rect, heat): (Rect, Rect),
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    let painter = ui.painter();
    let row_h = g.row_height;
    painter.rect_filled(heat, 0.0, palette.plot_bg);
    for (i, tex) in g.textures.iter().flat_map(|t| t.1.iter()).enumerate() {
        let first = i * heat::TEXTURE_ROWS;
        let n = tex.size()[1];
        let r = Rect::from_min_size(
            pos2(heat.left(), heat.top() + first as f32 * row_h),
            vec2(heat.width(), n as f32 * row_h),
        );
        painter.image(
            tex.id(),
            r,
            Rect::from_min_max(pos2(0.0, 0.0), pos2(1.0, 1.0)),
            Color32::WHITE,
        );
    }
    labels_ui(ui, grid, rect, row_h, palette, cmds);
    if let Some(w) = grid.worst_row() {
        let r = Rect::from_min_size(
            pos2(heat.left(), heat.top() + w as f32 * row_h),
            vec2(heat.width(), row_h),
        );
        ui.painter().rect_stroke(
            r,
            0.0,
            Stroke::new(2.0, palette.alert),
            egui::StrokeKind::Outside,
        );
    }
    let x_of = |rel: i64| heat.left() + (rel as f64 / grid.span_ns as f64) as f32 * heat.width();
    if let Some(c) = g.cursor_rel_ns {
        ui.painter()
            .vline(x_of(c), heat.y_range(), Stroke::new(1.5, palette.cursor));
    }
    let response = ui.interact(heat, egui::Id::unique("rank-grid-heat"), Sense::click());
    let Some(pos) = response.hover_pos() else {
        return;
    };
    let row = (((pos.y - heat.top()) / row_h) as usize).min(grid.rows.len().saturating_sub(1));
    let fraction = ((pos.x - heat.left()) / heat.width()).clamp(0.0, 1.0) as f64;
    let at_rel_ns = (fraction * grid.span_ns as f64).round() as i64;
    let column = grid.column_of(at_rel_ns);
    let cell = HoverCell {
        row,
        column,
        at_rel_ns,
    };
    g.hover = Some(cell);
    let lines = readout(grid, cell);
    let response = response.on_hover_ui_at_pointer(|ui| {
        for l in &lines {
            ui.label(l);
        }
    });
    if response.clicked()
        && let Some(r) = grid.rows.get(row)
    {
        cmds.push(Command::GridCursor(at_rel_ns));
        cmds.push(Command::OpenRank(r.input, Some(at_rel_ns)));
    }
}

/// The hover readout: rank, device, the cell's time, its allocated bytes.
pub fn readout(grid: &Grid, cell: HoverCell) -> Vec<String> {
    let Some(row) = grid.rows.get(cell.row) else {
        return Vec::new();
    };
    let name = grid
        .inputs
        .get(row.input)
        .map_or_else(String::new, input_name);
    let (from, to) = grid.column_range_ns(cell.column);
    let span = grid.span_ns as f64;
    let allocated = match row.cells.get(cell.column).copied().flatten() {
        Some(b) => format!("allocated: up to {}", units::bytes(b)),
        None => "allocated: — (the rank had not started or had ended)".to_owned(),
    };
    vec![
        format!("{name} · {}", row.device),
        format!(
            "{} – {} since its start",
            units::format_time_in(from as f64, span),
            units::format_time_in(to as f64, span)
        ),
        allocated,
        format!(
            "click: open {name} at {}",
            units::format_time_in(cell.at_rel_ns as f64, span)
        ),
    ]
}

fn labels_ui(
    ui: &Ui,
    grid: &Grid,
    rect: Rect,
    row_h: f32,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    let clip = ui.clip_rect();
    let every = (LABELLED_ROW_HEIGHT / row_h).ceil().max(1.0) as usize;
    let worst = grid.worst_row();
    let font = FontId::proportional((row_h - 2.0).clamp(9.0, 13.0));
    for (i, row) in grid.rows.iter().enumerate() {
        let top = rect.top() + i as f32 * row_h;
        if top + row_h < clip.top() || top > clip.bottom() {
            continue;
        }
        let label_rect =
            Rect::from_min_size(pos2(rect.left(), top), vec2(LABEL_WIDTH - 6.0, row_h));
        let is_worst = worst == Some(i);
        // The worst row's label always; the others' where they do not run into it.
        let clear_of_worst = worst.is_none_or(|w| w.abs_diff(i) >= every);
        if (i % every == 0 && clear_of_worst) || is_worst {
            let name = grid
                .inputs
                .get(row.input)
                .map_or_else(String::new, input_name);
            // A file name (an input without a rank: files of different runs) loses its
            // endings and is cut at its right end to what the label's width holds, the
            // device always shown; the readout has it whole.
            let marker = if is_worst { "▶ " } else { "" };
            let device = format!(" · {}", row.device);
            let text = fit_label(ui, marker, strip_endings(&name), &device, &font);
            let colour = if is_worst {
                palette.alert
            } else {
                palette.weak_text
            };
            ui.painter().text(
                pos2(label_rect.right(), label_rect.center().y),
                Align2::RIGHT_CENTER,
                text,
                font.clone(),
                colour,
            );
        }
        let r = ui.interact(
            label_rect,
            egui::Id::unique("rank-label").with(i),
            Sense::click(),
        );
        if r.clicked() {
            cmds.push(Command::OpenRank(row.input, None));
        }
    }
}

/// `marker`, `name` and `device` in one label no wider than [`LABEL_WIDTH`] (less its
/// margin): the name cut at its right end with an ellipsis where it must be (issue 37: the
/// label was clipped at the panel's edge, cut from its start).
fn fit_label(ui: &Ui, marker: &str, name: &str, device: &str, font: &FontId) -> String {
    let fits = |text: &str| {
        let galley =
            ui.painter()
                .layout_no_wrap(text.to_owned(), font.clone(), egui::Color32::WHITE);
        galley.size().x <= LABEL_WIDTH - 8.0
    };
    let whole = format!("{marker}{name}{device}");
    if fits(&whole) {
        return whole;
    }
    let chars: Vec<char> = name.chars().collect();
    (1..chars.len())
        .rev()
        .map(|n| format!("{marker}{}…{device}", chars[..n].iter().collect::<String>()))
        .find(|t| fits(t))
        .unwrap_or_else(|| format!("{marker}…{device}"))
}

/// A file name without the endings traces and snapshots have.
fn strip_endings(name: &str) -> &str {
    let mut name = name;
    while let Some(stem) = [".gz", ".json", ".trace", ".pt", ".pickle"]
        .iter()
        .find_map(|e| name.strip_suffix(e))
    {
        name = stem;
    }
    name
}

/// The time axis under the heat map; a click or drag on it moves the linked cursor.
fn ruler_ui(
    ui: &mut Ui,
    g: &mut RankGrid,
    grid: &Grid,
    heat_w: f32,
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    let (rect, response) = ui.allocate_exact_size(
        vec2(LABEL_WIDTH + heat_w, RULER_HEIGHT),
        Sense::click_and_drag(),
    );
    let axis_rect = Rect::from_min_max(pos2(rect.left() + LABEL_WIDTH, rect.top()), rect.max);
    g.last_ruler_rect = Some(rect);
    let painter = ui.painter_at(rect);
    let span = grid.span_ns as f64;
    let x_of = |rel: f64| axis_rect.left() + (rel / span) as f32 * axis_rect.width();
    let max_ticks = ((axis_rect.width() / 90.0) as usize).max(2);
    for (t, label) in axis::time_ticks(0.0, span, max_ticks) {
        painter.vline(
            x_of(t),
            axis_rect.top()..=axis_rect.top() + 4.0,
            Stroke::new(1.0, palette.weak_text),
        );
        // A label near the right end ends at the tick rather than past the window.
        let near_end = x_of(t) > axis_rect.right() - 30.0;
        painter.text(
            pos2(x_of(t), axis_rect.top() + 5.0),
            if near_end {
                Align2::RIGHT_TOP
            } else {
                Align2::CENTER_TOP
            },
            label,
            FontId::proportional(11.0),
            palette.weak_text,
        );
    }
    painter.text(
        pos2(rect.left(), rect.center().y),
        Align2::LEFT_CENTER,
        "since start ▸",
        FontId::proportional(11.0),
        palette.weak_text,
    );
    if let Some(c) = g.cursor_rel_ns {
        let x = x_of(c as f64);
        painter.add(egui::Shape::convex_polygon(
            vec![
                pos2(x - 5.0, axis_rect.top()),
                pos2(x + 5.0, axis_rect.top()),
                pos2(x, axis_rect.top() + 7.0),
            ],
            palette.cursor,
            Stroke::NONE,
        ));
    }
    let response = response.on_hover_text(
        "Click or drag: move the cursor of the grid and of the rank tabs opened from it",
    );
    if (response.clicked() || response.dragged())
        && let Some(pos) = response.interact_pointer_pos()
    {
        let fraction = ((pos.x - axis_rect.left()) / axis_rect.width()).clamp(0.0, 1.0) as f64;
        cmds.push(Command::GridCursor((fraction * span).round() as i64));
    }
}
