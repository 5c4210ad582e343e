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
