//! The heat map's colours: a perceptual, colour-blind-safe scale (viridis, as matplotlib
//! and Perfetto's heat maps use) from no memory to the grid's largest cell, linear in
//! bytes; and the grid's cells as textures, one texel per cell, drawn with nearest
//! filtering so a cell keeps its edges at every size.

use collector::analysis::ranks::grid::{GRID_BUCKETS, Grid};
use egui::{Color32, ColorImage, TextureHandle, TextureOptions};

/// Viridis at five stops (matplotlib's values at 0, ¼, ½, ¾, 1).
const STOPS: [[u8; 3]; 5] = [
    [0x44, 0x01, 0x54],
    [0x3B, 0x52, 0x8B],
    [0x21, 0x91, 0x8C],
    [0x5E, 0xC9, 0x62],
    [0xFD, 0xE7, 0x25],
];

/// Rows per texture: GPUs take textures of 8,192 texels a side at least, and one of
/// 2,048 × [`GRID_BUCKETS`] is 4 MiB of RGBA; more rows take more textures.
pub const TEXTURE_ROWS: usize = 2048;

/// The colour of `fraction` (0 to 1) of the scale.
pub fn colour(fraction: f64) -> Color32 {
    let f = fraction.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (f.floor() as usize).min(STOPS.len() - 2);
    let t = f - i as f64;
    let mix = |k: usize| {
        let (a, b) = (STOPS[i][k] as f64, STOPS[i + 1][k] as f64);
        (a + (b - a) * t).round() as u8
    };
    Color32::from_rgb(mix(0), mix(1), mix(2))
}

/// The colour of a cell of `bytes` on a scale up to `max_bytes`; `empty` where the rank
/// did not run.
pub fn cell_colour(bytes: Option<i64>, max_bytes: i64, empty: Color32) -> Color32 {
    match bytes {
        Some(b) => colour(b as f64 / max_bytes.max(1) as f64),
        None => empty,
    }
}

/// The grid's rows as textures of up to [`TEXTURE_ROWS`] rows each, in row order.
pub fn textures(ctx: &egui::Context, grid: &Grid, empty: Color32) -> Vec<TextureHandle> {
    let max = grid.max_cell_bytes().unwrap_or(1);
    grid.rows
        .chunks(TEXTURE_ROWS)
        .enumerate()
        .map(|(i, rows)| {
            let pixels = rows
                .iter()
                .flat_map(|r| r.cells.iter().map(|c| cell_colour(*c, max, empty)))
                .collect();
            let image = ColorImage::new([GRID_BUCKETS, rows.len()], pixels);
            ctx.load_texture(format!("rank-grid-{i}"), image, TextureOptions::NEAREST)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_runs_from_viridis_dark_purple_to_yellow() {
        assert_eq!(colour(0.0), Color32::from_rgb(0x44, 0x01, 0x54));
        assert_eq!(colour(1.0), Color32::from_rgb(0xFD, 0xE7, 0x25));
        assert_eq!(colour(0.5), Color32::from_rgb(0x21, 0x91, 0x8C));
        // Brighter (summed channels, roughly luminance) as the bytes grow.
        let sum = |c: Color32| c.r() as u32 + c.g() as u32 + c.b() as u32;
        assert!(
            (1..=10).all(|i| sum(colour(i as f64 / 10.0)) >= sum(colour((i - 1) as f64 / 10.0)))
        );
        assert_eq!(cell_colour(None, 10, Color32::BLACK), Color32::BLACK);
    }
}
