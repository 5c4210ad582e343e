//! One recording session, start to end (see the module above for the threads and the exit
//! codes).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use collector::parse::recording::{
    EndInfo, Header, Line, RecordingWriter, TorchMemoryHeader, open_output,
};
use collector::sampler::nvml::NvmlProbe;
use collector::sampler::{GpuProbe, SAMPLE_QUEUE, Sampler};
use crossbeam_channel::{Sender, bounded};

use super::torch::{TorchReport, TorchShim};
use super::{OWN_FAILURE, RecordArgs, child, name, report, writer};
use crate::output::file;
use crate::output::terminal::eprint_escaped;

/// Run `vramscope record`.
pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let path = args
        .output
        .clone()
        .unwrap_or_else(|| name::default_name(&args.command));
    // The file is made first: a bad path, an existing file or one of the program's own
    // files fails before anything runs.
    let Some(file) = create_file(&path, args.force, &args.command) else {
        return Ok(ExitCode::from(OWN_FAILURE));
    };
    let (probe, nvml_unavailable) = open_probe(&args);
    let (torch, notes) = prepare_torch(&args, &path);
    // Before any thread starts, so that every thread inherits the mask.
    let signals = child::block_signals()
        .map_err(|e| eprint_escaped!("vramscope: warning: signals will not be forwarded: {e}"))
        .ok();
    let env = torch.as_ref().map(TorchShim::env).unwrap_or_default();
    let start_unix_ns = unix_ns_now();
    let start = Instant::now();
    let spawned = child::spawn(&args.command, &env);
    let header = header(
        &args,
        start_unix_ns,
        spawned.as_ref().ok().map(std::process::Child::id),
        probe.as_ref(),
        nvml_unavailable,
        torch.as_ref().map(TorchShim::header),
    );
    let writer = RecordingWriter::new(file, &header)
        .map_err(|e| {
            eprint_escaped!(
                "vramscope: warning: cannot write {}: {e}; nothing will be recorded, the program runs anyway",
                path.display()
            );
        })
        .ok();
    let (tx, rx) = bounded::<Line>(SAMPLE_QUEUE);
    let writer = match writer::spawn(writer, rx, path.clone(), start) {
        Ok(w) => w,
        Err(e) => {
            eprint_escaped!(
                "vramscope: warning: cannot start writing: {e}; the program runs unrecorded"
            );
            return Ok(ExitCode::from(unrecorded(spawned)));
        }
    };
    for note in notes {
        let _ = tx.send(Line::Note { t_ns: 0, note });
    }
    let child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let torch = torch.as_ref();
            return Ok(not_started(&e, &args, &path, tx, writer, start, torch));
        }
    };
    let outcome = watch(child, probe, &args, signals, &tx, start);
    let torch_report = torch.as_ref().map(|t| t.finish(&tx, start_unix_ns, start));
    end(&tx, start, outcome.exit_code, outcome.signal);
    drop(tx);
    let written = writer.join();
    finish_torch(torch.as_ref(), torch_report.as_ref(), written.finalised);
    let facts = report::Facts {
        path: &path,
        elapsed: start.elapsed(),
        written: &written,
        header: &header,
        torch: torch_report.as_ref(),
        outcome,
    };
    report::print(&facts, args.format);
    Ok(ExitCode::from(exit_code(outcome, &written)))
}

/// The program's exit code; but when the program succeeded and its recording could not be
/// written to the end (a full disk, an I/O error), [`OWN_FAILURE`], so that a script does
/// not go on with a cut recording as if it were whole.
fn exit_code(outcome: child::Outcome, written: &writer::WriterReport) -> u8 {
    match outcome.code() {
        0 if written.error.is_some() || !written.finalised => OWN_FAILURE,
        code => code,
    }
}

/// Create the recording's file, or say why not. The files the command names (its script,
/// its config) are its inputs: the recording never replaces one, even with `--force`.
fn create_file(path: &Path, force: bool, command: &[OsString]) -> Option<std::fs::File> {
    let named: Vec<PathBuf> = command
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .collect();
    let inputs: Vec<&Path> = named.iter().map(PathBuf::as_path).collect();
    let policy = file::Policy::new(file::Overwrite::from_force(force), &inputs);
    if let Err(e) = file::check(path, &policy) {
        let next = match e {
            file::FileError::Exists { .. } => ", or -o to choose another name",
            _ => "",
        };
        eprint_escaped!("vramscope: {e}{next}");
        return None;
    }
    match open_output(path, force) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            eprint_escaped!(
                "vramscope: {} exists; pass --force to overwrite it, or -o to choose another name",
                path.display()
            );
            None
        }
        Err(e) => {
            eprint_escaped!("vramscope: cannot create {}: {e}", path.display());
            None
        }
    }
}

/// NVML from `--nvml-lib`, VRAMSCOPE_NVML_LIB or the system; else why not (one warning).
fn open_probe(args: &RecordArgs) -> (Option<NvmlProbe>, Option<String>) {
    let lib = args
        .nvml_lib
        .clone()
        .or_else(|| std::env::var_os("VRAMSCOPE_NVML_LIB").map(PathBuf::from));
    match NvmlProbe::open(lib.as_deref().map(Path::as_os_str)) {
        Ok(p) => (Some(p), None),
        Err(why) => {
            eprint_escaped!("vramscope: warning: no GPU memory will be recorded: {why}");
            (None, Some(why))
        }
    }
}

/// The `--torch-memory` shim, if asked for and possible, and notes for the recording.
fn prepare_torch(args: &RecordArgs, path: &Path) -> (Option<TorchShim>, Vec<String>) {
    if !args.torch_memory {
        return (None, Vec::new());
    }
    match TorchShim::prepare(path, args.torch_max_entries, args.force) {
        Ok(t) => (Some(t), Vec::new()),
        Err(e) => {
            eprint_escaped!("vramscope: warning: --torch-memory is off: {e}");
            (None, vec![format!("torch-memory: off: {e}")])
        }
    }
}

/// The program could not be started: the shell's exit code, and no recording.
fn not_started(
    e: &io::Error,
    args: &RecordArgs,
    path: &Path,
    tx: Sender<Line>,
    writer: writer::Writer,
    start: Instant,
    torch: Option<&TorchShim>,
) -> ExitCode {
    let code = child::spawn_failure_code(e);
    let program = args
        .command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let what = format!("cannot run {program}: {e}");
    let _ = tx.send(Line::Note {
        t_ns: 0,
        note: what.clone(),
    });
    end(&tx, start, Some(i32::from(code)), None);
    drop(tx);
    let _ = writer.join();
    if let Some(t) = torch {
        let _ = t.remove_snapshots();
    }
    // Nothing ran, so there is nothing to keep; a file left behind would only make the
    // next run, with the command fixed, stop at "exists".
    let _ = std::fs::remove_file(path);
    eprint_escaped!("vramscope: {what}; no recording was kept");
    ExitCode::from(code)
}

/// Sample and forward signals while the program runs; its outcome.
fn watch(
    child: std::process::Child,
    probe: Option<NvmlProbe>,
    args: &RecordArgs,
    signals: Option<nix::sys::signal::SigSet>,
    tx: &Sender<Line>,
    start: Instant,
) -> child::Outcome {
    let pid = child.id();
    let probe = probe.map(|p| Box::new(p) as Box<dyn GpuProbe>);
    let interval = Duration::from_millis(args.interval_ms);
    let mut sampler = Sampler::start(probe, pid, interval, start, tx.clone())
        .map_err(|e| eprint_escaped!("vramscope: warning: cannot start sampling: {e}"))
        .ok();
    let forwarder = signals.and_then(|set| {
        child::forward(pid, &set, tx.clone(), start)
            .map_err(|e| eprint_escaped!("vramscope: warning: signals will not be forwarded: {e}"))
            .ok()
    });
    let outcome = child::wait(child, forwarder).unwrap_or_else(|e| {
        eprint_escaped!("vramscope: warning: lost track of the program: {e}");
        child::Outcome {
            exit_code: None,
            signal: None,
        }
    });
    if let Some(s) = sampler.as_mut() {
        s.stop();
    }
    outcome
}

/// The program's exit code when nothing can be recorded.
fn unrecorded(spawned: io::Result<std::process::Child>) -> u8 {
    match spawned {
        Ok(mut child) => child
            .wait()
            .map_or(1, |s| child::Outcome::from_status(s).code()),
        Err(e) => {
            eprint_escaped!("vramscope: cannot run the program: {e}");
            child::spawn_failure_code(&e)
        }
    }
}

/// Send the end line (with vramscope's own CPU time so far).
fn end(tx: &Sender<Line>, start: Instant, exit_code: Option<i32>, signal: Option<i32>) {
    let _ = tx.send(Line::End {
        t_ns: i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX),
        end: EndInfo {
            exit_code,
            signal,
            vramscope_cpu_ns: child::own_cpu_ns(),
        },
    });
}

/// Remove the snapshots folder once everything in it is safely in the recording.
fn finish_torch(torch: Option<&TorchShim>, report: Option<&TorchReport>, finalised: bool) {
    let (Some(t), Some(r)) = (torch, report) else {
        return;
    };
    if finalised && r.failed.is_empty() {
        if let Err(e) = t.remove_snapshots() {
            eprint_escaped!(
                "vramscope: warning: cannot remove {}: {e}",
                t.out_dir().display()
            );
        }
    } else if r.embedded > 0 || !r.failed.is_empty() {
        eprint_escaped!(
            "vramscope: warning: allocator snapshots kept in {} (the recording could not hold them all)",
            t.out_dir().display()
        );
    }
}

fn header(
    args: &RecordArgs,
    start_unix_ns: i64,
    pid: Option<u32>,
    probe: Option<&NvmlProbe>,
    nvml_unavailable: Option<String>,
    torch_memory: Option<TorchMemoryHeader>,
) -> Header {
    Header {
        vramscope_recording: collector::parse::recording::VERSION,
        start_unix_ns,
        command: args
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty()),
        pid,
        interval_ms: Some(args.interval_ms),
        driver_version: probe.and_then(NvmlProbe::driver_version),
        nvml_version: probe.and_then(NvmlProbe::nvml_version),
        nvml_unavailable,
        devices: probe.map(|p| p.devices()).unwrap_or_default(),
        vramscope_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        torch_memory,
    }
}

fn unix_ns_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}
