//! The caching allocator's settings the simulation models: read from a snapshot's
//! `allocator_settings` or from a `PYTORCH_CUDA_ALLOC_CONF` text, and written back as one.

use std::collections::BTreeMap;
use std::fmt;

/// Power-of-two intervals `roundup_power2_divisions` sets a value for: 1 MiB, 2 MiB, …,
/// 32 GiB and above (c10's `kRoundUpPowerOfTwoIntervals`).
pub const ROUNDUP_INTERVALS: usize = 16;
/// `max_split_size_mb` below this is raised to it (c10 keeps it above `kLargeBuffer`).
const MIN_MAX_SPLIT_MB: u64 = 20;
const MIB: u64 = 1 << 20;

/// The settings of PyTorch's CUDA caching allocator that change where blocks go.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocatorConfig {
    /// `expandable_segments:True`: one growable segment per stream and pool.
    pub expandable_segments: bool,
    /// `max_split_size_mb`: blocks this large or larger are never split (`None`: no limit).
    pub max_split_size_bytes: Option<u64>,
    /// `roundup_power2_divisions`, per power-of-two interval from 1 MiB (0: none).
    pub roundup_power2_divisions: [u64; ROUNDUP_INTERVALS],
    /// `garbage_collection_threshold`: the share of the allowed memory above which cached
    /// blocks are freed oldest first (`None`: off). torch acts on it only where a memory
    /// fraction is set; the simulation takes its capacity as the allowed memory.
    pub garbage_collection_threshold: Option<f64>,
}

impl Default for AllocatorConfig {
    fn default() -> Self {
        AllocatorConfig {
            expandable_segments: false,
            max_split_size_bytes: None,
            roundup_power2_divisions: [0; ROUNDUP_INTERVALS],
            garbage_collection_threshold: None,
        }
    }
}

/// A `PYTORCH_CUDA_ALLOC_CONF` text that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AllocatorConfig {
    /// The settings a snapshot recorded (`allocator_settings`, torch ≥ 2.2), or `None`
    /// where it recorded none.
    pub fn from_snapshot(settings: &BTreeMap<String, String>) -> Option<AllocatorConfig> {
        if settings.is_empty() {
            return None;
        }
        let mut c = AllocatorConfig {
            expandable_segments: settings
                .get("expandable_segments")
                .is_some_and(|v| v == "True"),
            ..AllocatorConfig::default()
        };
        if let Some(bytes) = settings
            .get("max_split_size")
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|&b| b > 0)
        {
            c.max_split_size_bytes = Some(bytes as u64);
        }
        c.garbage_collection_threshold = settings
            .get("garbage_collection_threshold")
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|&t| t > 0.0 && t < 1.0);
        // Printed as a dict of interval (MiB) to divisions: `{1: 0, 2: 0, …}`.
        if let Some(table) = settings.get("roundup_power2_divisions") {
            let pairs = table.trim_matches(|c| c == '{' || c == '}').split(',');
            for pair in pairs {
                let Some((k, v)) = pair.split_once(':') else {
                    continue;
                };
                let key = k.trim().trim_matches(|c| c == '\'' || c == '"');
                if let (Ok(mib), Ok(divisions)) = (key.parse::<u64>(), v.trim().parse::<u64>())
                    && let Some(slot) = interval_of_mib(mib)
                {
                    c.roundup_power2_divisions[slot] = divisions;
                }
            }
        }
        // Older snapshots name only the environment variable.
        if let Some(conf) = settings.get("PYTORCH_CUDA_ALLOC_CONF")
            && !conf.is_empty()
            && !settings.contains_key("expandable_segments")
            && let Ok(parsed) = AllocatorConfig::parse(conf)
        {
            return Some(parsed);
        }
        Some(c)
    }

    /// Read a `PYTORCH_CUDA_ALLOC_CONF` text, e.g.
    /// `expandable_segments:True,max_split_size_mb:128`. Settings that do not change
    /// where blocks go (`backend`, `release_lock_on_cudamalloc`, `pinned_*`) are accepted
    /// and ignored.
    pub fn parse(text: &str) -> Result<AllocatorConfig, ConfigError> {
        let mut c = AllocatorConfig::default();
        for item in split_top_level(text) {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let Some((key, value)) = item.split_once(':') else {
                return Err(ConfigError(format!(
                    "'{item}' is not key:value (e.g. expandable_segments:True)"
                )));
            };
            let (key, value) = (key.trim(), value.trim());
            match key {
                "expandable_segments" => c.expandable_segments = parse_bool(key, value)?,
                "max_split_size_mb" => {
                    let mb = parse_u64(key, value)?;
                    c.max_split_size_bytes = Some(mb.max(MIN_MAX_SPLIT_MB) * MIB);
                }
                "garbage_collection_threshold" => {
                    let t: f64 = value.parse().map_err(|_| number(key, value))?;
                    if !(t > 0.0 && t < 1.0) {
                        return Err(ConfigError(format!(
                            "garbage_collection_threshold must lie between 0 and 1, not {value}"
                        )));
                    }
                    c.garbage_collection_threshold = Some(t);
                }
                "roundup_power2_divisions" => c.roundup_power2_divisions = parse_roundup(value)?,
                "backend"
                | "release_lock_on_cudamalloc"
                | "pinned_use_cuda_host_register"
                | "pinned_num_register_threads"
                | "pinned_use_background_threads"
                | "graph_capture_record_stream_reuse" => {}
                _ => {
                    return Err(ConfigError(format!(
                        "unknown setting '{key}': the simulation models expandable_segments, max_split_size_mb, roundup_power2_divisions and garbage_collection_threshold"
                    )));
                }
            }
        }
        Ok(c)
    }

    /// The divisions `roundup_power2_divisions` sets for a request of `bytes`.
    pub fn divisions_for(&self, bytes: u64) -> u64 {
        let log2 = 63 - u64::from(bytes.max(1).leading_zeros());
        let index = log2.saturating_sub(20).min(ROUNDUP_INTERVALS as u64 - 1);
        self.roundup_power2_divisions[index as usize]
    }
}

/// As `PYTORCH_CUDA_ALLOC_CONF` would say it (empty for the defaults).
impl fmt::Display for AllocatorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.expandable_segments {
            parts.push("expandable_segments:True".to_owned());
        }
        if let Some(bytes) = self.max_split_size_bytes {
            parts.push(format!("max_split_size_mb:{}", bytes / MIB));
        }
        let d = &self.roundup_power2_divisions;
        if d.iter().all(|&v| v == d[0]) {
            if d[0] > 0 {
                parts.push(format!("roundup_power2_divisions:{}", d[0]));
            }
        } else {
            let table: Vec<String> = (d.iter().enumerate())
                .map(|(i, v)| format!("{}:{v}", 1u64 << i))
                .collect();
            parts.push(format!("roundup_power2_divisions:[{}]", table.join(",")));
        }
        if let Some(t) = self.garbage_collection_threshold {
            parts.push(format!("garbage_collection_threshold:{t}"));
        }
        f.write_str(&parts.join(","))
    }
}

/// The interval slot of a power-of-two size in MiB (1 → 0, 2 → 1, …).
fn interval_of_mib(mib: u64) -> Option<usize> {
    (mib.is_power_of_two()).then(|| (mib.trailing_zeros() as usize).min(ROUNDUP_INTERVALS - 1))
}

/// Items at commas outside brackets (`roundup_power2_divisions:[256:1,>:8]` is one).
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut from) = (Vec::new(), 0i32, 0);
    for (i, ch) in text.char_indices() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[from..]);
    out
}

/// `4` (every interval), or `[256:1,512:2,>:8]`: an interval's value holds up to the
/// next one named; intervals below the first named take its value; `>` names all above.
fn parse_roundup(value: &str) -> Result<[u64; ROUNDUP_INTERVALS], ConfigError> {
    let key = "roundup_power2_divisions";
    let Some(list) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
        return Ok([parse_divisions(value)?; ROUNDUP_INTERVALS]);
    };
    let mut table = [0; ROUNDUP_INTERVALS];
    let mut named: Vec<(usize, u64)> = Vec::new();
    for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((size, divisions)) = pair.split_once(':') else {
            return Err(ConfigError(format!(
                "{key}: '{pair}' is not SIZE_MB:DIVISIONS"
            )));
        };
        let divisions = parse_divisions(divisions.trim())?;
        if size.trim() == ">" {
            let from = named.last().map_or(0, |&(slot, _)| slot + 1);
            named.push((from.min(ROUNDUP_INTERVALS - 1), divisions));
            continue;
        }
        let mib = parse_u64(key, size.trim())?;
        let slot = interval_of_mib(mib)
            .ok_or_else(|| ConfigError(format!("{key}: {mib} is not a power of two (MiB)")))?;
        named.push((slot, divisions));
    }
    named.sort_by_key(|&(slot, _)| slot);
    for (i, slot) in table.iter_mut().enumerate() {
        let at_or_below = named.iter().rev().find(|&&(s, _)| s <= i);
        *slot = at_or_below.or(named.first()).map_or(0, |&(_, v)| v);
    }
    Ok(table)
}

fn parse_divisions(value: &str) -> Result<u64, ConfigError> {
    let v = parse_u64("roundup_power2_divisions", value)?;
    if v > 1 && !v.is_power_of_two() {
        return Err(ConfigError(format!(
            "roundup_power2_divisions: {v} is not a power of two"
        )));
    }
    Ok(v)
}

fn parse_bool(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value {
        "True" | "true" | "1" => Ok(true),
        "False" | "false" | "0" => Ok(false),
        _ => Err(ConfigError(format!(
            "{key} is True or False, not '{value}'"
        ))),
    }
}

fn parse_u64(key: &str, value: &str) -> Result<u64, ConfigError> {
    value.parse().map_err(|_| number(key, value))
}

fn number(key: &str, value: &str) -> ConfigError {
    ConfigError(format!("{key}: '{value}' is not a number"))
}
