//! Stack frames for live groups: their labels, which are library code rather than the
//! user's, and where a stack's user code begins.

use crate::model::python::{PythonCall, python_call};
use crate::model::{Frame, OpCategory, Recording, ThreadIdx};
use crate::timeline::Timeline;

/// A frame in reports: `file:line function`.
pub fn frame_label(rec: &Recording, f: &Frame) -> String {
    format!(
        "{}:{} {}",
        rec.strings.get(f.file),
        f.line,
        rec.strings.get(f.name)
    )
}

/// Whether a frame's file is library code rather than the user's: an installed package
/// (a `site-packages` or `dist-packages` folder), torch itself (a `torch` folder), the
/// standard library (a `pythonX.Y` folder) or Python's frozen modules — also as `pack
/// --redact-paths` leaves them (`site-packages/einops/einops.py`, `python3.11/os.py`), so
/// a redacted recording groups as the original does. Windows paths and any case count the
/// same.
pub fn is_library_file(file: &str) -> bool {
    let path = file.replace('\\', "/").to_ascii_lowercase();
    let folders = path.rsplit_once('/').map_or("", |(dirs, _)| dirs);
    let library_folder = |folder: &str| {
        let version = folder.strip_prefix("python").unwrap_or("");
        matches!(folder, "site-packages" | "dist-packages" | "torch")
            || (version.contains('.') && version.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    path.starts_with("<frozen ") || folders.split('/').any(library_folder)
}

/// An allocation's stack for reports: every frame with a file, innermost first (C++
/// frames without symbols, `??`, say nothing and are dropped; a stack of nothing else is
/// kept whole), and the index of the first frame in user code ([`is_library_file`]), 0
/// when every frame is library code.
pub(super) fn user_stack(rec: &Recording, frames: &[Frame]) -> (Vec<String>, usize) {
    let useful: Vec<&Frame> = frames
        .iter()
        .filter(|f| {
            let file = rec.strings.get(f.file);
            file != "??" && !file.is_empty()
        })
        .collect();
    let kept: Vec<&Frame> = if useful.is_empty() {
        frames.iter().collect()
    } else {
        useful
    };
    let first_user = kept
        .iter()
        .position(|f| !is_library_file(rec.strings.get(f.file)))
        .unwrap_or(0);
    (
        kept.iter().map(|f| frame_label(rec, f)).collect(),
        first_user,
    )
}

/// An allocation's stack from the Python calls a trace recorded around it on its thread
/// (`with_stack=True`), innermost first, as [`user_stack`] gives a recorded one: labels
/// and the index of the first call in user code; empty where the trace has none.
pub(super) fn python_stack(
    rec: &Recording,
    timeline: &Timeline,
    thread: ThreadIdx,
    time_ns: i64,
) -> (Vec<String>, usize) {
    let calls: Vec<PythonCall<'_>> = timeline
        .ops
        .enclosing_on_thread(thread, time_ns)
        .into_iter()
        .filter_map(|i| rec.ops.get(i as usize))
        .filter(|o| o.category == OpCategory::PythonFunction)
        .filter_map(|o| python_call(rec.op_name(o)))
        .collect();
    let first_user = calls
        .iter()
        .position(|c| !is_library_file(c.file))
        .unwrap_or(0);
    (calls.iter().map(PythonCall::label).collect(), first_user)
}

/// A frame label without its file's directory: `dir/model.py:12 silu` → `model.py:12
/// silu` (Windows paths too).
pub fn without_directory(frame: &str) -> &str {
    let file_end = line_colon(frame).unwrap_or(frame.len());
    let start = frame[..file_end].rfind(['/', '\\']).map_or(0, |i| i + 1);
    &frame[start..]
}

/// Where ":LINE " starts in a frame label "file:LINE name" (a drive's "D:" is no line).
fn line_colon(frame: &str) -> Option<usize> {
    frame.match_indices(':').map(|(i, _)| i).find(|&i| {
        let rest = &frame[i + 1..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let tail = &rest[digits..];
        digits > 0 && (tail.is_empty() || tail.starts_with(' '))
    })
}

#[cfg(test)]
mod tests {
    use super::is_library_file;

    #[test]
    fn library_frames_are_packages_torch_and_the_standard_library() {
        for library in [
            r"D:\Dev\a\.venv\Lib\site-packages\torch\functional.py",
            r"D:\Dev\a\.venv\Lib\site-packages\einops\einops.py",
            "/usr/lib/python3/dist-packages/numpy/core.py",
            "/usr/lib/python3.11/contextlib.py",
            "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py",
            "torch/nn/modules/module.py",
            "site-packages/einops/einops.py",
            "python3.11/threading.py",
            "/home/me/pytorch/torch/_tensor.py",
            "<frozen runpy>",
        ] {
            assert!(is_library_file(library), "{library}");
        }
        for user in [
            r"D:\Dev\a\cs336-basics\cs336_basics\model.py",
            "/home/me/proj/train.py",
            "model.py",
            "/home/me/torchvision_tricks/train.py",
            "/home/me/mylib/python3.py",
            "/home/me/python3/x.py",
            "/home/me/torch.py",
        ] {
            assert!(!is_library_file(user), "{user}");
        }
    }
}
