//! Values on the command line, one parser per kind, used by every option that takes one
//! (clap value parsers, so a bad value is a usage error, exit 2):
//!
//! - sizes (`--max-peak`): `10G`, `10GiB`, `512MB`, `1.5e9`, `1048576`. `K`/`M`/`G`/`T`
//!   and `KiB`…`TiB` are binary (2^10…2^40), `KB`…`TB` decimal (10^3…10^12), as vramscope's
//!   output is binary throughout;
//! - devices (`--device`): an ordinal (`0`, `-1` for the host) or a device as vramscope
//!   names it (`cuda:0`, `cpu`, `xpu:1`; [`DeviceId`]'s own spelling);
//! - times (`--at`, `--from-us`, `--to-us`): `1.5ms`, `250us`/`250µs`, `2s`, `100ns`, or a
//!   plain number of µs (what these options always took), after the recording's start.

use collector::model::DeviceId;

/// Size units (lower case) and their multipliers in bytes.
const SIZE_UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("k", 1 << 10),
    ("ki", 1 << 10),
    ("kib", 1 << 10),
    ("m", 1 << 20),
    ("mi", 1 << 20),
    ("mib", 1 << 20),
    ("g", 1 << 30),
    ("gi", 1 << 30),
    ("gib", 1 << 30),
    ("t", 1 << 40),
    ("ti", 1 << 40),
    ("tib", 1 << 40),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
];

/// Time units and their length in ns.
const TIME_UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("μs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
];

/// Split `text` into a decimal number (digits, a fraction, an exponent; a leading `-` only
/// when `signed`) and what follows it, trimmed; `None` when it does not start with one.
fn split_number(text: &str, signed: bool) -> Option<(&str, &str)> {
    let b = text.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = usize::from(signed && b.first() == Some(&b'-'));
    let whole = digits(i);
    i += whole;
    let mut fraction = 0;
    if b.get(i) == Some(&b'.') {
        fraction = digits(i + 1);
        i += 1 + fraction;
    }
    // "1." and ".5" are not sizes anyone means; "1.5e9" is.
    if whole == 0 || (b.get(i - 1) == Some(&b'.') && fraction == 0) {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        let exponent = digits(i + 1 + sign);
        if exponent > 0 {
            i += 1 + sign + exponent;
        }
    }
    Some((&text[..i], text[i..].trim()))
}

/// Parse a size into bytes (see the module docs); a fraction is rounded to the nearest byte.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "invalid size '{text}': expected e.g. 10GiB, 512MB, 1.5e9 (G and GiB are 2^30 bytes, GB 10^9)"
        )
    };
    let (number, unit) = split_number(text.trim(), false).ok_or_else(bad)?;
    let unit = unit.to_ascii_lowercase();
    let multiplier = match unit.as_str() {
        "" => 1,
        u => {
            SIZE_UNITS
                .iter()
                .find(|(name, _)| *name == u)
                .ok_or_else(bad)?
                .1
        }
    };
    // Integers are exact; only fractions and exponents go through floating point.
    if let Ok(whole) = number.parse::<u64>() {
        return whole.checked_mul(multiplier).ok_or_else(bad);
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let bytes = (value * multiplier as f64).round();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// A time after the recording's start, in ns (negative: before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeOffset {
    /// ns after the start.
    pub ns: i64,
}

/// Parse a time after the start (see the module docs); a plain number is µs.
pub fn parse_time_offset(text: &str) -> Result<TimeOffset, String> {
    let bad = || {
        format!("invalid time '{text}': expected e.g. 1.5ms, 250us, 2s, or a plain number of µs")
    };
    let (number, unit) = split_number(text.trim(), true).ok_or_else(bad)?;
    let ns_per_unit = match unit {
        "" => 1e3,
        u => {
            TIME_UNITS
                .iter()
                .find(|(name, _)| *name == u)
                .ok_or_else(bad)?
                .1
        }
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let ns = (value * ns_per_unit).round();
    if !ns.is_finite() {
        return Err(bad());
    }
    // `as` saturates: a time past i64's ±292 years is the start or end of everything.
    Ok(TimeOffset { ns: ns as i64 })
}

/// The instant `live --at` asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstantArg {
    /// The device's allocated peak.
    Peak,
    /// The device's last memory event.
    End,
    /// The first out-of-memory event.
    Oom,
    /// A time after the start.
    At(TimeOffset),
}

/// Parse `--at`: `peak`, `end`, `oom`, or a time ([`parse_time_offset`]).
pub fn parse_instant(text: &str) -> Result<InstantArg, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "peak" => Ok(InstantArg::Peak),
        "end" => Ok(InstantArg::End),
        "oom" => Ok(InstantArg::Oom),
        _ => parse_time_offset(text)
            .map(InstantArg::At)
            .map_err(|_| format!("invalid instant '{text}': expected peak, oom, end, or a time such as 1.5ms, 250us, 2s (a plain number is µs)")),
    }
}

/// Which device an option means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceArg {
    /// Every device with this ordinal (`-1`: the host).
    Ordinal(i32),
    /// The device vramscope names so.
    Id(DeviceId),
}

impl DeviceArg {
    /// Whether `device` is the one meant. Names compare as vramscope spells them, so
    /// `cuda:0` is also a ROCm GPU, which torch calls `cuda:0` too.
    pub fn matches(self, device: DeviceId) -> bool {
        match self {
            DeviceArg::Ordinal(n) => device.index == n,
            DeviceArg::Id(id) => id == device || id.to_string() == device.to_string(),
        }
    }
}

impl std::fmt::Display for DeviceArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceArg::Ordinal(n) => write!(f, "{n}"),
            DeviceArg::Id(id) => write!(f, "{id}"),
        }
    }
}

/// Parse `--device`: an ordinal or a device name ([`DeviceId`]'s `FromStr`).
pub fn parse_device(text: &str) -> Result<DeviceArg, String> {
    let trimmed = text.trim();
    if let Ok(n) = trimmed.parse::<i32>() {
        return Ok(DeviceArg::Ordinal(n));
    }
    trimmed
        .to_ascii_lowercase()
        .parse::<DeviceId>()
        .map(DeviceArg::Id)
        .map_err(|_| format!("invalid device '{text}': expected e.g. 0, cuda:0, cpu"))
}

#[cfg(test)]
mod tests;
