//! Charts drawn with plotters: a device's memory over time (PNG and SVG) and the ops that
//! allocated most (PNG) for the report, and the two-run comparison of `diff --chart`. The
//! font is embedded, so nothing depends on the system's fonts, and the same input always
//! gives the same bytes. SVGs are returned as text; PNGs are drawn to the path they are
//! given, because plotters encodes PNG only into a file (the caller hands it the temporary
//! file of [`super::file::write_to_path`]).

pub mod categories;
mod columns;
pub mod compare;
pub mod memory;
pub mod ops;

use std::sync::Once;

use anyhow::anyhow;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use crate::palette;

/// DejaVu Sans (assets/fonts/LICENSE), registered as plotters' "sans-serif".
pub(crate) const FONT_TTF: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");
const FONT: &str = "sans-serif";

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
fn size_unit(max_bytes: i64) -> (f64, &'static str) {
    const KIB: f64 = 1024.0;
    if max_bytes as f64 >= KIB * KIB * KIB {
        (KIB * KIB * KIB, "GiB")
    } else if max_bytes as f64 >= KIB * KIB {
        (KIB * KIB, "MiB")
    } else {
        (KIB, "KiB")
    }
}

fn draw_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}
