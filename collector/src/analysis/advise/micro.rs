//! Micro-batching with gradient accumulation: what the batch makes shrinks, and the
//! gradients, made by the first micro-batch's backward, are live through every later one.

use super::curve::Seg;
use super::run::{Life, Phase, Run};
use crate::analysis::categories::Category;

/// Per iteration (`i` optimizer steps ended before it), when its accumulated gradients can
/// begin: the iteration's start, or, where the previous iteration's gradients are still
/// live then (`zero_grad` at the top of the loop frees them), their last free. Moving the
/// new gradients before that would count both copies at once.
pub(super) fn accumulation_starts(lives: &[Life], steps: &[(i64, i64)], first_ns: i64) -> Vec<i64> {
    let starts = std::iter::once(first_ns).chain(steps.iter().map(|s| s.1));
    starts
        .map(|start| {
            lives
                .iter()
                .filter(|l| l.category == Category::Gradient && l.alloc_ns < start)
                .filter_map(|l| l.free_ns)
                .filter(|&f| f > start)
                .fold(start, i64::max)
        })
        .collect()
}

/// Allocation `life`'s segment `seg` with the batch split in `k`.
pub(super) fn reshape(k: u32, run: &Run, life: &Life, seg: Seg) -> Vec<Seg> {
    // What the batch makes. Memory nothing names (`unknown`, `before_trace`) stays as
    // measured: the advisor never scales what it cannot name.
    let per_sample = matches!(
        life.category,
        Category::Activation | Category::Input | Category::Temporary | Category::AutogradDetail
    ) && life.phase != Phase::Optimizer;
    if per_sample {
        let k = i64::from(k.max(1));
        return vec![Seg {
            bytes: (seg.bytes + k - 1) / k,
            ..seg
        }];
    }
    if life.category == Category::Gradient && k > 1 {
        // Accumulated: the later micro-batches run with every gradient live, and each of
        // their backward nodes makes its gradient anew beside the accumulated one, until
        // AccumulateGrad adds it in after the node.
        let start_ns = run.accumulation_start(life.alloc_ns).min(seg.start_ns);
        let mut out = vec![Seg { start_ns, ..seg }];
        if life.phase == Phase::Backward {
            let end_ns = life
                .node_end_ns
                .unwrap_or(seg.start_ns + 1)
                .max(seg.start_ns + 1);
            out.push(Seg {
                end_ns: Some(seg.end_ns.map_or(end_ns, |e| e.min(end_ns))),
                ..seg
            });
        }
        return out;
    }
    vec![seg]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(alloc_ns: i64, free_ns: Option<i64>) -> Life {
        Life {
            bytes: 100,
            alloc_ns,
            free_ns,
            category: Category::Gradient,
            phase: Phase::Backward,
            block: None,
            full_precision: false,
            saved: false,
            node_end_ns: None,
            matmul: false,
            loss: false,
            softmax: false,
            norm: false,
            core: None,
            split: false,
            head: false,
            backward_block: None,
        }
    }

    #[test]
    fn the_next_steps_gradients_begin_once_zero_grad_frees_the_last() {
        // GIVEN a step ending at 50, its gradients (made at 20 and 30) freed by zero_grad at
        // 60 and 61, and the next step's gradient made at 80
        let lives = [
            gradient(20, Some(60)),
            gradient(30, Some(61)),
            gradient(80, None),
        ];
        // WHEN the iterations' accumulation starts are found
        let starts = accumulation_starts(&lives, &[(40, 50)], 0);
        // THEN the first begins with the trace, the second at 61, not at the step's end
        assert_eq!(starts, vec![0, 61]);
    }
}
