//! One colour palette for every chart, report and view: Okabe & Ito's colour-blind-safe
//! set (https://jfly.uni-koeln.de/color/), so a series has the same colour everywhere and
//! stays distinguishable under the common colour-vision deficiencies.

/// An sRGB colour.
pub type Rgb = (u8, u8, u8);

/// Allocated memory (tensors): blue.
pub const ALLOCATED: Rgb = (0, 114, 178);
/// Reserved memory (the caching allocator's segments): orange.
pub const RESERVED: Rgb = (230, 159, 0);
/// NVML used memory (the whole device, as the driver sees it): bluish green.
pub const NVML_USED: Rgb = (0, 158, 115);
/// Peaks, OOMs and limits: vermillion.
pub const PEAK: Rgb = (213, 94, 0);
/// The second run of a comparison: reddish purple.
pub const RUN_B: Rgb = (204, 121, 167);
/// The first run of a comparison: the allocated blue.
pub const RUN_A: Rgb = ALLOCATED;
/// Gridlines: light grey.
pub const GRID: Rgb = (225, 225, 225);
