//! The Allocations panel: every allocation as a band over its lifetime (memory_viz's
//! Active Memory Timeline) on the timeline's time axis, a colour selector, a search by op
//! or stack, and the selected allocation in full beside the plot.

use collector::analysis::allocations::{ColorBy, search};
use collector::analysis::pyramid::CurvePyramid;
use egui::{Rect, RichText, Ui, pos2};

use super::super::Command;
use super::super::allocations::{SearchResult, bands_ui, details_ui};

use super::super::doc::Document;
use super::super::loaded::Loaded;
use super::super::theme::Palette;
use super::super::units;
use super::{Panel, PanelContext, PanelId};

impl PanelId {
    /// Every allocation as a band.
    pub const ALLOCATIONS: PanelId = PanelId("allocations");
}

/// Every allocation as a band.
pub struct Allocations;

/// Width of the selected allocation's details beside the plot.
const DETAILS_WIDTH: f32 = 380.0;

impl Panel for Allocations {
    fn id(&self) -> PanelId {
        PanelId::ALLOCATIONS
    }

    fn title(&self) -> &'static str {
        "Allocations"
    }

    /// Where some device's allocations are paired by address.
    fn available(&self, data: &Loaded) -> bool {
        data.curves.iter().any(|c| c.bands.is_some())
    }

    /// Ctrl+F focuses its search where it is shown (or where no op table is).
    fn answers(&self, cmd: &Command) -> bool {
        matches!(cmd, Command::FocusSearch)
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, _cmds: &mut Vec<Command>) {
        if doc.panels.allocations.main {
            // The bands have the main area's whole width; the selected band's details are
            // here, under them.
            ui.horizontal(|ui| {
                ui.label("The allocation view is in the main area, on the timeline's time axis.");
                ui.checkbox(&mut doc.panels.allocations.main, "main area");
            });
            ui.separator();
            egui::ScrollArea::vertical()
                .id_salt("band-details")
                .auto_shrink([false, false])
                .show(ui, |ui| details_ui(ui, doc, cx.palette));
            return;
        }
        view_ui(ui, doc, cx.palette);
    }
}

/// The allocation view in the main area, in the timeline's place (issue 37: memory_viz's
/// main view; the bottom tab was ~250 points tall at 1920×1080): the same time view,
/// cursor and hover as the timeline, the plot's left edge where the timeline's is; the
/// selected band's details in the Allocations tab.
pub fn main_area_ui(ui: &mut Ui, doc: &mut Document, palette: &Palette) {
    view_ui(ui, doc, palette);
}

/// The toolbar, the bands and the selected band's details beside them.
fn view_ui(ui: &mut Ui, doc: &mut Document, palette: &Palette) {
    {
        toolbar_ui(ui, doc);
        ui.separator();
        let full = ui.available_rect_before_wrap();
        // In the main area the bands take the whole width: the details are in the tab.
        if doc.panels.allocations.main {
            doc.panels.allocations.last_frame = bands_ui(ui, full, doc, palette);
            return;
        }
        let split = (full.right() - DETAILS_WIDTH).max(full.left() + full.width() * 0.5);
        let plot = Rect::from_min_max(full.min, pos2(split - 8.0, full.bottom()));
        let side = Rect::from_min_max(pos2(split, full.top()), full.max);
        doc.panels.allocations.last_frame = bands_ui(ui, plot, doc, palette);
        let mut child = ui.new_child(egui::UiBuilder::new().max_rect(side));
        egui::ScrollArea::vertical()
            .id_salt("band-details")
            .auto_shrink([false, false])
            .show(&mut child, |ui| details_ui(ui, doc, palette));
    }
}

/// Colour selector, search field and what the search matched.
fn toolbar_ui(ui: &mut Ui, doc: &mut Document) {
    let rec = &doc.data.rec;
    if doc.panels.allocations.color_by.unavailable(rec).is_some() {
        doc.panels.allocations.color_by = ColorBy::first_available(rec);
    }
    ui.horizontal(|ui| {
        mode_ui(ui, doc);
        ui.separator();
        let cached = doc.panels.allocations.cached;
        if !cached {
            colour_ui(ui, doc);
        }
        ui.checkbox(&mut doc.panels.allocations.main, "main area")
            .on_hover_text("Show this view in the timeline's place: the window's width and height, the same time axis and cursor");
        let reserved = (doc.data.curves.get(doc.device as usize)).is_some_and(|c| c.reserved.is_some());
        if reserved && !cached {
            ui.checkbox(&mut doc.panels.allocations.show_reserved, "show reserved")
                .on_hover_text("Draw the memory the allocator reserved (its segments) as a line over the bands, the cache it held between them shaded");
        }
        if !cached {
            ui.separator();
            search_ui(ui, doc);
        }
        let text = drawn_text(doc);
        ui.add(egui::Label::new(RichText::new(text).small().weak()).wrap());
    });
}

/// The colour selector: by stack, op or category.
fn colour_ui(ui: &mut Ui, doc: &mut Document) {
    ui.label("colour by");
    for by in ColorBy::ALL {
        // A colouring that would draw every band alike is offered, greyed, with why.
        let why = by.unavailable(&doc.data.rec);
        let r = ui.add_enabled(
            why.is_none(),
            egui::Button::selectable(doc.panels.allocations.color_by == by, by.as_str()),
        );
        if r.clicked() {
            doc.panels.allocations.color_by = by;
        }
        if let Some(why) = why {
            r.on_disabled_hover_text(why);
        }
    }
}

/// The search field and what it matched.
fn search_ui(ui: &mut Ui, doc: &mut Document) {
    ui.label("search op or stack");
    let edit = egui::TextEdit::singleline(&mut doc.panels.allocations.query)
        .id_salt("band-search")
        .desired_width(200.0)
        .hint_text("e.g. aten::mm or model.py");
    let r = ui.add(edit);
    if std::mem::take(&mut doc.panels.focus_search) {
        r.request_focus();
    }
    refresh_search(doc);
    if let Some(s) = doc.panels.allocations.search.as_ref() {
        let bytes: i64 = s.matches.curve.iter().map(|p| p.1).max().unwrap_or(0);
        ui.label(
            RichText::new(format!(
                "{} allocations match · at most {} live at once",
                s.matches.count,
                units::bytes(bytes)
            ))
            .small(),
        );
    }
}

/// What the last frame drew, and how to read it.
fn drawn_text(doc: &Document) -> String {
    let drawn = doc.panels.allocations.last_frame;
    if doc.panels.allocations.cached {
        let bands = (doc.data.curves.get(doc.device as usize)).and_then(|c| c.bands.clone());
        // The plot says why where there are no segments.
        let Some(total) = bands.and_then(|b| Some(b.cache.as_ref()?.lives.len())) else {
            return String::new();
        };
        return format!(
            "{} of {total} segments drawn (those living a pixel or more in view; one under a pixel tall drawn a pixel tall) · each filled as far as it is in use, the rest cached free",
            drawn.segments
        );
    }
    if drawn.drawn == 0 {
        // Say why the plot has no bands and what shows them (issue 37).
        return "0 bands drawn: every allocation in view is thinner than a band is drawn (its \
             bytes are in the grey columns) or none lives here — zoom in with the wheel or W"
            .to_owned();
    }
    format!("{} bands drawn", drawn.drawn)
}

/// Active or Cached: the bands are the allocations, or the allocator's segments with the
/// allocations inside them (memory_viz's two timelines, its dropdown as two buttons).
fn mode_ui(ui: &mut Ui, doc: &mut Document) {
    let bands = (doc.data.curves.get(doc.device as usize)).and_then(|c| c.bands.clone());
    let allocations = bands.as_ref().is_none_or(|b| b.has_allocations());
    let state = &mut doc.panels.allocations;
    // An input of segments alone (an Nsight export) has only the Cached mode to show.
    state.cached |= !allocations;
    let modes = [
        (
            false,
            "Active",
            "Every allocation as a band over its lifetime, stacked (memory_viz's Active Memory Timeline)",
        ),
        (
            true,
            "Cached",
            "Every segment of the allocator's cache as a band over its lifetime, stacked to the reserved line, each filled as far as its allocations use it (memory_viz's Active Cached Memory Timeline)",
        ),
    ];
    for (cached, name, what) in modes {
        let enabled = cached || allocations;
        let r = ui.add_enabled(
            enabled,
            egui::Button::selectable(state.cached == cached, name),
        );
        let r = r.on_disabled_hover_text("This input records no allocations, only segments (an Nsight export's CUDA memory rows are the driver's allocations)");
        if r.on_hover_text(what).clicked() {
            state.cached = cached;
        }
    }
}

/// Search again when the text or the device changed; an empty text clears it.
fn refresh_search(doc: &mut Document) {
    let state = &doc.panels.allocations;
    let query = state.query.trim().to_owned();
    let current = state
        .search
        .as_ref()
        .is_some_and(|s| s.matches.query == query && s.device == doc.device);
    if query.is_empty() {
        doc.panels.allocations.search = None;
        return;
    }
    if current {
        return;
    }
    let data = doc.data.clone();
    let (Some(d), Some(bands)) = (
        data.timeline.devices.get(doc.device as usize),
        data.curves
            .get(doc.device as usize)
            .and_then(|c| c.bands.clone()),
    ) else {
        return;
    };
    let matches = search(&data.rec, &data.timeline, d, &bands.layout, &query);
    let curve = (!matches.curve.is_empty()).then(|| CurvePyramid::build(&matches.curve));
    doc.panels.allocations.search = Some(SearchResult {
        device: doc.device,
        matches,
        curve,
    });
}
