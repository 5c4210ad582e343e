//! Following a recording that `vramscope record` is still writing: while the file has no
//! end line, the viewer looks at its size every [`POLL`] and, when it grew, reads it again
//! on a loader thread (a recording is small: a line per sample) and swaps the new data in,
//! keeping the view — widened to the new end when it showed the old one. A status line
//! says "following — N s behind" (how old the last sample shown is); following stops when
//! the end line arrives.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use collector::LoadOptions;
use collector::parse::recording::is_unfinished;
use egui::{RichText, Ui};

use super::data::Loaded;
use super::doc::{Document, TimeView};
use super::loader::{LoadOutcome, PendingLoad};
use super::theme::Palette;

/// How often the file's size is looked at: the viewer is at most this much plus one
/// read behind the writer (a read of a recording takes milliseconds per MB). Each look is
/// one `stat`.
pub const POLL: Duration = Duration::from_millis(250);

/// A recording being followed.
pub struct Follow {
    path: PathBuf,
    /// The size of the file the shown data was read from.
    read_bytes: u64,
    last_poll: Instant,
    reload: Option<PendingLoad>,
    /// Set once the end line was read, or the file could not be read again.
    pub stopped: Option<String>,
}

impl Follow {
    /// Follow `data`'s file when it is a recording still being written.
    pub fn start(data: &Loaded) -> Option<Follow> {
        is_unfinished(&data.rec).then(|| Follow {
            path: data.path.clone(),
            read_bytes: data.file_bytes,
            last_poll: Instant::now(),
            reload: None,
            stopped: None,
        })
    }
}

/// Look at the followed file of `doc`: start a read when it grew, swap in a finished one.
pub fn poll(doc: &mut Document, options: LoadOptions, ctx: &egui::Context) {
    let Some(f) = doc.follow.as_mut() else { return };
    if f.stopped.is_some() {
        return;
    }
    ctx.request_repaint_after(POLL);
    if let Some(outcome) = f.reload.as_ref().and_then(PendingLoad::poll) {
        f.reload = None;
        match outcome {
            LoadOutcome::Loaded(data) => swap(doc, Arc::new(*data)),
            LoadOutcome::Failed(message) => f.stopped = Some(message),
        }
        return;
    }
    if f.reload.is_some() || f.last_poll.elapsed() < POLL {
        return;
    }
    f.last_poll = Instant::now();
    let len = std::fs::metadata(&f.path).map_or(f.read_bytes, |m| m.len());
    if len != f.read_bytes {
        f.reload = Some(PendingLoad::start(&f.path, options, ctx));
    }
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
    if let Some(f) = doc.follow.as_mut() {
        f.read_bytes = data.file_bytes;
        if !is_unfinished(&data.rec) {
            f.stopped = Some("the recording is complete".to_owned());
        }
    }
    if doc.table.window.is_none() {
        doc.table.rows = Arc::new(data.rows.clone());
        doc.table.dirty = true;
    }
    doc.columns = Default::default();
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
