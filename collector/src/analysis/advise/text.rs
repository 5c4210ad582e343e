//! One technique's estimate, with its rule's words.

use super::Estimate;
use super::technique::{Ctx, Technique};

/// The estimate of `t`, with its sentences.
pub(super) fn estimate(t: Technique, c: &Ctx<'_>, measured: i64, peak: i64) -> Estimate {
    let rule = t.rule();
    let words = rule.words(c);
    Estimate {
        technique: t,
        estimated_peak_bytes: peak,
        saving_bytes: measured - peak,
        host_bytes: rule.host_bytes(c),
        assumptions: words.assumptions,
        cost: words.cost,
    }
}
