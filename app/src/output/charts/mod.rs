//! Charts drawn with plotters: a device's memory over time (PNG and SVG) and the ops that
//! allocated most (PNG) for the report, and the two-run comparison of `diff --chart`. The
//! font is embedded, so nothing depends on the system's fonts, and the same input always
//! gives the same bytes. SVGs are returned as text; PNGs are drawn into an RGB buffer and
//! encoded by [`png_file`] to the path they are given (the caller hands it the temporary
//! file of [`super::file::write_to_path`]). plotters' own `bitmap_encoder` would pull in
//! the `image` crate (and a second `png`) only to do the same.

pub mod categories;
mod columns;
pub mod compare;
pub mod memory;
pub mod ops;

use std::io::BufWriter;
use std::path::Path;
use std::sync::Once;

use anyhow::{Context, Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use collector::units::unit_for;

use crate::palette;

/// DejaVu Sans (assets/fonts/LICENSE), registered as plotters' "sans-serif".
pub(crate) const FONT_TTF: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");
const FONT: &str = "sans-serif";

/// Input text (op names, file names) as a chart shows it: on one line, cut at
/// [`LINE_NAME_CHARS`](super::terminal::LINE_NAME_CHARS), its controls and reordering
/// characters as `\uXXXX` (an SVG may not hold C0 controls at all, and a bidi override would
/// show a label reversed); plotters escapes `<`, `>` and `&` itself.
pub fn chart_text(s: &str) -> String {
    super::terminal::escape_controls(&super::terminal::one_line(s)).into_owned()
}

/// A palette colour as plotters takes it.
const fn rgb(c: palette::Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

const ALLOCATED: RGBColor = rgb(palette::light::ALLOCATED);
const GRID: RGBColor = rgb(palette::light::GRID);

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The TTF is compiled in and known to be valid; a failure would show as missing text.
        let _ = register_font(FONT, FontStyle::Normal, FONT_TTF);
    });
}

/// Pick a time unit for an axis: (divisor from ns, name).
fn time_unit(duration_ns: i64) -> (f64, &'static str) {
    if duration_ns >= 2_000_000_000 {
        (1e9, "s")
    } else if duration_ns >= 2_000_000 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    }
}

/// Pick a size unit for an axis: (divisor from bytes, name).
/// From KiB up (an axis of a few bytes still reads in KiB), in `units`' names: IEC, or
/// torch's for the per-op charts.
fn size_unit(max_bytes: i64, units: &[(u64, &'static str)]) -> (f64, &'static str) {
    let (divisor, name) = unit_for(max_bytes.unsigned_abs().max(1024), units);
    (divisor as f64, name)
}

fn draw_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// A chart of `size` pixels drawn by `draw`, as SVG text.
pub(crate) fn svg_text(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<()>,
) -> Result<String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    Ok(text)
}

/// A chart of `size` pixels drawn by `draw` and written to `path` as an 8-bit RGB PNG.
pub(crate) fn png_file(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<()>,
) -> Result<()> {
    let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), size.0, size.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder
        .write_header()
        .map_err(|e| anyhow!("writing {}: {e}", path.display()))?;
    writer
        .write_image_data(&rgb)
        .map_err(|e| anyhow!("writing {}: {e}", path.display()))?;
    writer
        .finish()
        .map_err(|e| anyhow!("writing {}: {e}", path.display()))
}
