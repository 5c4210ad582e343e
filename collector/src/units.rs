//! Human-readable sizes and times, including torch's exact table formatting.

/// Format bytes exactly as torch's `_format_memory` does: binary units with decimal
/// names ("37.55 MB" is 37.55 MiB), two decimals, plain bytes below 1 KiB.
pub fn torch_memory(nbytes: i64) -> String {
    sized(nbytes, &TORCH_BYTE_UNITS)
}

/// The binary units every output names sizes in, smallest first: bytes per unit and the
/// IEC name. Text, reports, charts, axes and the viewer all pick from this one ladder.
pub const BYTE_UNITS: [(u64, &str); 7] = [
    (1, "B"),
    (1 << 10, "KiB"),
    (1 << 20, "MiB"),
    (1 << 30, "GiB"),
    (1 << 40, "TiB"),
    (1 << 50, "PiB"),
    (1 << 60, "EiB"),
];

/// torch's names for the same units in its key_averages table (1024-based; it stops at
/// GB): the per-op tables and charts keep them, so they read like torch's own.
pub const TORCH_BYTE_UNITS: [(u64, &str); 4] =
    [(1, "B"), (1 << 10, "KB"), (1 << 20, "MB"), (1 << 30, "GB")];

/// The unit of `units` a size of `bytes` reads best in: the largest not above it (the
/// smallest for 0).
pub fn unit_for(bytes: u64, units: &[(u64, &'static str)]) -> (u64, &'static str) {
    units
        .iter()
        .rev()
        .find(|(d, _)| bytes >= *d)
        .or(units.first())
        .copied()
        .unwrap_or((1, "B"))
}

/// `nbytes` in the unit of `units` it reads best in: "512 B", "1.50 GiB" (negative too).
fn sized(nbytes: i64, units: &[(u64, &'static str)]) -> String {
    let (divisor, name) = unit_for(nbytes.unsigned_abs(), units);
    if divisor == 1 {
        format!("{nbytes} {name}")
    } else {
        format!("{:.2} {name}", nbytes as f64 / divisor as f64)
    }
}

/// A change as every output writes one: "+x" above zero, "-x" below (`format` given the
/// magnitude), `format(0)` at zero. ASCII signs, so scripts and spreadsheets read them.
pub fn signed(v: i64, format: impl Fn(i64) -> String) -> String {
    match v.signum() {
        1 => format!("+{}", format(v)),
        -1 => format!("-{}", format(v.checked_neg().unwrap_or(i64::MAX))),
        _ => format(0),
    }
}

/// A change in bytes: "+1.50 GiB", "-3.00 KiB", "0 B".
pub fn bytes_delta(b: i64) -> String {
    signed(b, bytes_iec)
}

/// 1234567 → "1,234,567".
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Format bytes with IEC units for reports: "1.50 GiB", "512 B".
pub fn bytes_iec(nbytes: i64) -> String {
    sized(nbytes, &BYTE_UNITS)
}

/// A time as reports show it: µs after `origin_ns` (the trace's start, or a run's origin
/// in a diff), as torch's traces count. Analyses keep ns; this is for output only.
pub fn us_after(origin_ns: i64, time_ns: i64) -> f64 {
    (time_ns - origin_ns) as f64 / 1000.0
}

/// The time from `origin_ns` to `time_ns`, formatted as [`duration_us`] does.
pub fn duration_between(origin_ns: i64, time_ns: i64) -> String {
    duration_us(us_after(origin_ns, time_ns))
}

/// Format a duration given in µs: "12.345 s", "3.210 ms", "87.000 µs".
pub fn duration_us(us: f64) -> String {
    if us.abs() >= 1e6 {
        format!("{:.3} s", us / 1e6)
    } else if us.abs() >= 1e3 {
        format!("{:.3} ms", us / 1e3)
    } else {
        format!("{us:.3} µs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_memory_matches_python() {
        // Values and strings taken from torch's own table output (t2.table.txt).
        assert_eq!(torch_memory(13_431_808), "12.81 MB");
        assert_eq!(torch_memory(24_188), "23.62 KB");
        assert_eq!(torch_memory(64), "64 B");
        assert_eq!(torch_memory(0), "0 B");
        assert_eq!(torch_memory(32_768), "32.00 KB");
        assert_eq!(torch_memory(-10_321_952), "-9.84 MB");
        assert_eq!(torch_memory(-64), "-64 B");
        assert_eq!(torch_memory(3 << 30), "3.00 GB");
        // Python rounds half to even on the binary value: 1.125 KiB -> "1.12 KB".
        assert_eq!(torch_memory(1152), "1.12 KB");
        assert_eq!(torch_memory(1168), "1.14 KB");
    }

    #[test]
    fn iec_units() {
        assert_eq!(bytes_iec(512), "512 B");
        assert_eq!(bytes_iec(1536), "1.50 KiB");
        assert_eq!(bytes_iec(-(5 << 30)), "-5.00 GiB");
        assert_eq!(duration_us(1_500_000.0), "1.500 s");
        assert_eq!(duration_us(12.0), "12.000 µs");
        assert_eq!(bytes_iec(3 << 40), "3.00 TiB");
        assert_eq!(bytes_iec(i64::MIN), "-8.00 EiB");
    }

    #[test]
    fn one_ladder_and_one_sign() {
        assert_eq!(unit_for(0, &BYTE_UNITS), (1, "B"));
        assert_eq!(unit_for(1023, &BYTE_UNITS), (1, "B"));
        assert_eq!(unit_for(1 << 20, &BYTE_UNITS), (1 << 20, "MiB"));
        assert_eq!(unit_for(u64::MAX, &BYTE_UNITS), (1 << 60, "EiB"));
        // torch's names stop at GB.
        assert_eq!(unit_for(5 << 40, &TORCH_BYTE_UNITS), (1 << 30, "GB"));
        assert_eq!(bytes_delta(3 << 20), "+3.00 MiB");
        assert_eq!(bytes_delta(-3072), "-3.00 KiB");
        assert_eq!(bytes_delta(0), "0 B");
        assert_eq!(bytes_delta(i64::MIN), "-8.00 EiB");
        assert_eq!(signed(-5, |v| format!("{v} s")), "-5 s");
    }
}
