//! The History panel: memory_viz's "Allocator State History" — every entry of the
//! allocator's history on the shown device (alloc, free_requested, free_completed,
//! segment_alloc / segment_free / map / unmap, oom) with its address, size, stream and
//! call stack, stepped through with ↑/↓ (or J/K). The selected entry moves the cursor, so
//! the timeline, Live at cursor and Segments follow it; beside the list, the segment that
//! holds its address is drawn as it was then, its block outlined. The entries are the
//! collector's (`AllocatorState::history`, kept by the viewer's loads).

use collector::analysis::allocations::site_frame;
use collector::analysis::live::{frame_label, without_directory};
use collector::analysis::segments::{BlockUse, SegmentLayout};
use collector::model::{DeviceHistory, HistoryAction, HistoryEntry};
use egui::{Color32, Key, RichText, Sense, Stroke, Ui, vec2};
use egui_extras::{Column, TableBuilder};

use super::super::Command;
use super::super::doc::Document;
use super::super::loaded::Loaded;
use super::super::theme::Palette;
use super::super::units;
use super::{Panel, PanelContext, PanelId};

impl PanelId {
    /// The allocator's history, entry by entry.
    pub const HISTORY: PanelId = PanelId("history");
}

/// The allocator's history, entry by entry.
pub struct History;

/// The panel's state in a document.
#[derive(Debug, Default)]
pub struct HistoryState {
    /// The selected entry (an index into the shown device's history).
    pub selected: Option<usize>,
    /// Scroll the list to the selection next frame (it moved by a key or the cursor).
    pub reveal: bool,
}

/// Row height of the list.
const ROW_HEIGHT: f32 = 18.0;
/// Width of the side column (the entry's stack and its segment), in points.
const SIDE_WIDTH: f32 = 340.0;

impl Panel for History {
    fn id(&self) -> PanelId {
        PanelId::HISTORY
    }

    fn title(&self) -> &'static str {
        "History"
    }

    /// Where the source kept its allocator's history (allocator snapshots).
    fn available(&self, data: &Loaded) -> bool {
        data.rec
            .allocator
            .as_ref()
            .is_some_and(|a| a.history.iter().any(|h| !h.entries.is_empty()))
    }

    /// The selected entry is the cursor: an inspected instant keeps the list shown.
    fn answers(&self, cmd: &Command) -> bool {
        matches!(cmd, Command::Inspect(_))
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, cmds: &mut Vec<Command>) {
        history_ui(ui, doc, cx.palette, cmds);
    }
}

fn history_ui(ui: &mut Ui, doc: &mut Document, palette: &Palette, cmds: &mut Vec<Command>) {
    let data = doc.data.clone();
    let Some(h) = data
        .rec
        .allocator
        .as_ref()
        .and_then(|a| a.history.iter().find(|h| h.device == doc.device))
    else {
        ui.label("No allocator history on this device.");
        return;
    };
    follow_cursor(doc, h);
    step_keys(ui, doc, h, cmds);
    ui.label(
        RichText::new(format!(
            "{} allocator events on {} · ↑/↓ or J/K step · the cursor, Live at cursor and \
             Segments follow the selected one",
            crate::output::text::group(h.entries.len() as u64),
            data.device_name(doc.device)
        ))
        .color(palette.weak_text),
    );
    let full = ui.available_rect_before_wrap();
    let split = (full.right() - SIDE_WIDTH).max(full.left() + full.width() * 0.55);
    let list = egui::Rect::from_min_max(full.min, egui::pos2(split - 8.0, full.bottom()));
    let side = egui::Rect::from_min_max(egui::pos2(split, full.top()), full.max);
    let mut child = ui.new_child(egui::UiBuilder::new().max_rect(list));
    list_ui(&mut child, doc, h, palette, cmds);
    let mut child = ui.new_child(egui::UiBuilder::new().max_rect(side));
    egui::ScrollArea::vertical()
        .id_salt("history-side")
        .auto_shrink([false, false])
        .show(&mut child, |ui| side_ui(ui, doc, h, palette));
    ui.allocate_rect(full, Sense::hover());
}

/// Where the cursor moved elsewhere (a click on the timeline), select the last entry at or
/// before it.
fn follow_cursor(doc: &mut Document, h: &DeviceHistory) {
    let Some(target) = doc.panels.inspect.target else {
        return;
    };
    let current = doc
        .panels
        .history
        .selected
        .and_then(|i| h.entries.get(i))
        .map(|e| e.time_ns);
    if current == Some(target.at_ns) {
        return;
    }
    let after = h.entries.partition_point(|e| e.time_ns <= target.at_ns);
    doc.panels.history.selected = Some(after.saturating_sub(1));
    doc.panels.history.reveal = true;
}

/// ↑/↓ (J/K) step the selection, Home/End go to the ends; the cursor follows.
fn step_keys(ui: &Ui, doc: &mut Document, h: &DeviceHistory, cmds: &mut Vec<Command>) {
    if ui.ctx().egui_wants_keyboard_input() || h.entries.is_empty() {
        return;
    }
    let last = h.entries.len() - 1;
    let (down, up, home, end) = ui.ctx().input_mut(|i| {
        let mut pressed = |k: Key| i.consume_key(egui::Modifiers::NONE, k);
        (
            pressed(Key::ArrowDown) | pressed(Key::J),
            pressed(Key::ArrowUp) | pressed(Key::K),
            pressed(Key::Home),
            pressed(Key::End),
        )
    });
    let now = doc.panels.history.selected;
    let next = match (down, up, home, end) {
        (true, ..) => Some(now.map_or(0, |i| (i + 1).min(last))),
        (_, true, ..) => Some(now.map_or(0, |i| i.saturating_sub(1))),
        (_, _, true, _) => Some(0),
        (.., true) => Some(last),
        _ => None,
    };
    if let Some(i) = next {
        select(doc, h, i, cmds);
        doc.panels.history.reveal = true;
    }
}

/// Select entry `i` and put the cursor at its instant.
fn select(doc: &mut Document, h: &DeviceHistory, i: usize, cmds: &mut Vec<Command>) {
    doc.panels.history.selected = Some(i);
    if let Some(e) = h.entries.get(i) {
        cmds.push(Command::Inspect(e.time_ns));
    }
}

/// The list, virtualised: one row an entry.
fn list_ui(
    ui: &mut Ui,
    doc: &mut Document,
    h: &DeviceHistory,
    p: &Palette,
    cmds: &mut Vec<Command>,
) {
    let mut clicked = None;
    let mut table = TableBuilder::new(ui)
        .id_salt(("history", doc.id, doc.device))
        .striped(true)
        .sense(Sense::click())
        .auto_shrink([false, false])
        .min_scrolled_height(super::TABLE_MIN_SCROLLED_HEIGHT)
        .column(Column::auto().at_least(56.0))
        .column(Column::auto().at_least(80.0))
        .column(Column::auto().at_least(100.0))
        .column(Column::auto().at_least(110.0))
        .column(Column::auto().at_least(80.0))
        .column(Column::auto().at_least(50.0))
        .column(Column::remainder().clip(true));
    if doc.panels.history.reveal {
        if let Some(i) = doc.panels.history.selected {
            table = table.scroll_to_row(i, Some(egui::Align::Center));
        }
        doc.panels.history.reveal = false;
    }
    let titles = [
        "#",
        "time",
        "action",
        "address",
        "size",
        "stream",
        "stack (top user frame)",
    ];
    table
        .header(ROW_HEIGHT, |mut row| {
            for t in titles {
                row.col(|ui| {
                    ui.label(RichText::new(t).strong());
                });
            }
        })
        .body(|body| {
            body.rows(ROW_HEIGHT, h.entries.len(), |mut row| {
                let i = row.index();
                let Some(e) = h.entries.get(i) else { return };
                row.set_selected(doc.panels.history.selected == Some(i));
                for text in cells(doc, i, e) {
                    row.col(|ui| {
                        ui.add(
                            egui::Label::new(text.color(p.weak_text.gamma_multiply(1.5)))
                                .selectable(false),
                        );
                    });
                }
                if row.response().clicked() {
                    clicked = Some(i);
                }
            });
        });
    if let Some(i) = clicked {
        select(doc, h, i, cmds);
    }
}

/// One entry's cells: index, time, action, address, size, stream, stack.
fn cells(doc: &Document, i: usize, e: &HistoryEntry) -> [RichText; 7] {
    let rec = &doc.data.rec;
    let stack = e
        .stack
        .and_then(|s| site_frame(rec, rec.stack(Some(s))))
        .map(|f| without_directory(&f).to_owned())
        .unwrap_or_default();
    let size = match e.action {
        HistoryAction::Oom => format!("{} (requested)", units::bytes(e.size_bytes as i64)),
        _ => units::bytes(e.size_bytes as i64),
    };
    [
        RichText::new(i.to_string()).monospace(),
        RichText::new(doc.at_label(e.time_ns)).monospace(),
        RichText::new(e.action.as_str()),
        RichText::new(format!("{:#x}", e.addr)).monospace(),
        RichText::new(size).monospace(),
        RichText::new(e.stream.to_string()).monospace(),
        RichText::new(stack),
    ]
}

/// The selected entry: what it did, its whole stack, and the segment holding its address
/// at the cursor (the inspector's layout), its block outlined.
fn side_ui(ui: &mut Ui, doc: &Document, h: &DeviceHistory, palette: &Palette) {
    let Some((i, e)) = doc
        .panels
        .history
        .selected
        .and_then(|i| h.entries.get(i).map(|e| (i, e)))
    else {
        ui.label("Click an entry, or press ↓, to step through the history.");
        return;
    };
    ui.label(
        RichText::new(format!(
            "#{i} {} {} at {:#x} on stream {}",
            e.action.as_str(),
            units::bytes(e.size_bytes as i64),
            e.addr,
            e.stream
        ))
        .strong(),
    );
    if let Some(f) = e.device_free_bytes {
        ui.label(format!(
            "free on the device then: {}",
            units::bytes(f as i64)
        ));
    }
    let layout = doc
        .panels
        .inspect
        .result
        .as_ref()
        .and_then(|r| r.layout.as_ref());
    if let Some(seg) = layout.and_then(|l| holding(l, e.addr)) {
        segment_ui(ui, seg, e.addr, palette);
    }
    let rec = &doc.data.rec;
    let frames = rec.stack(e.stack);
    if frames.is_empty() {
        ui.label(RichText::new("no stack recorded").color(palette.weak_text));
    }
    for f in frames {
        ui.label(
            RichText::new(frame_label(rec, f))
                .monospace()
                .color(palette.weak_text),
        );
    }
}

/// The segment whose range holds `addr`.
fn holding(layout: &[SegmentLayout], addr: u64) -> Option<&SegmentLayout> {
    layout
        .iter()
        .find(|s| addr >= s.addr && addr < s.addr + s.size_bytes.max(0) as u64)
}

/// One segment as a bar, its blocks to scale (used, free), the block at `addr` outlined.
fn segment_ui(ui: &mut Ui, seg: &SegmentLayout, addr: u64, palette: &Palette) {
    ui.label(format!(
        "segment {:#x} · {} · {} free",
        seg.addr,
        units::bytes(seg.size_bytes),
        units::bytes(seg.free_bytes())
    ));
    let width = ui.available_width().max(60.0);
    let (rect, _) = ui.allocate_exact_size(vec2(width, 18.0), Sense::hover());
    let painter = ui.painter_at(rect);
    let scale = rect.width() as f64 / seg.size_bytes.max(1) as f64;
    for b in &seg.blocks {
        let x0 = rect.left() + ((b.addr - seg.addr) as f64 * scale) as f32;
        let w = (b.size_bytes as f64 * scale).max(1.0) as f32;
        let r = egui::Rect::from_min_size(egui::pos2(x0, rect.top()), vec2(w, rect.height()));
        let fill = match b.state {
            BlockUse::Free => palette.free_block,
            _ => palette.allocated,
        };
        painter.rect_filled(r.shrink2(vec2(0.5, 0.0)), 0.0, fill);
        if addr >= b.addr && addr < b.addr + b.size_bytes.max(0) as u64 {
            let stroke = Stroke::new(2.0, Color32::from_rgb(255, 220, 80));
            painter.rect_stroke(r, 0.0, stroke, egui::StrokeKind::Inside);
        }
    }
}
