//! What the commands share about their input: opening a file (with a warning when it ends
//! early), and resolving `--device` and `--from-us`/`--to-us` against the recording.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Result;
use collector::analysis::TimeWindow;
use collector::analysis::ranks::{self, RankInput};
use collector::analysis::summary::{FileSummary, summarize_file};
use collector::parse::discover::{Discovered, discover};
use collector::parse::input::DecompressedLimit;
use collector::parse::memory_timeline::{Beside, is_memory_timeline};
use collector::parse::{LoadProgress, SpanFilter};
use collector::{LoadOptions, Recording};

use super::values::{DeviceArg, TimeOffset};
use super::{LoadArgs, UsageError};
use crate::output::style::stderr_warning;
use crate::output::terminal::eprint_escaped;

/// Read `path` as `--salvage` says; warn on stderr when the file ends early.
pub fn open(path: &Path, load: LoadArgs) -> Result<Recording> {
    open_spans(path, load, SpanFilter::All)
}

/// [`open`], keeping only the op spans `spans` says.
pub fn open_spans(path: &Path, load: LoadArgs, spans: SpanFilter) -> Result<Recording> {
    let options = LoadOptions {
        spans,
        ..load_options(load)
    };
    let rec = collector::load(path, options)?;
    warn_if_cut(path, rec.diagnostics.truncated_at);
    Ok(rec)
}

/// [`open`], keeping a snapshot's allocator history as recorded (what the allocator
/// simulation replays).
pub fn open_with_history(path: &Path, load: LoadArgs) -> Result<Recording> {
    let options = LoadOptions {
        allocator_history: true,
        ..load_options(load)
    };
    let rec = collector::load(path, options)?;
    warn_if_cut(path, rec.diagnostics.truncated_at);
    Ok(rec)
}

/// What the paths of a command that takes many inputs mean.
pub enum Inputs {
    /// One file: the command's single-input output.
    One(PathBuf),
    /// Several files, or directories (a directory holding one input is still ranks, so
    /// scripts over directories always get the same shape).
    Ranks(Discovered),
}

/// One file, or the inputs `paths` name and hold ([`discover`]).
pub fn inputs(paths: &[PathBuf]) -> Result<Inputs> {
    if let [path] = paths
        && !path.is_dir()
    {
        return Ok(Inputs::One(path.clone()));
    }
    let found = discover(paths)?;
    if let Some(warning) = found.too_deep_warning() {
        eprint_escaped!("vramscope: {} {warning}", stderr_warning());
    }
    Ok(Inputs::Ranks(found))
}

/// Read and summarise the inputs found on all cores, in rank order
/// ([`ranks::sort_inputs`]); warn on stderr for each that ends early. torch's memory
/// timeline exports among them are put onto the traces they came from ([`Beside`]); those
/// no trace came from are inputs of their own.
pub fn summarize_ranks(found: &Discovered, load: LoadArgs) -> Result<Vec<RankInput>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Found in directories, they were told apart when found; a file named is looked at.
    let timelines_found: HashSet<&PathBuf> = found.memory_timelines.iter().collect();
    let named: HashSet<&PathBuf> = found.named.iter().collect();
    let is_timeline =
        |p: &PathBuf| timelines_found.contains(p) || (named.contains(p) && is_memory_timeline(p));
    let (timelines, others): (Vec<PathBuf>, Vec<PathBuf>) =
        found.files.iter().cloned().partition(is_timeline);
    let (beside, files) = match others.is_empty() {
        true => (Beside::default(), &found.files[..]),
        false => (Beside::read(&timelines, load_options(load))?, &others[..]),
    };
    let mut inputs = ranks::summarize_files_beside(files, &beside, load_options(load), cores)?;
    let unused: Vec<PathBuf> = beside.unused().into_iter().map(Path::to_path_buf).collect();
    if !unused.is_empty() {
        inputs.extend(ranks::summarize_files(&unused, load_options(load), cores)?);
    }
    for input in &inputs {
        warn_if_cut(&input.path, input.summary.truncated_at_byte);
    }
    ranks::sort_inputs(&mut inputs);
    Ok(inputs)
}

/// The summary of one file, as every command summarises one ([`summarize_file`]); warn
/// on stderr when it ends early.
pub fn summarize_one(path: &Path, load: LoadArgs) -> Result<FileSummary> {
    let watch = LoadProgress::default();
    let file = summarize_file(path, load_options(load), &Beside::default(), &watch)?;
    warn_if_cut(path, file.summary.truncated_at_byte);
    Ok(file)
}

/// "… ends early; read the complete events before byte N", for a file read with
/// `--salvage` that was cut short.
fn warn_if_cut(path: &Path, truncated_at: Option<u64>) {
    if let Some(at) = truncated_at {
        eprint_escaped!(
            "vramscope: {} {} ends early; read the complete events before byte {at}",
            stderr_warning(),
            path.display()
        );
    }
}

/// The loader's options for `--salvage` and `--max-decompressed-size`.
pub fn load_options(load: LoadArgs) -> LoadOptions {
    LoadOptions {
        salvage_truncated: load.salvage,
        max_decompressed: load.max_decompressed_size.unwrap_or_default(),
        spans: SpanFilter::All,
        allocator_history: false,
    }
}

/// `--max-decompressed-size`: a size, or `unlimited`.
pub fn parse_decompressed_limit(text: &str) -> Result<DecompressedLimit, String> {
    if text.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(DecompressedLimit::Unlimited);
    }
    super::values::parse_size(text)
        .map(DecompressedLimit::Bytes)
        .map_err(|e| format!("{e}, or unlimited"))
}

/// "no device cuda:3 in … (it has cpu, cuda:0)", a usage error.
pub fn no_device(rec: &Recording, device: DeviceArg) -> anyhow::Error {
    let there: Vec<String> = rec.devices.iter().map(|d| d.key.to_string()).collect();
    let there = if there.is_empty() {
        "it has no devices".to_owned()
    } else {
        format!("it has {}", there.join(", "))
    };
    UsageError(format!(
        "no device {device} in {} ({there})",
        rec.meta.format.describe()
    ))
    .into()
}

/// The absolute time (ns on the recording's clock) of a time after its start.
pub fn at_ns(rec: &Recording, offset: TimeOffset) -> i64 {
    rec.meta.start_ns.saturating_add(offset.ns)
}

/// The time window of `--from-us`/`--to-us` (times after the start), or none when neither
/// is given; a usage error when they are out of order.
pub fn window(
    rec: &Recording,
    from: Option<TimeOffset>,
    to: Option<TimeOffset>,
) -> Result<Option<TimeWindow>> {
    if from.is_none() && to.is_none() {
        return Ok(None);
    }
    let start_ns = from.map_or(i64::MIN, |t| at_ns(rec, t));
    let end_ns = to.map_or(i64::MAX, |t| at_ns(rec, t));
    if start_ns > end_ns {
        return Err(UsageError("--from-us must not be after --to-us".into()).into());
    }
    Ok(Some(TimeWindow { start_ns, end_ns }))
}

/// Why a command that reads allocations has nothing to read in `rec` ([`no_memory_words`]).
pub fn no_allocations_words(rec: &Recording) -> String {
    let has_reserved = rec.mem_events.iter().any(|e| e.kind.is_segment());
    if has_reserved {
        // Nsight sees cudaMalloc, not the caching allocator's blocks: no capture option of
        // its gives allocations.
        return "no allocations recorded: it has reserved memory (the allocator's segments) \
                only; allocations need a PyTorch profiler trace (profile_memory=True), an \
                allocator snapshot or a vramscope record --torch-memory recording"
            .to_owned();
    }
    let has_nvml = !rec.gpu_samples.is_empty();
    let has_host = !rec.host_samples.is_empty();
    no_memory_words("allocations", has_nvml, has_host, rec.meta.format)
}

/// Why a command has no `what` to read, in one rule for every command: what memory the
/// input does have (NVML readings, host RSS: `summary` shows them), and how its format
/// records `what` next time.
pub fn no_memory_words(
    what: &str,
    has_nvml: bool,
    has_host: bool,
    format: collector::model::SourceFormat,
) -> String {
    let has: Vec<&str> = [
        (has_nvml, "NVML readings of its GPUs"),
        (has_host, "host RSS readings"),
    ]
    .into_iter()
    .filter_map(|(has, words)| has.then_some(words))
    .collect();
    let has = match has.is_empty() {
        true => String::new(),
        false => format!(
            "; it has {} (`vramscope summary` shows them)",
            has.join(" and ")
        ),
    };
    format!(
        "no {what} recorded{has}; next time, {}",
        format.importer().memory_hint()
    )
}
