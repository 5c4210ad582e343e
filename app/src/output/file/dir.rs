//! Directories written whole (a report): built in a temporary directory beside the
//! destination and swapped in, so the destination holds exactly what this write made —
//! never a chart left from an earlier report of other devices — and never half of it.
//! Only a directory that looks like one vramscope wrote ([`DirShape`]) is ever replaced.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use anyhow::Result;

use super::temps::{self, Temp};
use super::{FileError, Overwrite, Policy, create_error, same};

/// What a directory vramscope writes whole holds, so that replacing one removes nothing
/// else: a marker file with a known beginning, and only file names the writer makes.
#[derive(Clone, Copy, Debug)]
pub struct DirShape {
    /// What such a directory is, for messages ("a vramscope report").
    pub what: &'static str,
    /// The file every such directory holds (`report.md`).
    pub marker: &'static str,
    /// The bytes the marker file starts with.
    pub marker_head: &'static str,
    /// Whether a file name is one the writer makes (the marker's included).
    pub made: fn(&str) -> bool,
}

/// What is at a directory's destination now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Nothing.
    Absent,
    /// An empty directory: used as a new one (it holds nothing to lose).
    Empty,
    /// A directory of `shape`'s, which [`Overwrite::Replace`] replaces.
    Ours,
}

/// Whether the directory `dest` may be written under `policy`; what is there if so.
pub fn check_dir(dest: &Path, policy: &Policy<'_>, shape: &DirShape) -> Result<Found, FileError> {
    if let Some(input) = same::input_inside(dest, policy.inputs) {
        return Err(FileError::HoldsInput {
            dest: dest.to_owned(),
            input: input.to_owned(),
        });
    }
    if fs::symlink_metadata(dest).is_err() {
        return Ok(Found::Absent);
    }
    if let Some(kind) = super::not_regular(dest) {
        return Err(FileError::NotRegular {
            dest: dest.to_owned(),
            kind,
        });
    }
    if !dest.is_dir() {
        return Err(FileError::NotDirectory {
            dest: dest.to_owned(),
            what: shape.what,
        });
    }
    let foreign = |why: String| FileError::Foreign {
        dest: dest.to_owned(),
        why,
    };
    let mut empty = true;
    for entry in fs::read_dir(dest).map_err(|e| create_error(dest, e))? {
        let entry = entry.map_err(|e| create_error(dest, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let file = entry.file_type().is_ok_and(|t| t.is_file());
        if !file || !(shape.made)(&name) {
            return Err(foreign(format!(
                "it holds {name}, which is not part of {}",
                shape.what
            )));
        }
        empty = false;
    }
    if empty {
        return Ok(Found::Empty);
    }
    if !starts_with(&dest.join(shape.marker), shape.marker_head) {
        return Err(foreign(format!(
            "it has no {} of {}, so it is not one",
            shape.marker, shape.what
        )));
    }
    match policy.overwrite {
        Overwrite::Refuse { hint } => Err(FileError::Exists {
            dest: dest.to_owned(),
            hint,
        }),
        Overwrite::Replace => Ok(Found::Ours),
    }
}

/// Whether the file at `path` starts with `head`.
fn starts_with(path: &Path, head: &str) -> bool {
    let mut got = Vec::with_capacity(head.len());
    fs::File::open(path)
        .and_then(|f| f.take(head.len() as u64).read_to_end(&mut got))
        .is_ok_and(|_| got == head.as_bytes())
}

/// Write the directory `dest` through `body`, which fills the new (empty) directory at the
/// path it is given, with [`super::FRESH`] writes. Missing parents are created. A symlink
/// to a directory keeps pointing to it: the directory it names is replaced.
pub fn write_dir(
    dest: &Path,
    policy: &Policy<'_>,
    shape: &DirShape,
    tag: &str,
    body: impl FnOnce(&Path) -> Result<()>,
) -> Result<(), FileError> {
    let found = check_dir(dest, policy, shape)?;
    let target = match found {
        Found::Absent => {
            // Missing parents are made, as `mkdir -p` would.
            if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent).map_err(|e| create_error(dest, e))?;
            }
            dest.to_owned()
        }
        Found::Empty | Found::Ours => fs::canonicalize(dest).map_err(|e| create_error(dest, e))?,
    };
    let staging =
        Temp::create_dir(temps::sibling(&target, tag, None)).map_err(|e| create_error(dest, e))?;
    let write_error = |source: anyhow::Error| FileError::Write {
        dest: dest.to_owned(),
        source,
    };
    body(staging.path()).map_err(write_error)?;
    temps::pause_for_tests();
    let placed: io::Result<()> = match found {
        // rename(2) replaces an empty directory.
        Found::Absent | Found::Empty => staging.rename_onto(&target),
        Found::Ours => staging.swap_with(&target, temps::sibling(&target, "old", None)),
    };
    placed.map_err(|e| write_error(e.into()))
}
