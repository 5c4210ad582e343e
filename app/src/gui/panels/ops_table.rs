//! The Ops panel: torch's key_averages() memory columns for the whole recording or the
//! range selected on the timeline, sortable by any column, filterable by name; rows are
//! virtualised, so a table of 100,000 ops costs only the rows on screen. Clicking a row
//! highlights when that op ran. One idea in one file: about 340 lines of the panel (its
//! columns, their fit to the window, the rows, the header line), then its tests.

use collector::analysis::OpRow;
use egui::{Align, Layout, RichText, Sense, Ui};
use egui_extras::{Column, TableBuilder};

use super::super::Command;
use super::super::doc::Document;
use super::super::loaded::Loaded;
use super::super::theme::Palette;
use super::super::units;
use super::{OpColumn, TableState};
use super::{Panel, PanelContext, PanelId};

impl PanelId {
    /// The per-op table.
    pub const OPS: PanelId = PanelId("ops");
}

/// The per-op table.
pub struct OpsTable;

impl Panel for OpsTable {
    fn id(&self) -> PanelId {
        PanelId::OPS
    }

    fn title(&self) -> &'static str {
        "Ops"
    }

    /// Only where the source has ops: a snapshot's table was one `[memory]` row holding
    /// everything (issue 37).
    fn available(&self, data: &Loaded) -> bool {
        !data.rec.ops.is_empty()
    }

    fn opens_on(&self, data: &Loaded) -> bool {
        !data.rec.ops.is_empty()
    }

    /// A selected range's table is what the user asked for; Ctrl+F its filter.
    fn answers(&self, cmd: &Command) -> bool {
        matches!(cmd, Command::Select(_) | Command::FocusSearch)
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, cmds: &mut Vec<Command>) {
        table_ui(ui, doc, cx.palette, cmds);
    }
}

/// Row height of the table.
pub const ROW_HEIGHT: f32 = 20.0;
/// The name column's least width.
const NAME_MIN_WIDTH: f32 = 220.0;
/// A numeric column's first width where the window has room, and its least.
const NUMERIC_WIDTH: f32 = 120.0;
const NUMERIC_MIN_WIDTH: f32 = 70.0;
/// The width a numeric column needs for its header and sort arrow ("⏷ Self CUDA Mem"):
/// where fewer fit, the net change's allocated and freed columns are left out.
const NUMERIC_FIT_WIDTH: f32 = 95.0;

/// Rebuild the filtered, sorted row order if anything changed.
pub fn refresh_order(table: &mut TableState) {
    if !table.dirty {
        return;
    }
    let needle = table.filter.to_lowercase();
    let rows = &table.rows;
    let mut order: Vec<usize> = (0..rows.len())
        .filter(|&i| needle.is_empty() || rows[i].name.to_lowercase().contains(&needle))
        .collect();
    let column = table.sort;
    order.sort_by(|&a, &b| {
        let (ra, rb) = (&rows[a], &rows[b]);
        let by_value = match (column.value(ra), column.value(rb)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => ra.name.cmp(&rb.name),
        };
        let by_value = if table.descending {
            by_value.reverse()
        } else {
            by_value
        };
        by_value.then_with(|| ra.name.cmp(&rb.name))
    });
    table.order = order;
    table.dirty = false;
}

/// The columns worth showing: CUDA columns when any row has device memory, CPU columns
/// when any has host memory (all four when neither has); where the rows carry their net
/// change (`net`), the device's allocated, freed and net bytes and the CPU's net beside them,
/// or the CPU's three where no row has device memory.
pub fn visible_columns(rows: &[OpRow], net: bool) -> Vec<OpColumn> {
    let device = rows
        .iter()
        .any(|r| r.device_memory_usage != 0 || r.self_device_memory_usage != 0);
    let host = rows
        .iter()
        .any(|r| r.cpu_memory_usage != 0 || r.self_cpu_memory_usage != 0);
    OpColumn::ALL
        .into_iter()
        .filter(|c| match c {
            OpColumn::SelfDevice | OpColumn::Device => device || !host,
            OpColumn::SelfCpu | OpColumn::Cpu => host || !device,
            OpColumn::DeviceAllocated | OpColumn::DeviceFreed | OpColumn::DeviceNet => {
                net && device
            }
            OpColumn::CpuNet => net && (host || !device),
            OpColumn::CpuAllocated | OpColumn::CpuFreed => net && !device,
            OpColumn::Name | OpColumn::Calls => true,
        })
        .collect()
}

/// `columns` with at most `room` numeric ones where they would not fit otherwise: the
/// net change's allocated and freed columns give way first, its nets stay.
pub fn fit_columns(mut columns: Vec<OpColumn>, room: usize) -> Vec<OpColumn> {
    if columns.len().saturating_sub(1) > room {
        columns.retain(|c| {
            !matches!(
                c,
                OpColumn::CpuAllocated
                    | OpColumn::CpuFreed
                    | OpColumn::DeviceAllocated
                    | OpColumn::DeviceFreed
            )
        });
    }
    columns
}

fn table_ui(ui: &mut Ui, doc: &mut Document, palette: &Palette, cmds: &mut Vec<Command>) {
    refresh_order(&mut doc.panels.table);
    header_line_ui(ui, doc, palette, cmds);
    ui.separator();
    if doc.panels.table.order.is_empty() && doc.panels.table.pending.is_none() {
        let why = if !doc.panels.table.filter.is_empty() {
            "No op name contains the filter."
        } else if doc.panels.table.window.is_some() {
            "No op ran and no memory was allocated in this range."
        } else {
            "This recording has no ops."
        };
        ui.label(RichText::new(why).color(palette.weak_text));
        return;
    }
    let (clicked_header, clicked_row) = rows_ui(ui, doc);
    if let Some(c) = clicked_header {
        let t = &mut doc.panels.table;
        if t.sort == c {
            t.descending = !t.descending;
        } else {
            t.sort = c;
            t.descending = c != OpColumn::Name;
        }
        t.dirty = true;
    }
    if let Some(name) = clicked_row {
        let same = doc.panels.table.highlighted.as_deref() == Some(name.as_str());
        cmds.push(Command::HighlightOp((!same).then_some(name)));
    }
}

/// The table itself; returns the header clicked (to sort by) and the row clicked (its op).
fn rows_ui(ui: &mut Ui, doc: &Document) -> (Option<OpColumn>, Option<String>) {
    let table = &doc.panels.table;
    let net = table.rows.iter().any(|r| r.net.is_some());
    let room = ((ui.available_width() - NAME_MIN_WIDTH - 20.0) / NUMERIC_FIT_WIDTH) as usize;
    let columns = fit_columns(visible_columns(&doc.data.rows, net), room);
    let mut clicked_header = None;
    let mut clicked_row = None;
    // The numbers share what the name leaves, at most 120 points each: a range's nine
    // columns (its net change added) did not fit 1000×700 at 120.
    let numeric = columns.len().saturating_sub(1).max(1) as f32;
    let width = ((ui.available_width() - NAME_MIN_WIDTH - 20.0) / numeric - 10.0)
        .clamp(NUMERIC_MIN_WIDTH, NUMERIC_WIDTH);
    let mut builder = TableBuilder::new(ui)
        // Widths start over when the columns or their share change (a window made
        // narrower): stored wider widths pushed the last columns out of the window.
        .id_salt(("ops", doc.id, columns.len(), width.round() as i32))
        .striped(true)
        .sense(Sense::click())
        .resizable(true)
        .auto_shrink([false, false])
        // Four rows at least, then it scrolls (egui's default asks 200 points, which grew
        // the bottom tabs and took the device multiples' room at 1000×700).
        .min_scrolled_height(super::TABLE_MIN_SCROLLED_HEIGHT)
        .cell_layout(Layout::left_to_right(Align::Center))
        // The name takes what the numbers leave and is not resizable itself: a resizable
        // remainder keeps its first width, and a window made narrower after the table was
        // first drawn pushed the numeric columns out of sight.
        .column(
            Column::remainder()
                .at_least(NAME_MIN_WIDTH)
                .clip(true)
                .resizable(false),
        );
    for _ in 1..columns.len() {
        builder = builder.column(Column::initial(width).at_least(NUMERIC_MIN_WIDTH));
    }
    builder
        .header(ROW_HEIGHT + 2.0, |mut header| {
            for &c in &columns {
                header.col(|ui| {
                    if header_cell_ui(ui, table, c) {
                        clicked_header = Some(c);
                    }
                });
            }
        })
        .body(|body| {
            body.rows(ROW_HEIGHT, table.order.len(), |mut row| {
                let Some(r) = table
                    .order
                    .get(row.index())
                    .and_then(|&i| table.rows.get(i))
                else {
                    return;
                };
                row.set_selected(table.highlighted.as_deref() == Some(r.name.as_str()));
                for &c in &columns {
                    row.col(|ui| cell_ui(ui, r, c));
                }
                if row.response().clicked() {
                    clicked_row = Some(r.name.clone());
                }
            });
        });
    (clicked_header, clicked_row)
}

/// A column's header: its title, the sort arrow when sorted by it. True when clicked.
fn header_cell_ui(ui: &mut Ui, table: &TableState, c: OpColumn) -> bool {
    let numeric = c != OpColumn::Name;
    let layout = if numeric {
        Layout::right_to_left(Align::Center)
    } else {
        Layout::left_to_right(Align::Center)
    };
    ui.with_layout(layout, |ui| {
        if table.sort == c {
            ui.label(if table.descending { "⏷" } else { "⏶" });
        }
        let title = RichText::new(c.title()).strong();
        ui.add(egui::Button::new(title).frame(false))
            .on_hover_text(c.hint())
            .clicked()
    })
    .inner
}

fn cell_ui(ui: &mut Ui, r: &OpRow, c: OpColumn) {
    match c.value(r) {
        None if c != OpColumn::Name => {}
        None => {
            ui.add(egui::Label::new(&r.name).selectable(false).truncate())
                .on_hover_text(&r.name);
        }
        Some(v) => {
            let text = if c == OpColumn::Calls {
                v.to_string()
            } else if matches!(c, OpColumn::CpuNet | OpColumn::DeviceNet) {
                units::op_bytes_delta(v)
            } else {
                units::op_bytes(v)
            };
            ui.with_layout(Layout::right_to_left(Align::Center), |ui| {
                ui.label(RichText::new(text).monospace());
            });
        }
    }
}

/// The line above the table: which range it covers, the filter, the row count.
fn header_line_ui(ui: &mut Ui, doc: &mut Document, palette: &Palette, cmds: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        match doc.panels.table.window {
            Some(w) => {
                let (a, b) = (doc.rel_ns(w.start_ns), doc.rel_ns(w.end_ns));
                ui.label(
                    RichText::new(format!(
                        "Range {} – {} ({})",
                        units::format_time_in(a, b - a),
                        units::format_time_in(b, b - a),
                        units::format_duration_ns(b - a)
                    ))
                    .strong(),
                );
                if ui
                    .small_button("× whole recording")
                    .on_hover_text("Clear the range (Esc)")
                    .clicked()
                {
                    cmds.push(Command::Select(None));
                }
            }
            None => {
                ui.label(RichText::new("Whole recording").strong());
                ui.label(
                    RichText::new("shift-drag on the timeline to select a range")
                        .color(palette.weak_text),
                );
            }
        }
        if doc.panels.table.pending.is_some() {
            ui.spinner();
            ui.label("computing…");
        }
        ui.with_layout(Layout::right_to_left(Align::Center), |ui| {
            let shown = doc.panels.table.order.len();
            let total = doc.panels.table.rows.len();
            let ops = if total == 1 { "op" } else { "ops" };
            let count = if shown == total {
                format!("{total} {ops}")
            } else {
                format!("{shown} of {total} {ops}")
            };
            ui.label(RichText::new(count).color(palette.weak_text));
            if let Some(ms) = doc.panels.table.last_compute_ms {
                ui.label(
                    RichText::new(format!("computed in {ms:.0} ms ·")).color(palette.weak_text),
                );
            }
            let edit = egui::TextEdit::singleline(&mut doc.panels.table.filter)
                .hint_text("filter by name")
                .desired_width(180.0);
            let r = ui.add(edit);
            if std::mem::take(&mut doc.panels.focus_search) {
                r.request_focus();
            }
            if r.changed() {
                doc.panels.table.dirty = true;
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn row(name: &str, self_cpu: i64, calls: u64) -> OpRow {
        OpRow {
            name: name.into(),
            calls,
            self_cpu_memory_usage: self_cpu,
            cpu_memory_usage: self_cpu,
            self_device_memory_usage: 0,
            device_memory_usage: 0,
            on_device: false,
            user_annotation: false,
            net: None,
        }
    }

    #[test]
    fn order_sorts_filters_and_breaks_ties_by_name() {
        let rows = vec![
            row("aten::mm", 10, 3),
            row("aten::add", 10, 9),
            row("aten::empty", -5, 1),
            row("Optimizer.step", 7, 2),
        ];
        let mut t = TableState::new(Arc::new(rows), OpColumn::SelfCpu);
        refresh_order(&mut t);
        assert_eq!(t.order, vec![1, 0, 3, 2]);
        t.sort = OpColumn::Calls;
        t.descending = false;
        t.dirty = true;
        refresh_order(&mut t);
        assert_eq!(t.order, vec![2, 3, 0, 1]);
        t.filter = "ATEN::".into();
        t.dirty = true;
        refresh_order(&mut t);
        assert_eq!(t.order, vec![2, 0, 1]);
        assert_eq!(
            visible_columns(&t.rows, false),
            vec![
                OpColumn::Name,
                OpColumn::SelfCpu,
                OpColumn::Cpu,
                OpColumn::Calls
            ]
        );
        // Rows with their net change add the CPU's (no row has device memory).
        assert_eq!(
            visible_columns(&t.rows, true)[4..],
            [OpColumn::CpuAllocated, OpColumn::CpuFreed, OpColumn::CpuNet]
        );
        // Where fewer than its six numbers fit, the net's allocated and freed give way.
        let all = visible_columns(&t.rows, true);
        assert_eq!(fit_columns(all.clone(), 6), all);
        assert_eq!(
            fit_columns(all, 5)[1..],
            [
                OpColumn::SelfCpu,
                OpColumn::Cpu,
                OpColumn::Calls,
                OpColumn::CpuNet
            ]
        );
    }
}
