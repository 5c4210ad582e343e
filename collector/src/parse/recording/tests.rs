use super::snapshots;
use super::*;
use crate::model::SourceFormat;
use crate::parse::{LoadOptions, load};

pub(super) fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vramscope-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

fn header() -> Header {
    Header {
        start_unix_ns: 1_700_000_000_000_000_000,
        command: vec!["python".into(), "train.py".into()],
        host: Some("box".into()),
        pid: Some(42),
        interval_ms: Some(100),
        driver_version: Some("550.54".into()),
        devices: vec![DeviceHeader {
            index: 0,
            name: Some("NVIDIA H200".into()),
            total_bytes: Some(150 << 30),
            uuid: None,
            mig: None,
        }],
        ..Header::default()
    }
}

fn sample(t_ns: i64, used: u64, procs: u64, rss: u64) -> Line {
    Line::Sample {
        t_ns,
        gpus: vec![GpuReading {
            index: 0,
            used,
            total: Some(150 << 30),
            procs: Some(procs),
            ..GpuReading::default()
        }],
        rss: Some(rss),
        // As with DataLoader workers: shared pages make PSS less than RSS.
        pss: Some(rss / 2),
        host_processes: Some(3),
    }
}

#[test]
fn round_trip_and_refuse_overwrite() {
    let path = temp("run.vrec");
    let mut w = RecordingWriter::create(&path, &header(), false).expect("create");
    w.write(&sample(0, 1 << 30, 512 << 20, 100 << 20))
        .expect("write");
    w.write(&Line::Note {
        t_ns: 50,
        note: "torch snapshot enabled".into(),
    })
    .expect("note");
    w.write(&sample(100_000_000, 3 << 30, 2 << 30, 120 << 20))
        .expect("write");
    w.finish(
        150_000_000,
        EndInfo {
            exit_code: Some(3),
            ..EndInfo::default()
        },
    )
    .expect("finish");
    assert!(
        RecordingWriter::create(&path, &header(), false).is_err(),
        "no overwrite without force"
    );

    let rec = load(&path, LoadOptions::default()).expect("load");
    assert_eq!(rec.meta.format, SourceFormat::VramscopeRecording);
    assert_eq!(rec.gpu_samples.len(), 2);
    assert_eq!(rec.gpu_samples[1].used_bytes, 3 << 30);
    assert_eq!(rec.gpu_samples[1].process_bytes, Some(2 << 30));
    assert_eq!(rec.gpu_samples[1].time_ns, 1_700_000_000_100_000_000);
    assert_eq!(
        rec.host_samples.iter().map(|h| h.rss_bytes).max(),
        Some(120 << 20)
    );
    assert_eq!(rec.devices[0].name.as_deref(), Some("NVIDIA H200"));
    assert_eq!(
        rec.meta.properties.get("exit_code").map(String::as_str),
        Some("3")
    );
    assert_eq!(
        rec.meta.properties.get("command").map(String::as_str),
        Some("python train.py")
    );
    assert!(
        rec.diagnostics
            .counts
            .contains_key("note: torch snapshot enabled")
    );
    assert!(
        !rec.diagnostics
            .counts
            .keys()
            .any(|k| k.contains("not finalised"))
    );
    let summary = crate::analysis::summarize(&rec, &crate::Timeline::build(&rec));
    assert_eq!(summary.nvml.len(), 1);
    assert_eq!(summary.nvml[0].peak_used_bytes, 3 << 30);
    assert_eq!(
        summary.nvml[0].peak_used_at_ns - summary.start_ns,
        100_000_000
    );
    assert_eq!(summary.nvml[0].peak_process_bytes, Some(2 << 30));
    assert_eq!(summary.host_rss_peak_bytes, Some(120 << 20));
    assert_eq!(summary.host_pss_peak_bytes, Some(60 << 20));
    assert_eq!(summary.host_processes_max, Some(3));
}

#[test]
fn a_killed_recording_still_opens() {
    let path = temp("killed.vrec");
    let mut w = RecordingWriter::create(&path, &header(), false).expect("create");
    for i in 0..10 {
        w.write(&sample(i * 1_000_000, (i as u64 + 1) << 28, 0, 1 << 20))
            .expect("write");
    }
    w.flush().expect("flush");
    drop(w);
    // The process died in the middle of the next line.
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.extend_from_slice(b"{\"t_ns\":10000000,\"gpus\":[{\"index\":0,\"us");
    std::fs::write(&path, &bytes).expect("write");
    let rec = load(&path, LoadOptions::default()).expect("opens");
    assert_eq!(rec.gpu_samples.len(), 10);
    assert_eq!(
        rec.gpu_samples.iter().map(|s| s.used_bytes).max(),
        Some(10 << 28)
    );
    let counts = &rec.diagnostics.counts;
    assert!(
        counts.keys().any(|k| k.contains("not finalised")),
        "{counts:?}"
    );
    assert!(counts.keys().any(|k| k.contains("cut short")), "{counts:?}");
}

#[test]
fn damage_in_the_middle_is_an_error_with_offset() {
    let path = temp("damaged.vrec");
    let mut w = RecordingWriter::create(&path, &header(), false).expect("create");
    w.write(&sample(0, 1, 0, 1)).expect("write");
    w.finish(1, EndInfo::default()).expect("finish");
    let text = std::fs::read_to_string(&path).expect("read");
    let first_line = text.find('\n').expect("header") + 1;
    let damaged = format!("{}garbage\n{}", &text[..first_line], &text[first_line..]);
    std::fs::write(&path, damaged).expect("write");
    let err = load(&path, LoadOptions::default()).expect_err("damaged");
    assert_eq!(err.offset, Some(first_line as u64), "{err}");
    // A newer format version is refused clearly.
    let magic = format!("{{\"vramscope_recording\":{VERSION}");
    assert!(text.starts_with(&magic), "{text}");
    let newer = text.replacen(&magic, "{\"vramscope_recording\":99", 1);
    std::fs::write(&path, newer).expect("write");
    let err = load(&path, LoadOptions::default()).expect_err("newer");
    assert!(err.to_string().contains("version 99"), "{err}");
}

pub(super) fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

#[test]
fn version_1_files_keep_loading() {
    // Written by vramscope 0.1.0 (tests/fixtures/recording/make_v1.py), never regenerated.
    let rec = load(&fixture("recording/v1-train.vsr"), LoadOptions::default()).expect("v1");
    assert_eq!(rec.meta.era, "format version 1");
    assert_eq!(rec.gpu_samples.len(), 12, "6 samples of 2 GPUs");
    let gpu0: Vec<u64> = rec
        .gpu_samples
        .iter()
        .filter(|s| s.device == 0)
        .map(|s| s.used_bytes)
        .collect();
    assert_eq!(
        gpu0,
        [1 << 30, 3 << 30, 7 << 30, 12 << 30, 9 << 30, 9 << 30]
    );
    assert!(rec.gpu_samples.iter().all(|s| s.free_bytes.is_none()));
    assert!(
        rec.gpu_process_samples.is_empty(),
        "v1 has no per-pid readings"
    );
    assert_eq!(rec.devices[1].name.as_deref(), Some("NVIDIA H200"));
    let props = &rec.meta.properties;
    assert_eq!(props.get("exit_code").map(String::as_str), Some("0"));
    assert_eq!(
        props.get("command").map(String::as_str),
        Some("python train.py --epochs 1")
    );
    let summary = crate::analysis::summarize(&rec, &crate::Timeline::build(&rec));
    assert_eq!(summary.nvml[0].peak_used_bytes, 12 << 30);
    assert_eq!(
        summary.nvml[0].peak_used_at_ns - summary.start_ns,
        300_000_000
    );
    assert_eq!(summary.nvml[0].peak_process_bytes, Some(11 << 30));
    assert_eq!(
        summary.nvml[1].peak_process_bytes, None,
        "procs null on GPU 1"
    );
    assert_eq!(summary.host_rss_peak_bytes, Some(1500 << 20));
    assert_eq!(summary.end_ns - summary.start_ns, 560_000_000);

    let killed = load(&fixture("recording/v1-killed.vsr"), LoadOptions::default()).expect("cut");
    assert_eq!(killed.gpu_samples.len(), 6, "3 complete samples of 2 GPUs");
    let keys: Vec<&String> = killed.diagnostics.counts.keys().collect();
    assert!(keys.iter().any(|k| k.contains("not finalised")), "{keys:?}");
    assert!(keys.iter().any(|k| k.contains("cut short")), "{keys:?}");
    assert!(
        keys.iter()
            .any(|k| k.contains("a note written by vramscope 0.1.0"))
    );
}

#[test]
fn free_driver_reserved_pids_and_mig_round_trip() {
    let path = temp("v1-extended.vrec");
    let mut w = RecordingWriter::create(&path, &header(), false).expect("create");
    w.write(&Line::Sample {
        t_ns: 10,
        gpus: vec![GpuReading {
            index: 0,
            used: 5 << 30,
            total: Some(150 << 30),
            procs: Some(3 << 30),
            free: Some(144 << 30),
            driver_reserved: Some(1 << 30),
            pids: vec![(101, Some(1 << 30)), (102, Some(2 << 30)), (103, None)],
            mig: vec![MigReading {
                slot: 0,
                used: Some(2 << 30),
                total: Some(18 << 30),
                procs: Some(2 << 30),
            }],
        }],
        rss: None,
        pss: None,
        host_processes: None,
    })
    .expect("write");
    w.write(&Line::Sample {
        t_ns: 20,
        gpus: vec![GpuReading {
            index: 0,
            used: 4 << 30,
            total: Some(150 << 30),
            procs: Some(4 << 30),
            free: Some(145 << 30),
            driver_reserved: Some(1 << 30),
            pids: vec![(101, Some(3 << 30)), (102, Some(1 << 30))],
            mig: Vec::new(),
        }],
        rss: None,
        pss: None,
        host_processes: None,
    })
    .expect("write");
    w.finish(30, EndInfo::default()).expect("finish");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(
        text.contains(r#""pids":[[101,1073741824],[102,2147483648],[103,null]]"#),
        "{text}"
    );
    let rec = load(&path, LoadOptions::default()).expect("load");
    assert_eq!(rec.gpu_samples[0].free_bytes, Some(144 << 30));
    assert_eq!(rec.gpu_samples[0].driver_reserved_bytes, Some(1 << 30));
    assert_eq!(rec.gpu_process_samples.len(), 5);
    let summary = crate::analysis::summarize(&rec, &crate::Timeline::build(&rec));
    let n = &summary.nvml[0];
    assert_eq!(n.min_free_bytes, Some(144 << 30));
    assert_eq!(n.peak_process_bytes, Some(4 << 30));
    let peaks: Vec<(u32, Option<u64>)> =
        n.processes.iter().map(|p| (p.pid, p.peak_bytes)).collect();
    assert_eq!(
        peaks,
        [(101, Some(3 << 30)), (102, Some(2 << 30)), (103, None)]
    );
    // A reader that predates these keys sees plain v1 samples: the old line shapes parse.
    #[derive(serde::Deserialize)]
    struct OldReading {
        #[allow(dead_code)]
        index: u32,
        used: u64,
    }
    #[derive(serde::Deserialize)]
    struct OldSample {
        #[allow(dead_code)]
        t_ns: i64,
        gpus: Vec<OldReading>,
    }
    let second = text.lines().nth(1).expect("a sample line");
    let old: OldSample = serde_json::from_str(second).expect("old shape");
    assert_eq!(old.gpus[0].used, 5 << 30);
}

/// `basic.pickle` embedded as a recording's snapshot, on GPU 1 by UUID.
fn recording_with_snapshot(name: &str, cut: bool) -> (std::path::PathBuf, Vec<u8>) {
    recording_naming(name, cut, &format!("{name}.torch"))
}

/// As [`recording_with_snapshot`], its header naming `dir` as the snapshots folder.
pub(super) fn recording_naming(name: &str, cut: bool, dir: &str) -> (std::path::PathBuf, Vec<u8>) {
    let pickle = std::fs::read(fixture("snapshot/basic.pickle")).expect("fixture");
    let path = temp(name);
    let mut h = header();
    h.devices = (0..2)
        .map(|i| DeviceHeader {
            index: i,
            uuid: Some(format!("GPU-0000000{i}-aaaa")),
            ..DeviceHeader::default()
        })
        .collect();
    // The snapshot's history starts at 1.7e15 µs (gen_snapshots.py's clock): start before.
    h.start_unix_ns = 1_699_999_999_000_000_000;
    h.torch_memory = Some(TorchMemoryHeader {
        max_entries: 1000,
        dir: dir.to_owned(),
    });
    let mut w = RecordingWriter::create(&path, &h, false).expect("create");
    w.write(&Line::Snapshot {
        t_ns: 5,
        snapshot: SnapshotInfo {
            id: 7,
            pid: 4242,
            reason: "exit".into(),
            file: "snapshot-4242-1-exit.pickle".into(),
            bytes: pickle.len() as u64,
            devices: vec![SnapshotDevice {
                cuda: 0,
                uuid: Some("00000001-AAAA".into()),
                ..SnapshotDevice::default()
            }],
            ..SnapshotInfo::default()
        },
    })
    .expect("begin");
    let mut enc = snapshots::SnapshotEncoder::new(7);
    let mut chunks = pickle.chunks(1000).peekable();
    while let Some(piece) = chunks.next() {
        if cut && chunks.peek().is_none() {
            break;
        }
        w.write(&enc.chunk(piece, 6)).expect("chunk");
    }
    if !cut {
        w.write(&enc.finish(7)).expect("end");
    }
    w.finish(8, EndInfo::default()).expect("finish");
    (path, pickle)
}

#[test]
fn an_embedded_snapshot_merges_onto_its_gpu() {
    let (path, _) = recording_with_snapshot("embedded.vrec", false);
    let rec = load(&path, LoadOptions::default()).expect("load");
    let direct = load(&fixture("snapshot/basic.pickle"), LoadOptions::default()).expect("pickle");
    assert_eq!(rec.mem_events.len(), direct.mem_events.len());
    assert!(!rec.mem_events.is_empty());
    // cuda:0 of the snapshotting process is NVML's GPU 1 (matched by UUID).
    let cuda1 = rec
        .devices
        .iter()
        .position(|d| d.key == crate::model::DeviceId::cuda(1))
        .expect("cuda:1") as u16;
    assert!(rec.mem_events.iter().all(|e| e.device == cuda1));
    let timeline = crate::Timeline::build(&rec);
    let s = crate::analysis::summarize(&rec, &timeline);
    let d = crate::analysis::summarize(&direct, &crate::Timeline::build(&direct));
    let merged = s
        .devices
        .iter()
        .find(|x| x.device.to_string() == "cuda:1")
        .expect("merged device");
    assert_eq!(
        merged.peak_allocated_bytes,
        d.devices[0].peak_allocated_bytes
    );
    assert_eq!(merged.peak_reserved_bytes, d.devices[0].peak_reserved_bytes);
    // Same absolute clock: the peak is at the same instant.
    let peak = |t: &crate::Timeline, dev: usize| {
        let dt = &t.devices[dev];
        dt.peak_allocated
            .and_then(|i| dt.points.get(i))
            .map(|p| p.time_ns)
    };
    assert_eq!(
        peak(&timeline, cuda1 as usize),
        peak(&crate::Timeline::build(&direct), 0)
    );
    // Frames survive the re-interning.
    let live = crate::analysis::live::live_groups(
        &rec,
        &timeline,
        cuda1,
        rec.mem_events.last().map_or(0, |e| e.time_ns),
        crate::analysis::live::GroupBy::Site,
    );
    assert!(
        live.iter()
            .any(|g| g.site.contains("train.py") || g.site.contains("model.py"))
    );
    let notes: Vec<&String> = rec.diagnostics.counts.keys().collect();
    assert!(
        notes
            .iter()
            .any(|k| k.contains("allocator history of pid 4242")),
        "{notes:?}"
    );
}

#[test]
fn a_snapshot_cut_mid_embedding_is_reported_and_taken_from_beside() {
    let (path, pickle) = recording_with_snapshot("cut.vrec", true);
    let rec = load(&path, LoadOptions::default()).expect("load");
    assert!(
        rec.mem_events.is_empty(),
        "an incomplete snapshot is not merged"
    );
    assert!(
        rec.diagnostics
            .counts
            .keys()
            .any(|k| k.contains("embedded incompletely")),
        "{:?}",
        rec.diagnostics.counts
    );
    // The folder beside still holds it (vramscope removes it only after embedding).
    let dir = path.with_file_name("cut.vrec.torch");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("snapshot-4242-1-exit.pickle"), &pickle).expect("pickle");
    let status = format!(
        "{{\"event\":\"snapshot\",\"pid\":4242,\"t_unix_ns\":1,\"file\":\"snapshot-4242-1-exit.pickle\",\"reason\":\"exit\",\"bytes\":{},\"devices\":[{{\"cuda\":0,\"uuid\":\"00000001-aaaa\"}}]}}\n",
        pickle.len()
    );
    std::fs::write(dir.join("status-4242.jsonl"), status).expect("status");
    let rec = load(&path, LoadOptions::default()).expect("load");
    let direct = load(&fixture("snapshot/basic.pickle"), LoadOptions::default()).expect("pickle");
    assert_eq!(rec.mem_events.len(), direct.mem_events.len());
    assert!(
        rec.diagnostics
            .counts
            .keys()
            .any(|k| k.contains("read from beside"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unreadable_embedded_snapshot_is_a_note_not_a_failure() {
    let path = temp("garbage-snapshot.vrec");
    let mut w = RecordingWriter::create(&path, &header(), false).expect("create");
    w.write(&sample(0, 1 << 30, 0, 1 << 20)).expect("sample");
    w.write(&Line::Snapshot {
        t_ns: 1,
        snapshot: SnapshotInfo {
            id: 0,
            pid: 9,
            file: "snapshot-9-1-exit.pickle".into(),
            ..SnapshotInfo::default()
        },
    })
    .expect("begin");
    let mut enc = snapshots::SnapshotEncoder::new(0);
    w.write(&enc.chunk(b"\x80\x04 this is not a snapshot", 2))
        .expect("chunk");
    w.write(&enc.finish(3)).expect("end");
    w.finish(4, EndInfo::default()).expect("finish");
    let rec = load(&path, LoadOptions::default()).expect("the recording still opens");
    assert_eq!(rec.gpu_samples.len(), 1);
    assert!(rec.mem_events.is_empty());
    let note = rec
        .diagnostics
        .counts
        .keys()
        .find(|k| k.contains("torch snapshot of pid 9"))
        .expect("a note");
    assert!(
        note.contains("unreadable") && note.contains("the embedded pickle"),
        "{note}"
    );
}

/// Append `bytes` to the file `to`, as a writer would.
fn append(to: &std::path::Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(to)
        .expect("open");
    f.write_all(bytes).expect("append");
}

#[test]
fn a_tail_reads_what_is_appended_and_gives_what_a_whole_read_gives() {
    // GIVEN a finished recording with an embedded snapshot, and a copy being written
    let (whole, _) = recording_with_snapshot("tail-whole.vrec", false);
    let bytes = std::fs::read(&whole).expect("read");
    let copy = temp("tail-copy.vrec");
    let header_end = bytes.iter().position(|&b| b == b'\n').expect("header") + 1;
    std::fs::write(&copy, &bytes[..header_end]).expect("write");
    let mut tail = RecordingTail::open(&copy).expect("open");
    assert_eq!(tail.bytes_read(), header_end as u64);
    // WHEN the rest arrives in pieces that cut lines in the middle
    let mut at = header_end;
    let mut lines = 0;
    for piece in bytes[header_end..].chunks(777) {
        append(&copy, piece);
        at += piece.len();
        lines += tail.read_more().expect("more");
        // THEN only complete lines are read; one still being written waits
        let complete = bytes[..at].iter().rposition(|&b| b == b'\n').expect("nl") + 1;
        assert_eq!(tail.bytes_read(), complete as u64);
        assert!(is_unfinished(&tail.recording()) != tail.ended());
    }
    assert!(tail.ended());
    assert_eq!(
        lines as usize,
        bytes.iter().filter(|&&b| b == b'\n').count() - 1
    );
    // and the recording is the one a whole read gives, snapshot merged in
    let tailed = tail.recording();
    let read = load(&whole, LoadOptions::default()).expect("load");
    assert!(!tailed.mem_events.is_empty());
    assert_eq!(format!("{tailed:?}"), format!("{read:?}"));
    assert_eq!(tail.read_more().expect("nothing more"), 0);
}

#[test]
fn a_tail_before_its_end_line_is_the_whole_read_of_the_same_bytes() {
    let path = temp("tail-open.vrec");
    let mut w = RecordingWriter::create(&path, &header(), false).expect("create");
    for i in 0..5 {
        w.write(&sample(
            i * 100_000_000,
            (1 + i as u64) << 30,
            1 << 30,
            1 << 20,
        ))
        .expect("write");
    }
    w.flush().expect("flush");
    let mut tail = RecordingTail::open(&path).expect("open");
    w.write(&sample(500_000_000, 7 << 30, 1 << 30, 1 << 20))
        .expect("write");
    w.flush().expect("flush");
    assert_eq!(tail.read_more().expect("more"), 1);
    let tailed = tail.recording();
    assert_eq!(tailed.gpu_samples.len(), 6);
    assert_eq!(tailed.gpu_samples[5].used_bytes, 7 << 30);
    assert!(is_unfinished(&tailed));
    let read = load(&path, LoadOptions::default()).expect("load");
    assert_eq!(format!("{tailed:?}"), format!("{read:?}"));
    // A damaged complete line is an error at its offset.
    let at = std::fs::metadata(&path).expect("len").len();
    append(&path, b"{\"t_ns\": oops}\n");
    let e = tail.read_more().expect_err("damage");
    assert_eq!(e.offset, Some(at));
}
