//! The Flame panel: the icicle of what is live at the cursor by stack (memray's view).

use egui::Ui;

use super::super::Command;
use super::super::allocations::icicle_ui;
use super::super::doc::Document;
use super::super::loaded::Loaded;
use super::{Panel, PanelContext, PanelId};

impl PanelId {
    /// The icicle at the cursor.
    pub const FLAME: PanelId = PanelId("flame");
}

/// The icicle at the cursor.
pub struct Flame;

impl Panel for Flame {
    fn id(&self) -> PanelId {
        PanelId::FLAME
    }

    fn title(&self) -> &'static str {
        "Flame"
    }

    fn available(&self, data: &Loaded) -> bool {
        (data.curves.iter()).any(|c| c.bands.as_ref().is_some_and(|b| b.has_allocations()))
    }

    fn ui(&self, ui: &mut Ui, doc: &mut Document, cx: &PanelContext<'_>, _cmds: &mut Vec<Command>) {
        icicle_ui(ui, doc, cx.palette);
    }
}
