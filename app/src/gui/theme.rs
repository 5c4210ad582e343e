//! The viewer's colours: one colour-blind-safe palette (Okabe & Ito, "Color Universal
//! Design", 2008 — distinguishable under protanopia, deuteranopia and tritanopia), in a
//! light and a dark variant, and the egui visuals that go with them.
//!
//! Roles, not hues, are what the panels ask for, so the timeline, the segment view and
//! the tables can never disagree about what "allocated" looks like.

use egui::Color32;

/// Okabe–Ito colours as egui colours (`crate::palette`, shared with the report charts).
mod okabe_ito {
    use crate::palette::{self, Rgb};
    use egui::Color32;
    const fn c((r, g, b): Rgb) -> Color32 {
        Color32::from_rgb(r, g, b)
    }
    pub const ORANGE: Color32 = c(palette::ORANGE);
    pub const SKY_BLUE: Color32 = c(palette::SKY_BLUE);
    pub const BLUISH_GREEN: Color32 = c(palette::BLUISH_GREEN);
    pub const YELLOW: Color32 = c(palette::YELLOW);
    pub const BLUE: Color32 = c(palette::BLUE);
    pub const VERMILLION: Color32 = c(palette::VERMILLION);
    pub const REDDISH_PURPLE: Color32 = c(palette::REDDISH_PURPLE);
    /// A palette colour with transparency.
    pub const fn alpha((r, g, b): Rgb, a: u8) -> Color32 {
        Color32::from_rgba_unmultiplied_const(r, g, b, a)
    }
    pub use palette::{
        BLUE as BLUE_RGB, ORANGE as ORANGE_RGB, SKY_BLUE as SKY_BLUE_RGB, YELLOW as YELLOW_RGB,
    };
}

/// Light or dark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThemeChoice {
    /// Dark background.
    Dark,
    /// Light background.
    Light,
}

impl ThemeChoice {
    /// Stable name for the settings file.
    pub fn as_str(self) -> &'static str {
        match self {
            ThemeChoice::Dark => "dark",
            ThemeChoice::Light => "light",
        }
    }

    /// Parse [`Self::as_str`].
    pub fn parse(s: &str) -> Option<ThemeChoice> {
        match s {
            "dark" => Some(ThemeChoice::Dark),
            "light" => Some(ThemeChoice::Light),
            _ => None,
        }
    }
}

/// The colour of each thing the viewer draws.
#[derive(Clone, Copy, Debug)]
pub struct Palette {
    /// Allocated memory (tensors): the filled area's edge.
    pub allocated: Color32,
    /// The filled area under allocated memory.
    pub allocated_fill: Color32,
    /// Reserved memory (the allocator's segments).
    pub reserved: Color32,
    /// Memory in use on the device as NVML saw it.
    pub nvml: Color32,
    /// The second run in a comparison.
    pub other_run: Color32,
    /// Peaks and OOMs.
    pub alert: Color32,
    /// The cache (reserved − allocated) in the fragmentation strip.
    pub cache: Color32,
    /// Free blocks in the segment view.
    pub free_block: Color32,
    /// Blocks freed but still in use by another stream.
    pub pending_free: Color32,
    /// Training-step bands (alternate steps).
    pub step_band: Color32,
    /// Range selection.
    pub selection: Color32,
    /// The inspector's cursor.
    pub cursor: Color32,
    /// Highlighted op spans.
    pub highlight: Color32,
    /// Grid lines.
    pub grid: Color32,
    /// Axis labels and secondary text.
    pub weak_text: Color32,
    /// Plot background.
    pub plot_bg: Color32,
    /// Positive deltas in a comparison (more memory: worse).
    pub worse: Color32,
    /// Negative deltas (less memory: better).
    pub better: Color32,
    /// Each memory category's area in the stacked view and its swatch, indexed by
    /// `Category::index`.
    pub categories: [Color32; 9],
}

impl Palette {
    /// The palette for a theme.
    pub fn for_theme(theme: ThemeChoice) -> Palette {
        use okabe_ito::*;
        match theme {
            ThemeChoice::Dark => Palette {
                allocated: SKY_BLUE,
                allocated_fill: alpha(SKY_BLUE_RGB, 70),
                reserved: ORANGE,
                nvml: REDDISH_PURPLE,
                other_run: BLUISH_GREEN,
                alert: VERMILLION,
                cache: alpha(ORANGE_RGB, 120),
                free_block: Color32::from_gray(70),
                pending_free: YELLOW,
                step_band: Color32::from_rgba_unmultiplied(255, 255, 255, 10),
                selection: alpha(YELLOW_RGB, 36),
                cursor: YELLOW,
                highlight: BLUISH_GREEN,
                grid: Color32::from_gray(48),
                weak_text: Color32::from_gray(150),
                plot_bg: Color32::from_gray(22),
                worse: VERMILLION,
                better: SKY_BLUE,
                categories: category_colours(crate::palette::CATEGORIES_DARK),
            },
            ThemeChoice::Light => Palette {
                allocated: BLUE,
                allocated_fill: alpha(BLUE_RGB, 60),
                reserved: Color32::from_rgb(0xC0, 0x84, 0x00),
                nvml: Color32::from_rgb(0xA8, 0x4C, 0x84),
                other_run: BLUISH_GREEN,
                alert: VERMILLION,
                cache: alpha(ORANGE_RGB, 140),
                free_block: Color32::from_gray(215),
                pending_free: Color32::from_rgb(0xC9, 0xB8, 0x00),
                step_band: Color32::from_rgba_unmultiplied(0, 0, 0, 10),
                selection: alpha(ORANGE_RGB, 40),
                cursor: VERMILLION,
                highlight: BLUISH_GREEN,
                grid: Color32::from_gray(225),
                weak_text: Color32::from_gray(100),
                plot_bg: Color32::from_gray(252),
                worse: VERMILLION,
                better: BLUE,
                categories: category_colours(crate::palette::CATEGORIES_LIGHT),
            },
        }
    }
}

/// Opacity of the stacked category areas: nearly opaque, so neighbouring categories do
/// not blend into a third colour, with the step bands still faintly seen through.
const CATEGORY_ALPHA: u8 = 220;

fn category_colours(rgb: [crate::palette::Rgb; 9]) -> [Color32; 9] {
    rgb.map(|c| okabe_ito::alpha(c, CATEGORY_ALPHA))
}

/// Add DejaVu Sans (the reports' font, assets/fonts) after egui's own fonts, for the
/// glyphs those lack: arrows in stack frames ("a ← b"), box drawing, most of Unicode that
/// op names and paths may hold.
pub fn install_fonts(ctx: &egui::Context) {
    use egui::epaint::text::{FontInsert, FontPriority, InsertFontFamily};
    let families = [egui::FontFamily::Proportional, egui::FontFamily::Monospace]
        .into_iter()
        .map(|family| InsertFontFamily {
            family,
            priority: FontPriority::Lowest,
        })
        .collect();
    ctx.add_font(FontInsert::new(
        "DejaVuSans",
        egui::FontData::from_static(crate::output::charts::FONT_TTF),
        families,
    ));
}

/// Scroll bars beside what they scroll, in both themes: egui's floating bars are drawn
/// over the content's right edge, which in a table is the last column's numbers (issue 37,
/// "a scrollbar over the last column").
pub fn solid_scroll_bars(ctx: &egui::Context) {
    ctx.all_styles_mut(|s| s.spacing.scroll = egui::style::ScrollStyle::solid());
}

/// Apply a theme to the egui context.
pub fn apply(ctx: &egui::Context, theme: ThemeChoice) {
    ctx.set_theme(match theme {
        ThemeChoice::Dark => egui::Theme::Dark,
        ThemeChoice::Light => egui::Theme::Light,
    });
}

/// The palette matching the context's current visuals.
pub fn palette(ui: &egui::Ui) -> Palette {
    Palette::for_theme(if ui.visuals().dark_mode {
        ThemeChoice::Dark
    } else {
        ThemeChoice::Light
    })
}
