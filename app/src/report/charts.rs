//! Report charts drawn with plotters: a device's memory over time (PNG and SVG) and the
//! ops that allocated most (PNG). The font is embedded, so nothing depends on the system's
//! fonts, and the same input always gives the same bytes.

use std::path::Path;
use std::sync::Once;

use anyhow::{Result, anyhow};
use collector::analysis::decimate::column_ranges;
use collector::units::bytes_iec;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, register_font};

use crate::palette;

/// DejaVu Sans (assets/fonts/LICENSE), registered as plotters' "sans-serif".
pub(crate) const FONT_TTF: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
pub(super) const FONT: &str = "sans-serif";

/// Chart size in pixels. The memory curve is decimated to one min/max pair per pixel
/// column, so the SVG stays ~100 KB whatever the trace's length.
pub const MEMORY_CHART_SIZE: (u32, u32) = (1200, 520);
/// Size of the top-ops chart.
pub const OPS_CHART_SIZE: (u32, u32) = (1200, 560);

/// The device-total ceiling is drawn when the highest curve reaches this share of it.
const CEILING_SHOWN_ABOVE: f64 = 0.25;

/// Width of the op-name column of the top-ops chart, and the longest name drawn in it.
const OPS_NAME_AREA: u32 = 360;
const OPS_NAME_CHARS: usize = 44;

/// A palette colour as plotters takes it.
pub(super) const fn rgb(c: palette::Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

const ALLOCATED: RGBColor = rgb(palette::light::ALLOCATED);
const RESERVED: RGBColor = rgb(palette::light::RESERVED);
const NVML_USED: RGBColor = rgb(palette::light::NVML_USED);
const PEAK: RGBColor = rgb(palette::light::PEAK);
const GRID: RGBColor = rgb(palette::light::GRID);

pub(super) fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The TTF is compiled in and known to be valid; a failure would show as missing text.
        let _ = register_font(FONT, FontStyle::Normal, FONT_TTF);
    });
}

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
    /// The device's memory, drawn as a ceiling when the curves come near it.
    pub total_bytes: Option<i64>,
    /// The recording's length in ns.
    pub duration_ns: i64,
    /// The marked peak: (ns since start, bytes, label).
    pub peak: Option<(i64, i64, String)>,
}

/// Pick a time unit for an axis: (divisor from ns, name).
pub(super) fn time_unit(duration_ns: i64) -> (f64, &'static str) {
    if duration_ns >= 2_000_000_000 {
        (1e9, "s")
    } else if duration_ns >= 2_000_000 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    }
}

/// Pick a size unit for an axis: (divisor from bytes, name).
pub(super) fn size_unit(max_bytes: i64) -> (f64, &'static str) {
    const KIB: f64 = 1024.0;
    if max_bytes as f64 >= KIB * KIB * KIB {
        (KIB * KIB * KIB, "GiB")
    } else if max_bytes as f64 >= KIB * KIB {
        (KIB * KIB, "MiB")
    } else {
        (KIB, "KiB")
    }
}

pub(super) fn draw_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// A step curve cut into one column per pixel: each column's min and max (the value carried
/// in and every value set inside), so spikes survive any zoom-out.
pub(super) struct Columns {
    /// Time range drawn, ns.
    pub t0: i64,
    /// End of the range.
    pub t1: i64,
    /// Pixel columns.
    pub columns: usize,
    /// The range in chart x units.
    pub x0: f64,
    /// End of the range in chart x units.
    pub x1: f64,
    /// Bytes per chart y unit.
    pub b_div: f64,
    /// Chart y units per pixel.
    pub pixel_bytes: f64,
    /// Where the curve's recording ended (ns, like `t0`): nothing is drawn after it.
    pub end_ns: Option<i64>,
}

impl Columns {
    fn ranges(&self, points: &[(i64, i64)]) -> impl Iterator<Item = (f64, Option<(f64, f64)>)> {
        let step = (self.x1 - self.x0) / self.columns as f64;
        let span = (self.t1 - self.t0).max(1) as f64;
        let end_column = self.end_ns.map_or(usize::MAX, |end| {
            ((end - self.t0) as f64 / span * self.columns as f64)
                .ceil()
                .max(0.0) as usize
        });
        column_ranges(points, self.t0, self.t1, self.columns)
            .into_iter()
            .enumerate()
            .map(move |(i, r)| {
                let x = self.x0 + i as f64 * step;
                let r = r.filter(|_| i <= end_column);
                (
                    x,
                    r.map(|(lo, hi)| (lo as f64 / self.b_div, hi as f64 / self.b_div)),
                )
            })
    }

    /// A zig-zag through each column's min and max: the outline of a filled area, or a
    /// thin (1 px) line.
    pub fn envelope(&self, points: &[(i64, i64)]) -> Vec<(f64, f64)> {
        let half = (self.x1 - self.x0) / self.columns as f64 * 0.5;
        let mut out = Vec::with_capacity(self.columns * 2);
        for (x, r) in self.ranges(points) {
            if let Some((lo, hi)) = r {
                out.push((x, lo));
                out.push((x + half, hi));
            }
        }
        out
    }

    /// The curve as filled polygons `2 × half_width_px` thick around each column's range.
    /// A thick polyline through a zig-zag would grow miter spikes at every sharp turn;
    /// polygons are exact.
    pub fn bands(&self, points: &[(i64, i64)], half_width_px: f64) -> Vec<Vec<(f64, f64)>> {
        let pad = self.pixel_bytes * half_width_px;
        let step = (self.x1 - self.x0) / self.columns as f64;
        let mut out = Vec::new();
        let mut top: Vec<(f64, f64)> = Vec::new();
        let mut bottom: Vec<(f64, f64)> = Vec::new();
        let mut flush = |top: &mut Vec<(f64, f64)>, bottom: &mut Vec<(f64, f64)>| {
            if !top.is_empty() {
                let mut polygon = std::mem::take(top);
                polygon.extend(bottom.drain(..).rev());
                out.push(polygon);
            }
        };
        for (x, r) in self.ranges(points) {
            match r {
                Some((lo, hi)) => {
                    top.push((x, hi + pad));
                    top.push((x + step, hi + pad));
                    bottom.push((x, lo - pad));
                    bottom.push((x + step, lo - pad));
                }
                None => flush(&mut top, &mut bottom),
            }
        }
        flush(&mut top, &mut bottom);
        out
    }
}

/// Draw the memory chart as PNG at `png` and SVG at `svg`.
pub fn memory_chart(chart: &MemoryChart<'_>, png: &Path, svg: &Path) -> Result<()> {
    register_fonts();
    {
        let root = BitMapBackend::new(png, MEMORY_CHART_SIZE).into_drawing_area();
        draw_memory(&root, chart).map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, MEMORY_CHART_SIZE).into_drawing_area();
        draw_memory(&root, chart).map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    std::fs::write(svg, text).map_err(|e| anyhow!("cannot write {}: {e}", svg.display()))
}

fn draw_memory<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &MemoryChart<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let curves_max = c
        .allocated
        .iter()
        .chain(c.reserved)
        .chain(c.nvml_used)
        .map(|p| p.1)
        .max()
        .unwrap_or(0)
        .max(1);
    // The ceiling only when it is in view: a 2 GiB run on an 80 GiB GPU would be a flat line
    // under it.
    let ceiling = c
        .total_bytes
        .filter(|&t| t > 0 && curves_max as f64 >= t as f64 * CEILING_SHOWN_ABOVE);
    let max_bytes = curves_max.max(ceiling.unwrap_or(0));
    let (t_div, t_name) = time_unit(c.duration_ns);
    let (b_div, b_name) = size_unit(max_bytes);
    let x_max = (c.duration_ns.max(1) as f64) / t_div;
    // Headroom above the highest curve for the legend and the peak label.
    let y_max = max_bytes as f64 / b_div * 1.3;
    let mut chart = ChartBuilder::on(root)
        .caption(c.title, (FONT, 24))
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
    if let Some(total) = ceiling {
        let y = total as f64 / b_div;
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, y), (x_max, y)],
                3,
                3,
                RGBColor(120, 120, 120).stroke_width(1),
            ))?
            .label(format!("device memory {}", bytes_iec(total)))
            .legend(|(x, y)| {
                PathElement::new(
                    [(x, y), (x + 18, y)],
                    RGBColor(120, 120, 120).stroke_width(1),
                )
            });
    }
    if let Some((t, bytes, label)) = &c.peak {
        let (x, y) = (*t as f64 / t_div, *bytes as f64 / b_div);
        chart.draw_series(std::iter::once(Circle::new((x, y), 5, PEAK.filled())))?;
        // Keep the label inside the plot: to the left of the point in the right half.
        let font = (FONT, 15).into_font().color(&PEAK);
        let right_half = x > x_max * 0.55;
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

/// The ops with the most self memory: horizontal bars, largest on top.
pub fn ops_chart(title: &str, ops: &[(String, i64)], png: &Path) -> Result<()> {
    register_fonts();
    let root = BitMapBackend::new(png, OPS_CHART_SIZE).into_drawing_area();
    draw_ops(&root, title, ops).map_err(draw_err)?;
    root.present().map_err(draw_err)
}

fn draw_ops<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    ops: &[(String, i64)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let max_bytes = ops.iter().map(|o| o.1).max().unwrap_or(1).max(1);
    let (b_div, b_name) = size_unit(max_bytes);
    let n = ops.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 24))
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
        let name: String = if name.chars().count() > OPS_NAME_CHARS {
            name.chars().take(OPS_NAME_CHARS - 1).collect::<String>() + "…"
        } else {
            name.clone()
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
            bytes_iec(*bytes),
            (value_at.0 + 6, value_at.1),
            font,
        ))?;
    }
    Ok(())
}
