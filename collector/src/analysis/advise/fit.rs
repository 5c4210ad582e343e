//! The smallest combination of techniques that brings the peak under a capacity.

use super::{Options, Technique};

/// The families a combination draws from, one technique at most from each (ZeRO stages
/// exclude each other).
const FAMILIES: usize = 5;

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

/// Search every combination (at most 2⁴·4 = 64 curve evaluations).
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
    let n = o.world_size.max(1);
    let zero = [
        None,
        Some(Technique::Zero1(n)),
        Some(Technique::Zero2(n)),
        Some(Technique::Zero3(n)),
    ];
    let others = [
        Technique::Bf16Autocast,
        Technique::ActivationCheckpointing,
        Technique::OptimizerOffload,
        Technique::MicroBatch(o.micro_batches.max(1)),
    ];
    let mut best: Option<(usize, i64, Vec<Technique>)> = None;
    for mask in 0u32..(1 << others.len()) {
        for z in zero {
            let plan: Vec<Technique> = others
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, &t)| t)
                .chain(z)
                .collect();
            if plan.is_empty() || plan.len() > FAMILIES {
                continue;
            }
            let peak = estimate(&plan);
            let better = best
                .as_ref()
                .is_none_or(|(len, p, _)| (plan.len(), peak) < (*len, *p));
            if peak <= capacity && better {
                best = Some((plan.len(), peak, plan));
            }
        }
    }
    if let Some((_, peak, plan)) = best {
        fit.combination = Some(plan);
        fit.estimated_peak_bytes = Some(peak);
    }
    fit
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
            capacity_bytes: None,
        };
        let saving = |t: &Technique| match t {
            Technique::Bf16Autocast => 30,
            Technique::MicroBatch(_) => 40,
            Technique::Zero3(_) => 45,
            _ => 5,
        };
        let estimate = |plan: &[Technique]| (100 - plan.iter().map(saving).sum::<i64>()).max(10);
        // WHEN the capacity is 50 B, THEN one technique cannot; of the pairs, ZeRO-3 + micro is lowest
        let f = fit(50, 100, &o, estimate);
        assert!(!f.fits_as_measured);
        assert_eq!(f.estimated_peak_bytes, Some(15));
        let mut plan = f.combination.expect("a combination");
        plan.sort_by_key(|t| t.as_str());
        assert_eq!(plan, [Technique::MicroBatch(2), Technique::Zero3(4)]);
        // WHEN the capacity is 56 B, THEN ZeRO-3 alone does it
        assert_eq!(
            fit(56, 100, &o, estimate).combination,
            Some(vec![Technique::Zero3(4)])
        );
        // WHEN nothing fits, THEN no combination; WHEN it fits already, THEN none needed
        assert_eq!(fit(5, 100, &o, estimate).combination, None);
        assert!(fit(100, 100, &o, estimate).fits_as_measured);
    }
}
