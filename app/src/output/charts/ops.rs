//! The report's top-ops chart: the ops with the most self memory as horizontal bars,
//! largest on top, names left of the axis and sizes at the bars' ends.

use std::path::Path;

use anyhow::Result;
use collector::units::{TORCH_BYTE_UNITS, torch_memory};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{ALLOCATED, FONT, GRID, chart_text, draw_err, png_file, register_fonts, size_unit};

/// Size of the top-ops chart.
pub const OPS_CHART_SIZE: (u32, u32) = (1200, 560);

/// Width of the op-name column of the top-ops chart, and the longest name drawn in it.
const OPS_NAME_AREA: u32 = 360;
const OPS_NAME_CHARS: usize = 44;

/// The chart as PNG, drawn into the file `png`.
pub fn ops_png(title: &str, ops: &[(String, i64)], png: &Path) -> Result<()> {
    register_fonts();
    png_file(png, OPS_CHART_SIZE, |root| {
        draw_ops(root, title, ops).map_err(draw_err)
    })
}

fn draw_ops<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    ops: &[(String, i64)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let max_bytes = ops.iter().map(|o| o.1).max().unwrap_or(1).max(1);
    let (b_div, b_name) = size_unit(max_bytes, &TORCH_BYTE_UNITS);
    let n = ops.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(chart_text(title), (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(OPS_NAME_AREA)
        .build_cartesian_2d(0f64..max_bytes as f64 / b_div * 1.2, 0f64..n)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc(b_name)
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 14))
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .draw()?;
    for (i, (name, bytes)) in ops.iter().enumerate() {
        // Largest on top: row 0 at the top of the plot.
        let y = n - i as f64;
        let v = *bytes as f64 / b_div;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y - 0.88), (v, y - 0.12)],
            ALLOCATED.mix(0.35).filled(),
        )))?;
        let name = chart_text(name);
        let name: String = if name.chars().count() > OPS_NAME_CHARS {
            name.chars().take(OPS_NAME_CHARS - 1).collect::<String>() + "…"
        } else {
            name
        };
        // Names sit in the label area left of the axis, right-aligned against it.
        let label_at = chart.backend_coord(&(0.0, y - 0.5));
        let font = (FONT, 14)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(name, (label_at.0 - 8, label_at.1), font))?;
        let value_at = chart.backend_coord(&(v, y - 0.5));
        let font = (FONT, 14)
            .into_font()
            .color(&RGBColor(60, 60, 60))
            .pos(Pos::new(HPos::Left, VPos::Center));
        root.draw(&Text::new(
            torch_memory(*bytes),
            (value_at.0 + 6, value_at.1),
            font,
        ))?;
    }
    Ok(())
}
