//! Inputs summarised on all cores: each worker takes the next file, reads it, builds its
//! timeline and summary, and drops the recording before taking another, so at most one
//! recording per worker is in memory, whatever the number of inputs.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::RankInput;
use crate::analysis::summarize;
use crate::parse::{LoadError, LoadOptions, load};
use crate::timeline::Timeline;

/// Worker threads at most. Each holds one recording and its timeline at a time (for a
/// 100 MB trace, ~30 MB), so peak memory is about this many of the largest input's; the
/// trace reader adds its own scanning threads per file, which keep a core busy when an
/// input is large.
pub const MAX_WORKERS: usize = 16;

/// Read and summarise `files` on `workers` threads (at least one; at most
/// [`MAX_WORKERS`] and one per file), in the order of `files`. On failure the error is the
/// first failing file's in that order: files after it are not started, those before it
/// are all read.
pub fn summarize_files(
    files: &[PathBuf],
    options: LoadOptions,
    workers: usize,
) -> Result<Vec<RankInput>, LoadError> {
    let workers = workers.clamp(1, MAX_WORKERS).min(files.len().max(1));
    let next = AtomicUsize::new(0);
    // The index of the first file that failed: files after it are skipped.
    let first_error = AtomicUsize::new(usize::MAX);
    let done: Mutex<Vec<(usize, Result<RankInput, LoadError>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for n in 0..workers {
            let work = || worker(files, options, &next, &first_error, &done);
            let spawned = std::thread::Builder::new()
                .name(format!("vramscope-rank-{n}"))
                .spawn_scoped(scope, work);
            if spawned.is_err() {
                // No thread: this one does the work (the others, if any, share it).
                work();
            }
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

fn worker(
    files: &[PathBuf],
    options: LoadOptions,
    next: &AtomicUsize,
    first_error: &AtomicUsize,
    done: &Mutex<Vec<(usize, Result<RankInput, LoadError>)>>,
) {
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(path) = files.get(i) else { return };
        if i > first_error.load(Ordering::Relaxed) {
            return;
        }
        let result = load(path, options).map(|rec| {
            let timeline = Timeline::build(&rec);
            let summary = summarize(&rec, &timeline);
            RankInput::new(path.clone(), &rec, summary)
        });
        if result.is_err() {
            first_error.fetch_min(i, Ordering::Relaxed);
        }
        done.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((i, result));
    }
}
