//! The Live-at-cursor panel (the inspector): what was live at the peak or at a clicked
//! instant — allocated and reserved then, the op running, the largest groups of live
//! allocations with their op or stack, the fragmentation figures — and the OOM verdicts
//! when the source has an OOM. Everything shown is a collector analysis (live_groups,
//! fragmentation_at, oom_verdicts).

use collector::analysis::fragmentation::Fragmentation;
use collector::analysis::live::LiveGroup;
use egui::{Grid, RichText, ScrollArea, Sense, Ui, vec2};

use super::super::Command;
use super::super::axis::ellipsize;
use super::super::doc::Document;
use super::super::jobs::Inspection;
use super::super::loaded::Loaded;
use super::super::oom::{oom_at_cursor, verdicts_ui};
use super::super::theme::Palette;
use super::super::units;
use super::{Panel, PanelContext, PanelId};
use crate::output::text::percent;

impl PanelId {
    /// What was live at the cursor.
    pub const INSPECTOR: PanelId = PanelId("inspector");
}

/// What was live at the cursor.
pub struct Inspector;

impl Panel for Inspector {
    fn id(&self) -> PanelId {
        PanelId::INSPECTOR
    }

    fn title(&self) -> &'static str {
        "Live at cursor"
    }

    /// Sources without ops (allocator snapshots, recordings) have no table worth opening
    /// on: what was live, by stack, is the first question there.
    fn opens_on(&self, data: &Loaded) -> bool {
        !data.rec.mem_events.is_empty()
    }

    fn answers(&self, cmd: &Command) -> bool {
        matches!(cmd, Command::Inspect(_))
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, cmds: &mut Vec<Command>) {
        inspector_ui(ui, doc, cx.palette, cmds);
    }
}

/// Buttons that move the cursor to the peak, each OOM, the snapshot instant.
pub fn jump_buttons_ui(ui: &mut Ui, doc: &Document, cmds: &mut Vec<Command>) {
    if let Some((t, _)) = doc.peak()
        && ui
            .button("Peak")
            .on_hover_text("Inspect the allocated peak")
            .clicked()
    {
        cmds.push(Command::Inspect(t));
    }
    let device = doc.data.timeline.devices.get(doc.device as usize);
    for (i, &e) in device
        .map_or(&[][..], |d| d.ooms.as_slice())
        .iter()
        .enumerate()
        .take(8)
    {
        if let Some(ev) = doc.data.rec.mem_events.get(e as usize)
            && ui.button(format!("OOM {}", i + 1)).clicked()
        {
            cmds.push(Command::Inspect(ev.time_ns));
        }
    }
    if doc.data.rec.allocator.is_some()
        && ui
            .button("Snapshot")
            .on_hover_text("The instant the snapshot was taken: the allocator's own blocks")
            .clicked()
    {
        cmds.push(Command::InspectSnapshot);
    }
}

/// The facts column's largest share of the panel's width (a resizable divider within it).
const FACTS_MAX_SHARE: f32 = 0.4;

/// The facts column's starting width, in points: its keys and values in one line each.
const FACTS_MIN_WIDTH: f32 = 340.0;

fn inspector_ui(ui: &mut Ui, doc: &mut Document, palette: &Palette, cmds: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        heading_ui(ui, doc, palette);
        ui.separator();
        jump_buttons_ui(ui, doc, cmds);
        if doc.panels.inspect.pending.is_some() {
            ui.spinner();
        }
    });
    ui.separator();
    let Some(result) = doc.panels.inspect.result.take() else {
        ui.label("Click the timeline to see what was live at that instant.");
        return;
    };
    // The facts at most a share of the width: the groups beside them are the answer.
    let most = (ui.available_width() * FACTS_MAX_SHARE).max(FACTS_MIN_WIDTH);
    egui::Panel::left(("inspector-facts", doc.id))
        .resizable(true)
        .default_size(FACTS_MIN_WIDTH)
        .max_size(most)
        .show(ui, |ui| {
            ScrollArea::vertical().id_salt("facts").show(ui, |ui| {
                // At an OOM, its verdict is what the user came for: show it first.
                let at_oom = oom_at_cursor(doc).is_some();
                if at_oom {
                    verdicts_ui(ui, doc, palette, cmds);
                    ui.add_space(8.0);
                }
                facts_ui(ui, doc, &result, palette);
                if let Some(f) = &result.fragmentation {
                    ui.add_space(8.0);
                    fragmentation_ui(ui, f);
                }
                if !at_oom {
                    verdicts_ui(ui, doc, palette, cmds);
                }
            });
        });
    egui::CentralPanel::default_margins().show(ui, |ui| {
        groups_ui(ui, doc, &result.groups, palette);
    });
    doc.panels.inspect.result = Some(result);
}

fn heading_ui(ui: &mut Ui, doc: &Document, palette: &Palette) {
    let Some(target) = doc.panels.inspect.target else {
        ui.label(RichText::new("Live at cursor").strong());
        return;
    };
    let mut what = format!("Live at {}", doc.at_label(target.at_ns));
    if let Some(i) = oom_at_cursor(doc) {
        what.push_str(&format!(" (OOM {})", i + 1));
    } else if target.at_snapshot {
        what.push_str(" (the snapshot)");
    } else if doc.peak().is_some_and(|(t, _)| t == target.at_ns) {
        what.push_str(" (the peak)");
    }
    ui.label(RichText::new(what).strong());
    ui.label(
        RichText::new(format!("on {}", doc.data.device_name(target.device)))
            .color(palette.weak_text),
    );
}

fn facts_ui(ui: &mut Ui, doc: &Document, r: &Inspection, palette: &Palette) {
    Grid::new("facts")
        .num_columns(2)
        .spacing(vec2(12.0, 3.0))
        .striped(true)
        .show(ui, |ui| {
            let row = |ui: &mut Ui, k: &str, v: String| {
                grid_row(ui, RichText::new(k).color(palette.weak_text), v)
            };
            if let Some(a) = r.allocated_bytes {
                row(ui, "allocated", units::bytes(a));
            }
            if let Some(res) = r.reserved_bytes {
                row(ui, "reserved", units::bytes(res));
                if let Some(a) = r.allocated_bytes {
                    let pct = if res > 0 {
                        100.0 * (res - a) as f64 / res as f64
                    } else {
                        0.0
                    };
                    row(
                        ui,
                        "cache (reserved − allocated)",
                        format!("{} ({pct:.0}%)", units::bytes(res - a)),
                    );
                }
            }
            let live: i64 = r.groups.iter().map(|g| g.bytes).sum();
            let blocks: u64 = r.groups.iter().map(|g| g.blocks).sum();
            if blocks > 0 {
                row(
                    ui,
                    "live blocks (paired by address)",
                    format!("{blocks} · {}", units::bytes(live)),
                );
            }
            if let Some(op) = &r.op {
                row(ui, "op running", ellipsize(op, 40));
            }
            if let Some(s) = doc.data.rec.step_at(r.at_ns) {
                row(ui, "step", s.number.to_string());
            }
        });
}

/// One row of a two-column facts grid: the name, then the value in monospace.
fn grid_row(ui: &mut Ui, key: RichText, value: String) {
    ui.label(key);
    ui.label(RichText::new(value).monospace());
    ui.end_row();
}

fn fragmentation_ui(ui: &mut Ui, f: &Fragmentation) {
    ui.label(RichText::new(format!("Fragmentation ({})", f.source)).strong());
    Grid::new("fragmentation")
        .num_columns(2)
        .spacing(vec2(12.0, 3.0))
        .striped(true)
        .show(ui, |ui| {
            let row = |ui: &mut Ui, k: &str, v: String| grid_row(ui, RichText::new(k), v);
            row(ui, "segments", f.segments.to_string());
            row(ui, "free in cache", units::bytes(f.cache_free_bytes));
            row(ui, "free blocks", f.free_blocks.to_string());
            row(
                ui,
                "largest free block",
                units::bytes(f.largest_free_block_bytes),
            );
            row(
                ui,
                "external fragmentation",
                format!("{:.1}%", 100.0 * f.external_fragmentation),
            );
            for (name, p) in [("small pool", &f.small_pool), ("large pool", &f.large_pool)] {
                if p.segments > 0 {
                    // Two lines, so the column stays narrow at 1000×700.
                    row(
                        ui,
                        name,
                        format!(
                            "{} seg · {} reserved",
                            p.segments,
                            units::bytes(p.reserved_bytes),
                        ),
                    );
                    row(
                        ui,
                        "  free (largest)",
                        format!(
                            "{} ({})",
                            units::bytes(p.free_bytes),
                            units::bytes(p.largest_free_block_bytes)
                        ),
                    );
                }
            }
        });
}

fn groups_ui(ui: &mut Ui, doc: &mut Document, groups: &[LiveGroup], palette: &Palette) {
    if groups.is_empty() {
        ui.label(
            "Nothing live on this device at this instant (or the source has no block addresses).",
        );
        return;
    }
    let largest = groups.iter().map(|g| g.bytes).max().unwrap_or(1).max(1);
    let stacks = groups.iter().any(|g| !g.frames.is_empty());
    let seen = groups.iter().filter(|g| g.kind.is_seen()).count();
    ui.label(
        RichText::new(format!(
            "{seen} {} of live allocations, by {}, and what no allocation seen holds, largest first",
            if seen == 1 { "group" } else { "groups" },
            if stacks {
                "allocation stack (top user frames)"
            } else {
                "the op that allocated them"
            }
        ))
        .color(palette.weak_text),
    );
    ScrollArea::vertical()
        .id_salt("groups")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for g in groups {
                group_row_ui(ui, doc, g, largest, palette);
            }
        });
}

/// The width a group's bar and figures take in its row, in points (bar 120, bytes, share
/// and blocks in monospace).
const GROUP_FIGURES_WIDTH: f32 = 380.0;

/// The least width a group's stack label gets beside its figures; narrower (1000×700),
/// the label goes on a line of its own under them, wrapped, never cut (issue 37).
const GROUP_LABEL_MIN_WIDTH: f32 = 320.0;

/// A group's size bar, bytes, share and blocks.
fn group_figures_ui(ui: &mut Ui, g: &LiveGroup, largest: i64, palette: &Palette) {
    let (rect, _) = ui.allocate_exact_size(vec2(120.0, 14.0), Sense::hover());
    let frac = (g.bytes.max(0) as f32 / largest as f32).clamp(0.0, 1.0);
    ui.painter().rect_filled(rect, 2.0, palette.free_block);
    ui.painter().rect_filled(
        rect.with_max_x(rect.left() + rect.width() * frac),
        2.0,
        palette.allocated,
    );
    ui.label(RichText::new(format!("{:>11}", units::bytes(g.bytes))).monospace());
    let blocks = if g.kind.is_seen() || g.blocks > 0 {
        format!("{:>6} blocks", g.blocks)
    } else {
        " ".repeat(13)
    };
    ui.label(
        RichText::new(format!("{:>6} {blocks}", percent(g.share)))
            .monospace()
            .color(palette.weak_text),
    );
}

fn group_row_ui(ui: &mut Ui, doc: &mut Document, g: &LiveGroup, largest: i64, palette: &Palette) {
    let beside = ui.available_width() >= GROUP_FIGURES_WIDTH + GROUP_LABEL_MIN_WIDTH;
    let figures = |ui: &mut Ui| group_figures_ui(ui, g, largest, palette);
    let label_ui = |ui: &mut Ui, doc: &mut Document| {
        let expanded = doc.panels.inspect.expanded.contains(&g.site);
        let label = format!(
            "{} {}",
            if g.frames.is_empty() {
                " "
            } else if expanded {
                "⏷"
            } else {
                "⏵"
            },
            g.short_site()
        );
        // Wrapped in a column of its own, never cut: at 1000×700 the stack is the answer
        // (issue 37); the tooltip adds the directories and the largest block.
        let r = ui
            .vertical(|ui| ui.add(egui::Label::new(label).sense(Sense::click()).wrap()))
            .inner;
        if r.clicked() && !g.frames.is_empty() {
            if expanded {
                doc.panels.inspect.expanded.remove(&g.site);
            } else {
                doc.panels.inspect.expanded.insert(g.site.clone());
            }
        }
        r.on_hover_text(format!(
            "{}\nlargest block {}",
            g.site,
            units::bytes(g.largest_block_bytes)
        ));
    };
    if beside {
        ui.horizontal_top(|ui| {
            figures(ui);
            label_ui(ui, doc);
        });
    } else {
        ui.horizontal(figures);
        ui.horizontal_top(|ui| {
            ui.add_space(16.0);
            label_ui(ui, doc);
        });
    }
    if doc.panels.inspect.expanded.contains(&g.site) {
        ui.indent(("frames", &g.site), |ui| {
            for f in &g.frames {
                ui.label(RichText::new(f).monospace().color(palette.weak_text));
            }
            ui.label(
                RichText::new(format!(
                    "largest block {}",
                    units::bytes(g.largest_block_bytes)
                ))
                .color(palette.weak_text),
            );
        });
    }
}
