//! The segment view: one bar per allocator segment at the inspected instant, drawn to
//! scale (the largest segment spans the width), its blocks in address order — allocated,
//! freed-but-pending, free — with the largest free block outlined. It answers "was it
//! fragmentation?": many free slivers and no free block as large as the failed request.
//! The layout comes from `collector::analysis::segments`.

mod colors;
mod simulated;
mod summary;

use summary::{largest_free_block, summary_ui};

use collector::analysis::owners::BlockOwner;
use collector::analysis::segments::{BlockSpan, BlockUse, SegmentLayout};
use collector::model::SegmentPool;
use egui::{Rect, RichText, ScrollArea, Sense, Stroke, Ui, pos2, vec2};

use super::super::Command;
use super::super::doc::Document;
use super::super::loaded::Loaded;
use super::super::theme::Palette;
use super::super::units;
use super::{Panel, PanelContext, PanelId, jump_buttons_ui};
use super::{SegmentColor, SegmentOrder, SegmentsView};

impl PanelId {
    /// Segments and blocks at the cursor.
    pub const SEGMENTS: PanelId = PanelId("segments");
}

/// Segments and blocks at the cursor.
pub struct Segments;

impl Panel for Segments {
    fn id(&self) -> PanelId {
        PanelId::SEGMENTS
    }

    fn title(&self) -> &'static str {
        "Segments"
    }

    /// Only a recording with segment geometry has anything to draw.
    fn available(&self, data: &Loaded) -> bool {
        data.rec.allocator.is_some()
            || data
                .timeline
                .devices
                .iter()
                .any(|d| d.segments.iter().any(|s| s.addr.is_some()))
    }

    /// The segments at an instant follow the cursor as the inspector does.
    fn answers(&self, cmd: &Command) -> bool {
        matches!(cmd, Command::Inspect(_))
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, cmds: &mut Vec<Command>) {
        segments_ui(ui, doc, cx.palette, cmds);
    }
}

/// Height of one segment row.
const ROW_HEIGHT: f32 = 18.0;
/// Width of the label left of each bar: a quarter of the row, within these bounds (the
/// widest label, a private pool's segment of 100s of MiB, takes about 320 points).
const LABEL_WIDTH: std::ops::RangeInclusive<f32> = 250.0..=330.0;
/// Blocks narrower than this are still drawn this wide, so slivers stay visible.
const MIN_BLOCK_WIDTH: f32 = 1.0;

fn segments_ui(ui: &mut Ui, doc: &mut Document, palette: &Palette, cmds: &mut Vec<Command>) {
    heading_ui(ui, doc, cmds);
    simulated::choice_ui(ui, doc, cmds);
    let Some(layout) = doc
        .panels
        .inspect
        .result
        .as_ref()
        .and_then(|r| r.layout.as_ref())
    else {
        ui.separator();
        ui.label(
            "No segment geometry at this instant: the source records no segment addresses \
             (only allocator snapshots and traces with segment events do), or nothing was reserved yet.",
        );
        return;
    };
    let owners = doc
        .panels
        .inspect
        .result
        .as_ref()
        .map_or(&[][..], |r| r.owners.as_slice());
    summary_ui(ui, layout, palette);
    options_ui(ui, &mut doc.panels.segments);
    let entries = colors::legend_entries(doc.panels.segments.color, layout, owners);
    if !entries.is_empty() {
        colors::legend_ui(ui, &doc.data.rec, &entries, palette);
    }
    ui.separator();
    let simulation = (doc.panels.segments.simulate)
        .and(doc.panels.inspect.result.as_ref())
        .and_then(|r| r.simulated.as_ref());
    let Some(simulation) = simulation else {
        let rows = Rows { layout, owners };
        return rows_ui(ui, doc, rows, "recorded", palette);
    };
    ui.columns(2, |cols| {
        cols[0].label(RichText::new("Recorded").strong());
        rows_ui(
            &mut cols[0],
            doc,
            Rows { layout, owners },
            "recorded",
            palette,
        );
        simulated::heading_ui(&mut cols[1], simulation);
        let rows = Rows {
            layout: &simulation.segments,
            owners: &[],
        };
        rows_ui(&mut cols[1], doc, rows, "simulated", palette);
    });
}

/// A list of segments and their blocks' owners.
#[derive(Clone, Copy)]
struct Rows<'a> {
    layout: &'a [SegmentLayout],
    owners: &'a [Vec<BlockOwner>],
}

/// The segments as bars, in the view's order, scrolled.
fn rows_ui(ui: &mut Ui, doc: &Document, rows_of: Rows<'_>, salt: &str, palette: &Palette) {
    let Rows { layout, owners } = rows_of;
    let SegmentsView {
        order,
        color,
        full_width,
        ..
    } = doc.panels.segments;
    let mut rows: Vec<usize> = (0..layout.len()).collect();
    match order {
        SegmentOrder::Address => {}
        SegmentOrder::Size => rows.sort_by_key(|&i| std::cmp::Reverse(layout[i].size_bytes)),
        SegmentOrder::Free => rows.sort_by_key(|&i| std::cmp::Reverse(layout[i].free_bytes())),
    }
    let max_size = layout
        .iter()
        .map(|s| s.size_bytes)
        .max()
        .unwrap_or(1)
        .max(1);
    let largest_free = largest_free_block(layout);
    let rec = &doc.data.rec;
    ScrollArea::vertical()
        .id_salt(("segments", salt, doc.id))
        .auto_shrink([false, false])
        .show_rows(ui, ROW_HEIGHT, rows.len(), |ui, range| {
            for &i in rows.iter().skip(range.start).take(range.len()) {
                let scale_to = if full_width {
                    layout[i].size_bytes
                } else {
                    max_size
                };
                let row = Row {
                    segment: &layout[i],
                    owners: owners.get(i).map_or(&[][..], Vec::as_slice),
                    color,
                };
                segment_row_ui(ui, rec, row, scale_to, largest_free == Some(i), palette);
            }
        });
}

/// Which instant the segments are of, the buttons that move it, a spinner while pending.
fn heading_ui(ui: &mut Ui, doc: &Document, cmds: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        let what = doc
            .panels
            .inspect
            .target
            .map_or("Segments".to_owned(), |t| {
                format!(
                    "Segments at {}{}",
                    doc.at_label(t.at_ns),
                    if t.at_snapshot {
                        " (the snapshot: the allocator's own blocks)"
                    } else {
                        " (rebuilt from segment and block addresses)"
                    }
                )
            });
        ui.label(RichText::new(what).strong());
        ui.separator();
        jump_buttons_ui(ui, doc, cmds);
        if doc.panels.inspect.pending.is_some() {
            ui.spinner();
        }
    });
}

/// The order of the rows and whether bars are to scale.
fn options_ui(ui: &mut Ui, view: &mut SegmentsView) {
    ui.horizontal(|ui| {
        ui.label("order");
        ui.radio_value(&mut view.order, SegmentOrder::Address, "address");
        ui.radio_value(&mut view.order, SegmentOrder::Size, "size");
        ui.radio_value(&mut view.order, SegmentOrder::Free, "free bytes");
        ui.separator();
        ui.checkbox(&mut view.full_width, "every segment full width")
            .on_hover_text("Off: bars to scale, the largest segment across the width");
        ui.separator();
        ui.label("colour by");
        ui.radio_value(&mut view.color, SegmentColor::Stack, "stack")
            .on_hover_text("The first frame of user code of the stack that allocated the block");
        ui.radio_value(&mut view.color, SegmentColor::Category, "category");
        ui.radio_value(&mut view.color, SegmentColor::State, "state");
    });
}

/// One segment's row: the segment, its blocks' owners, what colours them.
#[derive(Clone, Copy)]
struct Row<'a> {
    segment: &'a SegmentLayout,
    owners: &'a [BlockOwner],
    color: SegmentColor,
}

fn segment_row_ui(
    ui: &mut Ui,
    rec: &collector::Recording,
    row_data: Row<'_>,
    max_size: i64,
    has_largest_free: bool,
    palette: &Palette,
) {
    let s = row_data.segment;
    let width = ui.available_width();
    let label_width = (width / 4.0).clamp(*LABEL_WIDTH.start(), *LABEL_WIDTH.end());
    let (row, response) = ui.allocate_exact_size(vec2(width, ROW_HEIGHT), Sense::hover());
    let painter = ui.painter_at(row);
    let pool = match (s.private_pool, s.pool) {
        (Some((a, b)), _) => format!("private pool ({a}, {b})"),
        (None, SegmentPool::Small) => "small".to_owned(),
        (None, SegmentPool::Large) => "large".to_owned(),
        (None, SegmentPool::Other) => "other".to_owned(),
    };
    // A label widget (not painted text), so the pool it names is read by screen readers.
    let color = if s.private_pool.is_some() {
        palette.other_run
    } else {
        palette.weak_text
    };
    let text = format!("0x{:x} · {} · {pool}", s.addr, units::bytes(s.size_bytes));
    ui.put(
        Rect::from_min_size(
            row.min + vec2(2.0, 0.0),
            vec2(label_width - 4.0, ROW_HEIGHT),
        ),
        egui::Label::new(RichText::new(text).monospace().size(11.0).color(color)).truncate(),
    );
    let bar_width = (width - label_width - 8.0).max(40.0);
    let len = (bar_width * (s.size_bytes as f32 / max_size as f32)).max(3.0);
    let bar = Rect::from_min_size(
        pos2(row.left() + label_width, row.top() + 2.0),
        vec2(len, ROW_HEIGHT - 4.0),
    );
    painter.rect_filled(bar, 0.0, palette.allocated);
    let scale = len / s.size_bytes.max(1) as f32;
    let pointer = response.hover_pos();
    let hovered = blocks_ui(
        &painter,
        row_data,
        (bar, scale),
        has_largest_free,
        pointer,
        palette,
    );
    // A private pool's segments (CUDA graphs, MemPools) are framed in the compared-run
    // colour: their memory serves only that pool.
    let (frame_width, frame_color) = if s.private_pool.is_some() {
        (2.0, palette.other_run)
    } else {
        (1.0, palette.grid)
    };
    painter.rect_stroke(
        bar,
        0.0,
        Stroke::new(frame_width, frame_color),
        egui::StrokeKind::Outside,
    );
    if let Some(b) = hovered {
        let mut text = block_hover_text(rec, b);
        if let Some((a, p)) = s.private_pool {
            text.push_str(&format!(
                "\nin private pool ({a}, {p}) (a CUDA graph's or a MemPool's)"
            ));
        }
        response.on_hover_text_at_pointer(text);
    }
}

/// Paint the free and pending blocks of `s` over its bar (allocated is the bar's own
/// colour; `scale` is pixels per byte) and outline its largest free block when it is the layout's largest; returns
/// the block under the pointer.
fn blocks_ui<'a>(
    painter: &egui::Painter,
    row: Row<'a>,
    (bar, scale): (Rect, f32),
    has_largest_free: bool,
    pointer: Option<egui::Pos2>,
    palette: &Palette,
) -> Option<&'a BlockSpan> {
    let s = row.segment;
    let x_of = |addr: u64| bar.left() + (addr.saturating_sub(s.addr) as f32) * scale;
    let largest = s.largest_free_bytes();
    let mut hovered = None;
    for (n, b) in s.blocks.iter().enumerate() {
        let x0 = x_of(b.addr);
        let x1 = (x0 + b.size_bytes as f32 * scale)
            .max(x0 + MIN_BLOCK_WIDTH)
            .min(bar.right());
        let r = Rect::from_x_y_ranges(x0..=x1, bar.y_range());
        match b.state {
            BlockUse::Free => {
                painter.rect_filled(r, 0.0, palette.free_block);
            }
            BlockUse::PendingFree => {
                painter.rect_filled(r, 0.0, palette.pending_free);
            }
            BlockUse::Allocated => {
                let owner = row.owners.get(n).copied().unwrap_or_default();
                if let Some(c) = colors::block_color(row.color, &owner, palette) {
                    painter.rect_filled(r, 0.0, c);
                    // A hairline between neighbours of one colour keeps blocks apart.
                    painter.vline(r.left(), r.y_range(), Stroke::new(0.5, palette.plot_bg));
                }
            }
        }
        if has_largest_free && b.state == BlockUse::Free && b.size_bytes == largest {
            painter.rect_stroke(
                r,
                0.0,
                Stroke::new(2.0, palette.alert),
                egui::StrokeKind::Inside,
            );
        }
        if pointer.is_some_and(|p| r.contains(p)) {
            hovered = Some(b);
        }
    }
    hovered
}

/// A block's address, size and state, and the top of the stack that allocated it.
fn block_hover_text(rec: &collector::Recording, b: &BlockSpan) -> String {
    let state = match b.state {
        BlockUse::Allocated => "allocated",
        BlockUse::PendingFree => "freed, pending",
        BlockUse::Free => "free",
    };
    let mut text = format!("0x{:x} · {} · {state}", b.addr, units::bytes(b.size_bytes));
    for f in rec.stack(b.stack).iter().take(8) {
        text.push('\n');
        text.push_str(&collector::analysis::live::frame_label(rec, f));
    }
    text
}
