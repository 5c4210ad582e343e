//! Writing a file so that a crash, a full disk or a failed write never leaves a cut-off
//! file under the requested name: the content goes to a temporary file beside it, is
//! synced, and is renamed into place only once complete (`pack`, the viewer's exports).

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::Result;

/// Write `output` through `write`, which gets the new temporary file and returns it once
/// everything is in it (flushed). On failure the temporary file is removed.
pub fn write_atomically(
    output: &Path,
    tag: &str,
    write: impl FnOnce(File) -> Result<File>,
) -> Result<()> {
    let temp = temp_path(output, tag);
    let written = (|| -> Result<()> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        write(file)?.sync_all()?;
        fs::rename(&temp, output)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

/// `.NAME.TAG-PID` beside `output`.
pub fn temp_path(output: &Path, tag: &str) -> PathBuf {
    let name = output
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    output.with_file_name(format!(".{name}.{tag}-{}", std::process::id()))
}
