//! The overview shown while a trace is still being read: a trace written into a pipe in
//! two parts, the viewer drawing the first part's memory before the second is written.

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use collector::parse::preview::PREVIEW_EVERY_EVENTS;
use crossbeam_channel::bounded;

use super::layout::{SMALL, layout_faults};
use super::settle;
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
fn painted_text(h: &egui_kittest::Harness<'_, crate::gui::ViewerApp>) -> Vec<String> {
    h.output()
        .shapes
        .iter()
        .filter_map(|c| match &c.shape {
            egui::Shape::Text(t) => Some(t.galley.text().to_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_trace_shows_its_memory_while_it_is_still_being_read() {
    let dir = std::env::temp_dir().join(format!("vramscope-loading-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let pipe = dir.join("growing.json");
    let _ = std::fs::remove_file(&pipe);
    let made = Command::new("mkfifo").arg(&pipe).status().expect("mkfifo");
    assert!(made.success());
    let mut total = 0i64;
    // A batch and some: the overview shows the batch while the rest waits for more.
    let (batch, peak1) = memory_events(0, PREVIEW_EVERY_EVENTS, &mut total);
    let (some, _) = memory_events(PREVIEW_EVERY_EVENTS, 3_000, &mut total);
    let part1 = batch + &some;
    let (part2, peak2) = memory_events(PREVIEW_EVERY_EVENTS + 3_000, 3_000, &mut total);
    let (go_on, wait) = bounded::<()>(0);
    let writer = {
        let pipe = pipe.clone();
        let spawned = std::thread::Builder::new().name("pipe-writer".into());
        spawned
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
            .expect("a thread")
    };
    // Few steps a run: while the pipe waits the viewer keeps asking for frames.
    let app = crate::gui::ViewerApp::new(
        &egui::Context::default(),
        None,
        vec![pipe.clone()],
        collector::LoadOptions::default(),
    );
    let mut h = egui_kittest::Harness::builder()
        .with_size(SMALL)
        .with_max_steps(4)
        .build_ui_state(|ui, app: &mut crate::gui::ViewerApp| app.show(ui), app);
    let deadline = Instant::now() + Duration::from_secs(60);
    let shown = format!("cuda:0: peak so far {}", units::bytes(peak1));
    loop {
        h.step();
        let events = h.state().loading_previews().first().map_or(0, |p| p.events);
        if events >= PREVIEW_EVERY_EVENTS as u64 && painted_text(&h).contains(&shown) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no overview after 60 s: {:?}",
            painted_text(&h)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Still reading: what is drawn is the first batch.
    let preview = h.state().loading_previews().remove(0);
    assert!(h.state().docs().is_empty());
    assert_eq!(preview.events, PREVIEW_EVERY_EVENTS as u64);
    let curve = &preview.devices[0];
    assert_eq!(curve.peak_bytes, peak1);
    // In the smallest window: every text inside it, uncut, over no other.
    assert_eq!(layout_faults(&h, SMALL), Vec::<String>::new());
    go_on.send(()).expect("writer waits");
    writer.join().expect("writer");
    settle(&mut h);
    let doc = h.state().docs().first().expect("opened");
    assert!(peak2 > peak1);
    assert_eq!(
        doc.data.summary.devices[0].peak_allocated_bytes,
        Some(peak2)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
