//! `--torch-memory`: the Python shim that turns on PyTorch's allocator history in the
//! program, and, when the run ends, the program's snapshots embedded in the recording.
//!
//! The shim (`sitecustomize.py`, embedded in the binary) goes into a private temporary
//! directory put first on PYTHONPATH, ahead of the user's PYTHONPATH; it chains to any other
//! sitecustomize. The program's processes write their snapshots and status lines into a
//! folder beside the recording (`FILE.torch/`), so nothing depends on vramscope staying
//! alive; vramscope embeds them at the end and removes the folder only once the recording,
//! with every snapshot in it, is synced to disk.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use collector::parse::recording::beside::{MAX_SNAPSHOT_FILE_BYTES, open_inside};
use collector::parse::recording::snapshots::{
    CHUNK_BYTES, NO_PYTHON_NOTE, SnapshotEncoder, no_torch_note, read_status,
};
use collector::parse::recording::tags::{read_tags_file, tag_lines};
use collector::parse::recording::{Line, TorchMemoryHeader};
use crossbeam_channel::Sender;

/// The shim, written into the private directory.
const SHIM: &str = include_str!("sitecustomize.py");

/// The shim's directory and the snapshots folder of one run.
pub struct TorchShim {
    shim_dir: PathBuf,
    out_dir: PathBuf,
    dir_name: String,
    max_entries: u64,
}

/// What became of the snapshots when the run ended.
#[derive(Debug, Default)]
pub struct TorchReport {
    /// Snapshots embedded.
    pub embedded: u64,
    /// Processes whose allocator history was on.
    pub processes: u64,
    /// Why there is no allocator history, when there is none.
    pub why_none: Option<String>,
    /// Snapshots that could not be embedded (they stay in the folder).
    pub failed: Vec<String>,
}

impl TorchShim {
    /// Make the shim's directory and the snapshots folder beside `recording`. With
    /// `overwrite` (`--force`), a folder left by an earlier run of the same name is emptied.
    pub fn prepare(recording: &Path, max_entries: u64, overwrite: bool) -> io::Result<TorchShim> {
        let name = recording
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "vramscope".into());
        let dir_name = format!("{name}.torch");
        let out_dir = recording.with_file_name(&dir_name);
        if overwrite && out_dir.is_dir() {
            fs::remove_dir_all(&out_dir)?;
        }
        fs::create_dir(&out_dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create {}: {e}", out_dir.display()),
            )
        })?;
        let shim_dir = private_dir()?;
        fs::write(shim_dir.join("sitecustomize.py"), SHIM)?;
        Ok(TorchShim {
            shim_dir,
            out_dir,
            dir_name,
            max_entries,
        })
    }

    /// What the header records.
    pub fn header(&self) -> TorchMemoryHeader {
        TorchMemoryHeader {
            max_entries: self.max_entries,
            dir: self.dir_name.clone(),
        }
    }

    /// The program's additions to its environment: the shim first on PYTHONPATH (the user's
    /// PYTHONPATH after it), where to write, how many entries to keep.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let mut path = self.shim_dir.clone().into_os_string();
        if let Some(user) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(user);
        }
        vec![
            ("PYTHONPATH".into(), path),
            (
                "VRAMSCOPE_TORCH_DIR".into(),
                self.out_dir.clone().into_os_string(),
            ),
            (
                "VRAMSCOPE_TORCH_MAX_ENTRIES".into(),
                self.max_entries.to_string().into(),
            ),
        ]
    }

    /// Turn the processes' status into notes and embed every snapshot, through `tx`. Times
    /// are relative to `start_unix_ns` (the recording's start), `start` for embedding time.
    pub fn finish(&self, tx: &Sender<Line>, start_unix_ns: i64, start: Instant) -> TorchReport {
        let now = || i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
        let mut report = TorchReport::default();
        let note = |t_ns: i64, note: String| {
            let _ = tx.send(Line::Note { t_ns, note });
        };
        let events = match read_status(&self.out_dir) {
            Ok(events) => events,
            Err(e) => {
                let why = format!("torch-memory: cannot read {}: {e}", self.out_dir.display());
                note(now(), why.clone());
                report.why_none = Some(why);
                return report;
            }
        };
        for e in &events {
            if let Some(text) = e.note() {
                note(e.t_unix_ns.saturating_sub(start_unix_ns), text);
            }
        }
        if let Some(text) = no_torch_note(&events) {
            note(now(), text);
        }
        if events.is_empty() {
            note(now(), NO_PYTHON_NOTE.to_owned());
        }
        report.processes = events.iter().filter(|e| e.event == "enabled").count() as u64;
        let mut id = 0;
        for e in &events {
            let Some(info) = e.snapshot_info(id) else {
                continue;
            };
            id += 1;
            let file = self.out_dir.join(&info.file);
            match embed(tx, &self.out_dir, info, now) {
                Ok(()) => report.embedded += 1,
                Err(err) => {
                    note(
                        now(),
                        format!(
                            "torch-memory: {} not embedded: {err} (it stays in {})",
                            file.display(),
                            self.out_dir.display()
                        ),
                    );
                    report.failed.push(file.display().to_string());
                }
            }
        }
        if report.processes == 0 {
            report.why_none = events
                .iter()
                .find_map(|e| match e.event.as_str() {
                    "no_cuda" | "error" => e.note(),
                    _ => None,
                })
                .or_else(|| no_torch_note(&events))
                .or_else(|| events.is_empty().then(|| NO_PYTHON_NOTE.to_owned()));
        }
        report
    }

    /// Remove the snapshots folder: call only once the recording holding them is synced.
    pub fn remove_snapshots(&self) -> io::Result<()> {
        fs::remove_dir_all(&self.out_dir)
    }

    /// The snapshots folder.
    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }
}

impl Drop for TorchShim {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.shim_dir);
    }
}

/// Send one snapshot file as a snapshot line, chunk lines and an end line.
fn embed(
    tx: &Sender<Line>,
    dir: &Path,
    mut info: collector::parse::recording::SnapshotInfo,
    now: impl Fn() -> i64,
) -> io::Result<()> {
    let f = open_inside(dir, &info.file, MAX_SNAPSHOT_FILE_BYTES)?;
    info.bytes = f.metadata()?.len();
    let mut f = f.take(MAX_SNAPSHOT_FILE_BYTES);
    let id = info.id;
    let tags_file = info.tags_file.clone();
    let closed = |_| io::Error::other("the writer stopped");
    tx.send(Line::Snapshot {
        t_ns: now(),
        snapshot: info,
    })
    .map_err(closed)?;
    let mut enc = SnapshotEncoder::new(id);
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let n = read_full(&mut f, &mut buf)?;
        if n == 0 {
            break;
        }
        tx.send(enc.chunk(&buf[..n], now())).map_err(closed)?;
    }
    // The tags go before the end line: a complete snapshot has all of them.
    if let Some(name) = tags_file {
        let path = dir.join(&name);
        match read_tags_file(dir, &name) {
            Ok(rows) => {
                for line in tag_lines(id, &rows, now()) {
                    tx.send(line).map_err(closed)?;
                }
            }
            Err(e) => {
                let note = format!(
                    "torch-memory: storage tags {} not embedded ({e}): categories are inferred",
                    path.display()
                );
                tx.send(Line::Note { t_ns: now(), note }).map_err(closed)?;
            }
        }
    }
    tx.send(enc.finish(now())).map_err(closed)
}

/// Fill `buf` as far as the file goes (chunks must be whole multiples of 3 bytes but the
/// last, for base64).
fn read_full(f: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A new directory only this user can read, in the temporary directory.
fn private_dir() -> io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let pid = std::process::id();
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!("vramscope-shim-{pid}-{nanos:x}-{attempt}"));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(
        "cannot create a private temporary directory",
    ))
}
