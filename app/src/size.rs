//! Sizes on the command line: `40GiB`, `512MiB`, `1.5GB` (decimal), `1048576` (bytes).

/// Units and their multipliers: IEC binary units, SI decimal units, and bytes.
const UNITS: &[(&str, f64)] = &[
    ("b", 1.0),
    ("kib", 1024.0),
    ("mib", 1024.0 * 1024.0),
    ("gib", 1024.0 * 1024.0 * 1024.0),
    ("tib", 1024.0 * 1024.0 * 1024.0 * 1024.0),
    ("kb", 1e3),
    ("mb", 1e6),
    ("gb", 1e9),
    ("tb", 1e12),
];

/// Parse a size into bytes. Units are case-insensitive and may follow a space; a fraction
/// is rounded to the nearest byte. Used as a clap value parser, so a bad size is a usage
/// error (exit 2).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let bad = || format!("'{text}' is not a size (examples: 40GiB, 512MiB, 1.5GB, 1048576)");
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let multiplier = if unit.is_empty() {
        1.0
    } else {
        UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, m)| *m)
            .ok_or_else(bad)?
    };
    // Integers are exact; only fractional sizes go through floating point.
    if let Ok(whole) = number.parse::<u64>() {
        return whole.checked_mul(multiplier as u64).ok_or_else(bad);
    }
    let bytes = (value * multiplier).round();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let cases: &[(&str, u64)] = &[
            ("40GiB", 40 << 30),
            ("512MiB", 512 << 20),
            ("1.5GB", 1_500_000_000),
            ("1.5GiB", 3 << 29),
            ("1048576", 1_048_576),
            ("0", 0),
            ("7 kib", 7168),
            ("12B", 12),
            ("2TB", 2_000_000_000_000),
        ];
        for (text, bytes) in cases {
            assert_eq!(parse_size(text), Ok(*bytes), "{text}");
        }
    }

    #[test]
    fn bad_sizes() {
        for text in [
            "",
            "GiB",
            "-1GiB",
            "1.2.3GB",
            "40 gigs",
            "1.",
            ".5GB",
            "1e3",
            "99999999999TiB",
        ] {
            assert!(parse_size(text).is_err(), "{text}");
        }
    }
}
