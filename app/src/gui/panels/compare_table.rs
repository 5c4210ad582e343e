//! The Compare panel's tables: run B against run A per device and per op. Every column
//! holds one unit, named in its header (A, B and B − A of one quantity share the unit of
//! their largest value: IEC for the devices, torch's labels for the ops, as
//! `vramscope diff` writes them); the per-op table
//! sorts by any column when its header is clicked (again: the other way), and starts in
//! the diff's own order, the largest change first.

use std::cmp::Ordering;

use collector::analysis::diff::{Change, Diff, OpDiff};
use egui::{Align, Color32, Layout, RichText, Ui};
use egui_extras::{Column, TableBuilder, TableRow};

use super::super::axis::ellipsize;
use super::super::theme::Palette;
use super::super::units::{ColumnUnit, Names};

/// Room beside a header's text for the sort arrow and the cell's margins, in points.
const HEADER_SORT_ROOM: f32 = 30.0;

/// A column of the per-op comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpDiffColumn {
    /// The op's name.
    Name,
    /// Self memory (CUDA where the runs have device memory, else CPU), run A.
    SelfA,
    /// The same, run B.
    SelfB,
    /// B − A of the self memory.
    SelfDelta,
    /// B − A of the total (self and children) memory.
    TotalDelta,
    /// Calls in run A.
    CallsA,
    /// Calls in run B.
    CallsB,
}

impl OpDiffColumn {
    /// In the table's order.
    pub const ALL: [OpDiffColumn; 7] = [
        OpDiffColumn::Name,
        OpDiffColumn::SelfA,
        OpDiffColumn::SelfB,
        OpDiffColumn::SelfDelta,
        OpDiffColumn::TotalDelta,
        OpDiffColumn::CallsA,
        OpDiffColumn::CallsB,
    ];

    /// The column's number for `o` (`device`: the CUDA columns, else the CPU ones).
    pub fn value(self, o: &OpDiff, device: bool) -> Option<i64> {
        let (own, total) = if device {
            (&o.self_device_memory_usage, &o.device_memory_usage)
        } else {
            (&o.self_cpu_memory_usage, &o.cpu_memory_usage)
        };
        match self {
            OpDiffColumn::Name => None,
            OpDiffColumn::SelfA => own.a,
            OpDiffColumn::SelfB => own.b,
            OpDiffColumn::SelfDelta => own.delta,
            OpDiffColumn::TotalDelta => total.delta,
            OpDiffColumn::CallsA => o.calls.a,
            OpDiffColumn::CallsB => o.calls.b,
        }
    }

    fn is_bytes(self) -> bool {
        !matches!(
            self,
            OpDiffColumn::Name | OpDiffColumn::CallsA | OpDiffColumn::CallsB
        )
    }
}

/// How the per-op table is sorted once a header was clicked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpDiffSort {
    /// By this column.
    pub column: OpDiffColumn,
    /// Largest first (names: Z first).
    pub descending: bool,
}

/// The rows of `d.ops` in the order shown: the diff's own without a sort, else by the
/// column, rows without a value in it last, ties by name.
pub fn sorted_rows(d: &Diff, sort: Option<OpDiffSort>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..d.ops.len()).collect();
    let Some(s) = sort else {
        return order;
    };
    let device = d.sorted_by == "self_device_memory_usage";
    let by_name = |a: &OpDiff, b: &OpDiff| a.name.cmp(&b.name);
    order.sort_by(|&i, &j| {
        let (a, b) = (&d.ops[i], &d.ops[j]);
        let ordering = if s.column == OpDiffColumn::Name {
            by_name(a, b)
        } else {
            match (s.column.value(a, device), s.column.value(b, device)) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => return Ordering::Less,
                (None, Some(_)) => return Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        };
        let ordering = if s.descending {
            ordering.reverse()
        } else {
            ordering
        };
        ordering.then_with(|| by_name(a, b))
    });
    order
}

/// The per-device table: peaks of A and B and the change, one unit per column.
pub fn devices_ui(ui: &mut Ui, d: &Diff, palette: &Palette) {
    let changes =
        |f: fn(&collector::analysis::diff::DeviceDiff) -> &Change<i64>| -> [Option<ColumnUnit>; 3] {
            // A, B and B − A in one unit, the largest's, so a row reads across.
            let all: Vec<i64> = d
                .devices
                .iter()
                .flat_map(|dev| [f(dev).a, f(dev).b, f(dev).delta])
                .flatten()
                .collect();
            let unit = |g: fn(&Change<i64>) -> Option<i64>| {
                let any = d.devices.iter().any(|dev| g(f(dev)).is_some());
                any.then(|| ColumnUnit::of(all.iter().copied(), Names::Iec))
            };
            [unit(|c| c.a), unit(|c| c.b), unit(|c| c.delta)]
        };
    let allocated = changes(|dev| &dev.peak_allocated_bytes);
    let reserved = changes(|dev| &dev.peak_reserved_bytes);
    egui::Grid::new("compare-devices")
        .striped(true)
        .num_columns(7)
        .show(ui, |ui| {
            ui.label(RichText::new("device").strong());
            for (what, units) in [("peak allocated", &allocated), ("peak reserved", &reserved)] {
                for (side, u) in ["A", "B", "B − A"].iter().zip(units) {
                    let title = if *side == "A" {
                        format!("{what} A")
                    } else {
                        (*side).to_owned()
                    };
                    // An empty column names no unit.
                    let title = u.map_or(title.clone(), |u| format!("{title} ({})", u.name));
                    ui.label(RichText::new(title).strong());
                }
            }
            ui.end_row();
            for dev in &d.devices {
                ui.label(dev.device.to_string());
                for (c, units) in [
                    (&dev.peak_allocated_bytes, &allocated),
                    (&dev.peak_reserved_bytes, &reserved),
                ] {
                    let side = |v: Option<i64>, u: &Option<ColumnUnit>| {
                        v.zip(*u).map_or("—".into(), |(b, u)| u.format(b))
                    };
                    ui.label(RichText::new(side(c.a, &units[0])).monospace());
                    ui.label(RichText::new(side(c.b, &units[1])).monospace());
                    let delta =
                        (c.delta.zip(units[2])).map_or("—".into(), |(b, u)| u.format_delta(b));
                    ui.label(
                        RichText::new(delta)
                            .monospace()
                            .color(delta_color(c.delta, palette, ui)),
                    );
                }
                ui.end_row();
            }
        });
}

fn delta_color(delta: Option<i64>, palette: &Palette, ui: &Ui) -> Color32 {
    match delta.unwrap_or(0).signum() {
        1 => palette.worse,
        -1 => palette.better,
        _ => ui.visuals().text_color(),
    }
}

/// The per-op table; a header click re-sorts `sort`.
pub fn ops_ui(ui: &mut Ui, id: u64, d: &Diff, sort: &mut Option<OpDiffSort>, palette: &Palette) {
    let device = d.sorted_by == "self_device_memory_usage";
    let shown = sorted_rows(d, *sort);
    let units = op_units(d, device);
    let titles = titles(device, &units);
    let mut clicked = None;
    table(ui, id, &titles)
        .header(20.0, |mut h| {
            for (c, title) in OpDiffColumn::ALL.iter().zip(&titles) {
                h.col(|ui| {
                    if header_ui(ui, title, *c, *sort) {
                        clicked = Some(*c);
                    }
                });
            }
        })
        .body(|body| {
            body.rows(20.0, shown.len(), |mut row| {
                let Some(o) = shown.get(row.index()).and_then(|&i| d.ops.get(i)) else {
                    return;
                };
                row_ui(&mut row, o, device, &units, palette);
            });
        });
    if let Some(c) = clicked {
        *sort = Some(match *sort {
            Some(s) if s.column == c => OpDiffSort {
                column: c,
                descending: !s.descending,
            },
            _ => OpDiffSort {
                column: c,
                descending: c != OpDiffColumn::Name,
            },
        });
    }
}

/// Each column's unit. Self memory's A, B and B − A share one, the unit of the largest
/// of them, so a row reads across without converting (issue 37: A in MB beside B in GB).
pub fn op_units(d: &Diff, device: bool) -> [ColumnUnit; 7] {
    let of = |columns: &[OpDiffColumn]| {
        let values = d
            .ops
            .iter()
            .flat_map(|o| columns.iter().filter_map(move |c| c.value(o, device)));
        ColumnUnit::of(values, Names::Torch)
    };
    let own = of(&[
        OpDiffColumn::SelfA,
        OpDiffColumn::SelfB,
        OpDiffColumn::SelfDelta,
    ]);
    OpDiffColumn::ALL.map(|c| match c {
        OpDiffColumn::SelfA | OpDiffColumn::SelfB | OpDiffColumn::SelfDelta => own,
        _ => of(&[c]),
    })
}

/// Each column's header: its title and, for bytes, its unit.
fn titles(device: bool, units: &[ColumnUnit; 7]) -> [String; 7] {
    let (key, total) = if device {
        ("Self CUDA Mem", "CUDA Mem")
    } else {
        ("Self CPU Mem", "CPU Mem")
    };
    std::array::from_fn(|k| {
        let c = OpDiffColumn::ALL[k];
        let title = match c {
            OpDiffColumn::Name => "Name".to_owned(),
            OpDiffColumn::SelfA => format!("{key} A"),
            OpDiffColumn::SelfB => "B".to_owned(),
            OpDiffColumn::SelfDelta => "B − A".to_owned(),
            OpDiffColumn::TotalDelta => format!("{total} B − A"),
            OpDiffColumn::CallsA => "# Calls A".to_owned(),
            OpDiffColumn::CallsB => "B".to_owned(),
        };
        if c.is_bytes() {
            format!("{title} ({})", units[k].name)
        } else {
            title
        }
    })
}

/// The table's columns: the name takes what the others leave; a numeric column starts as
/// wide as its header, so no header is cut while the window has room.
fn table<'a>(ui: &'a mut Ui, id: u64, titles: &[String; 7]) -> TableBuilder<'a> {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let widths = titles.each_ref().map(|t| {
        let galley = ui
            .painter()
            .layout_no_wrap(t.clone(), font.clone(), Color32::WHITE);
        galley.size().x + HEADER_SORT_ROOM
    });
    let mut builder = TableBuilder::new(ui)
        .id_salt(("compare-ops", id))
        .striped(true)
        .resizable(true)
        .auto_shrink([false, false])
        // Four rows at least, then it scrolls (egui's default asks 200 points, which grew
        // the bottom tabs and took the device multiples' room at 1000×700).
        .min_scrolled_height(super::TABLE_MIN_SCROLLED_HEIGHT)
        // Not resizable: the remainder then follows the window's width (ops_table.rs).
        .column(
            Column::remainder()
                .at_least(160.0)
                .clip(true)
                .resizable(false),
        );
    for (c, width) in OpDiffColumn::ALL.iter().zip(widths).skip(1) {
        let (initial, least) = if c.is_bytes() {
            (110.0, 60.0)
        } else {
            (80.0, 50.0)
        };
        builder = builder.column(
            Column::initial(width.max(initial))
                .at_least(least)
                .clip(true),
        );
    }
    builder
}

fn row_ui(
    row: &mut TableRow<'_, '_>,
    o: &OpDiff,
    device: bool,
    units: &[ColumnUnit; 7],
    palette: &Palette,
) {
    row.col(|ui| {
        ui.add(egui::Label::new(ellipsize(&o.name, 90)).truncate())
            .on_hover_text(&o.name);
    });
    for (c, unit) in OpDiffColumn::ALL.iter().zip(units).skip(1) {
        let v = c.value(o, device);
        let text = match (v, c) {
            (None, _) => "—".to_owned(),
            (Some(n), OpDiffColumn::CallsA | OpDiffColumn::CallsB) => n.to_string(),
            (Some(b), OpDiffColumn::SelfDelta | OpDiffColumn::TotalDelta) => unit.format_delta(b),
            (Some(b), _) => unit.format(b),
        };
        let color = match c {
            OpDiffColumn::SelfDelta => Some(match v.unwrap_or(0).signum() {
                1 => palette.worse,
                -1 => palette.better,
                _ => palette.weak_text,
            }),
            _ => None,
        };
        row.col(|ui| {
            ui.with_layout(Layout::right_to_left(Align::Center), |ui| {
                let mut t = RichText::new(text).monospace();
                if let Some(c) = color {
                    t = t.color(c);
                }
                ui.label(t);
            });
        });
    }
}

/// A header: its title and the sort arrow when sorted by it. True when clicked.
fn header_ui(ui: &mut Ui, title: &str, c: OpDiffColumn, sort: Option<OpDiffSort>) -> bool {
    let layout = if c == OpDiffColumn::Name {
        Layout::left_to_right(Align::Center)
    } else {
        Layout::right_to_left(Align::Center)
    };
    ui.with_layout(layout, |ui| {
        if let Some(s) = sort.filter(|s| s.column == c) {
            ui.label(if s.descending { "⏷" } else { "⏶" });
        }
        ui.add(
            egui::Button::new(RichText::new(title).strong())
                .frame(false)
                .truncate(),
        )
        .on_hover_text(format!("Sort by {title}"))
        .clicked()
    })
    .inner
}
