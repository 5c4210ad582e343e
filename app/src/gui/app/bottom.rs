//! The bottom tabs' panel keeps one height whatever its tab shows: at first
//! [`BOTTOM_TABS_SHARE`] of the window (at most [`BOTTOM_TABS_MAX_DEFAULT_HEIGHT`]), and
//! following the window while the user has not dragged its edge; once dragged, the user's
//! height (within the window). egui's panel takes its contents' height: after a short tab
//! (the inspector before a click) it stayed 140 points, so at 1920×1080 the OOM verdict
//! card and the flame graph scrolled in it, and a tall tab pushed it up. Here the
//! contents are laid out in exactly the panel's room; what is taller scrolls inside it
//! (each panel's scroll areas) or is clipped at its edge.

use egui::containers::panel::PanelState;
use egui::{Panel, Pos2, Rect, Ui, UiBuilder, vec2};

/// Share of the height the bottom tabs take at first.
const BOTTOM_TABS_SHARE: f32 = 0.4;
/// The bottom tabs' first height at most (a tall window: 12 table rows).
const BOTTOM_TABS_MAX_DEFAULT_HEIGHT: f32 = 330.0;
/// The bottom tabs' height at least (the tab bar, the table's header and three rows).
const BOTTOM_TABS_MIN_HEIGHT: f32 = 140.0;
/// The panel's id salt (egui keys its state by it).
const PANEL: &str = "bottom-tabs";
/// A height this far from the one the panel was given is the user's drag (or an
/// assistive technology's resize), not rounding.
const DRAG_TOLERANCE: f32 = 0.5;

/// The height the user dragged the bottom tabs to, if they did.
#[derive(Default)]
pub struct BottomTabs {
    dragged_height: Option<f32>,
}

impl BottomTabs {
    /// Show the bottom tabs at the bottom of `ui`, `add_contents` inside.
    pub fn show(&mut self, ui: &mut Ui, add_contents: impl FnOnce(&mut Ui)) {
        let available = ui.available_height();
        let height = self
            .dragged_height
            .unwrap_or_else(|| default_height(available))
            .max(BOTTOM_TABS_MIN_HEIGHT)
            .min(available);
        // egui's panel starts each frame from the height it stored last; ours is the one
        // given (during a drag egui takes the pointer's instead).
        let id = ui.scope_id().with(PANEL);
        let outer_rect = Rect::from_min_size(Pos2::ZERO, vec2(0.0, height));
        ui.ctx()
            .data_mut(|d| d.insert_persisted(id, PanelState { outer_rect }));
        let shown = Panel::bottom(PANEL)
            .resizable(true)
            .min_size(BOTTOM_TABS_MIN_HEIGHT)
            .show(ui, |ui| keep_height_ui(ui, add_contents))
            .response
            .rect
            .height();
        if (shown - height).abs() > DRAG_TOLERANCE {
            self.dragged_height = Some(shown);
        }
    }
}

/// The bottom tabs' height before the user drags it: [`BOTTOM_TABS_SHARE`] of the window
/// below the summary strip, at most [`BOTTOM_TABS_MAX_DEFAULT_HEIGHT`], so a short window
/// (1000×700) keeps the timeline room for its device multiples and lanes.
fn default_height(available_height: f32) -> f32 {
    (available_height * BOTTOM_TABS_SHARE)
        .clamp(BOTTOM_TABS_MIN_HEIGHT, BOTTOM_TABS_MAX_DEFAULT_HEIGHT)
}

/// Lays `add_contents` out in exactly the room `ui` has left and claims all of it, however
/// much the contents use.
fn keep_height_ui(ui: &mut Ui, add_contents: impl FnOnce(&mut Ui)) {
    let room = ui.available_rect_before_wrap();
    let mut contents = ui.new_child(UiBuilder::new().max_rect(room));
    contents.shrink_clip_rect(room);
    add_contents(&mut contents);
    ui.advance_cursor_after_rect(room);
}
