//! The bottom panels as a registry: each panel is one file implementing [`Panel`] (its
//! title, what it needs from the loaded data, which commands it answers, how it draws),
//! and [`PANELS`] is the one list that the tab bar, the dispatch and the tab-switching
//! rules walk. Adding a panel touches its file and that list.
//!
//! Panels are stateless: a panel's view state lives in [`PanelStates`] (`state.rs`), one
//! per open file inside its [`Document`], so switching files switches every panel's state
//! with it. As everywhere in the
//! viewer, a panel reads the state and pushes [`Command`]s, applied after the frame
//! (rerun's view classes and `SystemCommand`, eframe_template).

mod advice;
mod allocations;
mod categories;
mod compare;
pub(super) mod compare_table;
mod flame;
mod history;
mod inspector;
pub(super) mod ops_table;
mod segments;
mod state;

use std::sync::Arc;

use collector::analysis::diff::Diff;
use egui::{RichText, Ui};

use super::Command;
use super::doc::Document;
use super::loaded::Loaded;
use super::theme::Palette;

pub use advice::AdviceState;
pub use allocations::main_area_ui as allocations_main_area_ui;
pub use history::HistoryState;
pub use inspector::jump_buttons_ui;
pub use state::{
    CompareLayout, CompareState, InspectTarget, OpColumn, PanelStates, SegmentColor, SegmentOrder,
    SegmentsView, TableState,
};

/// The least height a table's rows get (egui's default is 200): four rows of 22 points
/// and a little; the bottom tabs keep their height, so in tabs dragged shorter the rows
/// are clipped at their edge.
pub(super) const TABLE_MIN_SCROLLED_HEIGHT: f32 = 96.0;

/// A panel's stable name: what a document's shown tab and [`Command::SetTab`] hold. Each
/// panel's file defines its own constant (`PanelId::OPS`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PanelId(&'static str);

/// What a panel may read besides its document.
pub struct PanelContext<'a> {
    /// The colours.
    pub palette: &'a Palette,
    /// The other open documents (id, data, label), to compare with.
    pub others: &'a [(u64, Arc<Loaded>, String)],
    /// The active document against the one it is compared with, once computed.
    pub diff: Option<&'a Diff>,
}

/// One bottom panel.
pub trait Panel: Sync {
    /// Its stable name.
    fn id(&self) -> PanelId;

    /// The tab's label.
    fn title(&self) -> &'static str;

    /// Whether the data has anything for this panel; its tab is hidden otherwise.
    fn available(&self, _data: &Loaded) -> bool {
        true
    }

    /// Whether a newly opened file of this data should start on this panel. The first
    /// panel of [`PANELS`] that says so wins; when none does, the first panel.
    fn opens_on(&self, _data: &Loaded) -> bool {
        false
    }

    /// Whether this panel shows the answer to `cmd`. Applying such a command keeps the
    /// shown panel when it shows the answer too, else brings forward the first panel that
    /// does.
    fn answers(&self, _cmd: &Command) -> bool {
        false
    }

    /// Draw the panel for `doc`, pushing what the user asks for onto `cmds`.
    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, cmds: &mut Vec<Command>);
}

/// Every panel, in tab order.
pub static PANELS: [&dyn Panel; 9] = [
    &ops_table::OpsTable,
    &inspector::Inspector,
    &categories::Categories,
    &allocations::Allocations,
    &flame::Flame,
    &segments::Segments,
    &history::History,
    &compare::Compare,
    &advice::Advice,
];

/// The panel named `id`.
fn panel(id: PanelId) -> Option<&'static dyn Panel> {
    PANELS.iter().copied().find(|p| p.id() == id)
}

/// The panel a newly opened file of `data` starts on.
pub fn opening_panel(data: &Loaded) -> PanelId {
    PANELS
        .iter()
        .find(|p| p.available(data) && p.opens_on(data))
        .unwrap_or(&PANELS[0])
        .id()
}

/// The panel shown once `cmd` is applied to a document of `data` showing `shown`.
pub fn shown_after(shown: PanelId, cmd: &Command, data: &Loaded) -> PanelId {
    if let Command::SetTab(id) = cmd {
        return *id;
    }
    if panel(shown).is_some_and(|p| p.answers(cmd)) {
        return shown;
    }
    PANELS
        .iter()
        .find(|p| p.available(data) && p.answers(cmd))
        .map_or(shown, |p| p.id())
}

/// The keys that pick the bottom tabs: Alt+1 the first shown, … Alt+9 the ninth. Alt,
/// since the plain keys pan and zoom the timeline (W/A/S/D, the arrows) and step the
/// history (J/K), and Ctrl+digit is the browser's and desktop's tab switch.
const TAB_KEYS: [egui::Key; 9] = [
    egui::Key::Num1,
    egui::Key::Num2,
    egui::Key::Num3,
    egui::Key::Num4,
    egui::Key::Num5,
    egui::Key::Num6,
    egui::Key::Num7,
    egui::Key::Num8,
    egui::Key::Num9,
];

/// The tab asked for with Alt+digit this frame (0 for Alt+1), the key consumed.
fn tab_key(ctx: &egui::Context) -> Option<usize> {
    ctx.input_mut(|i| (TAB_KEYS.iter()).position(|&k| i.consume_key(egui::Modifiers::ALT, k)))
}

/// The bottom of the window: a tab per available panel, then the shown one.
pub fn bottom_ui(ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, cmds: &mut Vec<Command>) {
    let shown: Vec<&dyn Panel> = (PANELS.iter().copied())
        .filter(|p| p.available(&doc.data))
        .collect();
    if let Some(p) = tab_key(ui.ctx()).and_then(|n| shown.get(n)) {
        doc.tab = p.id();
    }
    ui.horizontal(|ui| {
        for (n, p) in shown.iter().enumerate() {
            ui.selectable_value(&mut doc.tab, p.id(), RichText::new(p.title()).strong())
                .on_hover_text(format!("Alt+{}", n + 1));
        }
    });
    ui.separator();
    if let Some(p) = panel(doc.tab) {
        p.ui(ui, doc, cx, cmds);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use collector::LoadOptions;

    use super::super::tests::{fixture, sample};
    use super::*;

    fn loaded(path: std::path::PathBuf) -> Loaded {
        let rec = collector::load(&path, LoadOptions::default()).expect("loads");
        Loaded::build(&path, 0, rec, Duration::ZERO)
    }

    #[test]
    fn panels_have_distinct_ids_and_titles() {
        for (i, a) in PANELS.iter().enumerate() {
            for b in &PANELS[i + 1..] {
                assert_ne!(a.id(), b.id());
                assert_ne!(a.title(), b.title());
            }
        }
        let titles: Vec<_> = PANELS.iter().map(|p| p.title()).collect();
        assert_eq!(
            titles,
            [
                "Ops",
                "Live at cursor",
                "Categories",
                "Allocations",
                "Flame",
                "Segments",
                "History",
                "Compare",
                "Advice"
            ]
        );
    }

    #[test]
    fn the_panel_shown_follows_the_rules_of_the_tabs() {
        // GIVEN a trace with ops, and an allocator snapshot (no ops, segment geometry)
        let trace = loaded(sample());
        let snapshot = loaded(fixture("snapshot/oom.pickle"));
        // THEN the trace opens on the table, the snapshot on what was live
        assert_eq!(opening_panel(&trace), PanelId::OPS);
        assert_eq!(opening_panel(&snapshot), PanelId::INSPECTOR);
        // and only the snapshot has segments to show
        let available = |d: &Loaded| -> Vec<PanelId> {
            PANELS
                .iter()
                .filter(|p| p.available(d))
                .map(|p| p.id())
                .collect()
        };
        assert!(!available(&trace).contains(&PanelId::SEGMENTS));
        assert!(available(&snapshot).contains(&PanelId::SEGMENTS));
        // WHEN an instant is inspected: the table and the comparison give way to the
        // inspector; the inspector and the segments, which follow the cursor, stay.
        let inspect = Command::Inspect(0);
        for (shown, after) in [
            (PanelId::OPS, PanelId::INSPECTOR),
            (PanelId::COMPARE, PanelId::INSPECTOR),
            (PanelId::INSPECTOR, PanelId::INSPECTOR),
            (PanelId::SEGMENTS, PanelId::SEGMENTS),
        ] {
            assert_eq!(shown_after(shown, &inspect, &snapshot), after);
        }
        // A range brings the table, a comparison the Compare panel, SetTab its panel;
        // the snapshot instant and other commands leave the panel shown. A snapshot has
        // no ops, so no table (issue 37): its range leaves the panel shown too.
        let shown = PanelId::SEGMENTS;
        assert!(!available(&snapshot).contains(&PanelId::OPS));
        assert!(available(&trace).contains(&PanelId::OPS));
        assert_eq!(shown_after(shown, &Command::Select(None), &snapshot), shown);
        assert_eq!(
            shown_after(shown, &Command::CompareWith(None), &snapshot),
            PanelId::COMPARE
        );
        assert_eq!(
            shown_after(shown, &Command::SetTab(PanelId::COMPARE), &snapshot),
            PanelId::COMPARE
        );
        assert_eq!(
            shown_after(shown, &Command::InspectSnapshot, &snapshot),
            shown
        );
        assert_eq!(shown_after(shown, &Command::ResetView, &snapshot), shown);
    }
}
