//! Which module forwards start a training iteration: those a backward follows before the
//! next forward begins. An evaluation between steps (a `no_grad` forward, then the next
//! batch, then the training forward) is not one, so what is made after it, outside any
//! module, is still the next iteration's input — the data flow torch follows by tensor
//! identity, read here from the order of the spans. A loss module's forward
//! (`nn.Module: CrossEntropyLoss_0`) between the model's forward and its backward is part
//! of that iteration, not the start of another.

/// The outermost module forwards that train, by start, and the evaluations' extents.
pub(super) struct TrainingForwards {
    /// Starts of the outermost module forwards that are not evaluations, sorted.
    starts: Vec<i64>,
    /// Each evaluation as (its forward's start, the end of the last loss computed on it):
    /// what is made there is its result, not a batch. Sorted, disjoint.
    evaluations: Vec<(i64, i64)>,
}

impl TrainingForwards {
    /// From every module span (start, end, whether a loss: [`is_loss`]) and the start of
    /// every call into autograd's backward (module spans come from Python frames, and so
    /// do those: a trace has both or neither). Where no backward ran (inference), every
    /// forward counts.
    pub fn build(mut modules: Vec<(i64, i64, bool)>, mut backward_starts: Vec<i64>) -> Self {
        modules.sort_unstable();
        backward_starts.sort_unstable();
        // The outermost forwards (losses aside), each with the end of the losses after it.
        let mut outermost: Vec<(i64, i64, i64)> = Vec::new();
        for (start, end, loss) in modules {
            match outermost.last_mut() {
                Some(last) if start < last.1 => last.1 = last.1.max(end),
                Some(last) if loss => last.2 = last.2.max(end),
                _ if loss => {}
                _ => outermost.push((start, end, end)),
            }
        }
        let mut forwards = Self {
            starts: Vec::new(),
            evaluations: Vec::new(),
        };
        for (i, &(start, _, through)) in outermost.iter().enumerate() {
            let next_forward = outermost.get(i + 1).map_or(i64::MAX, |m| m.0);
            let n = backward_starts.partition_point(|&b| b < start);
            let next_backward = backward_starts.get(n).copied().unwrap_or(i64::MAX);
            // Another forward before the next backward: this one was an evaluation.
            if backward_starts.is_empty()
                || next_forward == i64::MAX
                || next_backward < next_forward
            {
                forwards.starts.push(start);
            } else {
                forwards.evaluations.push((start, through));
            }
        }
        forwards
    }

    /// Whether a training forward began in (after_ns, until_ns], or `until_ns` is inside
    /// an evaluation that began after `after_ns`.
    pub fn began(&self, after_ns: i64, until_ns: i64) -> bool {
        let from = self.starts.partition_point(|&t| t <= after_ns);
        let trained = self.starts.get(from).is_some_and(|&t| t <= until_ns);
        let n = self.evaluations.partition_point(|e| e.0 <= until_ns);
        let evaluating = n
            .checked_sub(1)
            .and_then(|i| self.evaluations.get(i))
            .is_some_and(|&(start, through)| start > after_ns && until_ns <= through);
        trained || evaluating
    }
}

/// Whether a module instance (`CrossEntropyLoss_0`) is a loss: torch's losses, and the
/// custom ones named like them, end in `Loss`.
pub(super) fn is_loss(module: &str) -> bool {
    module
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .trim_end_matches('_')
        .ends_with("Loss")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_evaluation_forward_is_not_an_iterations_start() {
        // step … eval forward [10, 20) with a submodule and its loss [21, 23), training
        // forward [30, 40), backward at 45, then a last forward [60, 70) the trace ends in.
        let modules = vec![
            (10, 20, false),
            (12, 18, false),
            (21, 23, true),
            (30, 40, false),
            (60, 70, false),
        ];
        let forwards = TrainingForwards::build(modules.clone(), vec![45, 47]);
        assert!(forwards.began(0, 22), "inside the evaluation: its result");
        assert!(!forwards.began(0, 25), "after it: the next batch");
        assert!(forwards.began(0, 30));
        assert!(
            forwards.began(50, 60),
            "nothing follows the last: it counts"
        );
        // Inference: every forward counts.
        let inference = TrainingForwards::build(modules, vec![]);
        assert!(inference.began(0, 10));
    }

    #[test]
    fn losses_are_named_like_torchs() {
        assert!(is_loss("CrossEntropyLoss_0") && is_loss("MSELoss_12") && is_loss("MyLoss"));
        assert!(!is_loss("Linear_3") && !is_loss("LossyEncoder_0"));
    }
}
