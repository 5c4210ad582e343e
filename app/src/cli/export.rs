//! `vramscope export`: the input converted to another tool's format (Perfetto's Chrome
//! trace-event JSON), written to `-o FILE`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use collector::Timeline;

use super::input::open;
use super::{ExportFormat, LoadArgs};
use crate::output::file::{FileError, Overwrite};
use crate::output::perfetto;

/// Convert `path` into `output`, replacing it if it exists; say so on `out`.
pub fn run(
    out: &mut impl Write,
    path: &Path,
    format: ExportFormat,
    output: &Path,
    load: LoadArgs,
) -> Result<ExitCode> {
    let ExportFormat::Perfetto = format;
    let rec = open(path, load)?;
    let timeline = Timeline::build(&rec);
    match perfetto::write_file(output, Overwrite::Replace, &rec, &timeline) {
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
