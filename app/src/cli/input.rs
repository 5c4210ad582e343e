//! What the commands share about their input: opening a file (with a warning when it ends
//! early), and resolving `--device` and `--from-us`/`--to-us` against the recording.

use std::path::Path;

use anyhow::Result;
use collector::analysis::TimeWindow;
use collector::model::DeviceId;
use collector::parse::input::DecompressedLimit;
use collector::{LoadOptions, Recording};

use super::{LoadArgs, UsageError};

/// Read `path` as `--salvage` says; warn on stderr when the file ends early.
pub fn open(path: &Path, load: LoadArgs) -> Result<Recording> {
    let rec = collector::load(path, load_options(load))?;
    if let Some(at) = rec.diagnostics.truncated_at {
        eprintln!(
            "vramscope: warning: {} ends early; read the complete events before byte {at}",
            path.display()
        );
    }
    Ok(rec)
}

/// The loader's options for `--salvage` and `--max-decompressed-size`.
pub fn load_options(load: LoadArgs) -> LoadOptions {
    LoadOptions {
        salvage_truncated: load.salvage,
        max_decompressed: load.max_decompressed_size.unwrap_or_default(),
    }
}

/// `--max-decompressed-size`: a size, or `unlimited`.
pub fn parse_decompressed_limit(text: &str) -> Result<DecompressedLimit, String> {
    if text.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(DecompressedLimit::Unlimited);
    }
    crate::size::parse_size(text)
        .map(DecompressedLimit::Bytes)
        .map_err(|e| format!("{e}, or unlimited"))
}

/// The devices with ordinal `n` (`cuda:N`, or the host for -1); a usage error when none.
pub fn device_keys(rec: &Recording, n: i32) -> Result<Vec<DeviceId>> {
    let keys: Vec<DeviceId> = rec
        .devices
        .iter()
        .filter(|d| d.key.index == n)
        .map(|d| d.key)
        .collect();
    if keys.is_empty() {
        return Err(UsageError(format!("no device {n} in {}", rec.meta.format.describe())).into());
    }
    Ok(keys)
}

/// The time window of `--from-us`/`--to-us` (µs since the start), or none when neither
/// is given; a usage error when they are not finite or out of order.
pub fn window(
    rec: &Recording,
    from_us: Option<f64>,
    to_us: Option<f64>,
) -> Result<Option<TimeWindow>> {
    if from_us.is_none() && to_us.is_none() {
        return Ok(None);
    }
    for v in [from_us, to_us].into_iter().flatten() {
        if !v.is_finite() {
            return Err(
                UsageError("--from-us and --to-us must be finite numbers of µs".into()).into(),
            );
        }
    }
    let start_ns = from_us.map_or(i64::MIN, |us| rec.ns_from_us_since_start(us));
    let end_ns = to_us.map_or(i64::MAX, |us| rec.ns_from_us_since_start(us));
    if start_ns > end_ns {
        return Err(UsageError("--from-us must not be after --to-us".into()).into());
    }
    Ok(Some(TimeWindow { start_ns, end_ns }))
}
