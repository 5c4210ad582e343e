//! `vramscope`: GPU memory profiler and trace visualizer — the command-line entry point.

mod cli;
mod gui;
mod output;
mod palette;
mod size;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let argv = cli::args_with_view_default(std::env::args_os().collect());
    let args = match cli::Cli::try_parse_from(argv) {
        Ok(args) => args,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let stdout = io::stdout();
    // Input data reaches the terminal: control characters in it are shown, not obeyed.
    let mut out = output::terminal::ControlEscaper::new(io::BufWriter::new(stdout.lock()));
    let result = cli::run(args, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let message = format!("{e:#}");
            eprintln!("vramscope: {}", output::terminal::escape_controls(&message));
            let usage = e.downcast_ref::<cli::UsageError>().is_some();
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// `vramscope table big.json | head` must end quietly, as ripgrep does.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
