//! The temporaries being written, in one registry, so that whatever ends the write removes
//! them: an error or a panic (a [`Temp`]'s drop), or SIGINT, SIGTERM or SIGHUP (the thread
//! [`guard_signals`] starts, which empties the registry and then dies of the signal).
//!
//! The registry's lock is held while a temporary is created and while it is renamed into
//! place, and the signal thread holds it from its clean-up to the end of the process, so
//! a signal finds every temporary either not yet made, registered, or already in place
//! — never an old report moved aside with the new one not yet in.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The temporaries (files, or directories being built) that exist now.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Makes each temporary's name unique within the process (the pid, across processes).
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Test-only: milliseconds to pause before the first temporary of the process is put in
/// place, so an end-to-end test can signal vramscope while a temporary exists. Unset, it
/// costs one environment lookup per file written.
pub const TEST_PAUSE_ENV: &str = "VRAMSCOPE_TEST_PAUSE_WRITE_MS";

fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic elsewhere while holding the lock leaves the list itself intact.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The longest file name most filesystems take (Linux's NAME_MAX): a temporary named after
/// a destination of 250 bytes would pass it, so the destination's part is cut to fit.
const MAX_NAME_BYTES: usize = 255;

/// `.NAME.TAG-PID-N` beside `dest`, and `.EXT` after it when given; NAME cut (at a
/// character) so the whole stays within [`MAX_NAME_BYTES`].
pub fn sibling(dest: &Path, tag: &str, ext: Option<&OsStr>) -> PathBuf {
    let name = dest
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut suffix = format!(".{tag}-{}-{n}", std::process::id());
    if let Some(ext) = ext {
        suffix.push('.');
        suffix.push_str(&ext.to_string_lossy());
    }
    let room = MAX_NAME_BYTES.saturating_sub(suffix.len() + 1);
    let mut end = name.len().min(room);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    dest.with_file_name(format!(".{}{suffix}", &name[..end]))
}

/// A registered temporary: removed when dropped unless it was renamed into place.
#[derive(Debug)]
pub struct Temp {
    path: PathBuf,
    /// Whether it is still a temporary (not renamed into place).
    armed: bool,
}

impl Temp {
    /// Create the new file `path` (never an existing one) and register it.
    pub fn create_file(path: PathBuf) -> io::Result<(Temp, File)> {
        let mut live = live();
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        live.push(path.clone());
        Ok((Temp { path, armed: true }, file))
    }

    /// Create the new directory `path` (never an existing one) and register it.
    pub fn create_dir(path: PathBuf) -> io::Result<Temp> {
        let mut live = live();
        fs::create_dir(&path)?;
        live.push(path.clone());
        Ok(Temp { path, armed: true })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rename it onto `dest` (a file, or an absent or empty directory), then sync the
    /// directory so the rename itself survives a crash.
    pub fn rename_onto(mut self, dest: &Path) -> io::Result<()> {
        {
            let mut live = live();
            fs::rename(&self.path, dest)?;
            live.retain(|p| p != &self.path);
            self.armed = false;
        }
        sync_parent(dest);
        Ok(())
    }

    /// Put the directory in place of the directory `dest`: `dest` is renamed to `aside`,
    /// this one to `dest`, and `aside` is removed. Under the lock, so a signal never sees
    /// `dest` missing; if the second rename fails, `dest` is moved back.
    pub fn swap_with(mut self, dest: &Path, aside: PathBuf) -> io::Result<()> {
        let old = {
            let mut live = live();
            fs::rename(dest, &aside)?;
            if let Err(e) = fs::rename(&self.path, dest) {
                let _ = fs::rename(&aside, dest);
                return Err(e);
            }
            live.retain(|p| p != &self.path);
            self.armed = false;
            live.push(aside.clone());
            Temp {
                path: aside,
                armed: true,
            }
        };
        sync_parent(dest);
        // The old one is now a registered temporary like any other: removed here, or by
        // the signal thread if a signal comes first.
        let removed = remove(&old.path);
        drop(old);
        removed
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut live = live();
        let _ = remove(&self.path);
        live.retain(|p| p != &self.path);
    }
}

/// Remove a temporary file or directory; one already gone is fine.
fn remove(path: &Path) -> io::Result<()> {
    let removed = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Sync the directory holding `path`, so the rename itself survives a crash. Best effort:
/// the file is in place either way, and some filesystems cannot sync a directory.
fn sync_parent(path: &Path) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let _ = File::open(parent).and_then(|d| d.sync_all());
}

/// Test-only (see [`TEST_PAUSE_ENV`]): pause once, before the first rename into place.
pub fn pause_for_tests() {
    static PAUSED: AtomicBool = AtomicBool::new(false);
    let Some(ms) = std::env::var_os(TEST_PAUSE_ENV) else {
        return;
    };
    if PAUSED.swap(true, Ordering::Relaxed) {
        return;
    }
    if let Some(ms) = ms.to_str().and_then(|s| s.parse::<u64>().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Remove every registered temporary, and keep the lock: nothing is renamed into place
/// after this, up to the end of the process.
#[cfg(target_os = "linux")]
fn remove_all() -> MutexGuard<'static, Vec<PathBuf>> {
    let live = live();
    for path in live.iter() {
        let _ = remove(path);
    }
    live
}

/// Make SIGINT, SIGTERM and SIGHUP remove the temporaries before they end vramscope, which
/// then dies of the signal as it would have (a shell sees 130, 143, 129). Call it first
/// thing, before any thread starts: the signals are blocked in this thread, every thread
/// started later inherits the mask, and one named thread waits for them. (No signal
/// handler: that would be unsafe code.) Calling it again does nothing. A signal vramscope
/// was started ignoring (a script's background job ignores SIGINT, `nohup` SIGHUP) stays
/// ignored: waiting for it would end a run its caller meant to survive it.
#[cfg(target_os = "linux")]
pub fn guard_signals() {
    use nix::sys::signal::{SigSet, Signal, raise};
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let ignored = std::fs::read_to_string("/proc/self/status")
            .map(|status| ignored_signals(&status))
            .unwrap_or(0);
        let mut set = SigSet::empty();
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            if ignored >> (s as i32 - 1) & 1 == 0 {
                set.add(s);
            }
        }
        if set.thread_block().is_err() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("vramscope-signals".into())
            .spawn(move || {
                // Lives as long as the process: it ends only by ending the process.
                // (sigwait fails only for an invalid set, which this is not.)
                let signal = loop {
                    if let Ok(signal) = set.wait() {
                        break signal;
                    }
                };
                let _held = remove_all();
                // Blocked everywhere, so pending for this thread until it unblocks it; the
                // default action then ends the process with the signal.
                let _ = raise(signal);
                let _ = SigSet::from(signal).thread_unblock();
                std::process::exit(128 + signal as i32);
            });
        if spawned.is_err() {
            // No thread to read them: the signals act as they do by default.
            let _ = set.thread_unblock();
        }
    });
}

/// Signals need Linux here; elsewhere they act as they always did.
#[cfg(not(target_os = "linux"))]
pub fn guard_signals() {}

#[cfg(target_os = "linux")]
/// The signals a process ignores, from its `/proc/PID/status` (`SigIgn:`, a hexadecimal
/// mask whose bit N − 1 is signal N); none where the line is missing or unreadable.
fn ignored_signals(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or(0)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::ignored_signals;

    #[test]
    fn the_ignored_signals_are_read_from_the_status_mask() {
        let status = "Name:\tvramscope\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000006\n";
        let ignored = ignored_signals(status);
        // SIGINT (2) and SIGQUIT (3): what a script's background job is started with.
        assert_eq!(ignored, 0b110);
        assert_eq!(ignored >> (2 - 1) & 1, 1);
        assert_eq!(ignored >> (15 - 1) & 1, 0);
        assert_eq!(ignored_signals("Name:\tx\n"), 0);
        assert_eq!(ignored_signals("SigIgn:\tzz\n"), 0);
    }
}
