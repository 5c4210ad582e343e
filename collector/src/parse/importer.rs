//! The importer seam: one [`Importer`] per [`SourceFormat`], found through one exhaustive
//! `match` ([`SourceFormat::importer`], beside the enum in `parse/mod.rs`). Everything that lists formats
//! — detection, the packed reader, CLI help, error hints, the viewer's open dialog — walks
//! [`SourceFormat::ALL`] and asks the importer, so a new format is one module implementing
//! [`Importer`] plus its variant, `mod` line and match arm in `parse/mod.rs`; the
//! compiler points at every place that must learn about it.

use std::path::Path;

use super::input::{Input, without_bom};
use super::{LoadOptions, LoadProgress, SourceError, SourceFormat};
use crate::model::Recording;

/// How sure an importer is that the first bytes of a file are its format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Detection {
    /// Not this format.
    No,
    /// This format's container, but a variant vramscope cannot read; the reason is shown
    /// when no other importer claims the file.
    Refused(String),
    /// Plausibly this format (a JSON document could be many things).
    Likely,
    /// This format's magic bytes or signature.
    Certain,
}

/// What an importer may use besides the content: the file, the options, the progress.
pub struct ReadContext<'a> {
    /// The input file (SQLite opens it itself; recordings look for snapshots beside it).
    pub path: &'a Path,
    /// The user's loading options.
    pub options: LoadOptions,
    /// Bytes read so far and the cancel flag, shared with a watching thread.
    pub progress: &'a LoadProgress,
}

/// One input format: recognised from its first bytes, read into a [`Recording`] (warnings
/// go to the recording's diagnostics; progress is the input's byte count).
pub trait Importer: Sync {
    /// How sure this importer is that `head`, the first decompressed bytes, is its format.
    fn detect(&self, head: &[u8]) -> Detection;
    /// Reads the whole input. Errors carry an offset in the (decompressed) content.
    fn read(&self, input: Input, context: &ReadContext<'_>) -> Result<Recording, SourceError>;
    /// File-name endings this format usually has, for the open dialog's filters (the
    /// format is still recognised by content, whatever the name).
    fn file_extensions(&self) -> &'static [&'static str];
    /// How to capture memory in this format next time, for a file without memory events.
    fn memory_hint(&self) -> &'static str;
    /// Whether `--salvage` reads the complete events of a file of this format that ends
    /// early or is damaged (errors then say so). Formats read as a whole say no.
    fn salvages(&self) -> bool {
        true
    }
}

/// Containers a trace is often sent in, by their magic bytes: named in the error (a
/// `.json.gz` that is really a zip was described by its first byte alone), with the
/// command that takes the input out.
const ARCHIVES: [(&[u8], &str, &str); 6] = [
    (
        b"PK\x03\x04",
        "zip",
        "unpack it (unzip) and pass the trace inside",
    ),
    (
        b"\x28\xb5\x2f\xfd",
        "zstd",
        "decompress it (zstd -d) and pass the result",
    ),
    (
        b"\xfd7zXZ\x00",
        "xz",
        "decompress it (xz -d) and pass the result",
    ),
    (
        b"BZh",
        "bzip2",
        "decompress it (bzip2 -d) and pass the result",
    ),
    (
        b"7z\xbc\xaf\x27\x1c",
        "7z",
        "unpack it (7z x) and pass the trace inside",
    ),
    (
        b"\x04\x22\x4d\x18",
        "lz4",
        "decompress it (lz4 -d) and pass the result",
    ),
];

/// The format whose importer is surest of `head`; otherwise why none is.
pub fn detect(head: &[u8]) -> Result<SourceFormat, String> {
    let mut likely = None;
    let mut refusal = None;
    for format in SourceFormat::ALL {
        match format.importer().detect(head) {
            Detection::Certain => return Ok(format),
            Detection::Likely => likely = likely.or(Some(format)),
            Detection::Refused(why) => refusal = refusal.or(Some(why)),
            Detection::No => {}
        }
    }
    if let Some(format) = likely {
        return Ok(format);
    }
    if let Some(why) = refusal {
        return Err(why);
    }
    if let Some((name, next)) = ARCHIVES
        .iter()
        .find(|(magic, ..)| head.starts_with(magic))
        .map(|&(_, name, next)| (name, next))
    {
        return Err(format!(
            "it is a {name} file, whatever its name says; {next}"
        ));
    }
    let text = without_bom(head);
    match text.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(&b) => Err(format!(
            "it starts with {}",
            super::json_stream::describe_byte(b)
        )),
        None if head.is_empty() => Err("the file is empty".into()),
        None => Err(format!(
            "its first {} bytes are whitespace and nothing else",
            head.len()
        )),
    }
}

/// The first non-whitespace byte of a text and what follows it.
pub fn first_token(head: &[u8]) -> Option<&[u8]> {
    let text = without_bom(head);
    let start = text.iter().position(|b| !b.is_ascii_whitespace())?;
    text.get(start..)
}

/// The formats, one per line, as CLI help and error hints list them.
pub fn formats_help() -> String {
    SourceFormat::ALL
        .iter()
        .map(|&f| {
            let endings = f.importer().file_extensions().join(", ");
            format!("  {:<34} {endings}", f.describe())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_an_importer_that_claims_its_own_signature() {
        let heads: [(&[u8], SourceFormat); 6] = [
            (b"  \n{\"a\":1}", SourceFormat::TorchChromeTrace),
            (b"\x80\x04\x95", SourceFormat::TorchSnapshot),
            (b"SQLite format 3\0\x10", SourceFormat::NsightSqlite),
            (b"{\"Type\":48}", SourceFormat::NsightJson),
            (b"[[-1, 1, 512, 0]]", SourceFormat::TorchMemoryTimeline),
            (
                crate::parse::recording::MAGIC,
                SourceFormat::VramscopeRecording,
            ),
        ];
        for format in SourceFormat::ALL {
            let (head, _) = heads
                .iter()
                .find(|(_, f)| *f == format)
                .expect("a head for every format");
            assert_eq!(detect(head), Ok(format), "{format:?}");
            assert!(!format.importer().file_extensions().is_empty());
            assert!(!format.importer().memory_hint().is_empty());
        }
        assert_eq!(formats_help().lines().count(), SourceFormat::ALL.len());
    }

    #[test]
    fn refusals_and_unknown_content_say_why() {
        assert_eq!(
            detect(b"\xEF\xBB\xBF[{}]"),
            Ok(SourceFormat::TorchChromeTrace)
        );
        assert_eq!(
            detect(b"{\"traceEvents\":[]}"),
            Ok(SourceFormat::TorchChromeTrace)
        );
        assert_eq!(
            detect(b"{ \"data\":[\"[Unknown]\"]}"),
            Ok(SourceFormat::NsightJson)
        );
        assert_eq!(detect(b"{\"type\":\"x\"}"), Ok(SourceFormat::NsightJson));
        assert!(
            detect(b"\x80\x09")
                .expect_err("protocol 9")
                .contains("protocol 9")
        );
        assert!(detect(b"hello").expect_err("not a format").contains("'h'"));
        assert_eq!(detect(b"").expect_err("empty"), "the file is empty");
        assert!(detect(b" \n").expect_err("blank").contains("whitespace"));
    }
}
