//! Whether a destination is one of the inputs, however it is spelled: the same file is
//! the same (device, inode) once both exist, which sees through symlinks, `..` and hard
//! links alike; elsewhere than Unix, the same canonical path.

use std::fs;
use std::path::{Path, PathBuf};

/// The identity of an existing file, following symlinks.
#[cfg(unix)]
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The identity of an existing file, following symlinks.
#[cfg(not(unix))]
fn identity(path: &Path) -> Option<PathBuf> {
    fs::canonicalize(path).ok()
}

/// The input `dest` is, if it is one. A destination that does not exist is no input
/// (every input has been read, so exists).
pub fn input_at<'a>(dest: &Path, inputs: &[&'a Path]) -> Option<&'a Path> {
    let dest = identity(dest)?;
    inputs
        .iter()
        .copied()
        .find(|input| identity(input).as_ref() == Some(&dest))
}

/// The input inside the directory `dir` (at any depth, or `dir` itself), if any: what
/// replacing `dir` would delete. Inside means under `dir`'s canonical path, or another
/// name (a hard link) of a file directly in `dir`. The entries are streamed: a huge
/// directory costs one `stat` per entry, no memory.
pub fn input_inside<'a>(dir: &Path, inputs: &[&'a Path]) -> Option<&'a Path> {
    let canonical_dir = fs::canonicalize(dir).ok()?;
    if let Some(input) = inputs
        .iter()
        .copied()
        .find(|input| fs::canonicalize(input).is_ok_and(|p: PathBuf| p.starts_with(&canonical_dir)))
    {
        return Some(input);
    }
    let ids: Vec<_> = inputs.iter().map(|input| identity(input)).collect();
    fs::read_dir(&canonical_dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| identity(&e.path()))
        .find_map(|id| {
            let at = ids.iter().position(|i| i.as_ref() == Some(&id))?;
            inputs.get(at).copied()
        })
}
