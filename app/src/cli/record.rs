//! `vramscope record -- CMD`: run a program and record its GPU memory (NVML), its host
//! memory, and with `--torch-memory` PyTorch's allocator history, into one crash-safe file.
//!
//! The threads: the main thread starts the program and waits for it; a sampler polls NVML
//! and /proc every `--interval-ms`; a writer appends lines to the file (and redraws the live
//! status); a forwarder passes signals on. Samples flow sampler → bounded channel → writer.
//! vramscope's own trouble never hides the program's outcome: once the program runs, every
//! failure of vramscope is a warning, and the exit code is the program's (128 + N when
//! signal N ended it). Before the program starts, vramscope's own failures exit with 125
//! (as `timeout` and `env` do); a program that cannot be started gives 127 (not found) or
//! 126, as shells do.

#[cfg(target_os = "linux")]
mod child;
#[cfg(target_os = "linux")]
mod name;
#[cfg(target_os = "linux")]
mod report;
#[cfg(target_os = "linux")]
mod torch;
#[cfg(target_os = "linux")]
mod writer;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

/// Options of `vramscope record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The file to write; default `vramscope-<script>-<pid>.vsr` in the current directory
    /// (`vramscope-train-4242.vsr` for `python train.py`; `<pid>` is vramscope's). Any name
    /// works: recordings are recognised by their content.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
    /// Milliseconds between samples (at least 1).
    #[arg(long, value_name = "MS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub interval_ms: u64,
    /// The NVML library to load instead of the system's libnvidia-ml.so.1 (also
    /// VRAMSCOPE_NVML_LIB).
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
    /// Record PyTorch's CUDA allocator history in the program's Python processes, with no
    /// change to the script (torch 2.0 or newer), and keep it in the recording.
    #[arg(long)]
    pub torch_memory: bool,
    /// How many allocator events torch keeps (its ring buffer; with --torch-memory).
    #[arg(long, value_name = "N", default_value_t = 100_000, requires = "torch_memory",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub torch_max_entries: u64,
    /// The end-of-run report: text on stderr, or one JSON document on stdout, after all
    /// the program printed there.
    #[arg(long, value_enum, default_value = "text")]
    pub format: super::Format,
    /// The program to run and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Exit code for vramscope's own failures before the program started.
pub const OWN_FAILURE: u8 = 125;

/// The hidden subcommand the program is started through (see [`exec_step`]).
pub const EXEC_STEP: &str = "__record-exec";

/// Become the program: clear the signal mask inherited from vramscope (which blocks the
/// signals it reads from a signalfd; `Command` passes the mask on, and a program started
/// with SIGCHLD or SIGTERM blocked would never see its children end or its termination),
/// then `exec` it, keeping this pid. Returns only if `exec` failed.
#[cfg(target_os = "linux")]
pub fn exec_step(command: &[OsString]) -> ExitCode {
    ExitCode::from(child::exec_step(command))
}

/// `record` needs Linux.
#[cfg(not(target_os = "linux"))]
pub fn exec_step(_command: &[OsString]) -> ExitCode {
    ExitCode::from(OWN_FAILURE)
}

/// Run `vramscope record`.
#[cfg(target_os = "linux")]
pub fn run(args: RecordArgs) -> Result<ExitCode> {
    session::run(args)
}

/// `record` needs Linux (signalfd, /proc, NVML's Linux library).
#[cfg(not(target_os = "linux"))]
pub fn run(_args: RecordArgs) -> Result<ExitCode> {
    eprintln!("vramscope: record is supported on Linux only");
    Ok(ExitCode::from(OWN_FAILURE))
}

#[cfg(target_os = "linux")]
mod session;
