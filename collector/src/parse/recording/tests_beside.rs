//! A recording's folder beside it is resolved inside the recording's own folder: a header
//! or status line that points elsewhere, and files that are FIFOs, devices or links out,
//! are not read (a note says why), and the load ends promptly.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use super::tests::{recording_naming, temp};
use crate::model::Recording;
use crate::parse::{LoadOptions, load};

/// A status line naming `file` as pid 4242's snapshot.
fn status_naming(file: &str, bytes: usize) -> String {
    format!(
        "{{\"event\":\"snapshot\",\"pid\":4242,\"t_unix_ns\":1,\"file\":{file:?},\"reason\":\"exit\",\"bytes\":{bytes},\"devices\":[{{\"cuda\":0,\"uuid\":\"00000001-aaaa\"}}]}}\n"
    )
}

/// A folder holding `pickle` as `snap.pickle` and a status line naming it.
fn snapshot_folder(dir: &Path, pickle: &[u8]) {
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(dir.join("snap.pickle"), pickle).expect("pickle");
    let status = status_naming("snap.pickle", pickle.len());
    std::fs::write(dir.join("status-4242.jsonl"), status).expect("status");
}

/// Load `path` on another thread; fail the test if it takes over 10 s (a FIFO hangs).
fn load_promptly(path: &Path) -> Recording {
    let (tx, rx) = mpsc::sync_channel(1);
    let owned = path.to_owned();
    std::thread::Builder::new()
        .name("load".into())
        .spawn(move || {
            let _ = tx.send(load(&owned, LoadOptions::default()).expect("load"));
        })
        .expect("spawn");
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the load ends within 10 s")
}

fn notes(rec: &Recording) -> Vec<String> {
    rec.diagnostics.counts.keys().cloned().collect()
}

/// A note holds every one of `needles`.
fn has_note(rec: &Recording, needles: &[&str]) {
    assert!(
        notes(rec)
            .iter()
            .any(|n| needles.iter().all(|needle| n.contains(needle))),
        "no note with {needles:?} in {:?}",
        notes(rec)
    );
}

#[test]
fn a_snapshots_folder_named_outside_the_recordings_is_not_read() {
    // GIVEN a valid snapshot folder elsewhere, and recordings naming it absolutely and by ..
    let elsewhere = temp("elsewhere.torch");
    let _ = std::fs::remove_dir_all(&elsewhere);
    let pickle = std::fs::read(super::tests::fixture("snapshot/basic.pickle")).expect("pickle");
    snapshot_folder(&elsewhere, &pickle);
    let sub = temp("sub");
    std::fs::create_dir_all(&sub).expect("sub");
    let absolute = elsewhere.to_str().expect("utf-8").to_owned();
    for (name, dir) in [
        ("absolute.vrec", absolute.as_str()),
        ("sub/dotdot.vrec", "../elsewhere.torch"),
    ] {
        let (path, _) = recording_naming(name, true, dir);
        // WHEN loaded
        let rec = load_promptly(&path);
        // THEN nothing from there is merged, and a note says why
        assert!(rec.mem_events.is_empty(), "{name}: merged from {dir}");
        let why = format!("torch-memory: folder not read: {dir:?} is not a plain name inside");
        has_note(&rec, &[&why]);
    }
}

#[test]
fn snapshot_files_outside_the_folder_or_not_regular_are_not_read() {
    let (path, pickle) = recording_naming("beside-files.vrec", true, "beside-files.torch");
    let dir = path.with_file_name("beside-files.torch");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let outside: PathBuf = path.with_file_name("outside.pickle");
    std::fs::write(&outside, &pickle).expect("outside");
    std::os::unix::fs::symlink(&outside, dir.join("link.pickle")).expect("link");
    let fifo = dir.join("fifo.pickle");
    assert!(nix_mkfifo(&fifo), "mkfifo");
    let cases = [
        (
            "../outside.pickle",
            "\"../outside.pickle\" is not a plain name inside",
        ),
        ("link.pickle", "\"link.pickle\" leads out of"),
        ("fifo.pickle", "fifo.pickle is not a regular file"),
    ];
    for (file, why) in cases {
        // GIVEN a status line naming the file
        std::fs::write(
            dir.join("status-4242.jsonl"),
            status_naming(file, pickle.len()),
        )
        .expect("status");
        // WHEN loaded, THEN promptly, with nothing merged and a note saying why
        let rec = load_promptly(&path);
        assert!(rec.mem_events.is_empty(), "{file} was merged");
        has_note(&rec, &["torch-memory: snapshot not read: ", why]);
    }
    // A status file that is a FIFO, or a link to /dev/zero, is skipped promptly.
    std::fs::remove_file(dir.join("status-4242.jsonl")).expect("rm");
    assert!(nix_mkfifo(&dir.join("status-1.jsonl")), "mkfifo");
    std::os::unix::fs::symlink("/dev/zero", dir.join("status-2.jsonl")).expect("link");
    let rec = load_promptly(&path);
    assert!(rec.mem_events.is_empty());
}

fn nix_mkfifo(path: &Path) -> bool {
    std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}
