//! `vramscope`: GPU memory profiler and trace visualizer — the command-line entry point.

mod cli;
#[cfg(feature = "gui")]
mod gui;
mod output;
mod palette;

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
    let colour = output::style::colour_for(args.color(), &stdout);
    output::style::set_stderr_colour(output::style::colour_for(args.color(), &io::stderr()));
    // Input data reaches the terminal: control characters in it are shown, not obeyed.
    let mut out = output::terminal::ControlEscaper::new(io::BufWriter::new(stdout.lock()))
        .with_colour(colour);
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
            // A command's own code (check: 2 for an unreadable input), else 2 for a
            // mistake in the command line and 1 for a problem with the input.
            let code = match e.downcast_ref::<cli::Failure>() {
                Some(f) => f.code,
                None if e.downcast_ref::<cli::UsageError>().is_some() => 2,
                None => 1,
            };
            ExitCode::from(code)
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
