//! The segment view's colours: allocated blocks by the first user frame of the stack that
//! allocated them (memory_viz's colouring) or by their memory category, and the legend
//! that names the colours. The owners come from `collector::analysis::owners`.

use std::hash::{Hash, Hasher};

use collector::analysis::categories::Category;
use collector::analysis::owners::BlockOwner;
use collector::analysis::segments::SegmentLayout;
use collector::model::Frame;
use egui::{Color32, Sense, Ui, vec2};

use super::super::super::axis::ellipsize;
use super::super::super::theme::Palette;
use super::super::super::units;
use super::super::SegmentColor;

/// Owners the legend names at most, largest first (each costs a line of the panel); the
/// rest are summed.
pub const LEGEND_ENTRIES: usize = 8;

/// The colour of an allocated block owned by `owner`, or `None` to keep the state colour.
pub fn block_color(mode: SegmentColor, owner: &BlockOwner, palette: &Palette) -> Option<Color32> {
    match mode {
        SegmentColor::State => None,
        SegmentColor::Stack => Some(owner.frame.map_or(palette.allocated, frame_color)),
        SegmentColor::Category => Some(
            owner
                .category
                .map_or(palette.allocated, |c| palette.categories[c.index()]),
        ),
    }
}

/// A stable colour per frame: its hash picks the hue (golden-ratio steps keep neighbours
/// apart).
pub fn frame_color(f: Frame) -> Color32 {
    let mut h = std::hash::DefaultHasher::new();
    f.hash(&mut h);
    let n = h.finish();
    let hue = ((n % 1000) as f32 * 0.618_034).fract();
    let value = 0.75 + ((n >> 16) % 3) as f32 * 0.08;
    egui::ecolor::Hsva::new(hue, 0.55, value, 1.0).into()
}

/// What one legend line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    /// A stack's first user frame.
    Frame(Frame),
    /// A category.
    Category(Category),
    /// No stack or no category known.
    Unknown,
}

/// The owners of the allocated bytes of `layout`, largest first: (owner, bytes).
pub fn legend_entries(
    mode: SegmentColor,
    layout: &[SegmentLayout],
    owners: &[Vec<BlockOwner>],
) -> Vec<(Owner, i64)> {
    let mut bytes: Vec<(Owner, i64)> = Vec::new();
    for (s, o) in layout.iter().zip(owners) {
        for (b, o) in s.blocks.iter().zip(o) {
            if b.state == collector::analysis::segments::BlockUse::Free {
                continue;
            }
            let key = match mode {
                SegmentColor::State => return Vec::new(),
                SegmentColor::Stack => o.frame.map_or(Owner::Unknown, Owner::Frame),
                SegmentColor::Category => o.category.map_or(Owner::Unknown, Owner::Category),
            };
            match bytes.iter_mut().find(|(k, _)| *k == key) {
                Some(e) => e.1 += b.size_bytes,
                None => bytes.push((key, b.size_bytes)),
            }
        }
    }
    bytes.sort_by_key(|&(_, b)| std::cmp::Reverse(b));
    bytes
}

/// The legend: a swatch, a name and the bytes of each of the largest owners.
pub fn legend_ui(
    ui: &mut Ui,
    rec: &collector::Recording,
    entries: &[(Owner, i64)],
    palette: &Palette,
) {
    ui.horizontal_wrapped(|ui| {
        for &(owner, bytes) in entries.iter().take(LEGEND_ENTRIES) {
            let (color, name) = match owner {
                Owner::Frame(f) => (frame_color(f), ellipsize(&frame_name(rec, f), 48)),
                Owner::Category(c) => (palette.categories[c.index()], c.as_str().to_owned()),
                Owner::Unknown => (palette.allocated, "unknown".to_owned()),
            };
            let (r, _) = ui.allocate_exact_size(vec2(12.0, 12.0), Sense::hover());
            ui.painter().rect_filled(r, 2.0, color);
            ui.label(format!("{name} {}", units::bytes(bytes)));
        }
        if entries.len() > LEGEND_ENTRIES {
            let rest: i64 = entries[LEGEND_ENTRIES..].iter().map(|e| e.1).sum();
            ui.label(format!(
                "… {} more owners {}",
                entries.len() - LEGEND_ENTRIES,
                units::bytes(rest)
            ));
        }
    });
}

/// A frame as the legend names it: `file.py:12 function`, the file without its folders.
pub fn frame_name(rec: &collector::Recording, f: Frame) -> String {
    let file = rec.strings.get(f.file);
    let file = file.rsplit(['/', '\\']).next().unwrap_or(file);
    format!("{file}:{} {}", f.line, rec.strings.get(f.name))
}
