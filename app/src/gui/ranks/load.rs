//! Loading a rank grid in the background: one named thread finds the inputs under the
//! paths (as `summary` does), then reads them on all cores ([`grid_files`]), keeping of
//! each only its summary and decimated series; the window shows how many are done.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use collector::LoadOptions;
use collector::analysis::ranks::FilesProgress;
use collector::analysis::ranks::grid::{Grid, grid_files};
use collector::parse::discover::discover;
use crossbeam_channel::{Receiver, TryRecvError, bounded};

/// A finished grid load.
pub struct GridLoaded {
    /// The grid.
    pub grid: Grid,
    /// One message per input that could not be read (file, what, where).
    pub errors: Vec<String>,
    /// Files under the directories that are no input vramscope reads.
    pub skipped: u64,
}

/// A grid being loaded.
pub struct GridLoad {
    progress: Arc<FilesProgress>,
    /// Inputs found (0 while looking).
    total: Arc<AtomicUsize>,
    started: Instant,
    rx: Receiver<Result<GridLoaded, String>>,
}

impl GridLoad {
    /// Start loading `paths` on a new thread; `ctx` is woken when it is done.
    pub fn start(paths: Vec<PathBuf>, options: LoadOptions, ctx: &egui::Context) -> GridLoad {
        let (tx, rx) = bounded(1);
        let progress = Arc::new(FilesProgress::default());
        let total = Arc::new(AtomicUsize::new(0));
        let job = {
            let (progress, total, ctx) = (progress.clone(), total.clone(), ctx.clone());
            move || {
                let _ = tx.send(load(&paths, options, &progress, &total));
                ctx.request_repaint();
            }
        };
        let rx = match std::thread::Builder::new()
            .name("vramscope-rank-grid".into())
            .spawn(job)
        {
            Ok(_) => rx,
            Err(e) => {
                let (tx, rx) = bounded(1);
                let _ = tx.send(Err(format!("cannot start the rank grid's thread: {e}")));
                rx
            }
        };
        GridLoad {
            progress,
            total,
            started: Instant::now(),
            rx,
        }
    }

    /// The result, once there is one.
    pub fn poll(&self) -> Option<Result<GridLoaded, String>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(
                "the rank grid's loader stopped without a result (a bug in vramscope: please report it)"
                    .into(),
            )),
        }
    }

    /// (inputs read, inputs found); found is 0 while the directories are searched.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.progress.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }

    /// Time since the load started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stop: inputs not started are skipped, those being read stop soon.
    pub fn cancel(&self) {
        self.progress.cancel.store(true, Ordering::Relaxed);
    }
}

impl Drop for GridLoad {
    fn drop(&mut self) {
        self.cancel();
    }
}

fn load(
    paths: &[PathBuf],
    options: LoadOptions,
    progress: &FilesProgress,
    total: &AtomicUsize,
) -> Result<GridLoaded, String> {
    let found = discover(paths).map_err(|e| e.to_string())?;
    total.store(found.files.len(), Ordering::Relaxed);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (ranks, errors) = grid_files(&found.files, options, cores, progress);
    if progress.cancel.load(Ordering::Relaxed) {
        return Err("loading the rank grid was cancelled".into());
    }
    let mut errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    errors.extend(found.too_deep_warning());
    Ok(GridLoaded {
        grid: Grid::build(ranks),
        errors,
        skipped: found.skipped,
    })
}
