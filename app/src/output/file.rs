//! The one way vramscope writes the user's files, and the one policy for it: `pack`,
//! `export`, `report`, `diff --chart` and the viewer's File > Export all come through here
//! ([`check`] is public for `record`, which writes its file as it goes and so cannot use
//! [`write`](fn@write)).
//!
//! - An existing destination is replaced only when the caller's [`Overwrite`] says so
//!   (`--force`, the viewer's "Replace"); otherwise the error says how.
//! - A destination that is one of the inputs — the same path, a symlink to it, a path with
//!   `..` that leads to it, another hard link to the same file, or for a directory one that
//!   holds an input — is refused whatever [`Overwrite`] says.
//! - A file is written to a temporary beside the destination, synced, and renamed into place
//!   only once complete, then the directory is synced: a crash, a full disk or a failed
//!   write never leaves a cut-off file under the requested name. The temporary is removed
//!   on error, and on SIGINT, SIGTERM and SIGHUP once [`guard_signals`] has run ([`temps`]);
//!   only SIGKILL or a power cut can leave one (`.NAME.TAG-PID-N`, named after the file).
//! - A directory (a report) is built whole in a temporary directory beside it and swapped in
//!   ([`write_dir`]), so no stale file of an earlier report survives; a directory that does
//!   not look like one vramscope wrote ([`DirShape`]) is never replaced, so `-o ~ --force`
//!   cannot cost a home directory. An empty directory is used as a new one.

mod dir;
mod same;
mod temps;
#[cfg(test)]
mod tests;

use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;

pub use dir::{DirShape, check_dir, write_dir};
pub use temps::guard_signals;

/// What to do when the destination already exists (never when it is an input).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overwrite {
    /// Replace it (`--force`, the viewer once "Replace" is ticked).
    Replace,
    /// Leave it and fail; `hint` says how to replace it.
    Refuse {
        /// Appended to "FILE exists; ", e.g. [`FORCE_HINT`].
        hint: &'static str,
    },
}

/// How the commands' `--force` is named in the refusal.
pub const FORCE_HINT: &str = "pass --force to overwrite it";

impl Overwrite {
    /// The commands' rule: replace with `--force`, refuse without and say to pass it.
    pub fn from_force(force: bool) -> Overwrite {
        if force {
            Overwrite::Replace
        } else {
            Overwrite::Refuse { hint: FORCE_HINT }
        }
    }
}

/// Where a writer may write: whether an existing destination may be replaced, and the
/// inputs the destination must never be.
#[derive(Clone, Copy, Debug)]
pub struct Policy<'a> {
    /// Whether an existing destination is replaced.
    pub overwrite: Overwrite,
    /// The files read to make the output.
    pub inputs: &'a [&'a Path],
}

impl<'a> Policy<'a> {
    /// The policy of a command that read `inputs`.
    pub fn new(overwrite: Overwrite, inputs: &'a [&'a Path]) -> Policy<'a> {
        Policy { overwrite, inputs }
    }
}

/// For files inside a directory [`write_dir`] is building: it is vramscope's own and new,
/// so there is nothing to protect in it.
pub const FRESH: Policy<'static> = Policy {
    overwrite: Overwrite::Replace,
    inputs: &[],
};

/// Why a file was not written.
#[derive(Debug)]
pub enum FileError {
    /// The destination exists and the policy is [`Overwrite::Refuse`].
    Exists {
        /// The destination.
        dest: PathBuf,
        /// How to replace it.
        hint: &'static str,
    },
    /// The destination is one of the inputs (refused even with `--force`).
    IsInput {
        /// The destination.
        dest: PathBuf,
        /// The input it is.
        input: PathBuf,
    },
    /// The destination directory holds one of the inputs (refused even with `--force`).
    HoldsInput {
        /// The destination.
        dest: PathBuf,
        /// The input inside it.
        input: PathBuf,
    },
    /// The destination exists and is not a regular file (a device, a FIFO, a socket, or a
    /// symlink to one): refused even with `--force`, which would put a file in its place.
    NotRegular {
        /// The destination.
        dest: PathBuf,
        /// What it is ("a character device").
        kind: &'static str,
    },
    /// A file was asked for and the destination is a directory.
    IsDirectory {
        /// The destination.
        dest: PathBuf,
    },
    /// A directory was asked for and the destination is something else.
    NotDirectory {
        /// The destination.
        dest: PathBuf,
        /// What the directory would have been ("a vramscope report").
        what: &'static str,
    },
    /// The destination directory holds something vramscope did not write there.
    Foreign {
        /// The destination.
        dest: PathBuf,
        /// What is in it, and what it would have to be.
        why: String,
    },
    /// The temporary file could not be created beside the destination (a missing
    /// directory, no permission).
    Create {
        /// The destination.
        dest: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Writing, syncing or renaming into place failed.
    Write {
        /// The destination.
        dest: PathBuf,
        /// Why.
        source: anyhow::Error,
    },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Exists { dest, hint } => write!(f, "{} exists; {hint}", dest.display()),
            FileError::IsInput { dest, input } => write!(
                f,
                "refusing to write {}: it is the input {}; choose another name",
                dest.display(),
                input.display()
            ),
            FileError::HoldsInput { dest, input } => write!(
                f,
                "refusing to replace {}: it holds the input {}; choose another directory",
                dest.display(),
                input.display()
            ),
            FileError::NotRegular { dest, kind } => write!(
                f,
                "refusing to write {}: it is {kind}, not a regular file; name a new file",
                dest.display()
            ),
            FileError::IsDirectory { dest } => write!(
                f,
                "{} is a directory; name a file (in it, or elsewhere)",
                dest.display()
            ),
            FileError::NotDirectory { dest, what } => write!(
                f,
                "{} is a file, and {what} is a directory; choose another name",
                dest.display()
            ),
            FileError::Foreign { dest, why } => write!(
                f,
                "refusing to replace {}: {why}; choose a new or empty directory",
                dest.display()
            ),
            FileError::Create { dest, .. } | FileError::Write { dest, .. } => {
                write!(f, "cannot write {}", dest.display())
            }
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Create { source, .. } => Some(source),
            FileError::Write { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// Whether `dest` may be written as a file under `policy`; the refusal otherwise. Every
/// writer here asks it first; a writer that writes as it goes (`record`) asks it before
/// creating its file.
pub fn check(dest: &Path, policy: &Policy<'_>) -> Result<(), FileError> {
    if let Some(input) = same::input_at(dest, policy.inputs) {
        return Err(FileError::IsInput {
            dest: dest.to_owned(),
            input: input.to_owned(),
        });
    }
    if dest.is_dir() {
        return Err(FileError::IsDirectory {
            dest: dest.to_owned(),
        });
    }
    if let Some(kind) = not_regular(dest) {
        return Err(FileError::NotRegular {
            dest: dest.to_owned(),
            kind,
        });
    }
    // A dangling symlink is an existing name too: the rename would replace it.
    match policy.overwrite {
        Overwrite::Refuse { hint } if fs::symlink_metadata(dest).is_ok() => {
            Err(FileError::Exists {
                dest: dest.to_owned(),
                hint,
            })
        }
        _ => Ok(()),
    }
}

/// What `dest` is when it exists and is neither a regular file nor a directory, following
/// symlinks: `/dev/null`, a FIFO, a socket, or a link to one such.
pub(crate) fn not_regular(dest: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let kind = fs::metadata(dest).ok()?.file_type();
    if kind.is_file() || kind.is_dir() {
        None
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("a special file")
    }
}

/// Write `dest` through `body`, which gets a buffered writer on the new temporary file.
/// Returns the size of the file written.
pub fn write(
    dest: &Path,
    policy: &Policy<'_>,
    tag: &str,
    body: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<u64, FileError> {
    check(dest, policy)?;
    let (temp, file) = temps::Temp::create_file(temps::sibling(dest, tag, None))
        .map_err(|source| create_error(dest, source))?;
    finish(dest, temp, |_| {
        let mut w = BufWriter::new(file);
        body(&mut w)?;
        w.flush()?;
        Ok(w.into_inner().map_err(|e| e.into_error())?)
    })
}

/// Write `dest` as `bytes`.
pub fn write_bytes(
    dest: &Path,
    policy: &Policy<'_>,
    tag: &str,
    bytes: &[u8],
) -> Result<u64, FileError> {
    write(dest, policy, tag, |w| Ok(w.write_all(bytes)?))
}

/// Write `dest` through `body`, which writes the temporary file at the path it is given
/// (it exists, empty): for libraries that write only to a path (plotters' PNG encoder).
/// The temporary path ends in `.EXT`, from which such libraries pick the format, whatever
/// the destination is called.
pub fn write_to_path(
    dest: &Path,
    policy: &Policy<'_>,
    tag: &str,
    ext: &str,
    body: impl FnOnce(&Path) -> Result<()>,
) -> Result<u64, FileError> {
    check(dest, policy)?;
    let (temp, file) = temps::Temp::create_file(temps::sibling(dest, tag, Some(ext.as_ref())))
        .map_err(|source| create_error(dest, source))?;
    drop(file);
    finish(dest, temp, |path| {
        body(path)?;
        Ok(File::open(path)?)
    })
}

fn create_error(dest: &Path, source: io::Error) -> FileError {
    FileError::Create {
        dest: dest.to_owned(),
        source,
    }
}

/// Run `fill` (which leaves the complete content in the temporary and returns it open),
/// sync it and rename it onto `dest`; on failure the temporary is removed (by its drop).
/// Returns the size written.
fn finish(
    dest: &Path,
    temp: temps::Temp,
    fill: impl FnOnce(&Path) -> Result<File>,
) -> Result<u64, FileError> {
    let written = (|| -> Result<u64> {
        let file = fill(temp.path())?;
        file.sync_all()?;
        let bytes = file.metadata()?.len();
        drop(file);
        temps::pause_for_tests();
        temp.rename_onto(dest)?;
        Ok(bytes)
    })();
    written.map_err(|source| FileError::Write {
        dest: dest.to_owned(),
        source,
    })
}
