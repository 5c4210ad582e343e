//! The report's memory chart of one device: allocated (filled), reserved (a band), NVML's
//! whole-device reading (dashed), the device's total as a ceiling when the curves come near
//! it, and the peak marked and labelled; for a recording's host, the process tree's RSS
//! and PSS instead.

use std::path::Path;

use anyhow::Result;
use collector::units::{BYTE_UNITS, bytes_iec};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::columns::Columns;
use super::{
    ALLOCATED, FONT, GRID, chart_text, draw_err, png_file, register_fonts, rgb, size_unit,
    svg_text, time_unit,
};
use crate::palette;

/// Chart size in pixels. The memory curve is decimated to one min/max pair per pixel
/// column, so the SVG stays ~100 KB whatever the trace's length.
pub const MEMORY_CHART_SIZE: (u32, u32) = (1200, 520);

/// The device-total ceiling is drawn when the highest curve reaches this share of it.
const CEILING_SHOWN_ABOVE: f64 = 0.25;

const RESERVED: RGBColor = rgb(palette::light::RESERVED);
const NVML_USED: RGBColor = rgb(palette::light::NVML_USED);
const PEAK: RGBColor = rgb(palette::light::PEAK);
const CEILING: RGBColor = RGBColor(120, 120, 120);
const HOST_RSS: RGBColor = RGBColor(46, 125, 50);
const HOST_PSS: RGBColor = RGBColor(123, 31, 162);

/// One device's memory curve, ready to draw.
pub struct MemoryChart<'a> {
    /// Title, e.g. "cuda:0 — NVIDIA H100".
    pub title: &'a str,
    /// Allocated bytes as (ns since the recording's start, bytes), in time order.
    pub allocated: &'a [(i64, i64)],
    /// Reserved bytes, likewise; empty when unknown.
    pub reserved: &'a [(i64, i64)],
    /// NVML's used memory of the whole device (recordings), likewise; empty when unknown.
    pub nvml_used: &'a [(i64, i64)],
    /// Host RSS of a recording's process tree, likewise; empty on device charts.
    pub host_rss: &'a [(i64, i64)],
    /// Host PSS of the same processes, likewise.
    pub host_pss: &'a [(i64, i64)],
    /// The device's memory, drawn as a ceiling when the curves come near it.
    pub total_bytes: Option<i64>,
    /// The recording's length in ns.
    pub duration_ns: i64,
    /// The marked peak: (ns since start, bytes, label).
    pub peak: Option<(i64, i64, String)>,
}

/// The chart as PNG, drawn into the file `png`.
pub fn memory_png(chart: &MemoryChart<'_>, png: &Path) -> Result<()> {
    register_fonts();
    png_file(png, MEMORY_CHART_SIZE, |root| {
        draw_memory(root, chart).map_err(draw_err)
    })
}

/// The chart as SVG text.
pub fn memory_svg(chart: &MemoryChart<'_>) -> Result<String> {
    register_fonts();
    svg_text(MEMORY_CHART_SIZE, |root| {
        draw_memory(root, chart).map_err(draw_err)
    })
}

/// The plot of a chart: time and bytes in the chosen units.
type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The axes' units and ranges.
struct Scales {
    /// The device total, when drawn.
    ceiling: Option<i64>,
    /// ns per x unit, and the unit's name.
    t_div: f64,
    t_name: &'static str,
    /// Bytes per y unit, and the unit's name.
    b_div: f64,
    b_name: &'static str,
    x_max: f64,
    y_max: f64,
}

impl Scales {
    fn of(c: &MemoryChart<'_>) -> Scales {
        let curves_max = c
            .allocated
            .iter()
            .chain(c.reserved)
            .chain(c.nvml_used)
            .chain(c.host_rss)
            .chain(c.host_pss)
            .map(|p| p.1)
            .max()
            .unwrap_or(0)
            .max(1);
        // The ceiling only when it is in view: a 2 GiB run on an 80 GiB GPU would be a flat
        // line under it.
        let ceiling = c
            .total_bytes
            .filter(|&t| t > 0 && curves_max as f64 >= t as f64 * CEILING_SHOWN_ABOVE);
        let max_bytes = curves_max.max(ceiling.unwrap_or(0));
        let (t_div, t_name) = time_unit(c.duration_ns);
        let (b_div, b_name) = size_unit(max_bytes, &BYTE_UNITS);
        Scales {
            ceiling,
            t_div,
            t_name,
            b_div,
            b_name,
            x_max: (c.duration_ns.max(1) as f64) / t_div,
            // Headroom above the highest curve for the legend and the peak label.
            y_max: max_bytes as f64 / b_div * 1.3,
        }
    }
}

fn draw_memory<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &MemoryChart<'_>,
) -> Drawn<DB> {
    root.fill(&WHITE)?;
    let s = Scales::of(c);
    let mut chart = ChartBuilder::on(root)
        .caption(chart_text(c.title), (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d(0f64..s.x_max, 0f64..s.y_max)?;
    chart
        .configure_mesh()
        .x_desc(format!("time since start ({})", s.t_name))
        .y_desc(s.b_name)
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 14))
        .x_labels(12)
        .y_labels(8)
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .draw()?;
    draw_curves(&mut chart, c, &s)?;
    if let Some(total) = s.ceiling {
        draw_ceiling(&mut chart, total, &s)?;
    }
    if let Some(peak) = &c.peak {
        draw_peak(root, &mut chart, peak, &s)?;
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

/// Allocated as a filled area, reserved as a band, NVML's reading dashed.
fn draw_curves<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    c: &MemoryChart<'_>,
    s: &Scales,
) -> Drawn<DB> {
    let (width, height) = chart.plotting_area().dim_in_pixel();
    let cols = Columns {
        t0: 0,
        t1: c.duration_ns.max(1),
        columns: width.max(1) as usize,
        x0: 0.0,
        x1: s.x_max,
        b_div: s.b_div,
        pixel_bytes: s.y_max / height.max(1) as f64,
        end_ns: None,
    };
    if !c.allocated.is_empty() {
        chart
            .draw_series(
                AreaSeries::new(cols.envelope(c.allocated), 0.0, ALLOCATED.mix(0.3))
                    .border_style(ALLOCATED.stroke_width(1)),
            )?
            .label("allocated")
            .legend(|(x, y)| {
                Rectangle::new([(x, y - 6), (x + 18, y + 6)], ALLOCATED.mix(0.5).filled())
            });
    }
    if !c.reserved.is_empty() {
        chart
            .draw_series(
                cols.bands(c.reserved, 1.0)
                    .into_iter()
                    .map(|b| Polygon::new(b, RESERVED.filled())),
            )?
            .label("reserved")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], RESERVED.stroke_width(2)));
    }
    if !c.nvml_used.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(
                cols.envelope(c.nvml_used),
                6,
                4,
                NVML_USED.stroke_width(2),
            ))?
            .label("NVML used (whole device)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], NVML_USED.stroke_width(2)));
    }
    draw_host(chart, c, &cols)
}

/// Host RSS as a band, PSS dashed below it.
fn draw_host<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    c: &MemoryChart<'_>,
    cols: &Columns,
) -> Drawn<DB> {
    if !c.host_rss.is_empty() {
        // Polygons, not a thick polyline: its joins would spike at every sharp turn.
        chart
            .draw_series(
                cols.bands(c.host_rss, 1.0)
                    .into_iter()
                    .map(|b| Polygon::new(b, HOST_RSS.filled())),
            )?
            .label("RSS (shared pages once per process)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], HOST_RSS.stroke_width(2)));
    }
    if !c.host_pss.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(
                cols.envelope(c.host_pss),
                6,
                4,
                HOST_PSS.stroke_width(2),
            ))?
            .label("PSS (shared pages split between processes)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], HOST_PSS.stroke_width(2)));
    }
    Ok(())
}

/// The device's total memory as a dashed line across the plot.
fn draw_ceiling<DB: DrawingBackend>(chart: &mut Plot<'_, DB>, total: i64, s: &Scales) -> Drawn<DB> {
    let y = total as f64 / s.b_div;
    chart
        .draw_series(DashedLineSeries::new(
            [(0.0, y), (s.x_max, y)],
            3,
            3,
            CEILING.stroke_width(1),
        ))?
        .label(format!("device memory {}", bytes_iec(total)))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], CEILING.stroke_width(1)));
    Ok(())
}

/// The peak as a dot with its label on a light box, kept inside the plot.
fn draw_peak<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut Plot<'_, DB>,
    (t, bytes, label): &(i64, i64, String),
    s: &Scales,
) -> Drawn<DB> {
    let label = &chart_text(label);
    let (x, y) = (*t as f64 / s.t_div, *bytes as f64 / s.b_div);
    chart.draw_series(std::iter::once(Circle::new((x, y), 5, PEAK.filled())))?;
    // Keep the label inside the plot: to the left of the point in the right half.
    let font = (FONT, 15).into_font().color(&PEAK);
    let right_half = x > s.x_max * 0.55;
    let anchor = if right_half {
        Pos::new(HPos::Right, VPos::Bottom)
    } else {
        Pos::new(HPos::Left, VPos::Bottom)
    };
    let at = chart.backend_coord(&(x, y));
    let offset = if right_half { -8 } else { 8 };
    // A light box under the label keeps it readable where it crosses the curves.
    let (w, h) = root.estimate_text_size(label, &font)?;
    let (w, h) = (w as i32, h as i32);
    let left = if right_half {
        at.0 + offset - w
    } else {
        at.0 + offset
    };
    let bottom = at.1 - 6;
    root.draw(&Rectangle::new(
        [(left - 3, bottom - h - 2), (left + w + 3, bottom + 2)],
        WHITE.mix(0.85).filled(),
    ))?;
    root.draw(&Text::new(
        label.clone(),
        (at.0 + offset, at.1 - 6),
        font.pos(anchor),
    ))?;
    Ok(())
}
