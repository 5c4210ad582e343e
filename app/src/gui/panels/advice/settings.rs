//! The Advice panel's allocator settings: the run replayed through the allocator model
//! under each `PYTORCH_CUDA_ALLOC_CONF` setting (`vramscope advise`'s and the report's
//! table): reserved memory saved, OOMs avoided, price and what a setting does not work with.

use collector::analysis::advise::SettingEstimate;
use collector::units::bytes_iec;
use egui::{Grid, RichText, Ui};

use crate::output::advise::{caveat_words, setting_cost};

/// The settings' table, where the run could be replayed (nothing otherwise).
pub(super) fn settings_ui(ui: &mut Ui, settings: &[SettingEstimate]) {
    let Some(first) = settings.first() else {
        return;
    };
    ui.add_space(8.0);
    ui.label(RichText::new("Allocator settings").strong());
    ui.label(format!(
        "The run replayed through the allocator model (vramscope simulate): reserved memory, \
         against {} under the recorded settings; the allocated peak does not move.",
        bytes_iec(first.recorded_reserved_peak_bytes as i64)
    ));
    Grid::new("advice-settings-grid")
        .striped(true)
        .num_columns(5)
        .show(ui, |ui| {
            for h in [
                "PYTORCH_CUDA_ALLOC_CONF",
                "reserved peak",
                "saving",
                "OOMs avoided",
                "price",
            ] {
                ui.label(RichText::new(h).strong());
            }
            ui.end_row();
            for s in settings {
                let not_with: Vec<&str> = s.caveats.iter().map(|&c| caveat_words(c)).collect();
                let conf = ui.label(&s.allocator_conf);
                if !not_with.is_empty() {
                    conf.on_hover_text(format!("not with: {}", not_with.join("; ")));
                }
                ui.label(bytes_iec(s.reserved_peak_bytes as i64));
                ui.label(bytes_iec(s.saving_bytes));
                ui.label(match s.ooms_with_recorded_settings {
                    0 => "–".to_owned(),
                    n => format!("{} of {n}", s.ooms_avoided),
                });
                ui.label(setting_cost(s));
                ui.end_row();
            }
        });
}
