//! The comparison chart of `vramscope diff --chart`: both runs' memory on one time axis,
//! one panel per device, aligned at each run's start or at its first training step, so
//! "did checkpointing lower the peak, and where" is one picture.

use std::path::Path;

use anyhow::{Result, anyhow};
use collector::units::{BYTE_UNITS, bytes_iec};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::columns::Columns;
use super::{
    FONT, GRID, chart_text, draw_err, png_file, register_fonts, rgb, size_unit, svg_text, time_unit,
};
use crate::output::file::{self, Policy};
use crate::palette;

/// Width of the chart, and the height of one device's panel.
pub const COMPARE_WIDTH: u32 = 1200;
const PANEL_HEIGHT: u32 = 380;
const TITLE_HEIGHT: u32 = 44;
/// Devices drawn at most (the ones with the largest peaks): more panels stop being readable.
pub const MAX_PANELS: usize = 4;

/// One device of one run: curves in ns since the run's origin (its start or first step).
#[derive(Clone, Debug, Default)]
pub struct DeviceCurves {
    /// `cuda:0`, `cpu`, …
    pub device: String,
    /// Allocated bytes over time.
    pub allocated: Vec<(i64, i64)>,
    /// Reserved bytes over time; empty when unknown.
    pub reserved: Vec<(i64, i64)>,
    /// When the run's recording ended: its curves stop there.
    pub end_ns: i64,
}

impl DeviceCurves {
    fn peak(&self) -> Option<(i64, i64)> {
        let series = if self.allocated.is_empty() {
            &self.reserved
        } else {
            &self.allocated
        };
        // The first maximum, as the summary reports it.
        series
            .iter()
            .copied()
            .reduce(|best, p| if p.1 > best.1 { p } else { best })
    }
}

/// One run of the comparison.
pub struct RunCurves<'a> {
    /// How the run is named in the legend ("A: before.json.gz").
    pub label: &'a str,
    /// Its devices.
    pub devices: &'a [DeviceCurves],
}

/// The temporary file's tag while the chart is written: `.NAME.chart-PID`.
const TEMP_TAG: &str = "chart";

/// Draw the comparison into the file `dest`: PNG, or SVG when `dest` ends in `.svg`.
/// `origin` names where each run's clock starts: "start" or "first step".
pub fn write_file(
    dest: &Path,
    policy: &Policy<'_>,
    a: &RunCurves<'_>,
    b: &RunCurves<'_>,
    origin: &str,
) -> Result<()> {
    register_fonts();
    let panels = panels(a, b);
    if panels.is_empty() {
        return Err(anyhow!(
            "neither run records memory over time: there is nothing to chart"
        ));
    }
    let size = (
        COMPARE_WIDTH,
        TITLE_HEIGHT + PANEL_HEIGHT * panels.len() as u32,
    );
    let svg = dest
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if svg {
        let text = svg_text(size, |root| {
            draw(root, a, b, origin, &panels).map_err(draw_err)
        })?;
        file::write_bytes(dest, policy, TEMP_TAG, text.as_bytes())?;
    } else {
        file::write_to_path(dest, policy, TEMP_TAG, "png", |temp| {
            png_file(temp, size, |root| {
                draw(root, a, b, origin, &panels).map_err(draw_err)
            })
        })?;
    }
    Ok(())
}

/// The devices to draw: those of either run with curves, matched by name, largest peak
/// first, at most [`MAX_PANELS`].
fn panels<'a>(
    a: &'a RunCurves<'_>,
    b: &'a RunCurves<'_>,
) -> Vec<(String, Option<&'a DeviceCurves>, Option<&'a DeviceCurves>)> {
    let mut names: Vec<&str> = a
        .devices
        .iter()
        .chain(b.devices)
        .filter(|d| d.peak().is_some())
        .map(|d| d.device.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let find = |run: &'a RunCurves<'_>, name: &str| run.devices.iter().find(|d| d.device == name);
    let mut out: Vec<_> = names
        .into_iter()
        .map(|n| (n.to_owned(), find(a, n), find(b, n)))
        .collect();
    let peak = |p: &(String, Option<&DeviceCurves>, Option<&DeviceCurves>)| {
        [p.1, p.2]
            .into_iter()
            .flatten()
            .filter_map(DeviceCurves::peak)
            .map(|x| x.1)
            .max()
            .unwrap_or(0)
    };
    out.sort_by(|x, y| peak(y).cmp(&peak(x)).then_with(|| x.0.cmp(&y.0)));
    out.truncate(MAX_PANELS);
    out
}

type Panel<'a> = (String, Option<&'a DeviceCurves>, Option<&'a DeviceCurves>);

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    a: &RunCurves<'_>,
    b: &RunCurves<'_>,
    origin: &str,
    panels: &[Panel<'_>],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(TITLE_HEIGHT);
    title.draw(&Text::new(
        chart_text(&format!(
            "{}  vs  {}  (aligned at each run's {origin})",
            a.label, b.label
        )),
        (COMPARE_WIDTH as i32 / 2, TITLE_HEIGHT as i32 / 2),
        (FONT, 20)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    // One time axis for every panel: the union of both runs' extents.
    let all = panels
        .iter()
        .flat_map(|p| [p.1, p.2])
        .flatten()
        .flat_map(|d| d.allocated.iter().chain(&d.reserved));
    let (t0, t1) = all.fold((i64::MAX, i64::MIN), |(lo, hi), p| {
        (lo.min(p.0), hi.max(p.0))
    });
    let (t0, t1) = (t0.min(0), t1.max(t0 + 1));
    for (area, panel) in body.split_evenly((panels.len(), 1)).iter().zip(panels) {
        draw_panel(area, a, b, panel, (t0, t1), origin)?;
    }
    Ok(())
}

/// The plot of a panel: time and bytes in the chosen units.
type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// One device's panel: both runs' curves on the shared time axis, and their peaks.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    a: &RunCurves<'_>,
    b: &RunCurves<'_>,
    (device, da, db): &Panel<'_>,
    (t0, t1): (i64, i64),
    origin: &str,
) -> Drawn<DB> {
    let runs = [
        (a, *da, rgb(palette::light::RUN_A)),
        (b, *db, rgb(palette::light::RUN_B)),
    ];
    let max_bytes = runs
        .iter()
        .filter_map(|r| r.1)
        .flat_map(|d| d.allocated.iter().chain(&d.reserved))
        .map(|p| p.1)
        .max()
        .unwrap_or(1)
        .max(1);
    let (t_div, t_name) = time_unit(t1 - t0);
    let (b_div, b_name) = size_unit(max_bytes, &BYTE_UNITS);
    let (x0, x1) = (t0 as f64 / t_div, t1 as f64 / t_div);
    let y_max = max_bytes as f64 / b_div * 1.3;
    let mut chart = ChartBuilder::on(area)
        .caption(chart_text(device), (FONT, 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(78)
        .build_cartesian_2d(x0..x1, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc(format!("time since the run's {origin} ({t_name})"))
        .y_desc(b_name)
        .axis_desc_style((FONT, 15))
        .label_style((FONT, 13))
        .x_labels(12)
        .y_labels(6)
        .light_line_style(WHITE)
        .bold_line_style(GRID)
        .draw()?;
    let (width, height) = chart.plotting_area().dim_in_pixel();
    let cols = Columns {
        t0,
        t1,
        columns: width.max(1) as usize,
        x0,
        x1,
        b_div,
        pixel_bytes: y_max / height.max(1) as f64,
        end_ns: None,
    };
    for (run, curves, colour) in runs {
        let Some(d) = curves else { continue };
        let cols = Columns {
            end_ns: Some(d.end_ns),
            ..cols
        };
        draw_run(&mut chart, run.label, d, colour, &cols)?;
        if let Some(peak) = d.peak() {
            draw_run_peak(&mut chart, peak, colour, t_div, (x0, x1), b_div)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(GRID)
        .draw()?;
    Ok(())
}

/// One run's allocated memory as a band and its reserved memory dashed, in its colour.
fn draw_run<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    label: &str,
    d: &DeviceCurves,
    colour: RGBColor,
    cols: &Columns,
) -> Drawn<DB> {
    if !d.allocated.is_empty() {
        chart
            .draw_series(
                cols.bands(&d.allocated, 1.0)
                    .into_iter()
                    .map(move |b| Polygon::new(b, colour.filled())),
            )?
            .label(format!("{label} allocated"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2)));
    }
    if !d.reserved.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(
                cols.envelope(&d.reserved),
                5,
                4,
                colour.mix(0.8).stroke_width(1),
            ))?
            .label(format!("{label} reserved"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(1)));
    }
    Ok(())
}

/// A run's peak: a dot and "peak SIZE", the label pointing inwards so it stays inside.
fn draw_run_peak<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    (t, bytes): (i64, i64),
    colour: RGBColor,
    t_div: f64,
    (x0, x1): (f64, f64),
    b_div: f64,
) -> Drawn<DB> {
    let at = (t as f64 / t_div, bytes as f64 / b_div);
    let right_half = at.0 > x0 + (x1 - x0) * 0.55;
    let (dx, h) = if right_half {
        (-8, HPos::Right)
    } else {
        (8, HPos::Left)
    };
    let font = (FONT, 14)
        .into_font()
        .color(&colour)
        .pos(Pos::new(h, VPos::Bottom));
    chart.draw_series(std::iter::once(
        EmptyElement::at(at)
            + Circle::new((0, 0), 5, colour.filled())
            + Text::new(format!("peak {}", bytes_iec(bytes)), (dx, -8), font),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str, peak: i64) -> DeviceCurves {
        DeviceCurves {
            device: name.into(),
            allocated: vec![(0, 1), (10, peak), (20, 1)],
            reserved: vec![],
            end_ns: 30,
        }
    }

    #[test]
    fn panels_match_devices_by_name_largest_first() {
        let a = [dev("cpu", 10), dev("cuda:0", 500)];
        let b = [dev("cuda:0", 400), dev("cuda:1", 900)];
        let (ra, rb) = (
            RunCurves {
                label: "A",
                devices: &a,
            },
            RunCurves {
                label: "B",
                devices: &b,
            },
        );
        let p = panels(&ra, &rb);
        let names: Vec<&str> = p.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names, ["cuda:1", "cuda:0", "cpu"]);
        assert!(p[1].1.is_some() && p[1].2.is_some(), "cuda:0 in both");
        assert!(p[0].1.is_none(), "cuda:1 only in B");
        assert_eq!(a[1].peak(), Some((10, 500)));
    }
}
