//! The Advice panel, driven like a user would: its tab opens it, the worker estimates with
//! `advise`'s defaults, the table shows each technique's estimate and the fit line; new
//! ranks, micro-batches or a capacity in its controls ask the worker again.

use crate::output::assumptions::assumptions;
use collector::analysis::advise::{Options, advise};
use collector::units::bytes_iec;
use egui_kittest::kittest::Queryable;

use super::super::panels::PanelId;
use super::{fixture, harness, settle};
use crate::output::advise::{fit_sentence, label};

/// A real CPU training run (a transformer LM with AdamW) whose alternatives were re-run
/// (tests/fixtures/advise/gen_truth.py); its truth file holds the base's peak.
const TRACE: &str = "advise/a01_lm_adamw.json.gz";

/// The base run's peak as the generator measured it, from the truth file.
fn base_peak_bytes() -> i64 {
    let truth = std::fs::read(fixture("advise/a01_lm_adamw.truth.json")).expect("truth");
    let truth: serde_json::Value = serde_json::from_slice(&truth).expect("JSON");
    truth["base_peak_bytes"].as_i64().expect("base peak")
}

#[test]
fn the_advice_panel_estimates_on_the_worker_and_follows_its_controls() {
    let mut h = harness(vec![fixture(TRACE)]);
    settle(&mut h);
    // WHEN the Advice tab is clicked
    h.get_by_label("Advice").click();
    h.run_steps(2);
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.tab, PanelId::ADVICE);
    assert_eq!(doc.panels.advice.asked, Some(Options::DEFAULTS));
    // THEN the measured peak is the generator's, and each estimate is the collector's
    h.get_by_label(&format!("measured peak {}", bytes_iec(base_peak_bytes())));
    let want = advise(&doc.data.rec, &doc.data.timeline, &Options::DEFAULTS);
    let shown = doc.panels.advice.result.clone().expect("an answer");
    assert_eq!(*shown, want);
    let device = want.first().expect("a device");
    assert_eq!(
        device.estimates.len(),
        collector::analysis::advise::techniques(&Options::DEFAULTS).len()
    );
    for e in &device.estimates {
        h.get_by_label(&label(e.technique));
        assert!(
            h.query_all_by_label(&bytes_iec(e.estimated_peak_bytes))
                .count()
                >= 1,
            "{:?}",
            e.technique
        );
    }
    // A CPU trace says no capacity: no fit line until one is given.
    assert!(device.fit.is_none());
    // WHEN the controls say 4 ranks, 4 micro-batches and 3 MiB
    let asked = Options {
        world_size: 4,
        micro_batches: 4,
        capacity_bytes: Some(3 << 20),
        ..Options::DEFAULTS
    };
    h.state_mut().docs_mut()[0].panels.advice.options = asked;
    h.run_steps(2);
    settle(&mut h);
    // THEN the worker answered for them: ZeRO over 4 ranks, ÷4, and the smallest
    // combination that fits 3 MiB (the run peaks at 4.1 MiB)
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.advice.asked, Some(asked));
    let want = advise(&doc.data.rec, &doc.data.timeline, &asked);
    assert_eq!(
        **doc.panels.advice.result.as_ref().expect("an answer"),
        want
    );
    let device = want.first().expect("a device");
    assert!(base_peak_bytes() > 3 << 20);
    let fit = device.fit.as_ref().expect("a fit for a capacity");
    assert!(!fit.fits_as_measured);
    h.get_by_label(&fit_sentence(fit));
    h.get_by_label("zero3 ×4 ranks");
    h.get_by_label("micro_batch ÷4");
}

#[test]
fn advice_for_a_snapshot_takes_a_typed_capacity_and_says_why_on_the_row() {
    // GIVEN the sample snapshot (call stacks, no ops, no device memory) on Advice
    let snapshot = super::repo().join("samples/cs336-transformer-snapshot.pickle");
    let mut h = harness(vec![snapshot]);
    settle(&mut h);
    h.get_by_label("Advice").click();
    h.run_steps(2);
    settle(&mut h);
    let doc = h.state().active_doc().expect("doc");
    let want = advise(&doc.data.rec, &doc.data.timeline, &Options::DEFAULTS);
    let device = want.first().expect("a device");
    // THEN without a capacity it says how to get a recommendation
    assert!(device.fit.is_none());
    h.get_by_label_contains("Type the GPU's memory above");
    // and each row that saves nothing says why on the row, not only in a tooltip
    let zero: Vec<_> = device
        .estimates
        .iter()
        .filter(|e| e.saving_bytes == 0)
        .collect();
    assert!(!zero.is_empty());
    for e in &zero {
        h.get_by_label(&format!("why 0 B: {}", assumptions(&e.basis)));
    }
    // and checkpointing does not ask a snapshot for the with_stack=True it has
    assert!(
        device
            .estimates
            .iter()
            .all(|e| !assumptions(&e.basis).contains("with_stack")),
        "a snapshot told to profile with with_stack=True"
    );
    // WHEN the user types a capacity: 12 GiB (the run peaks at 12.97 GiB)
    let field = h.get_by_role(egui::accesskit::Role::TextInput);
    field.click();
    h.run_steps(2);
    h.get_by_role(egui::accesskit::Role::TextInput)
        .type_text("12");
    h.run_steps(2);
    settle(&mut h);
    // THEN the worker answers for it: the fewest techniques that fit 12 GiB
    let asked = Options {
        capacity_bytes: Some(12 << 30),
        ..Options::DEFAULTS
    };
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.panels.advice.asked, Some(asked));
    let want = advise(&doc.data.rec, &doc.data.timeline, &asked);
    let fit = want.first().and_then(|d| d.fit.clone()).expect("a fit");
    assert!(!fit.fits_as_measured, "12.97 GiB does not fit 12 GiB");
    h.get_by_label(&fit_sentence(&fit));
}

#[test]
fn the_advice_panel_shows_the_allocator_settings_of_a_snapshot() {
    // A snapshot that recorded an OOM keeps its history: the run replays through the
    // allocator model, and the panel shows each setting's reserved peak as `advise` does.
    let mut h = harness(vec![fixture("snapshot/oom.pickle")]);
    settle(&mut h);
    h.get_by_label("Advice").click();
    h.run_steps(2);
    settle(&mut h);
    h.run_steps(2);
    let doc = h.state().active_doc().expect("doc");
    let want = advise(&doc.data.rec, &doc.data.timeline, &Options::DEFAULTS);
    let settings = &want.first().expect("a device").allocator;
    assert!(!settings.is_empty(), "the snapshot's history replays");
    assert_eq!(
        doc.panels.advice.result.as_deref().map(|r| &r[0].allocator),
        Some(settings)
    );
    h.get_by_label("Allocator settings");
    for s in settings {
        h.get_by_label(&s.allocator_conf);
        assert!(
            h.query_all_by_label(&bytes_iec(s.reserved_peak_bytes as i64))
                .count()
                >= 1
        );
    }
}
