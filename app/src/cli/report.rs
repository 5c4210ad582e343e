//! `vramscope report`: a directory for a bug report (report.md and charts) on the inputs.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::LoadArgs;
use super::input::open;
use crate::output::file::Overwrite;
use crate::output::report::write_report;

/// Write the report on `paths` into the directory `output`, replacing what is there.
pub fn run(
    out: &mut impl Write,
    paths: &[PathBuf],
    output: &Path,
    load: LoadArgs,
) -> Result<ExitCode> {
    let mut inputs = Vec::with_capacity(paths.len());
    for path in paths {
        // The file name only, so reports compare across machines.
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        inputs.push((name, open(path, load)?));
    }
    write_report(output, &inputs, Overwrite::Replace)?;
    writeln!(out, "wrote {}", output.join("report.md").display())?;
    Ok(ExitCode::SUCCESS)
}
