//! File → Export report… / Export for Perfetto…: the files the viewer writes are the bytes
//! the CLI writes for the same input, nothing is overwritten without "Replace", and never
//! the file being viewed (by the file policy of every writer, `output::file`).

use std::path::{Path, PathBuf};

use collector::{LoadOptions, Timeline};
use egui_kittest::kittest::Queryable;

use super::super::Command;
use super::super::export::ExportKind;
use super::{harness, sample, settle};
use crate::output::file::FRESH;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vramscope-gui-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Every file under `dir`, sorted, with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).expect("read"))
        })
        .collect();
    out.sort();
    out
}

/// Open the export window on the sample, aim it at `dest`, click Export and wait.
fn export_through_window(kind: ExportKind, dest: &Path, replace: bool) -> Result<String, String> {
    let mut h = harness(vec![sample()]);
    settle(&mut h);
    let ctx = h.ctx.clone();
    h.state_mut().apply(&ctx, Command::Export(kind));
    // A new window is laid out unseen in its first frame.
    for _ in 0..3 {
        h.step();
    }
    let w = h.state_mut().export_mut().expect("the export window");
    w.path_text = dest.display().to_string();
    w.replace = replace;
    h.get_by_label("Export").click();
    settle(&mut h);
    let w = h.state_mut().export_mut().expect("the window stays open");
    w.outcome()
        .expect("an outcome")
        .map(str::to_owned)
        .map_err(str::to_owned)
}

#[test]
fn the_report_written_from_the_window_is_the_cli_report() {
    let dir = temp_dir("report");
    let (gui, cli) = (dir.join("gui"), dir.join("cli"));
    let said = export_through_window(ExportKind::Report, &gui, false).expect("exported");
    assert!(said.contains("report.md"), "{said}");
    let rec = collector::load(&sample(), LoadOptions::default()).expect("sample");
    let name = "transformer-lm-train-cpu.json.gz".to_owned();
    crate::output::report::write_report(&cli, &[(name, rec)], &FRESH).expect("cli report");
    let (g, c) = (files(&gui), files(&cli));
    assert!(
        g.iter().any(|(n, _)| n == "report.md") && g.len() >= 3,
        "{:?}",
        g.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert_eq!(g.len(), c.len());
    for ((gn, gb), (cn, cb)) in g.iter().zip(&c) {
        assert_eq!(gn, cn);
        assert!(gb == cb, "{gn} differs from the CLI's");
    }
    // A second export into the same directory is refused until "Replace" is ticked.
    let refused = export_through_window(ExportKind::Report, &gui, false).expect_err("refused");
    assert!(refused.contains("Replace"), "{refused}");
    export_through_window(ExportKind::Report, &gui, true).expect("replaced");
}

#[test]
fn the_perfetto_file_written_from_the_window_is_the_cli_export() {
    let dir = temp_dir("perfetto");
    let dest = dir.join("run.perfetto.json");
    let said = export_through_window(ExportKind::Perfetto, &dest, false).expect("exported");
    assert!(said.contains("run.perfetto.json"), "{said}");
    let rec = collector::load(&sample(), LoadOptions::default()).expect("sample");
    let timeline = Timeline::build(&rec);
    let mut cli = Vec::new();
    crate::output::perfetto::perfetto_json(&mut cli, &rec, &timeline).expect("cli export");
    let gui = std::fs::read(&dest).expect("written");
    assert!(gui == cli, "{} bytes vs the CLI's {}", gui.len(), cli.len());
    // The JSON is whole: it parses, with counter tracks and slices.
    let v: serde_json::Value = serde_json::from_slice(&gui).expect("JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    assert!(events.iter().any(|e| e["ph"] == "C") && events.iter().any(|e| e["ph"] == "X"));
    // No temporary file is left beside it.
    assert_eq!(files(&dir).len(), 1);
    // An existing file is kept unless "Replace" is ticked.
    std::fs::write(&dest, b"keep me").expect("write");
    let refused = export_through_window(ExportKind::Perfetto, &dest, false).expect_err("refused");
    assert!(refused.contains("exists"), "{refused}");
    assert_eq!(std::fs::read(&dest).expect("read"), b"keep me");
    export_through_window(ExportKind::Perfetto, &dest, true).expect("replaced");
    assert!(std::fs::read(&dest).expect("read") == cli);
}

#[test]
fn an_export_never_overwrites_the_file_being_viewed() {
    let before = std::fs::read(sample()).expect("sample");
    let dir = temp_dir("viewed");
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(sample(), &link).expect("symlink");
    for dest in [sample(), link] {
        let refused =
            export_through_window(ExportKind::Perfetto, &dest, true).expect_err("refused");
        let want = format!("refusing to write {}: it is the input", dest.display());
        assert!(refused.starts_with(&want), "{refused}");
    }
    // Nor a report replace the directory the file is in.
    let parent = sample().parent().expect("samples").to_owned();
    let refused = export_through_window(ExportKind::Report, &parent, true).expect_err("refused");
    assert!(refused.contains("it holds the input"), "{refused}");
    assert!(std::fs::read(sample()).expect("sample") == before);
}

#[test]
fn destinations_default_to_beside_the_input() {
    use super::super::export::default_destination as dest;
    let p = Path::new("/runs/a/train.json.gz");
    assert_eq!(
        dest(ExportKind::Report, p),
        Path::new("/runs/a/train-report")
    );
    assert_eq!(
        dest(ExportKind::Perfetto, p),
        Path::new("/runs/a/train.perfetto.json")
    );
    let p = Path::new("snap.pickle");
    assert_eq!(
        dest(ExportKind::Perfetto, p),
        Path::new("snap.perfetto.json")
    );
    // A name that is only an extension keeps it.
    assert_eq!(
        dest(ExportKind::Report, Path::new("/x/.json")),
        Path::new("/x/.json-report")
    );
}
