use super::*;
use crate::parse::{LoadOptions, load};

fn temp(name: &str) -> std::path::PathBuf {
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
        }],
        rss: Some(rss),
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
            signal: None,
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
    assert_eq!(summary.nvml[0].peak_used_at_us, 100_000.0);
    assert_eq!(summary.nvml[0].peak_process_bytes, Some(2 << 30));
    assert_eq!(summary.host_rss_peak_bytes, Some(120 << 20));
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

#[test]
fn version_1_recordings_still_load() {
    // Written by vramscope 0.1.0 before packs existed (format version 1).
    let v1 = concat!(
        r#"{"vramscope_recording":1,"start_unix_ns":1764671000000000000,"command":["python","train.py"],"host":"gpu-7","pid":4242,"interval_ms":100,"driver_version":"550.54.15","nvml_version":"12.550.54.15","nvml_unavailable":null,"devices":[{"index":0,"name":"NVIDIA H200","total_bytes":150754820096,"uuid":"GPU-1"}],"vramscope_version":"0.1.0"}"#,
        "\n",
        r#"{"t_ns":100000000,"gpus":[{"index":0,"used":3221225472,"total":150754820096,"procs":2147483648}],"rss":125829120}"#,
        "\n",
        r#"{"t_ns":150000000,"note":"torch not imported"}"#,
        "\n",
        r#"{"t_ns":200000000,"end":{"exit_code":0,"signal":null}}"#,
        "\n"
    );
    let path = temp("v1.vrec");
    std::fs::write(&path, v1).expect("write");
    let rec = load(&path, LoadOptions::default()).expect("v1 loads");
    assert_eq!(rec.meta.era, "vramscope recording v1");
    assert_eq!(rec.gpu_samples.len(), 1);
    assert_eq!(rec.gpu_samples[0].used_bytes, 3_221_225_472);
    assert_eq!(rec.gpu_samples[0].time_ns, 1_764_671_000_100_000_000);
    assert_eq!(rec.host_samples[0].rss_bytes, 125_829_120);
    assert_eq!(rec.meta.properties["exit_code"], "0");
    assert!(
        !rec.diagnostics
            .counts
            .keys()
            .any(|k| k.contains("not finalised"))
    );
}
