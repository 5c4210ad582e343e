//! `vramscope export`: the input converted to another tool's format — Perfetto's Chrome
//! trace-event JSON (`-o FILE`), or a directory of Parquet files of any number of inputs
//! (`-o DIR`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use collector::Timeline;

use super::input::{Inputs, inputs as find_inputs, load_options, open};
use super::{ExportFormat, LoadArgs, UsageError, export_parquet};
use crate::output::file::{self, FileError, Overwrite, Policy};
use crate::output::parquet::EXPORT_SHAPE;
use crate::output::perfetto;
use crate::output::text::plural;

/// Convert `paths` into `output` (replacing it only with `force`, never an input); say
/// so on `out`.
pub fn run(
    out: &mut impl Write,
    paths: &[PathBuf],
    format: ExportFormat,
    output: &Path,
    force: bool,
    load: LoadArgs,
) -> Result<ExitCode> {
    file::guard_signals();
    match format {
        ExportFormat::Perfetto => match paths {
            [path] if !path.is_dir() => perfetto(out, path, output, force, load),
            _ => Err(UsageError(
                "--format perfetto takes one input file; --format parquet takes many".into(),
            )
            .into()),
        },
        ExportFormat::Parquet => parquet(out, paths, output, force, load),
    }
}

fn perfetto(
    out: &mut impl Write,
    path: &Path,
    output: &Path,
    force: bool,
    load: LoadArgs,
) -> Result<ExitCode> {
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

fn parquet(
    out: &mut impl Write,
    paths: &[PathBuf],
    output: &Path,
    force: bool,
    load: LoadArgs,
) -> Result<ExitCode> {
    let files = match find_inputs(paths)? {
        Inputs::One(path) => vec![path],
        Inputs::Ranks(found) => found.files,
    };
    let mut input_paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    input_paths.extend(files.iter().map(PathBuf::as_path));
    let policy = Policy::new(Overwrite::from_force(force), &input_paths);
    // Refused before the inputs are read, not after.
    file::check_dir(output, &policy, &EXPORT_SHAPE)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let written = export_parquet::write(output, &policy, &files, load_options(load), cores)?;
    writeln!(
        out,
        "wrote {} ({}: {}, {}, {})",
        output.display(),
        plural(files.len() as u64, "input", "inputs"),
        plural(written.memory_events, "memory event", "memory events"),
        plural(written.ops, "op", "ops"),
        plural(written.samples, "sample", "samples")
    )?;
    Ok(ExitCode::SUCCESS)
}
