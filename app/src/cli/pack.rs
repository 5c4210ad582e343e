//! `vramscope pack`: any input rewritten as a compact, gzip-compressed vramscope recording
//! holding only what vramscope reads, so a 500 MB trace fits in a bug report.
//!
//! The pack is written through [`crate::output::file`], so a crash, a full disk or Ctrl-C
//! never leaves a half-written pack under the requested name, and never the input.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use collector::Recording;
use collector::parse::recording::packed::{self, PackInfo};
use collector::units::bytes_iec;
use flate2::Compression;
use flate2::write::GzEncoder;

use super::LoadArgs;
use super::input::open;
use crate::output::file::{self, Overwrite, Policy};
use crate::output::text::plural;

/// Pack `path` into `output` and say so on `out`.
pub fn run(
    out: &mut impl Write,
    path: &Path,
    output: &Path,
    redact_paths: bool,
    force: bool,
    load: LoadArgs,
) -> Result<ExitCode> {
    file::guard_signals();
    // Refused before the input is read, not after.
    file::check(output, &Policy::new(Overwrite::from_force(force), &[path]))?;
    let rec = open(path, load)?;
    let packed = pack(path, rec, output, redact_paths, force)?;
    writeln!(out, "{}", describe(output, &packed))?;
    Ok(ExitCode::SUCCESS)
}

/// gzip level of packs. Measured: level 9 makes packs of the real traces 1–8 % smaller than
/// the default 6, for 0.2 s more on the 111 MB benchmark trace (whose pack is 1.4 MB); a
/// pack is written once and mailed around, so smaller wins.
const PACK_COMPRESSION: u32 = 9;

/// Bytes gathered before each write into the gzip encoder: 256 KiB of memory, and each
/// write costs flate2 a 32 KiB memset, so fewer, larger writes.
const PACK_WRITE_BUFFER_BYTES: usize = 256 << 10;

/// What `pack` did.
pub struct Packed {
    /// Size of the input on disk.
    pub input_bytes: u64,
    /// Size of the pack.
    pub output_bytes: u64,
    /// Strings with user paths rewritten (when redacting).
    pub redacted: Option<collector::redact::Redacted>,
}

/// Pack `rec` (read from `input`) into `output`.
pub fn pack(
    input: &Path,
    mut rec: Recording,
    output: &Path,
    redact: bool,
    force: bool,
) -> Result<Packed> {
    let redacted = redact.then(|| collector::redact::redact_paths(&mut rec));
    let info = PackInfo {
        source_name: input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .map(|n| collector::redact::redact_text(&n).into_owned()),
        source_bytes: fs::metadata(input).ok().map(|m| m.len()),
        redacted_paths: redact,
    };
    let inputs = [input];
    let policy = Policy::new(Overwrite::from_force(force), &inputs);
    let output_bytes = file::write(output, &policy, TEMP_TAG, |w| {
        let gz = GzEncoder::new(w, Compression::new(PACK_COMPRESSION));
        // serde writes a few bytes at a time, and flate2 zero-fills its 32 KiB output
        // buffer on every write: unbuffered, that memset was half of `pack`'s time.
        let mut buffered = BufWriter::with_capacity(PACK_WRITE_BUFFER_BYTES, gz);
        packed::write(&mut buffered, &mut rec, &info)?;
        buffered
            .into_inner()
            .map_err(|e| e.into_error())?
            .finish()?;
        Ok(())
    })?;
    Ok(Packed {
        input_bytes: info.source_bytes.unwrap_or(0),
        output_bytes,
        redacted,
    })
}

/// The temporary file's tag: `.NAME.pack-PID-N` beside the output.
const TEMP_TAG: &str = "pack";

/// One line for the terminal.
pub fn describe(output: &Path, p: &Packed) -> String {
    let ratio = if p.output_bytes > 0 {
        format!(
            " ({:.1}× smaller)",
            p.input_bytes as f64 / p.output_bytes as f64
        )
    } else {
        String::new()
    };
    let redacted = p.redacted.map_or_else(String::new, |r| {
        let strings = plural((r.strings + r.other) as u64, "string", "strings");
        format!("; user paths removed from {strings}")
    });
    format!(
        "wrote {}: {} from {}{ratio}{redacted}",
        output.display(),
        bytes_iec(p.output_bytes as i64),
        bytes_iec(p.input_bytes as i64),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    #[test]
    fn a_missing_directory_is_an_error_and_leaves_nothing() {
        let rec = Recording::empty(collector::model::SourceFormat::TorchChromeTrace, "t");
        let out = Path::new("/nonexistent-dir-vramscope/out.vsr");
        let err = pack(Path::new("in.json"), rec, out, false, false).err();
        let message = format!("{:#}", err.expect("no such directory"));
        assert!(
            message.contains("cannot write /nonexistent-dir-vramscope/out.vsr"),
            "{message}"
        );
        let _ = File::open(out).expect_err("nothing written");
    }
}
