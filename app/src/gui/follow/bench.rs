//! How long following costs on a long recording (not a pass/fail test; timings are never
//! asserted): a synthetic recording of `record`'s lines — 1 and 8 hours of 100 ms samples
//! of 1 and 8 GPUs, each with its process, RSS and PSS — read whole as the viewer's loader
//! does (read, then timeline, analyses and pyramids), and one update of a follower: a
//! second of samples appended, read by the [`RecordingTail`] that read the rest, and the
//! viewer's data rebuilt from the grown recording.
//!
//! ```text
//! cargo test --release -p vramscope --bin vramscope follow_reread_timings -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};

use collector::LoadOptions;
use collector::parse::recording::{
    DeviceHeader, GpuReading, Header, Line, RecordingTail, RecordingWriter,
};

use super::super::loaded::Loaded;

/// Samples of 8 hours at 100 ms.
const SAMPLES_8H: i64 = 8 * 3600 * 10;

/// Write `samples` samples of `gpus` GPUs, 100 ms apart, to `path` (no end line: still
/// being written); the writer, to append more.
fn write_recording(path: &std::path::Path, gpus: u32, samples: i64) -> RecordingWriter {
    let header = Header {
        start_unix_ns: 1_700_000_000_000_000_000,
        command: vec!["python".into(), "train.py".into()],
        interval_ms: Some(100),
        devices: (0..gpus)
            .map(|index| DeviceHeader {
                index,
                name: Some("NVIDIA H100 80GB HBM3".into()),
                total_bytes: Some(85_520_809_984),
                uuid: Some(format!("GPU-{index}")),
                mig: None,
            })
            .collect(),
        ..Header::default()
    };
    let mut w = RecordingWriter::create(path, &header, true).expect("create");
    append(&mut w, gpus, 0..samples);
    w
}

/// Samples `range` of `gpus` GPUs, written and flushed.
fn append(w: &mut RecordingWriter, gpus: u32, range: std::ops::Range<i64>) {
    for i in range {
        let used = 10_000_000_000 + (i % 600) * 50_000_000;
        w.write(&Line::Sample {
            t_ns: i * 100_000_000,
            gpus: (0..gpus)
                .map(|index| GpuReading {
                    index,
                    used: used as u64 + u64::from(index) * 1_000_000,
                    total: Some(85_520_809_984),
                    procs: Some(used as u64 - 500_000_000),
                    free: Some(85_520_809_984 - used as u64),
                    driver_reserved: Some(533_856_256),
                    pids: vec![(4242 + index, Some(used as u64 - 500_000_000))],
                    mig: Vec::new(),
                })
                .collect(),
            rss: Some(12_000_000_000 + i as u64),
            pss: Some(11_000_000_000),
            host_processes: Some(9),
        })
        .expect("write");
    }
    w.flush().expect("flush");
}

#[test]
#[ignore = "a benchmark: run with --release --ignored --nocapture"]
fn follow_reread_timings() {
    let dir = std::env::temp_dir().join(format!("vramscope-follow-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    println!(
        "| recording | file | whole read | its rebuild | update: read 1 s appended | update: rebuild |"
    );
    println!("|---|---|---|---|---|---|");
    for (gpus, hours) in [(1u32, 1i64), (1, 8), (8, 8)] {
        let path = dir.join(format!("{gpus}gpu-{hours}h.vsr"));
        let samples = SAMPLES_8H / 8 * hours;
        let mut w = write_recording(&path, gpus, samples);
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        let started = Instant::now();
        let rec = collector::load(&path, LoadOptions::default()).expect("loads");
        let read = started.elapsed();
        let whole_rebuild = Loaded::build(&path, bytes, rec, Duration::ZERO).analysis_time;
        let mut tail = RecordingTail::open(&path).expect("tail");
        append(&mut w, gpus, samples..samples + 10);
        let t = Instant::now();
        assert_eq!(tail.read_more().expect("more"), 10);
        let rec = tail.recording();
        let tail_read = t.elapsed();
        let grown = Loaded::build(&path, tail.bytes_read(), rec, Duration::ZERO);
        assert_eq!(
            grown.rec.gpu_samples.len() as i64,
            (samples + 10) * i64::from(gpus)
        );
        println!(
            "| {gpus} GPU, {hours} h at 100 ms | {:.0} MB | {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms |",
            bytes as f64 / 1e6,
            read.as_secs_f64() * 1e3,
            whole_rebuild.as_secs_f64() * 1e3,
            tail_read.as_secs_f64() * 1e3,
            grown.analysis_time.as_secs_f64() * 1e3,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
