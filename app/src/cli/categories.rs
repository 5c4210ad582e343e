//! `vramscope categories`: what each category of memory (parameter, gradient, optimizer
//! state, activation, …) held over the whole run, per device, as CSV or JSON — on stdout
//! or, with `-o FILE`, in a file.

use crate::output::text::device_label;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use collector::Timeline;
use collector::analysis::categories::categories_over_time;

use super::LoadArgs;
use super::input::{no_allocations_words, open};
use crate::output::categories::{NamedSeries, categories_csv, categories_json};
use crate::output::file::{self, Overwrite, Policy};
use crate::output::terminal::eprint_escaped;

/// The arguments of `categories`.
#[derive(clap::Args, Debug)]
pub struct CategoriesArgs {
    /// The trace, snapshot or recording.
    path: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SeriesFormat::Csv)]
    format: SeriesFormat,
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace FILE if it exists. Never the input, even with --force.
    #[arg(long, requires = "output")]
    force: bool,
    #[command(flatten)]
    load: LoadArgs,
}

/// How the series is written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SeriesFormat {
    /// `device,time_us,parameter,…,before_trace` rows.
    Csv,
    /// torch's `export_memory_timeline` shape per device.
    Json,
}

/// Write the categories over time of `args.path`.
pub fn run(out: &mut impl Write, args: &CategoriesArgs) -> Result<ExitCode> {
    let inputs = [args.path.as_path()];
    let policy = Policy::new(Overwrite::from_force(args.force), &inputs);
    if let Some(dest) = &args.output {
        file::guard_signals();
        // Refused before the input is read, not after.
        file::check(dest, &policy)?;
    }
    let rec = open(&args.path, args.load)?;
    let timeline = Timeline::build(&rec);
    let series: Vec<_> = timeline
        .devices
        .iter()
        .filter(|d| d.allocated_known)
        .map(|d| (d, categories_over_time(&rec, &timeline, d)))
        .collect();
    let named: Vec<NamedSeries<'_>> = series
        .iter()
        .map(|(d, s)| NamedSeries {
            device: device_label(&rec, d.device),
            series: s,
        })
        .collect();
    let start_ns = rec.meta.start_ns;
    let write = |w: &mut dyn Write| match args.format {
        SeriesFormat::Csv => categories_csv(&mut &mut *w, start_ns, &named),
        SeriesFormat::Json => categories_json(&mut &mut *w, start_ns, &named),
    };
    match &args.output {
        None => write(out)?,
        Some(dest) => {
            file::write(dest, &policy, "categories", |w| Ok(write(w)?))?;
            eprint_escaped!("wrote {}", dest.display());
        }
    }
    if named.is_empty() {
        eprint_escaped!(
            "vramscope: {}: no categories to show: {}",
            Path::new(&args.path).display(),
            no_allocations_words(&rec)
        );
    }
    Ok(ExitCode::SUCCESS)
}
