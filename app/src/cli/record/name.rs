//! The recording's name when `-o` is not given: `vramscope-<what>-<pid>.vsr` in the current
//! directory, where `<what>` is what the user would call the run — the script for
//! `python train.py` (`vramscope-train-4242.vsr`), the module for `python -m pkg.train`,
//! else the program — made safe for any file system, as memray names its files.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Endings of the scripts an interpreter or a launcher (torchrun, accelerate, deepspeed)
/// runs: the first argument with one names the run.
const SCRIPT_ENDINGS: [&str; 3] = [".py", ".sh", ".ipynb"];

/// `vramscope-<what>-<pid>.vsr` (`<pid>` is vramscope's).
pub fn default_name(command: &[OsString]) -> PathBuf {
    let safe: String = what_runs(command)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = if safe.is_empty() {
        "program".into()
    } else {
        safe
    };
    PathBuf::from(format!("vramscope-{safe}-{}.vsr", std::process::id()))
}

/// The script's stem, the module's last part, or the program's file name.
fn what_runs(command: &[OsString]) -> String {
    let text = |a: &OsString| a.to_string_lossy().into_owned();
    let mut args = command.iter().skip(1);
    while let Some(arg) = args.next() {
        let arg = text(arg);
        if arg == "-m"
            && let Some(module) = args.next()
        {
            let module = text(module);
            return module.rsplit('.').next().unwrap_or_default().to_owned();
        }
        let script = SCRIPT_ENDINGS.iter().any(|e| arg.ends_with(e)) && !arg.starts_with('-');
        if script && let Some(stem) = Path::new(&arg).file_stem() {
            return stem.to_string_lossy().into_owned();
        }
    }
    command
        .first()
        .and_then(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(command: &[&str]) -> String {
        let command: Vec<OsString> = command.iter().map(OsString::from).collect();
        let pid = std::process::id();
        default_name(&command)
            .to_str()
            .expect("utf-8")
            .strip_suffix(&format!("-{pid}.vsr"))
            .expect("ends in the pid")
            .to_owned()
    }

    #[test]
    fn named_after_the_script_the_module_or_the_program() {
        assert_eq!(name(&["python", "train.py"]), "vramscope-train");
        assert_eq!(
            name(&["python3", "-u", "src/exp/train_gpt.py", "--cfg", "b.py"]),
            "vramscope-train_gpt"
        );
        assert_eq!(
            name(&["torchrun", "--nproc-per-node=8", "pretrain.py"]),
            "vramscope-pretrain"
        );
        assert_eq!(
            name(&["python", "-m", "torch.distributed.run", "x.py"]),
            "vramscope-run"
        );
        assert_eq!(
            name(&["/usr/bin/python3.11", "-c", "pass"]),
            "vramscope-python3.11"
        );
        assert_eq!(name(&["./my run$(x)"]), "vramscope-my_run__x_");
        assert_eq!(name(&["sh", "job.sh"]), "vramscope-job");
    }
}
