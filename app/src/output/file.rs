//! The one way vramscope writes a file (pack, export, report, `diff --chart`, the viewer's
//! File > Export): the content goes to a temporary file beside the destination, is synced,
//! and is renamed into place only once complete, so a crash, a full disk or a failed write
//! never leaves a cut-off file under the requested name; on failure the temporary file is
//! removed. Whether an existing destination may be replaced is decided here too, by the
//! [`Overwrite`] policy each caller passes, so there is one place to change it.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;

/// What to do when the destination already exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overwrite {
    /// Replace it (export, report, `diff --chart`, the viewer once "Replace" is ticked).
    Replace,
    /// Leave it and fail; `hint` says how to replace it (`pack` without `--force`).
    Refuse {
        /// Appended to "FILE exists; ", e.g. "pass --force to overwrite it".
        hint: &'static str,
    },
}

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
            FileError::Create { dest, .. } | FileError::Write { dest, .. } => {
                write!(f, "cannot write {}", dest.display())
            }
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Exists { .. } => None,
            FileError::Create { source, .. } => Some(source),
            FileError::Write { source, .. } => Some(&**source),
        }
    }
}

/// Write `dest` through `body`, which gets a buffered writer on the new temporary file.
/// Returns the size of the file written.
pub fn write(
    dest: &Path,
    overwrite: Overwrite,
    tag: &str,
    body: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<u64, FileError> {
    refuse_existing(dest, overwrite)?;
    let temp = temp_path(dest, tag);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|source| FileError::Create {
            dest: dest.to_owned(),
            source,
        })?;
    finish(dest, &temp, || {
        let mut w = BufWriter::new(file);
        body(&mut w)?;
        w.flush()?;
        Ok(w.into_inner().map_err(|e| e.into_error())?)
    })
}

/// Write `dest` as `bytes`.
pub fn write_bytes(
    dest: &Path,
    overwrite: Overwrite,
    tag: &str,
    bytes: &[u8],
) -> Result<u64, FileError> {
    write(dest, overwrite, tag, |w| Ok(w.write_all(bytes)?))
}

/// Write `dest` through `body`, which creates the temporary file at the path it is given:
/// for libraries that write only to a path (plotters' PNG encoder). The temporary path ends
/// in the destination's extension, from which such libraries pick the format.
pub fn write_to_path(
    dest: &Path,
    overwrite: Overwrite,
    tag: &str,
    body: impl FnOnce(&Path) -> Result<()>,
) -> Result<u64, FileError> {
    refuse_existing(dest, overwrite)?;
    let mut temp = temp_path(dest, tag).into_os_string();
    if let Some(ext) = dest.extension() {
        temp.push(".");
        temp.push(ext);
    }
    let temp = PathBuf::from(temp);
    finish(dest, &temp, || {
        body(&temp)?;
        Ok(File::open(&temp)?)
    })
}

/// Create the directory `dir` and its parents (a report's directory).
pub fn create_dir_all(dir: &Path) -> Result<()> {
    use anyhow::Context;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

/// `.NAME.TAG-PID` beside `dest`.
pub fn temp_path(dest: &Path, tag: &str) -> PathBuf {
    let name = dest
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    dest.with_file_name(format!(".{name}.{tag}-{}", std::process::id()))
}

/// The overwrite policy: the one place it is applied.
fn refuse_existing(dest: &Path, overwrite: Overwrite) -> Result<(), FileError> {
    match overwrite {
        Overwrite::Refuse { hint } if dest.exists() => Err(FileError::Exists {
            dest: dest.to_owned(),
            hint,
        }),
        _ => Ok(()),
    }
}

/// Run `fill` (which leaves the complete content in `temp` and returns it open), sync it
/// and rename it onto `dest`; on failure remove `temp`. Returns the size written.
fn finish(dest: &Path, temp: &Path, fill: impl FnOnce() -> Result<File>) -> Result<u64, FileError> {
    let written = (|| -> Result<u64> {
        let file = fill()?;
        file.sync_all()?;
        let bytes = file.metadata()?.len();
        drop(file);
        fs::rename(temp, dest)?;
        Ok(bytes)
    })();
    written.map_err(|source| {
        let _ = fs::remove_file(temp);
        FileError::Write {
            dest: dest.to_owned(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("vramscope-file-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("list")
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replace_writes_and_replaces_leaving_no_temporary_file() {
        let dir = temp_dir("replace");
        let dest = dir.join("out.json");
        assert_eq!(
            write_bytes(&dest, Overwrite::Replace, "t", b"one").expect("written"),
            3
        );
        write_bytes(&dest, Overwrite::Replace, "t", b"second").expect("replaced");
        assert_eq!(fs::read(&dest).expect("read"), b"second");
        assert_eq!(names(&dir), ["out.json"]);
    }

    #[test]
    fn refuse_leaves_an_existing_file_alone() {
        let dir = temp_dir("refuse");
        let dest = dir.join("out.vsr");
        fs::write(&dest, b"keep").expect("write");
        let refuse = Overwrite::Refuse {
            hint: "pass --force to overwrite it",
        };
        let err = write_bytes(&dest, refuse, "t", b"new").expect_err("refused");
        assert_eq!(
            err.to_string(),
            format!("{} exists; pass --force to overwrite it", dest.display())
        );
        assert_eq!(fs::read(&dest).expect("read"), b"keep");
        assert_eq!(names(&dir), ["out.vsr"]);
    }

    #[test]
    fn a_failed_body_removes_the_temporary_file_and_keeps_the_old_one() {
        let dir = temp_dir("fail");
        let dest = dir.join("out.json");
        fs::write(&dest, b"old").expect("write");
        let err = write(&dest, Overwrite::Replace, "t", |w| {
            w.write_all(b"half")?;
            anyhow::bail!("disk full")
        })
        .expect_err("failed");
        let message = format!("{:#}", anyhow::Error::from(err));
        assert_eq!(
            message,
            format!("cannot write {}: disk full", dest.display())
        );
        assert_eq!(fs::read(&dest).expect("read"), b"old");
        assert_eq!(names(&dir), ["out.json"]);
    }

    #[test]
    fn a_path_writer_gets_a_temporary_path_with_the_extension() {
        let dir = temp_dir("path");
        let dest = dir.join("chart.png");
        write_to_path(&dest, Overwrite::Replace, "chart", |temp| {
            assert_eq!(temp.extension(), Some("png".as_ref()));
            assert_eq!(temp.parent(), Some(dir.as_path()));
            Ok(fs::write(temp, b"png")?)
        })
        .expect("written");
        assert_eq!(names(&dir), ["chart.png"]);
    }
}
