//! `vramscope completions SHELL`: a completion script for bash, zsh, fish, elvish or
//! PowerShell, made by clap_complete from the same definitions `--help` shows.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

use super::Cli;

/// Write `shell`'s completion script to `out`.
pub fn run(out: &mut impl Write, shell: Shell) -> Result<ExitCode> {
    clap_complete::generate(shell, &mut offered(), "vramscope", out);
    Ok(ExitCode::SUCCESS)
}

/// The command line without its hidden subcommands (`record`'s exec step), which
/// clap_complete would otherwise offer.
fn offered() -> clap::Command {
    let full = Cli::command();
    clap::Command::new("vramscope")
        .version(env!("CARGO_PKG_VERSION"))
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned())
}
