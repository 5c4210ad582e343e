//! Human-readable sizes and times, including torch's exact table formatting.

/// Format bytes exactly as torch's `_format_memory` does: binary units with decimal
/// names ("37.55 MB" is 37.55 MiB), two decimals, plain bytes below 1 KiB.
pub fn torch_memory(nbytes: i64) -> String {
    const KB: f64 = 1024.0;
    const MB: f64 = 1024.0 * KB;
    const GB: f64 = 1024.0 * MB;
    let abs = (nbytes as f64).abs();
    let v = nbytes as f64;
    if abs >= GB {
        format!("{:.2} GB", v / GB)
    } else if abs >= MB {
        format!("{:.2} MB", v / MB)
    } else if abs >= KB {
        format!("{:.2} KB", v / KB)
    } else {
        format!("{nbytes} B")
    }
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
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let abs = nbytes.unsigned_abs();
    if abs < 1024 {
        return format!("{nbytes} B");
    }
    let mut value = nbytes as f64 / 1024.0;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
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
    }
}
