//! The files a recording names beside itself — its `torch_memory` folder, the status files
//! in it, and the snapshot and tags files a status line names — come from the recorded
//! program, or from whoever sent the recording: each is resolved inside the folder it
//! belongs to (no absolute path, no `..`, no symlink out of it), must be a regular file (a
//! FIFO would hang the reader, `/dev/zero` grow it without end) and is read with a limit.

use std::fs::{self, File};
use std::io;
use std::path::{Component, Path, PathBuf};

/// Largest status file read (`status-<pid>.jsonl`): a process writes a few lines of under
/// 1 KiB each; the limit costs at most this much memory per file, read line by line.
pub const MAX_STATUS_FILE_BYTES: u64 = 16 << 20;

/// Largest snapshot file read from beside a recording: the largest the shim's ring buffer
/// writes is a few hundred MiB; the loader's own budgets then apply to what is in it.
pub const MAX_SNAPSHOT_FILE_BYTES: u64 = 8 << 30;

/// `name` inside `base`: relative, of plain components only, and still inside `base` once
/// symlinks are followed (where it exists). The error says which rule it breaks.
pub fn inside(base: &Path, name: &str) -> io::Result<PathBuf> {
    let relative = Path::new(name);
    let plain = !name.is_empty()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(refused(format!(
            "{name:?} is not a plain name inside {}",
            base.display()
        )));
    }
    let path = base.join(relative);
    if let (Ok(real), Ok(real_base)) = (fs::canonicalize(&path), fs::canonicalize(base))
        && !real.starts_with(&real_base)
    {
        return Err(refused(format!(
            "{name:?} leads out of {} (to {})",
            base.display(),
            real.display()
        )));
    }
    Ok(path)
}

/// Open `path` if it is a regular file of at most `limit` bytes (following symlinks, checked
/// before opening: opening a FIFO would wait for a writer).
pub fn open_regular(path: &Path, limit: u64) -> io::Result<File> {
    let meta = fs::metadata(path)?;
    if !meta.is_file() {
        return Err(refused(format!("{} is not a regular file", path.display())));
    }
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    if !file.metadata()?.is_file() || len > limit {
        return Err(refused(format!(
            "{} is {len} bytes, over the {limit}-byte limit of what a recording reads beside it",
            path.display()
        )));
    }
    Ok(file)
}

/// [`inside`] then [`open_regular`].
pub fn open_inside(base: &Path, name: &str, limit: u64) -> io::Result<File> {
    open_regular(&inside(base, name)?, limit)
}

fn refused(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}
