//! The report's chart of one device's allocated memory stacked by category (parameters,
//! optimizer state, gradients, activations, …), in the viewer's category colours: each
//! layer filled between the top of the layers under it and its own top, decimated to one
//! column per pixel like the memory chart.

use std::path::Path;

use anyhow::Result;
use collector::analysis::categories::{Category, CategorySeries};
use collector::units::BYTE_UNITS;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::columns::Columns;
use super::memory::MEMORY_CHART_SIZE;
use super::{
    FONT, GRID, chart_text, draw_err, png_file, register_fonts, rgb, size_unit, svg_text, time_unit,
};
use crate::palette::Rgb;

/// The order categories are stacked in, bottom first: what lives the whole run (memory
/// from before the capture, weights, optimizer state) under what comes and goes within a
/// step, so the steady layers read as a floor and the step's rise sits on top.
pub const STACK_ORDER: [Category; 9] = [
    Category::BeforeTrace,
    Category::Parameter,
    Category::OptimizerState,
    Category::Input,
    Category::Gradient,
    Category::Activation,
    Category::AutogradDetail,
    Category::Temporary,
    Category::Unknown,
];

/// The series stacked: per category holding bytes at some point, in [`STACK_ORDER`],
/// the curve of its top edge (its bytes plus those of every category under it) as
/// (ns on the recording's clock, bytes). The last layer's top is the allocated total.
pub fn stacked(series: &CategorySeries) -> Vec<(Category, Vec<(i64, i64)>)> {
    let mut below = vec![0i64; series.times_ns.len()];
    let mut layers = Vec::new();
    for category in STACK_ORDER {
        let i = category.index();
        if series.bytes.iter().all(|b| b[i] == 0) {
            continue;
        }
        let top = series
            .times_ns
            .iter()
            .zip(&series.bytes)
            .zip(&mut below)
            .map(|((&t, b), under)| {
                *under += b[i];
                (t, *under)
            })
            .collect();
        layers.push((category, top));
    }
    layers
}

/// One stacked layer: its name, colour and the cumulative curve of its top edge as (ns
/// since the recording's start, bytes), in time order.
pub struct Layer<'a> {
    /// The category's name (`optimizer_state`).
    pub name: &'a str,
    /// Its colour.
    pub colour: Rgb,
    /// Its top edge: its bytes plus those of every layer under it.
    pub top: Vec<(i64, i64)>,
}

/// One device's categories over time, ready to draw.
pub struct CategoriesChart<'a> {
    /// Title, e.g. "run.json.gz · cuda:0 by category".
    pub title: &'a str,
    /// The layers, bottom first.
    pub layers: &'a [Layer<'a>],
    /// The recording's length in ns.
    pub duration_ns: i64,
}

/// The chart as PNG, drawn into the file `png`.
pub fn categories_png(chart: &CategoriesChart<'_>, png: &Path) -> Result<()> {
    register_fonts();
    png_file(png, MEMORY_CHART_SIZE, |root| {
        draw(root, chart).map_err(draw_err)
    })
}

/// The chart as SVG text.
pub fn categories_svg(chart: &CategoriesChart<'_>) -> Result<String> {
    register_fonts();
    svg_text(MEMORY_CHART_SIZE, |root| {
        draw(root, chart).map_err(draw_err)
    })
}

type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &CategoriesChart<'_>) -> Drawn<DB> {
    root.fill(&WHITE)?;
    let top_bytes = c
        .layers
        .last()
        .and_then(|l| l.top.iter().map(|p| p.1).max())
        .unwrap_or(0)
        .max(1);
    let (t_div, t_name) = time_unit(c.duration_ns);
    let (b_div, b_name) = size_unit(top_bytes, &BYTE_UNITS);
    let x_max = c.duration_ns.max(1) as f64 / t_div;
    // Headroom above the stack for the legend.
    let y_max = top_bytes as f64 / b_div * 1.45;
    let mut chart = ChartBuilder::on(root)
        .caption(chart_text(c.title), (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc(format!("time since start ({t_name})"))
        .y_desc(b_name)
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 14))
        .x_labels(12)
        .y_labels(8)
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .draw()?;
    let (width, height) = chart.plotting_area().dim_in_pixel();
    let cols = Columns {
        t0: 0,
        t1: c.duration_ns.max(1),
        columns: width.max(1) as usize,
        x0: 0.0,
        x1: x_max,
        b_div,
        pixel_bytes: y_max / height.max(1) as f64,
        end_ns: None,
    };
    // Top layer first, each next one painted over the lower part of the previous: every
    // band is left showing between its own top and the top of the layers under it.
    for layer in c.layers.iter().rev() {
        let colour = rgb(layer.colour);
        chart
            .draw_series(AreaSeries::new(
                cols.maxima(&layer.top),
                0.0,
                colour.filled(),
            ))?
            .label(layer.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .draw()?;
    Ok(())
}
