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
