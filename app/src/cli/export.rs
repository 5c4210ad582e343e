//! `vramscope export`: the input converted to another tool's format (Perfetto's Chrome
//! trace-event JSON), written to `-o FILE`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use collector::Timeline;

use super::input::open;
use super::{ExportFormat, LoadArgs};
use crate::output::file::{self, FileError, Overwrite, Policy};
use crate::output::perfetto;

/// Convert `path` into `output` (replacing it only with `force`, never the input); say so
/// on `out`.
pub fn run(
    out: &mut impl Write,
    path: &Path,
    format: ExportFormat,
    output: &Path,
    force: bool,
    load: LoadArgs,
) -> Result<ExitCode> {
    file::guard_signals();
    let ExportFormat::Perfetto = format;
    let inputs = [path];
    let policy = Policy::new(Overwrite::from_force(force), &inputs);
    // Refused before the input is read, not after.
    file::check(output, &policy)?;
    let rec = open(path, load)?;
    let timeline = Timeline::build(&rec);
    match perfetto::write_file(output, &policy, &rec, &timeline) {
        Ok(_) => {}
        // `export` has always said "cannot create" when the file cannot be made.
        Err(FileError::Create { dest, source }) => {
            return Err(
                anyhow::Error::new(source).context(format!("cannot create {}", dest.display()))
            );
        }
        Err(e) => return Err(e.into()),
    }
    writeln!(out, "wrote {}", output.display())?;
    Ok(ExitCode::SUCCESS)
}
