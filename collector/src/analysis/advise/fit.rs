//! The smallest combination of techniques that brings the peak under a capacity.

use super::{Options, Technique, techniques};

/// The most techniques a combination holds: the search tries every compatible combination of
/// one technique, then of two, … up to this many, and stops at the first size where one fits.
const MOST_COMBINED: usize = 4;

/// How the run fits a capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// The memory to fit in, bytes.
    pub capacity_bytes: u64,
    /// Whether the measured peak fits already.
    pub fits_as_measured: bool,
    /// The fewest techniques that fit together (lowest estimate among equals); `None` when
    /// none does or none is needed.
    pub combination: Option<Vec<Technique>>,
    /// The combination's estimated peak.
    pub estimated_peak_bytes: Option<i64>,
}

/// Search the compatible combinations, fewest techniques first (each one's estimate computed
/// by `estimate`, which reshapes the run once for the whole combination).
pub(super) fn fit(
    capacity_bytes: u64,
    measured: i64,
    o: &Options,
    estimate: impl Fn(&[Technique]) -> i64,
) -> Fit {
    let capacity = i64::try_from(capacity_bytes).unwrap_or(i64::MAX);
    let mut fit = Fit {
        capacity_bytes,
        fits_as_measured: measured <= capacity,
        combination: None,
        estimated_peak_bytes: None,
    };
    if fit.fits_as_measured {
        return fit;
    }
    let candidates: Vec<Technique> = techniques(o).into_iter().filter(|t| t.searched()).collect();
    for size in 1..=MOST_COMBINED.min(candidates.len()) {
        let mut best: Option<(i64, Vec<Technique>)> = None;
        for plan in combinations(&candidates, size) {
            let peak = estimate(&plan);
            if peak <= capacity && best.as_ref().is_none_or(|(p, _)| peak < *p) {
                best = Some((peak, plan));
            }
        }
        if let Some((peak, plan)) = best {
            fit.combination = Some(plan);
            fit.estimated_peak_bytes = Some(peak);
            break;
        }
    }
    fit
}

/// Every combination of `size` of `candidates` whose techniques go together pairwise, in the
/// candidates' order.
fn combinations(candidates: &[Technique], size: usize) -> Vec<Vec<Technique>> {
    fn walk(
        candidates: &[Technique],
        from: usize,
        size: usize,
        plan: &mut Vec<Technique>,
        out: &mut Vec<Vec<Technique>>,
    ) {
        if plan.len() == size {
            out.push(plan.clone());
            return;
        }
        for (i, &t) in candidates.iter().enumerate().skip(from) {
            if plan.iter().all(|&p| p.compatible_with(t)) {
                plan.push(t);
                walk(candidates, i + 1, size, plan, out);
                plan.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(candidates, 0, size, &mut Vec::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fewest_techniques_that_fit_win_and_the_lowest_among_equals() {
        // GIVEN a 100 B peak where bf16 saves 30, micro-batching 40, ZeRO-3 45, others 5
        let o = Options {
            world_size: 4,
            micro_batches: 2,
            ..Options::DEFAULTS
        };
        let saving = |t: &Technique| match t.as_str() {
            "bf16_autocast" => 30,
            "micro_batch" => 40,
            "zero3" => 45,
            _ => 5,
        };
        let estimate = |plan: &[Technique]| (100 - plan.iter().map(saving).sum::<i64>()).max(10);
        // WHEN the capacity is 50 B, THEN one technique cannot; of the pairs, ZeRO-3 + micro is lowest
        let f = fit(50, 100, &o, estimate);
        assert!(!f.fits_as_measured);
        assert_eq!(f.estimated_peak_bytes, Some(15));
        let mut plan = f.combination.expect("a combination");
        plan.sort_by_key(|t| t.as_str());
        let named = |n: &str, v: u32| Technique::named(n, v).expect("registered");
        assert_eq!(plan, [named("micro_batch", 2), named("zero3", 4)]);
        // WHEN the capacity is 56 B, THEN ZeRO-3 alone does it
        assert_eq!(
            fit(56, 100, &o, estimate).combination,
            Some(vec![named("zero3", 4)])
        );
        // WHEN nothing fits, THEN no combination; WHEN it fits already, THEN none needed
        assert_eq!(fit(5, 100, &o, estimate).combination, None);
        assert!(fit(100, 100, &o, estimate).fits_as_measured);
    }

    #[test]
    fn incompatible_techniques_are_never_combined() {
        // GIVEN offload and checkpointing each saving 30 of 100 B, everything else nothing
        let o = Options::DEFAULTS;
        let saving = |t: &Technique| match t.as_str() {
            "activation_offload" | "activation_checkpointing" => 30,
            _ => 0,
        };
        let estimate = |plan: &[Technique]| 100 - plan.iter().map(saving).sum::<i64>();
        // WHEN the capacity needs both, THEN no combination fits
        assert_eq!(fit(50, 100, &o, estimate).combination, None);
        // WHEN one is enough, THEN one of them alone
        let f = fit(70, 100, &o, estimate);
        assert_eq!(f.combination.map(|c| c.len()), Some(1));
    }
}
