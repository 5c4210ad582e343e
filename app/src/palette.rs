//! The one palette of vramscope's pictures — the viewer and the report charts — so that
//! "allocated" is the same blue everywhere: Okabe & Ito's eight colours ("Color Universal
//! Design", 2008), distinguishable under protanopia, deuteranopia and tritanopia.

/// An sRGB colour.
pub type Rgb = (u8, u8, u8);

/// Orange: reserved memory.
pub const ORANGE: Rgb = (0xE6, 0x9F, 0x00);
/// Sky blue: allocated memory on dark backgrounds.
pub const SKY_BLUE: Rgb = (0x56, 0xB4, 0xE9);
/// Bluish green: the second run of a comparison, highlights.
pub const BLUISH_GREEN: Rgb = (0x00, 0x9E, 0x73);
/// Yellow: the cursor on dark backgrounds, pending-free blocks.
pub const YELLOW: Rgb = (0xF0, 0xE4, 0x42);
/// Blue: allocated memory on light backgrounds.
pub const BLUE: Rgb = (0x00, 0x72, 0xB2);
/// Vermillion: peaks, OOMs, increases.
pub const VERMILLION: Rgb = (0xD5, 0x5E, 0x00);
/// Reddish purple: NVML-used memory.
pub const REDDISH_PURPLE: Rgb = (0xCC, 0x79, 0xA7);

/// What each series is drawn in on light backgrounds (report charts, the light theme).
pub mod light {
    use super::*;

    /// Allocated memory (tensors).
    pub const ALLOCATED: Rgb = BLUE;
    /// Reserved memory (the caching allocator's segments).
    pub const RESERVED: Rgb = ORANGE;
    /// NVML used memory (the whole device, as the driver sees it).
    pub const NVML_USED: Rgb = REDDISH_PURPLE;
    /// Peaks, OOMs and limits.
    pub const PEAK: Rgb = VERMILLION;
    /// The first run of a comparison.
    pub const RUN_A: Rgb = BLUE;
    /// The second run of a comparison.
    pub const RUN_B: Rgb = BLUISH_GREEN;
    /// Gridlines.
    pub const GRID: Rgb = (225, 225, 225);
}

/// Neutral grey: memory no rule names (`unknown`).
pub const GREY: Rgb = (0x99, 0x99, 0x99);
/// Dark grey: memory allocated before the capture began (`before_trace`).
pub const DARK_GREY: Rgb = (0x5F, 0x5F, 0x5F);
/// Light grey: `before_trace` on dark backgrounds, where dark grey would vanish (the
/// viewer's dark theme).
#[cfg(feature = "gui")]
pub const LIGHT_GREY: Rgb = (0xC8, 0xC8, 0xC8);

/// The memory categories' colours on light backgrounds, indexed by
/// `collector::analysis::categories::Category::index` (parameter, optimizer_state, input,
/// temporary, activation, gradient, autograd_detail, unknown, before_trace): the seven
/// Okabe–Ito hues for what the rules name, greys for what they cannot.
pub const CATEGORIES_LIGHT: [Rgb; 9] = [
    BLUE,
    ORANGE,
    YELLOW,
    REDDISH_PURPLE,
    SKY_BLUE,
    BLUISH_GREEN,
    VERMILLION,
    GREY,
    DARK_GREY,
];

/// The categories' colours on dark backgrounds (same order): the same hues, the
/// `before_trace` grey lightened so it stands off the plot's background.
#[cfg(feature = "gui")]
pub const CATEGORIES_DARK: [Rgb; 9] = [
    BLUE,
    ORANGE,
    YELLOW,
    REDDISH_PURPLE,
    SKY_BLUE,
    BLUISH_GREEN,
    VERMILLION,
    GREY,
    LIGHT_GREY,
];
