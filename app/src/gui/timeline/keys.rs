//! Keyboard pan and zoom, as in Perfetto and Tracy: W/S or ↑/↓ zoom (about the pointer
//! when it is over the plot, else the centre), A/D or ←/→ pan. A press moves the view by
//! a fixed share of what is visible, whatever the zoom; a key held past the repeat delay
//! moves it smoothly, frame by frame at a rate in visible spans per second, instead of in
//! the jumps the system's key repeat would give.

use egui::{Event, Id, Key, Ui};

use super::super::Command;
use super::super::doc::Document;

/// One press zooms by this share of the visible span (W: to 80%, S: back to 125%) or pans
/// by it.
pub const KEY_STEP: f64 = 0.2;
/// A key held longer than this (seconds; about a system's key-repeat delay) starts
/// moving the view continuously.
const HOLD_DELAY_S: f64 = 0.25;
/// While held: zoom e-folds per second (×e^-2.5 ≈ 0.08 of the span each second in).
const HELD_ZOOM_PER_S: f64 = 2.5;
/// While held: visible spans panned per second.
const HELD_PAN_PER_S: f64 = 0.9;

/// What a key does to the view.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Action {
    ZoomIn,
    ZoomOut,
    Left,
    Right,
}

impl Action {
    const ALL: [Action; 4] = [Action::ZoomIn, Action::ZoomOut, Action::Left, Action::Right];

    fn keys(self) -> [Key; 2] {
        match self {
            Action::ZoomIn => [Key::W, Key::ArrowUp],
            Action::ZoomOut => [Key::S, Key::ArrowDown],
            Action::Left => [Key::A, Key::ArrowLeft],
            Action::Right => [Key::D, Key::ArrowRight],
        }
    }

    /// Apply `amount` (1 = one press) of this action.
    fn apply(self, doc: &mut Document, anchor_ns: f64, amount: f64) {
        let duration = doc.data.duration_ns();
        match self {
            Action::ZoomIn => doc
                .view
                .zoom((1.0 - KEY_STEP).powf(amount), anchor_ns, duration),
            Action::ZoomOut => doc
                .view
                .zoom((1.0 - KEY_STEP).powf(-amount), anchor_ns, duration),
            Action::Left => doc.view.pan(-KEY_STEP * amount * doc.view.span_ns()),
            Action::Right => doc.view.pan(KEY_STEP * amount * doc.view.span_ns()),
        }
    }

    /// Presses' worth of movement per second held.
    fn held_rate(self) -> f64 {
        match self {
            Action::ZoomIn | Action::ZoomOut => HELD_ZOOM_PER_S / -(1.0 - KEY_STEP).ln(),
            Action::Left | Action::Right => HELD_PAN_PER_S / KEY_STEP,
        }
    }
}

/// Since when (input time, s) each action's key has been held.
#[derive(Clone, Copy, Default)]
struct Held([Option<f64>; 4]);

/// Where the app notes, as a frame ends, whether a popup or menu was drawn in it.
const POPUP_AT_START: &str = "vramscope-popup-open-at-frame-start";

/// Note, at the end of a frame, whether a popup or menu was drawn open in it: in the next
/// frame, an Esc is that popup's (it closes on it) and [`escape_for_views`] leaves it.
pub fn note_popups(ctx: &egui::Context) {
    let open = ctx.any_popup_open();
    ctx.data_mut(|d| d.insert_temp(Id::unique(POPUP_AT_START), open));
}

/// Whether Esc was pressed this frame for the views (clear a range, a selected band): not
/// when it closed a menu or popup (issue 37: closing a menu dropped the range).
pub fn escape_for_views(ctx: &egui::Context) -> bool {
    let popup: bool = ctx
        .data(|d| d.get_temp(Id::unique(POPUP_AT_START)))
        .unwrap_or(false);
    !popup && ctx.input(|i| i.key_pressed(Key::Escape))
}

/// Apply this frame's keys; `anchor_ns` is where zooming keeps its place.
pub fn keys(ui: &Ui, doc: &mut Document, anchor_ns: f64, cmds: &mut Vec<Command>) {
    let id = Id::unique(("timeline-keys", doc.id));
    if ui.ctx().egui_wants_keyboard_input() {
        ui.ctx().data_mut(|d| d.remove::<Held>(id));
        return;
    }
    let mut held: Held = ui.ctx().data(|d| d.get_temp(id)).unwrap_or_default();
    let esc = escape_for_views(ui.ctx());
    let (now, dt) = ui.input(|i| (i.time, i.stable_dt.min(0.1) as f64));
    let mut moving = false;
    for (slot, action) in held.0.iter_mut().zip(Action::ALL) {
        let presses = ui.input(|i| {
            i.events
                .iter()
                .filter(|e| {
                    matches!(e, Event::Key { key, pressed: true, repeat: false, .. }
                        if action.keys().contains(key))
                })
                .count()
        });
        for _ in 0..presses {
            action.apply(doc, anchor_ns, 1.0);
        }
        let down = ui.input(|i| action.keys().iter().any(|k| i.key_down(*k)));
        if !down {
            *slot = None;
            continue;
        }
        moving = true;
        let since = *slot.get_or_insert(now);
        if now - since > HOLD_DELAY_S {
            action.apply(doc, anchor_ns, action.held_rate() * dt);
        }
    }
    if moving {
        ui.ctx().request_repaint();
    }
    ui.ctx().data_mut(|d| d.insert_temp(id, held));
    if esc && doc.selection.is_some() {
        cmds.push(Command::Select(None));
    }
}
