//! The overview shown while a trace is still being read: a trace written into a pipe in
//! two parts, the viewer drawing the first part's memory before the second is written.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use collector::parse::preview::PREVIEW_EVERY_EVENTS;
use crossbeam_channel::{Sender, bounded};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

use super::layout::{SMALL, layout_faults};
use super::{sample, settle};
use crate::gui::ViewerApp;
use crate::gui::units;

/// `n` memory events from `start`: 512-byte-aligned tensors allocated at 1 µs steps, every
/// third freeing the one before it; returns the text and the largest `Total Allocated`.
fn memory_events(start: usize, n: usize, total: &mut i64) -> (String, i64) {
    let mut text = String::new();
    let mut peak = i64::MIN;
    for k in start..start + n {
        let (bytes, addr) = if k % 3 == 2 {
            (-(((k - 1) % 97 + 1) as i64) * 512, k - 1)
        } else {
            (((k % 97) + 1) as i64 * 512, k)
        };
        *total += bytes;
        peak = peak.max(*total);
        text.push_str(&format!(
            "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":1,\"tid\":1,\"ts\":{k},\
             \"args\":{{\"Device Type\":1,\"Device Id\":0,\"Addr\":{},\"Bytes\":{bytes},\
             \"Total Allocated\":{total},\"Total Reserved\":1073741824}}}},",
            0x7f00_0000_0000u64 + addr as u64 * 65_536
        ));
    }
    (text, peak)
}

/// The text of the painted shapes of the last frame.
fn painted_text(h: &Harness<'_, ViewerApp>) -> Vec<String> {
    h.output()
        .shapes
        .iter()
        .filter_map(|c| match &c.shape {
            egui::Shape::Text(t) => Some(t.galley.text().to_owned()),
            _ => None,
        })
        .collect()
}

/// Memory events written after the first batch before the pipe waits.
const SOME_EVENTS: usize = 10_000;

/// A trace written into a named pipe in two parts: the first (a batch of memory events
/// and some) at once, the second when [`PipeTrace::finish`] is called.
struct PipeTrace {
    dir: PathBuf,
    path: PathBuf,
    /// The largest `Total Allocated` of the first batch, and of the whole trace.
    peaks: (i64, i64),
    go_on: Sender<()>,
    writer: std::thread::JoinHandle<()>,
}

impl PipeTrace {
    fn new(name: &str) -> PipeTrace {
        let dir = std::env::temp_dir().join(format!("vramscope-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("growing.json");
        let _ = std::fs::remove_file(&path);
        let made = Command::new("mkfifo").arg(&path).status().expect("mkfifo");
        assert!(made.success());
        let mut total = 0i64;
        // A batch and some: the overview shows the batch while the rest waits for more. The
        // reader may hold the chunks in flight (up to 4 workers' and one more, 256 KiB each)
        // parsed but not applied, and one being read, while the pipe waits: 1.5 MiB, about
        // 8,000 of these events, so some is more than that (with 3,000 the batch was not
        // always applied), and less than a second batch.
        let (batch, peak1) = memory_events(0, PREVIEW_EVERY_EVENTS, &mut total);
        let (some, _) = memory_events(PREVIEW_EVERY_EVENTS, SOME_EVENTS, &mut total);
        let part1 = batch + &some;
        let (part2, peak2) = memory_events(PREVIEW_EVERY_EVENTS + SOME_EVENTS, 3_000, &mut total);
        let (go_on, wait) = bounded::<()>(0);
        let pipe = path.clone();
        let spawned = std::thread::Builder::new().name("pipe-writer".into());
        let writer = spawned
            .spawn(move || {
                let mut f = std::fs::File::create(&pipe).expect("opened by the viewer");
                f.write_all(b"{\"traceEvents\":[").expect("write");
                f.write_all(part1.as_bytes()).expect("write");
                f.flush().expect("flush");
                let _ = wait.recv();
                f.write_all(part2.as_bytes()).expect("write");
                f.write_all(b"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{}}]}")
                    .expect("write");
            })
            .expect("a thread");
        PipeTrace {
            dir,
            path,
            peaks: (peak1, peak2),
            go_on,
            writer,
        }
    }

    /// Write the rest of the trace.
    fn finish(self) {
        self.go_on.send(()).expect("writer waits");
        self.writer.join().expect("writer");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A viewer opening `paths`, a few steps a run: while a pipe waits the viewer keeps asking
/// for frames.
fn viewer(paths: Vec<PathBuf>) -> Harness<'static, ViewerApp> {
    let ctx = egui::Context::default();
    let app = ViewerApp::new(&ctx, None, paths, collector::LoadOptions::default());
    Harness::builder()
        .with_size(SMALL)
        .with_max_steps(4)
        .build_ui_state(|ui, app: &mut ViewerApp| app.show(ui), app)
}

/// Step until `done` (`what` it waits for), at most a minute.
fn step_until(
    h: &mut Harness<'_, ViewerApp>,
    what: &str,
    done: impl Fn(&Harness<'_, ViewerApp>) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        h.step();
        if done(h) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not {what} after 60 s: {:?}",
            painted_text(h)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_trace_shows_its_memory_while_it_is_still_being_read() {
    let pipe = PipeTrace::new("loading");
    let (peak1, peak2) = pipe.peaks;
    let mut h = viewer(vec![pipe.path.clone()]);
    let shown = format!("cuda:0: peak so far {}", units::bytes(peak1));
    step_until(&mut h, "the first batch shown", |h| {
        let events = h.state().loading_previews().first().map_or(0, |p| p.events);
        events >= PREVIEW_EVERY_EVENTS as u64 && painted_text(h).contains(&shown)
    });
    // Still reading: what is drawn is the first batch.
    let preview = h.state().loading_previews().remove(0);
    assert!(h.state().docs().is_empty());
    assert_eq!(preview.events, PREVIEW_EVERY_EVENTS as u64);
    let curve = &preview.devices[0];
    assert_eq!(curve.peak_bytes, peak1);
    // In the smallest window: every text inside it, uncut, over no other.
    assert_eq!(layout_faults(&h, SMALL), Vec::<String>::new());
    pipe.finish();
    settle(&mut h);
    let doc = h.state().docs().first().expect("opened");
    assert!(peak2 > peak1);
    assert_eq!(
        doc.data.summary.devices[0].peak_allocated_bytes,
        Some(peak2)
    );
}

#[test]
fn a_file_loading_beside_an_open_one_shows_its_memory_on_hover() {
    let pipe = PipeTrace::new("loading-beside");
    let mut h = viewer(vec![sample(), pipe.path.clone()]);
    step_until(&mut h, "the sample open, the first batch read", |h| {
        let events = h.state().loading_previews().first().map_or(0, |p| p.events);
        events >= PREVIEW_EVERY_EVENTS as u64 && !h.state().docs().is_empty()
    });
    // The open file is shown (a CPU trace); the pipe's cuda:0 only in the tooltip.
    let shown = format!("cuda:0: peak so far {}", units::bytes(pipe.peaks.0));
    assert!(!painted_text(&h).contains(&shown));
    // A frame more, so that the label is found where the tabs bar now draws it (the open
    // file's tab came in after the frame that drew the last one).
    h.run_steps(2);
    h.get_by_label_contains("growing.json: reading").hover();
    step_until(&mut h, "the tooltip shown", |h| {
        painted_text(h).contains(&shown)
    });
    pipe.finish();
    settle(&mut h);
    assert_eq!(h.state().docs().len(), 2);
}
