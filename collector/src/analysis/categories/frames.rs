//! Where a memory event happened, read from its call stack (allocator snapshots, recordings
//! with `--torch-memory`): the phase from the frames of torch's optimizer, autograd engine
//! and `zero_grad`, the leaf from the innermost Python frame.

use super::Phase;
use super::leaf::LeafKind;
use super::phase::Site;
use super::python_frames::{AVERAGING, FrameSays, says};
use crate::model::{Frame, Recording, StrId};

/// A snapshot block's site from its stack (innermost frame first).
pub(super) fn site_from_frames(rec: &Recording, frames: &[Frame]) -> Site {
    let text = |id: StrId| rec.strings.get(id);
    let any =
        |f: &dyn Fn(&str, &str) -> bool| frames.iter().any(|fr| f(text(fr.name), text(fr.file)));
    // What any frame says, as a trace's Python spans say it (`python_frames::says`).
    let any_says = |pick: fn(&FrameSays) -> bool| any(&|n, file| pick(&says(n, file)));
    let phase = if any(&|n, _| n.contains("zero_grad")) {
        Phase::ZeroGrad
    } else if any(&|_, file| in_path(file, "torch/optim/") && !in_path(file, AVERAGING)) {
        Phase::Optimizer
    } else if any(&|n, file| {
        n.contains("evaluate_function")
            || n.contains("Backward")
            || (n.contains("backward")
                && (in_path(file, "torch/autograd/") || in_path(file, "torch/_tensor.py")))
    }) {
        Phase::Backward
    } else {
        Phase::Forward
    };
    // The leaf is the innermost Python frame (the line of the program or library that
    // called the op); C++ frames above it (the allocator, the dispatcher) say nothing
    // of which op it was, and every block shares them.
    let python = frames.iter().position(|f| is_python(text(f.file)));
    let leaf = python
        .and_then(|i| frames.get(i))
        .map(|f| (f.file.0, f.line));
    // Inside an ATen op below that frame: a free there happened within the op (an
    // intermediate of a composite op), not when Python dropped its last reference.
    // A stack of Python frames only (`_record_memory_history(stacks="python")`) cannot
    // tell: such a free counts as inside the op, as every frame-less free of a trace does.
    let inner = python.map_or(frames, |i| frames.get(..i).unwrap_or_default());
    let has_cpp = frames.iter().any(|f| !is_python(text(f.file)));
    let in_op = !has_cpp || inner.iter().any(|f| text(f.name).starts_with("at::"));
    Site {
        phase,
        leaf,
        leaf_kind: LeafKind::Other,
        innermost_op: None,
        in_module: any(&|_, file| in_path(file, MODULES)),
        step: None,
        makes_weights: any_says(|s| s.makes_weights),
        loads_checkpoint: any_says(|s| s.loads_checkpoint),
        copies_for_averaging: any_says(|s| s.copies_for_averaging),
        clips_gradients: any_says(|s| s.clips_gradients),
        makes_ddp_buckets: any_says(|s| s.makes_ddp_buckets),
        in_op,
        from_frames: true,
    }
}

/// The part of a file's path that says it is a `torch.nn` module's source.
pub(super) const MODULES: &str = "torch/nn/modules/";

/// Whether a frame's file is Python source.
fn is_python(file: &str) -> bool {
    file.ends_with(".py")
}

/// Whether `file` contains `part` (written with `/`), with either separator: snapshots
/// taken on Windows name `torch\optim\adamw.py`.
pub(super) fn in_path(file: &str, part: &str) -> bool {
    file.contains(part) || (file.contains('\\') && file.contains(&part.replace('/', "\\")))
}
