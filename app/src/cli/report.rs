//! `vramscope report`: a directory for a bug report (report.md and charts) on the inputs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::LoadArgs;
use super::input::open;
use crate::output::file::{self, Overwrite, Policy};
use crate::output::report::{REPORT_SHAPE, write_report};

/// Write the report on `paths` into the directory `output`, whole; an existing report
/// there is replaced only with `force` (never a directory holding an input or other files).
pub fn run(
    out: &mut impl Write,
    paths: &[PathBuf],
    output: &Path,
    force: bool,
    load: LoadArgs,
) -> Result<ExitCode> {
    file::guard_signals();
    let input_paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let policy = Policy::new(Overwrite::from_force(force), &input_paths);
    // Refused before the inputs are read, not after.
    file::check_dir(output, &policy, &REPORT_SHAPE)?;
    let mut inputs = Vec::with_capacity(paths.len());
    for path in paths {
        // The file name only, so reports compare across machines.
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        inputs.push((name, open(path, load)?));
    }
    write_report(output, &inputs, &policy)?;
    writeln!(out, "wrote {}", output.join("report.md").display())?;
    Ok(ExitCode::SUCCESS)
}
