//! The viewer's one unit policy, the CLI's (`vramscope --help`, `cli/help.rs`): sizes in
//! binary units with IEC names ("1.50 GiB") everywhere, except the per-op (key_averages)
//! tables, which keep torch's own labels ("1.50 GB", also 1024-based) so they read like
//! torch's table; times since the start of the recording in the unit the value (or the
//! view) reads best in; durations likewise. Every byte and time the viewer shows is
//! formatted here; a table column shows all its values in one unit, named in its header
//! ([`ColumnUnit`]).

use collector::units::{BYTE_UNITS, TORCH_BYTE_UNITS, bytes_iec, signed, torch_memory, unit_for};

/// Bytes: IEC with two decimals ("1.50 GiB", "512 B").
pub fn bytes(b: i64) -> String {
    bytes_iec(b)
}

/// A signed change in bytes: "+12.00 MiB", "-3.00 KiB", "0 B".
pub fn bytes_delta(b: i64) -> String {
    collector::units::bytes_delta(b)
}

/// Bytes in a per-op (key_averages) table: torch's format ("37.55 MB").
pub fn op_bytes(b: i64) -> String {
    torch_memory(b)
}

/// A signed change in a per-op table: "+37.55 MB", "-1.00 KB", "0 B".
pub fn op_bytes_delta(b: i64) -> String {
    collector::units::signed(b, torch_memory)
}

/// Which names a byte column uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// KiB, MiB, GiB (everywhere but the per-op tables).
    Iec,
    /// torch's KB, MB, GB (1024-based), in the per-op tables.
    Torch,
}

/// One unit for a whole column: the unit of its largest value, so the column's numbers
/// line up and compare at a glance ("MiB" in the header, "12.50" in the cells).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColumnUnit {
    /// Bytes per unit.
    pub divisor: f64,
    /// The unit's name.
    pub name: &'static str,
}

impl ColumnUnit {
    /// The unit for a column holding `values`.
    pub fn of(values: impl IntoIterator<Item = i64>, names: Names) -> ColumnUnit {
        let largest = values.into_iter().map(i64::unsigned_abs).max().unwrap_or(0);
        let units: &[(u64, &'static str)] = match names {
            Names::Iec => &BYTE_UNITS,
            Names::Torch => &TORCH_BYTE_UNITS,
        };
        let (divisor, name) = unit_for(largest, units);
        ColumnUnit {
            divisor: divisor as f64,
            name,
        }
    }

    /// `b` in this unit: two decimals, none for plain bytes. A value rounded away in this
    /// unit is "0.00", never "-0.00" (a small negative beside GB-sized ones).
    pub fn format(&self, b: i64) -> String {
        if self.divisor == 1.0 {
            return b.to_string();
        }
        let text = format!("{:.2}", b as f64 / self.divisor);
        match text.strip_prefix('-') {
            Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_owned(),
            _ => text,
        }
    }

    /// A signed change in this unit: "+12.50", "-0.25", "0".
    /// A change too small to show in this unit is "0", never "-0.00" or "+0.00".
    pub fn format_delta(&self, b: i64) -> String {
        let shown = self.format(b.checked_abs().unwrap_or(i64::MAX));
        if shown.chars().all(|c| c == '0' || c == '.') {
            return "0".to_owned();
        }
        signed(b, |v| self.format(v))
    }
}

/// A time unit: ns per unit and its name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeUnit {
    /// ns per unit.
    pub ns: f64,
    /// "s", "ms", "µs", "ns".
    pub name: &'static str,
}

/// The unit in which a span of `span_ns` reads best.
pub fn time_unit(span_ns: f64) -> TimeUnit {
    let span = span_ns.abs();
    let (ns, name) = if span >= 2e9 {
        (1e9, "s")
    } else if span >= 2e6 {
        (1e6, "ms")
    } else if span >= 2e3 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    };
    TimeUnit { ns, name }
}

/// A time since the start of the recording, e.g. "12.41 s", "3.2 ms", "870 µs".
pub fn format_time_ns(t_ns: f64) -> String {
    if t_ns.abs() < 0.5 {
        return "0 s".into();
    }
    format_in_unit(t_ns, time_unit(t_ns), 4)
}

/// A time in the unit that suits a view `span_ns` wide, so both ends of a range read alike.
pub fn format_time_in(t_ns: f64, span_ns: f64) -> String {
    let unit = time_unit(span_ns);
    let decimals = 3usize.saturating_sub(integer_digits(span_ns / unit.ns)) + 1;
    format!("{:.decimals$} {}", t_ns / unit.ns, unit.name)
}

/// A duration such as a selected range or a load: "4.70 s", "12.0 ms".
pub fn format_duration_ns(d_ns: f64) -> String {
    format_in_unit(d_ns, time_unit(d_ns), 3)
}

/// A wall-clock duration (a load, a write) as [`format_duration_ns`] writes it.
pub fn format_elapsed(d: std::time::Duration) -> String {
    format_duration_ns(d.as_secs_f64() * 1e9)
}

/// How a recording's times read: a clock, or positions in its event order (torch 2.0–2.1
/// snapshots: 1 ns apart by the collector's convention, [`collector::model::Meta::event_order`]),
/// which are labelled as events, never as ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Real times.
    Time,
    /// Event positions.
    Events,
}

impl Clock {
    /// The clock of a recording.
    pub fn of(meta: &collector::model::Meta) -> Clock {
        if meta.event_order {
            Clock::Events
        } else {
            Clock::Time
        }
    }

    /// An instant since the start: "12.41 s", or "event 482".
    pub fn at(self, t_ns: f64) -> String {
        match self {
            Clock::Time => format_time_ns(t_ns),
            Clock::Events => format!("event {}", events(t_ns)),
        }
    }

    /// An instant in the unit of a view `span_ns` wide ([`format_time_in`]), or "event 482".
    pub fn at_in(self, t_ns: f64, span_ns: f64) -> String {
        match self {
            Clock::Time => format_time_in(t_ns, span_ns),
            Clock::Events => format!("event {}", events(t_ns)),
        }
    }

    /// A length of time: "4.70 s", or "1,024 events".
    pub fn duration(self, d_ns: f64) -> String {
        match self {
            Clock::Time => format_duration_ns(d_ns),
            Clock::Events => {
                crate::output::text::plural(events(d_ns).unsigned_abs(), "event", "events")
            }
        }
    }
}

/// Event positions from ns (one an ns), rounded.
fn events(t_ns: f64) -> i64 {
    t_ns.round() as i64
}

/// A value in a unit with about `significant` significant digits.
fn format_in_unit(t_ns: f64, unit: TimeUnit, significant: usize) -> String {
    let v = t_ns / unit.ns;
    let digits = significant.saturating_sub(integer_digits(v)).min(6);
    format!("{v:.digits$} {}", unit.name)
}

fn integer_digits(v: f64) -> usize {
    let a = v.abs();
    if a < 1.0 {
        1
    } else {
        a.log10().floor() as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_pick_units() {
        assert_eq!(format_time_ns(12_410_000_000.0), "12.41 s");
        assert_eq!(format_time_ns(3_200_000.0), "3.200 ms");
        assert_eq!(format_time_ns(870_000.0), "870.0 µs");
        assert_eq!(format_duration_ns(4_700_000_000.0), "4.70 s");
        assert_eq!(
            format_elapsed(std::time::Duration::from_millis(420)),
            "420 ms"
        );
        assert_eq!(format_time_ns(0.0), "0 s");
        assert_eq!(format_time_in(0.0, 251.5e6), "0.0 ms");
        assert_eq!(format_time_in(251.5e6, 251.5e6), "251.5 ms");
        assert_eq!(bytes_delta(-3072), "-3.00 KiB");
        assert_eq!(bytes_delta(0), "0 B");
        assert_eq!(op_bytes(13_431_808), "12.81 MB");
    }

    #[test]
    fn a_column_takes_the_unit_of_its_largest_value() {
        // 1.5 GiB and 3 KiB in one column: both in GiB.
        let u = ColumnUnit::of([1536 << 20, 3 << 10, -(5 << 20)], Names::Torch);
        assert_eq!(u.name, "GB");
        assert_eq!(u.format(1536 << 20), "1.50");
        assert_eq!(u.format(3 << 10), "0.00");
        assert_eq!(u.format_delta(-(512 << 20)), "-0.50");
        // Rounded away in a GiB column: no signed zero.
        assert_eq!(u.format_delta(-3), "0");
        assert_eq!(u.format_delta(3 << 10), "0");
        assert_eq!(u.format_delta(0), "0");
        let small = ColumnUnit::of([1023, -20], Names::Iec);
        assert_eq!((small.name, small.format(1023)), ("B", "1023".to_owned()));
        assert_eq!(ColumnUnit::of([1024], Names::Iec).name, "KiB");
        assert_eq!(ColumnUnit::of([], Names::Iec).name, "B");
    }
}
