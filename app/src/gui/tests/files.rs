//! Files in and out of the viewer: a failed load, a dropped file, a vramscope recording.

use std::path::{Path, PathBuf};

use egui_kittest::kittest::Queryable;

use super::{fixture, harness, sample, settle};

#[test]
fn a_failed_load_shows_the_error_and_keeps_the_open_file() {
    let dir = std::env::temp_dir().join(format!("vramscope-gui-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("broken.json");
    std::fs::write(&bad, b"{\"traceEvents\": [ {\"ph\": \"X\", ").expect("write");
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let ctx = h.ctx.clone();
    h.state_mut()
        .apply(&ctx, super::super::Command::Open(vec![bad.clone()]));
    settle(&mut h);
    let app = h.state();
    assert_eq!(app.docs().len(), 1);
    assert_eq!(
        app.active_doc().map(|d| d.data.name.as_str()),
        Some("transformer-lm-train-cpu.json.gz")
    );
    let error = app.errors().first().expect("an error");
    assert!(
        error.contains("broken.json") && error.contains("ends early"),
        "{error}"
    );
    h.get_by_label_contains("broken.json");
    // The sample is still drawn and usable.
    h.get_by_label("# of Calls");
}

#[test]
fn a_vramscope_recording_shows_nvml_used_memory() {
    use collector::parse::recording::{
        DeviceHeader, EndInfo, GpuReading, Header, Line, RecordingWriter,
    };
    // GIVEN a recording of one GPU whose NVML-used memory goes 1 → 3 → 2 GiB
    let dir = std::env::temp_dir().join(format!("vramscope-gui-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("run.vrec");
    let header = Header {
        start_unix_ns: 1_700_000_000_000_000_000,
        command: vec!["python".into(), "train.py".into()],
        devices: vec![DeviceHeader {
            index: 0,
            name: Some("NVIDIA H200".into()),
            total_bytes: Some(141 << 30),
            uuid: None,
            ..DeviceHeader::default()
        }],
        ..Header::default()
    };
    let mut w = RecordingWriter::create(&path, &header, true).expect("create");
    for (t_ns, gib) in [(0i64, 1u64), (100_000_000, 3), (200_000_000, 2)] {
        let gpus = vec![GpuReading {
            index: 0,
            used: gib << 30,
            total: Some(141 << 30),
            procs: None,
            free: None,
            driver_reserved: None,
            pids: Vec::new(),
            mig: Vec::new(),
        }];
        w.write(&Line::Sample {
            t_ns,
            gpus,
            rss: None,
            pss: None,
            host_processes: None,
        })
        .expect("sample");
    }
    w.finish(250_000_000, EndInfo::default()).expect("finish");
    // WHEN it is opened
    let mut h = harness(vec![path]);
    settle(&mut h);
    // THEN its GPU is shown with the NVML curve, its peak and the device's capacity
    let doc = h.state().active_doc().expect("doc");
    assert_eq!(doc.data.device_name(doc.device), "cuda:0");
    let curves = &doc.data.curves[doc.device as usize];
    assert_eq!(
        curves.nvml_used.as_ref().and_then(|c| c.max()),
        Some(3 << 30)
    );
    assert_eq!(curves.total_bytes, Some(141 << 30));
    assert_eq!(doc.peak().map(|p| p.1), Some(3 << 30));
    assert_eq!(doc.rel_ns(doc.peak().expect("peak").0), 100e6);
    // The legend and the summary strip name it; the strip's link shows the peak.
    assert_eq!(h.query_all_by_label("NVML used").count(), 2);
    h.get_by_label("3.00 GiB");
}

/// A file dropped on the window, as eframe's winit integration hands it over.
#[derive(Debug)]
struct Dropped(PathBuf);

impl egui::DroppedFile for Dropped {
    fn path(&self) -> &Path {
        &self.0
    }

    fn bytes(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.0).map_err(|e| e.to_string())
    }
}

#[test]
fn a_dropped_file_opens_in_a_new_tab() {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let dropped = fixture("torch-cpu/k01_mlp_s1.json.gz");
    h.input_mut()
        .dropped_files
        .push(std::sync::Arc::new(Dropped(dropped)));
    h.step();
    settle(&mut h);
    let names: Vec<&str> = h
        .state()
        .docs()
        .iter()
        .map(|d| d.data.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["transformer-lm-train-cpu.json.gz", "k01_mlp_s1.json.gz"]
    );
    assert_eq!(
        h.state().active_doc().map(|d| d.data.name.as_str()),
        Some("k01_mlp_s1.json.gz")
    );
    // Dropping it again shows the open tab instead of loading it twice.
    let again = fixture("torch-cpu/k01_mlp_s1.json.gz");
    let ctx = h.ctx.clone();
    let first = h.state().docs()[0].id;
    h.state_mut()
        .apply(&ctx, super::super::Command::Activate(first));
    h.input_mut()
        .dropped_files
        .push(std::sync::Arc::new(Dropped(again)));
    h.step();
    settle(&mut h);
    assert_eq!(h.state().docs().len(), 2);
    assert_eq!(
        h.state().active_doc().map(|d| d.data.name.as_str()),
        Some("k01_mlp_s1.json.gz")
    );
}

#[test]
fn the_built_in_browser_opens_a_file() {
    let mut h = harness(Vec::new());
    h.run_steps(2);
    // With nothing open, the welcome screen offers the browser (there is no desktop
    // portal here, so File › Open uses it too).
    h.get_by_label("Built-in browser…").click();
    h.run_steps(2);
    let dir = sample().parent().expect("samples/").to_path_buf();
    h.state_mut().browser_mut().dir = dir;
    h.run_steps(2);
    h.get_by_label("transformer-lm-train-cpu.json.gz").click();
    h.run_steps(2);
    settle(&mut h);
    let doc = h.state().active_doc().expect("opened");
    assert_eq!(doc.data.name, "transformer-lm-train-cpu.json.gz");
    assert!(!h.state().browser().open, "the browser closes on open");
}

#[test]
fn tabs_keep_the_order_the_files_were_named_in() {
    // A 51 MB trace (hundreds of ms to load) and a 25 KB one (milliseconds): the small one
    // finishes first, yet its tab goes where it was named, and the first file is shown.
    let real = super::repo().join("../shared/traces/real");
    let big = real.join("hta-df-index-resolver-rank1/df_index_resolver.json.gz");
    let small = real.join("hta-cpu-only-gloo/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
    for order in [[&big, &small], [&small, &big]] {
        let mut h = harness(order.iter().map(|p| p.to_path_buf()).collect());
        settle(&mut h);
        let app = h.state();
        let names: Vec<&str> = app.docs().iter().map(|d| d.data.name.as_str()).collect();
        let named: Vec<String> = order
            .iter()
            .map(|p| {
                p.file_name()
                    .expect("a file")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(names, named, "tabs in the order named");
        assert_eq!(
            app.active_doc().map(|d| d.data.name.as_str()),
            Some(named[0].as_str()),
            "the first file named is shown"
        );
    }
}
