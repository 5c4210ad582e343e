//! Inputs read on all cores: each worker takes the next file, reads it, hands the
//! recording to the caller's function (a summary, the rank grid's series), and drops it
//! before taking another, so at most one recording per worker is in memory, whatever the
//! number of inputs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::RankInput;
use crate::analysis::summary::summarize_file;
use crate::model::Recording;
use crate::parse::memory_timeline::Beside;
use crate::parse::{LoadError, LoadOptions, LoadProgress, load_watched};

/// Worker threads at most. Each holds one recording and its timeline at a time (for a
/// 100 MB trace, ~30 MB), so peak memory is about this many of the largest input's; the
/// trace reader adds its own scanning threads per file, which keep a core busy when an
/// input is large.
pub const MAX_WORKERS: usize = 16;

/// How far a read of many files has got, and a way to stop it (the viewer watches it).
#[derive(Debug, Default)]
pub struct FilesProgress {
    /// Files finished, read or failed.
    pub done: AtomicUsize,
    /// Set to stop: files not started are skipped, and those being read stop at their
    /// next chunk with a "cancelled" error.
    pub cancel: Arc<AtomicBool>,
}

/// What to do when a file cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnError {
    /// Start no file after it in input order (`summary` fails on the first bad input).
    Stop,
    /// Read all the others (the viewer shows what it could read, and what it could not).
    Continue,
}

/// Read and summarise `files` on `workers` threads (at least one; at most
/// [`MAX_WORKERS`] and one per file), in the order of `files`: a pack's stored summary where
/// it has one this build trusts (no event read), else the file read and summarised. On
/// failure the error is the first failing file's in that order: files after it are not
/// started, those before it are all read.
pub fn summarize_files(
    files: &[PathBuf],
    options: LoadOptions,
    workers: usize,
) -> Result<Vec<RankInput>, LoadError> {
    summarize_files_beside(files, &Beside::default(), options, workers)
}

/// [`summarize_files`], each input first given the categories of the memory timeline
/// exports in `beside` that came from its profile ([`Beside::put_onto`]).
pub fn summarize_files_beside(
    files: &[PathBuf],
    beside: &Beside,
    options: LoadOptions,
    workers: usize,
) -> Result<Vec<RankInput>, LoadError> {
    let progress = FilesProgress::default();
    // Spans held compressed until the summary takes the few it reads: many ranks of large
    // traces read on every core at once is where memory runs out first.
    let done = map_paths(files, workers, &progress, OnError::Stop, |path, watch| {
        summarize_file(path, options, beside, watch)
            .map(|f| RankInput::new(path.to_path_buf(), &f.meta, f.summary))
    });
    done.into_iter().map(|(_, r)| r).collect()
}

/// Read each of `files` on `workers` threads (as [`summarize_files`]) and apply `f` to its
/// recording, which is dropped right after. Returns (index into `files`, result) in the
/// order of `files`; files skipped (after an error with [`OnError::Stop`], or once
/// cancelled) are missing.
pub fn map_files<T: Send>(
    files: &[PathBuf],
    options: LoadOptions,
    workers: usize,
    progress: &FilesProgress,
    on_error: OnError,
    f: impl Fn(&Path, &mut Recording) -> T + Sync,
) -> Vec<(usize, Result<T, LoadError>)> {
    map_paths(files, workers, progress, on_error, |path, watch| {
        load_watched(path, options, watch).map(|mut rec| f(path, &mut rec))
    })
}

/// [`map_files`] with the reading of each path up to `read` (given the workers' watch, whose
/// cancel flag stops a read).
fn map_paths<T: Send>(
    files: &[PathBuf],
    workers: usize,
    progress: &FilesProgress,
    on_error: OnError,
    read: impl Fn(&Path, &LoadProgress) -> Result<T, LoadError> + Sync,
) -> Vec<(usize, Result<T, LoadError>)> {
    let workers = workers.clamp(1, MAX_WORKERS).min(files.len().max(1));
    let shared = Shared {
        files,
        progress,
        on_error,
        next: AtomicUsize::new(0),
        first_error: AtomicUsize::new(usize::MAX),
        done: Mutex::new(Vec::new()),
    };
    std::thread::scope(|scope| {
        for n in 0..workers {
            let work = || shared.work(&read);
            let spawned = std::thread::Builder::new()
                .name(format!("vramscope-rank-{n}"))
                .spawn_scoped(scope, work);
            if spawned.is_err() {
                // No thread: this one does the work (the others, if any, share it).
                work();
            }
        }
    });
    let mut done = shared.done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done
}

struct Shared<'a, T> {
    files: &'a [PathBuf],
    progress: &'a FilesProgress,
    on_error: OnError,
    next: AtomicUsize,
    /// The index of the first file that failed: with [`OnError::Stop`], files after it are
    /// skipped.
    first_error: AtomicUsize,
    done: Mutex<Vec<(usize, Result<T, LoadError>)>>,
}

impl<T> Shared<'_, T> {
    fn work(&self, read: &impl Fn(&Path, &LoadProgress) -> Result<T, LoadError>) {
        let watch = LoadProgress {
            cancel: self.progress.cancel.clone(),
            ..LoadProgress::default()
        };
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(path) = self.files.get(i) else {
                return;
            };
            let stopped =
                self.on_error == OnError::Stop && i > self.first_error.load(Ordering::Relaxed);
            if stopped || self.progress.cancel.load(Ordering::Relaxed) {
                return;
            }
            let result = read(path, &watch);
            if result.is_err() {
                self.first_error.fetch_min(i, Ordering::Relaxed);
            }
            self.done
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((i, result));
            self.progress.done.fetch_add(1, Ordering::Relaxed);
        }
    }
}
