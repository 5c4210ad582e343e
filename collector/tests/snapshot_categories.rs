//! Categories of real GPU allocator snapshots against what their model's configuration
//! says: CS336's TransformerLM 'medium' (`../shared/traces/real/PROVENANCE.md`: d_model
//! 1024, d_ff 4096, 24 layers, vocab 10000, SwiGLU, RMSNorm, untied, fp32), its weights
//! made before `_record_memory_history` began, so their blocks carry no frames. Its weights
//! hold 4·(V·d + L·(4d² + 3·d·d_ff + 2d) + d + d·V) bytes; a training step ends holding
//! gradients = weights and AdamW's state = 2 × weights; a forward-only run holds neither.

use std::path::PathBuf;

use collector::analysis::categories::{Category, categories_over_time, composition_at_peak};
use collector::{LoadOptions, Timeline, load};

/// How far each category may be from the configuration's bytes, as a share of them.
const TOLERANCE: f64 = 0.03;

/// The medium model's weights in bytes.
fn medium_weights_bytes() -> i64 {
    let (v, d, l, ff) = (10_000i64, 1024i64, 24i64, 4096i64);
    4 * (v * d + l * (4 * d * d + 3 * d * ff + 2 * d) + d + d * v)
}

fn snapshot(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/real/snapshots-cs336-wedsonlin")
        .join(name)
}

fn assert_near(what: &str, got: i64, want: i64) {
    let off = (got - want).abs() as f64 / want as f64;
    assert!(
        off <= TOLERANCE,
        "{what}: {got} B against {want} B ({:.2}% off)",
        100.0 * off
    );
}

/// (composition at the peak, bytes per category at the end of the history).
fn categories(name: &str) -> ([i64; 9], [i64; 9]) {
    let rec = load(&snapshot(name), LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let timeline = Timeline::build(&rec);
    let d = timeline.devices.first().expect("cuda:0");
    let peak = composition_at_peak(&rec, &timeline, d).expect("a peak");
    let series = categories_over_time(&rec, &timeline, d);
    let end = *series.bytes.last().expect("points");
    (peak.bytes, end)
}

#[test]
fn forward_only_snapshots_hold_the_weights_and_no_gradient_or_state() {
    let weights = medium_weights_bytes();
    for context in [128, 256, 512, 1024] {
        let name = format!("medium_{context}_inference_memory_snapshot.pickle");
        let (peak, end) = categories(&name);
        for bytes in [peak, end] {
            assert_near(&name, bytes[Category::Parameter.index()], weights);
            assert_eq!(bytes[Category::Gradient.index()], 0, "{name}");
            assert_eq!(bytes[Category::OptimizerState.index()], 0, "{name}");
            assert_eq!(
                bytes[Category::Unknown.index()],
                0,
                "{name}: nothing unnamed"
            );
        }
    }
}

#[test]
fn training_snapshots_hold_weights_gradients_and_two_moments() {
    let weights = medium_weights_bytes();
    for context in [128, 256, 512, 1024] {
        let name = format!("medium_{context}_training_memory_snapshot.pickle");
        let (peak, end) = categories(&name);
        assert_near(&name, peak[Category::Parameter.index()], weights);
        assert_near(&name, peak[Category::OptimizerState.index()], 2 * weights);
        assert_near(&name, end[Category::Parameter.index()], weights);
        assert_near(&name, end[Category::Gradient.index()], weights);
        assert_near(&name, end[Category::OptimizerState.index()], 2 * weights);
        // What backward needs is kept from forward: activations, never temporaries.
        let kept = peak[Category::Activation.index()];
        assert!(
            kept > 10 * peak[Category::Temporary.index()],
            "{name}: activations {kept} B"
        );
    }
}
