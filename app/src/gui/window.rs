//! The window's frame around the document: the menu bar with the device selector and the
//! warnings badge, one tab per open file (and per file loading, with progress), the status
//! bar, the error banner, the warnings list, the welcome screen and the drop overlay.

use egui::{Align, Layout, RichText, Ui};

use super::axis::ellipsize;
use super::doc::Document;
use super::export::ExportKind;
use super::files::{Recent, portal_available};
use super::loader::{LoadPhase, PendingLoad};
use super::theme::{Palette, ThemeChoice};
use super::{Command, loading, units};

/// The menu bar.
pub fn menu_bar_ui(
    ui: &mut Ui,
    doc: Option<&Document>,
    tabs: usize,
    recent: &Recent,
    theme: ThemeChoice,
    show_warnings: &mut bool,
    cmds: &mut Vec<Command>,
) {
    egui::MenuBar::new().ui(ui, |ui| {
        ui.menu_button("File", |ui| file_menu_ui(ui, doc, recent, cmds));
        ui.menu_button("View", |ui| {
            let op_lanes = doc
                .filter(|d| !d.data.op_lanes.is_empty())
                .map(|d| d.timeline.show_op_lanes);
            view_menu_ui(ui, (doc.is_some(), op_lanes), tabs, theme, cmds)
        });
        ui.menu_button("Help", help_menu_ui);
        let Some(doc) = doc else { return };
        ui.with_layout(Layout::right_to_left(Align::Center), |ui| {
            let warnings = doc.data.rec.diagnostics.total();
            let truncated = doc.data.rec.diagnostics.truncated_at.is_some();
            if warnings > 0 || truncated {
                let text = RichText::new(format!("⚠ {warnings}")).color(ui.visuals().warn_fg_color);
                if ui
                    .button(text)
                    .on_hover_text("What the parser skipped or repaired")
                    .clicked()
                {
                    *show_warnings = !*show_warnings;
                }
            }
            device_selector_ui(ui, doc, cmds);
        });
    });
}

/// File: open, recent files, exports, close, quit.
fn file_menu_ui(ui: &mut Ui, doc: Option<&Document>, recent: &Recent, cmds: &mut Vec<Command>) {
    let native = portal_available();
    let open = ui.add(egui::Button::new("Open…").shortcut_text("Ctrl+O"));
    if open
        .on_hover_text(if native {
            "The desktop's file dialog"
        } else {
            "No desktop portal: the built-in browser"
        })
        .clicked()
    {
        cmds.push(Command::OpenDialog);
        ui.close();
    }
    if ui
        .button("Open folder…")
        .on_hover_text("Every trace, snapshot or recording under a folder, as a rank grid")
        .clicked()
    {
        cmds.push(Command::OpenFolderDialog);
        ui.close();
    }
    if ui.button("Open with the built-in browser…").clicked() {
        cmds.push(Command::OpenBrowser);
        ui.close();
    }
    ui.menu_button("Open recent", |ui| recent.menu_ui(ui, cmds));
    ui.separator();
    let exports = [
        (
            ExportKind::Report,
            "Export report…",
            "report.md and charts, as `vramscope report` writes",
        ),
        (
            ExportKind::Perfetto,
            "Export for Perfetto…",
            "Chrome trace JSON for ui.perfetto.dev, as `vramscope export` writes",
        ),
    ];
    for (kind, label, hover) in exports {
        if ui
            .add_enabled(doc.is_some(), egui::Button::new(label))
            .on_hover_text(hover)
            .clicked()
        {
            cmds.push(Command::Export(kind));
            ui.close();
        }
    }
    ui.separator();
    if let Some(d) = doc
        && ui
            .add(egui::Button::new("Close tab").shortcut_text("Ctrl+W"))
            .clicked()
    {
        cmds.push(Command::Close(d.id));
        ui.close();
    }
    if ui.button("Quit").clicked() {
        ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
    }
}

/// View: the theme, resetting the timeline.
fn view_menu_ui(
    ui: &mut Ui,
    (has_doc, op_lanes): (bool, Option<bool>),
    tabs: usize,
    theme: ThemeChoice,
    cmds: &mut Vec<Command>,
) {
    let mut t = theme;
    ui.radio_value(&mut t, ThemeChoice::Dark, "Dark theme");
    ui.radio_value(&mut t, ThemeChoice::Light, "Light theme");
    if t != theme {
        cmds.push(Command::SetTheme(t));
    }
    ui.separator();
    // In the menu, not the timeline's toolbar: at 1000 points the toolbar has no room.
    if let Some(on) = op_lanes {
        let mut shown = on;
        if ui
            .checkbox(&mut shown, "Op stack lanes")
            .on_hover_text(
                "Lanes under the timeline with every level of the op stack per thread: \
                 module scopes, record_function ranges, ops and the runtime calls that \
                 launch kernels, each nested under what holds it",
            )
            .clicked()
        {
            cmds.push(Command::ShowOpLanes(shown));
            ui.close();
        }
    }
    if has_doc && ui.button("Reset timeline view").clicked() {
        cmds.push(Command::ResetView);
        ui.close();
    }
    if tabs >= 2
        && ui
            .button("Open the tabs as a rank grid")
            .on_hover_text("Each open file as a row of one grid: for ranks of one run whose names do not say so")
            .clicked()
    {
        cmds.push(Command::GridOfTabs);
        ui.close();
    }
}

/// Help: the mouse and keyboard, the version.
fn help_menu_ui(ui: &mut Ui) {
    ui.label("Timeline: wheel or W/S zoom · drag or A/D pan · shift-drag selects a range");
    ui.label("ctrl- or right-drag box-zooms · click inspects an instant · double-click resets");
    ui.label("Table: click a header to sort, a row to see when that op ran");
    ui.label("Ctrl+F: search (the op table's filter, the allocation view's search)");
    ui.label("History: ↑/↓ or J/K step through the allocator's events");
    ui.label("Alt+1 … Alt+9: the bottom tabs, in order");
    ui.separator();
    ui.label(format!("vramscope {}", env!("CARGO_PKG_VERSION")));
}

fn device_selector_ui(ui: &mut Ui, doc: &Document, cmds: &mut Vec<Command>) {
    let data = &doc.data;
    if data.shown_devices.is_empty() {
        return;
    }
    let label = |d: u16| {
        let info = data.rec.devices.get(d as usize);
        match info.and_then(|i| i.name.as_deref()) {
            Some(n) => format!("{} — {}", data.device_name(d), ellipsize(n, 28)),
            None => data.device_name(d),
        }
    };
    egui::ComboBox::new(("device", doc.id), "device")
        .selected_text(label(doc.device))
        .show_ui(ui, |ui| {
            for &d in &data.shown_devices {
                if ui.selectable_label(d == doc.device, label(d)).clicked() {
                    cmds.push(Command::SetDevice(d));
                }
            }
        });
}

/// Room a file's tab takes besides its label: the close button and the separator.
const TAB_CHROME_WIDTH: f32 = 40.0;
/// Width of a character of a tab's label (14-point bold), a little over its average.
const TAB_CHAR_WIDTH: f32 = 8.0;
/// The fewest characters a tab's label is cut to.
const TAB_MIN_CHARS: f32 = 12.0;

/// `s` in at most `max` characters, its middle replaced by "…" where it is longer.
fn middle_ellipsis(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    let head = max.saturating_sub(1) / 2;
    let tail = max.saturating_sub(1) - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// One tab per open file and per file being loaded.
pub fn tabs_ui(
    ui: &mut Ui,
    docs: &[Document],
    active: Option<u64>,
    loads: &[PendingLoad],
    palette: &Palette,
    cmds: &mut Vec<Command>,
) {
    ui.horizontal_wrapped(|ui| {
        // The open files share the row: a label longer than its share loses its middle
        // (the directory that tells it apart and the file name's end stay).
        let share = ui.available_width() / docs.len().max(1) as f32 - TAB_CHROME_WIDTH;
        let chars = (share / TAB_CHAR_WIDTH).max(TAB_MIN_CHARS) as usize;
        for d in docs {
            let selected = Some(d.id) == active;
            let label = middle_ellipsis(&d.label, chars);
            let r = ui.selectable_label(selected, RichText::new(label).strong());
            if r.clicked() {
                cmds.push(Command::Activate(d.id));
            }
            r.on_hover_text(d.data.path.display().to_string());
            if ui.small_button("×").on_hover_text("Close").clicked() {
                cmds.push(Command::Close(d.id));
            }
            ui.separator();
        }
        for (i, l) in loads.iter().enumerate() {
            ui.spinner();
            let name = l.path.file_name().map_or_else(
                || l.path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            let phase = l.phase().describe();
            let what = match l.phase() {
                LoadPhase::Reading => format!(
                    "{name}: {phase} {} of {}",
                    units::bytes(l.bytes_read() as i64),
                    units::bytes(l.file_bytes as i64)
                ),
                LoadPhase::Analysing => format!("{name}: {phase}"),
            };
            let what = format!("{what} · {}", units::format_elapsed(l.elapsed()));
            ui.label(what)
                .on_hover_ui(|ui| loading::overview_tooltip_ui(ui, l, palette));
            if let Some(f) = l.fraction().filter(|_| l.phase() == LoadPhase::Reading) {
                ui.add(
                    egui::ProgressBar::new(f)
                        .desired_width(120.0)
                        .show_percentage(),
                );
            }
            if ui.small_button("Cancel").clicked() {
                cmds.push(Command::CancelLoad(i));
            }
            ui.separator();
        }
    });
}

/// Errors of failed loads; what was open stays open.
pub fn errors_ui(ui: &mut Ui, errors: &[String], cmds: &mut Vec<Command>) {
    for (i, e) in errors.iter().enumerate() {
        ui.horizontal(|ui| {
            ui.colored_label(ui.visuals().error_fg_color, format!("⚠ {e}"));
            if ui.small_button("×").clicked() {
                cmds.push(Command::DismissError(i));
            }
        });
    }
}

/// The status bar: source, format and era, counts, load time.
pub fn status_bar_ui(ui: &mut Ui, doc: &Document, palette: &Palette) {
    let d = &doc.data;
    let s = &d.summary;
    ui.horizontal(|ui| {
        let text = format!(
            "{} · {} · {} · {} events · {} ops · {} steps · {} · read in {}, analysed in {}",
            doc.label,
            s.format.describe(),
            s.era,
            s.events,
            s.ops,
            s.steps,
            units::bytes(d.file_bytes as i64),
            units::format_elapsed(d.parse_time),
            units::format_elapsed(d.analysis_time)
        );
        ui.label(RichText::new(text).color(palette.weak_text).small())
            .on_hover_text(format!(
                "{} memory events · curve pyramids {}",
                d.rec.mem_events.len(),
                units::bytes(d.pyramid_bytes() as i64)
            ));
    });
}

/// The warnings window: what the parser skipped, with counts.
pub fn warnings_window_ui(ctx: &egui::Context, doc: &Document, open: &mut bool) {
    egui::Window::new(format!("Warnings — {}", doc.label))
        .open(open)
        .default_width(480.0)
        .show(ctx, |ui| {
            let diag = &doc.data.rec.diagnostics;
            if let Some(at) = diag.truncated_at {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    format!("The file ends early: read the complete events before byte {at}."),
                );
            }
            if diag.counts.is_empty() {
                ui.label("Nothing was skipped.");
            }
            egui::Grid::new("warnings").striped(true).show(ui, |ui| {
                for (what, n) in &diag.counts {
                    ui.label(RichText::new(n.to_string()).monospace());
                    ui.label(what);
                    ui.end_row();
                }
            });
        });
}

/// What the window shows with nothing open.
pub fn welcome_ui(ui: &mut Ui, recent: &Recent, cmds: &mut Vec<Command>) {
    ui.vertical_centered(|ui| {
        ui.add_space(ui.available_height() * 0.2);
        ui.heading(RichText::new("vramscope").size(32.0).strong());
        ui.label("GPU memory over time: PyTorch profiler traces, allocator snapshots, Nsight exports, vramscope recordings.");
        ui.add_space(16.0);
        ui.horizontal(|ui| {
            let w = 300.0;
            ui.add_space((ui.available_width() - w).max(0.0) / 2.0);
            if ui.button(RichText::new("Open…").size(16.0)).clicked() {
                cmds.push(Command::OpenDialog);
            }
            if ui.button(RichText::new("Built-in browser…").size(16.0)).clicked() {
                cmds.push(Command::OpenBrowser);
            }
        });
        ui.add_space(8.0);
        ui.label(RichText::new("or drop files on this window").weak());
        if !recent.paths.is_empty() {
            ui.add_space(20.0);
            ui.label(RichText::new("Recent").strong());
            for p in recent.paths.iter().take(8) {
                if ui.link(p.display().to_string()).clicked() {
                    cmds.push(Command::Open(vec![p.clone()]));
                }
            }
        }
    });
}

/// While files are dragged over the window: say that dropping opens them.
pub fn drop_overlay_ui(ctx: &egui::Context) {
    let hovering = ctx.input(|i| !i.raw.hovered_files.is_empty());
    if !hovering {
        return;
    }
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::unique("drop-overlay"),
    ));
    let rect = ctx.content_rect();
    painter.rect_filled(rect, 0.0, egui::Color32::from_black_alpha(160));
    painter.text(
        rect.center(),
        egui::Align2::CENTER_CENTER,
        "Drop to open",
        egui::FontId::proportional(28.0),
        egui::Color32::WHITE,
    );
}
