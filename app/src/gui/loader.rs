//! Loading files on background threads, so the window never freezes: one named thread
//! per file reads it with `collector::load_watched` (which counts the bytes it reads, for
//! the progress bar, and stops when cancelled), builds the timeline, analyses and
//! pyramids, and sends the result over a bounded channel of one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use collector::{LoadOptions, LoadProgress};
use crossbeam_channel::{Receiver, TryRecvError, bounded};

use super::loaded::Loaded;

/// What a load is doing now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadPhase {
    /// Reading and parsing the file.
    Reading,
    /// Building the timeline, analyses and pyramids.
    Analysing,
}

impl LoadPhase {
    /// What the window says the load is doing (the loading view and the tabs bar alike).
    pub fn describe(self) -> &'static str {
        match self {
            LoadPhase::Reading => "reading",
            LoadPhase::Analysing => "building the timeline and analyses",
        }
    }
}

const PHASE_READING: u8 = 0;
const PHASE_ANALYSING: u8 = 1;

/// A file being loaded.
pub struct PendingLoad {
    /// The file.
    pub path: PathBuf,
    /// Its size on disk, for the progress fraction.
    pub file_bytes: u64,
    /// Where its tab goes: the id its document gets, and the first id of the files opened
    /// with it (tabs keep the order the files were named in, whichever loads first).
    pub order: Order,
    /// When loading started.
    started: Instant,
    progress: Arc<LoadProgress>,
    phase: Arc<AtomicU8>,
    rx: Receiver<Result<Loaded, String>>,
}

/// A load's place among the documents: ids are handed out in the order files are named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Order {
    /// The document's id.
    pub id: u64,
    /// The id of the first file of the same open (command line, dialog, drop).
    pub batch_first_id: u64,
}

/// How a load ended.
pub enum LoadOutcome {
    /// The file is ready.
    Loaded(Box<Loaded>),
    /// It could not be read: the message names the file and the position.
    Failed(String),
}

impl PendingLoad {
    /// Start loading `path` on a new thread; `ctx` is woken when it is done.
    pub fn start(path: &Path, options: LoadOptions, ctx: &egui::Context) -> PendingLoad {
        // A snapshot's history as the allocator recorded it, for the History panel and the
        // Segments view's simulation (48 bytes an entry: 48 MB for a million-entry
        // snapshot, beside its replayed events).
        let options = LoadOptions {
            allocator_history: true,
            ..options
        };
        let (tx, rx) = bounded(1);
        let progress = Arc::new(LoadProgress {
            preview: Some(Arc::default()),
            ..LoadProgress::default()
        });
        let phase = Arc::new(AtomicU8::new(PHASE_READING));
        let file_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let thread_name = format!(
            "vramscope-load-{}",
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        );
        let job = {
            let (path, progress, phase, ctx) = (
                path.to_path_buf(),
                progress.clone(),
                phase.clone(),
                ctx.clone(),
            );
            move || {
                let result = load(&path, options, file_bytes, &progress, &phase);
                // The receiver is gone when the tab was closed: nothing to do then.
                let _ = tx.send(result);
                ctx.request_repaint();
            }
        };
        let spawned = std::thread::Builder::new().name(thread_name).spawn(job);
        let rx = match spawned {
            Ok(_) => rx,
            Err(e) => {
                let (tx, rx) = bounded(1);
                let _ = tx.send(Err(format!(
                    "{}: cannot start a loader thread: {e}",
                    path.display()
                )));
                rx
            }
        };
        PendingLoad {
            path: path.to_path_buf(),
            file_bytes,
            order: Order::default(),
            started: Instant::now(),
            progress,
            phase,
            rx,
        }
    }

    /// The result, once there is one.
    pub fn poll(&self) -> Option<LoadOutcome> {
        match self.rx.try_recv() {
            Ok(Ok(loaded)) => Some(LoadOutcome::Loaded(Box::new(loaded))),
            Ok(Err(message)) => Some(LoadOutcome::Failed(message)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(LoadOutcome::Failed(format!(
                "{}: the loader stopped without a result (a bug in vramscope: please report it)",
                self.path.display()
            ))),
        }
    }

    /// What the load is doing.
    pub fn phase(&self) -> LoadPhase {
        match self.phase.load(Ordering::Relaxed) {
            PHASE_READING => LoadPhase::Reading,
            _ => LoadPhase::Analysing,
        }
    }

    /// Bytes of the file read so far.
    pub fn bytes_read(&self) -> u64 {
        self.progress.file_bytes_read.load(Ordering::Relaxed)
    }

    /// Fraction of the file read, when its size is known and the reader counts bytes.
    pub fn fraction(&self) -> Option<f32> {
        let read = self.bytes_read();
        (self.file_bytes > 0 && read > 0)
            .then(|| (read as f64 / self.file_bytes as f64).clamp(0.0, 1.0) as f32)
    }

    /// Memory over time as far as the file has been read.
    pub fn preview(&self) -> collector::parse::preview::PreviewState {
        (self.progress.preview.as_ref()).map_or_else(Default::default, |p| p.snapshot())
    }

    /// Ask the loader to stop; it fails soon with a "cancelled" error.
    pub fn cancel(&self) {
        self.progress.cancel.store(true, Ordering::Relaxed);
    }

    /// Time since the load started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Drop for PendingLoad {
    /// A dropped load (its tab closed) stops reading at its next chunk. The thread is not
    /// joined: the analysis phase cannot be interrupted and joining would freeze the
    /// window for as long as it runs; its result is simply dropped.
    fn drop(&mut self) {
        self.cancel();
    }
}

fn load(
    path: &Path,
    options: LoadOptions,
    file_bytes: u64,
    progress: &LoadProgress,
    phase: &AtomicU8,
) -> Result<Loaded, String> {
    let started = Instant::now();
    let rec = collector::load_watched(path, options, progress).map_err(|e| {
        if progress.cancel.load(Ordering::Relaxed) {
            format!("{}: loading was cancelled", path.display())
        } else {
            e.to_string()
        }
    })?;
    let parse_time = started.elapsed();
    phase.store(PHASE_ANALYSING, Ordering::Relaxed);
    Ok(Loaded::build(path, file_bytes, rec, parse_time))
}
