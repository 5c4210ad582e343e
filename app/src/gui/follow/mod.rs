//! Following a recording that `vramscope record` is still writing: while the file has no
//! end line, the viewer looks at its size every [`POLL`] and, when it grew, reads the lines
//! appended since the last read on a named thread — the collector's [`RecordingTail`] keeps
//! the reader's state between reads — rebuilds the timeline, analyses and pyramids from the
//! grown recording, and swaps the new data in, keeping the view (widened to the new end
//! when it showed the old one). A status line says "following — N s behind" (how old the
//! last sample shown is); following stops when the end line arrives.
//!
//! Why not read the whole file again (`follow_reread_timings` in `bench.rs`, release build,
//! docs/PERFORMANCE.md): 8 hours of 100 ms samples of 8 GPUs are 362 MB of lines, read
//! whole in 3.7 s plus 0.57 s of rebuild; reading the second appended takes 0.26 s (most of
//! it copying the grown recording for the viewer) plus 0.54 s of rebuild, so an update
//! stays within the ~1 s the viewer promises. One GPU over 8 hours: 0.9 s whole, 45 ms an
//! update. The rebuild is what still grows with the run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use collector::parse::recording::{RecordingTail, is_unfinished};
use crossbeam_channel::{Receiver, TryRecvError, bounded};
use egui::{RichText, Ui};

use super::doc::{Document, TimeView};
use super::loaded::Loaded;
use super::theme::Palette;

/// How often the file's size is looked at: the viewer is at most this much plus one read
/// of the new lines and one rebuild behind the writer. Each look is one `stat`.
pub const POLL: Duration = Duration::from_millis(250);

/// A recording being followed.
pub struct Follow {
    path: PathBuf,
    /// The size of the file when the last read started.
    seen_bytes: u64,
    last_poll: Instant,
    /// The reader between reads: `None` before the first and while a read holds it.
    tail: Option<RecordingTail>,
    /// The read in flight.
    reading: Option<Receiver<Reread>>,
    /// Set once the end line was read, or the file could not be read again.
    pub stopped: Option<String>,
}

/// What a read on the follower's thread gives back: the reader, and the grown recording's
/// data (`None` when no complete line was appended).
struct Reread {
    tail: Option<RecordingTail>,
    data: Option<Result<Loaded, String>>,
}

impl Follow {
    /// Follow `data`'s file when it is a recording still being written.
    pub fn start(data: &Loaded) -> Option<Follow> {
        is_unfinished(&data.rec).then(|| Follow {
            path: data.path.clone(),
            seen_bytes: data.file_bytes,
            last_poll: Instant::now(),
            tail: None,
            reading: None,
            stopped: None,
        })
    }
}

/// Look at the followed file of `doc`: start a read when it grew (or to open the reader
/// the first time), swap in a finished one.
pub fn poll(doc: &mut Document, ctx: &egui::Context) {
    let Some(f) = doc.follow.as_mut() else { return };
    if f.stopped.is_some() {
        return;
    }
    ctx.request_repaint_after(POLL);
    if let Some(rx) = &f.reading {
        let reread = match rx.try_recv() {
            Ok(reread) => reread,
            Err(TryRecvError::Empty) => return,
            Err(TryRecvError::Disconnected) => Reread {
                tail: None,
                data: Some(Err("the reading thread stopped".to_owned())),
            },
        };
        f.reading = None;
        f.tail = reread.tail;
        match reread.data {
            Some(Ok(data)) => swap(doc, Arc::new(data)),
            Some(Err(message)) => f.stopped = Some(message),
            None => {}
        }
        return;
    }
    if f.last_poll.elapsed() < POLL {
        return;
    }
    f.last_poll = Instant::now();
    let len = std::fs::metadata(&f.path).map_or(f.seen_bytes, |m| m.len());
    if f.tail.is_none() || len != f.seen_bytes {
        f.seen_bytes = len;
        f.reading = Some(start_read(f.path.clone(), f.tail.take(), ctx));
    }
}

/// On a named thread: open the reader (the first time) or read the appended lines, and
/// build the viewer's data from the grown recording; `ctx` is woken with the result.
fn start_read(path: PathBuf, tail: Option<RecordingTail>, ctx: &egui::Context) -> Receiver<Reread> {
    let (tx, rx) = bounded(1);
    let ctx = ctx.clone();
    let job = move || {
        let started = Instant::now();
        let opened = tail.is_none();
        let read = match tail {
            Some(mut t) => t.read_more().map(|lines| (t, lines)),
            None => RecordingTail::open(&path).map(|t| (t, 1)),
        };
        let reread = match read {
            Ok((t, lines)) if lines > 0 || opened => {
                let rec = t.recording();
                let data = Loaded::build(&path, t.bytes_read(), rec, started.elapsed());
                Reread {
                    tail: Some(t),
                    data: Some(Ok(data)),
                }
            }
            Ok((t, _)) => Reread {
                tail: Some(t),
                data: None,
            },
            Err(e) => Reread {
                tail: None,
                data: Some(Err(e.to_string())),
            },
        };
        // The receiver is gone when the tab was closed: nothing to do then.
        let _ = tx.send(reread);
        ctx.request_repaint();
    };
    let spawned = std::thread::Builder::new()
        .name("vramscope-follow".to_owned())
        .spawn(job);
    if let Err(e) = spawned {
        let (tx, rx) = bounded(1);
        let _ = tx.send(Reread {
            tail: None,
            data: Some(Err(format!("cannot start a reading thread: {e}"))),
        });
        return rx;
    }
    rx
}

/// Show `data`, the file read again, in `doc`: the view keeps its place, and follows the
/// end when it showed the end.
fn swap(doc: &mut Document, data: Arc<Loaded>) {
    let old_duration = doc.data.duration_ns() as f64;
    let showed_end = doc.view.t1_ns >= old_duration;
    if showed_end {
        let full = TimeView::full(data.duration_ns());
        doc.view.t1_ns = full.t1_ns;
        if doc.view.t0_ns <= 0.0 {
            doc.view.t0_ns = full.t0_ns;
        }
    }
    if let Some(f) = doc.follow.as_mut()
        && !is_unfinished(&data.rec)
    {
        f.stopped = Some("the recording is complete".to_owned());
    }
    if doc.panels.table.window.is_none() {
        doc.panels.table.rows = Arc::new(data.rows.clone());
        doc.panels.table.dirty = true;
    }
    doc.timeline.columns = Default::default();
    doc.data = data;
}

/// Seconds between now and the last sample shown, where the recording's clock is the
/// epoch (recordings' are).
pub fn behind_s(data: &Loaded) -> Option<f64> {
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos() as i64;
    let behind = now_ns.checked_sub(data.rec.meta.end_ns)? as f64 / 1e9;
    // A clock that is not the epoch's gives nonsense: say nothing then.
    (0.0..86_400.0 * 365.0).contains(&behind).then_some(behind)
}

/// The status line of a followed recording.
pub fn status_text(doc: &Document) -> Option<String> {
    let f = doc.follow.as_ref()?;
    Some(match &f.stopped {
        Some(why) => format!("stopped following: {why}"),
        None => match behind_s(&doc.data) {
            Some(s) => format!("following — {s:.0} s behind"),
            None => "following".to_owned(),
        },
    })
}

/// The status line, where `doc` follows its file.
pub fn status_ui(ui: &mut Ui, doc: &Document, palette: &Palette) {
    if let Some(text) = status_text(doc) {
        let color = if doc.follow.as_ref().is_some_and(|f| f.stopped.is_none()) {
            palette.cursor
        } else {
            palette.weak_text
        };
        ui.label(RichText::new(text).color(color));
    }
}

#[cfg(test)]
mod bench;
