//! Axis ticks: "nice" 1–2–5 steps for time (ns to s) and for bytes (in the IEC unit of
//! the axis), labelled in the units of [`super::units`]; and ellipsized labels.

use collector::units::BYTE_UNITS;

use super::units::{Clock, time_unit};

/// The largest "nice" step (1, 2 or 5 × 10^k) that gives at most `max_ticks` ticks over
/// `span`.
pub fn nice_step(span: f64, max_ticks: usize) -> f64 {
    if !span.is_finite() || span <= 0.0 {
        return 1.0;
    }
    let raw = span / max_ticks.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * magnitude >= raw {
            return m * magnitude;
        }
    }
    10.0 * magnitude
}

/// Tick positions (in the axis' own units) covering `[lo, hi]`.
pub fn ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    let step = nice_step(hi - lo, max_ticks);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    if last < first || last - first > 1_000 {
        return Vec::new();
    }
    (first..=last).map(|i| i as f64 * step).collect()
}

/// Time ticks over `[t0_ns, t1_ns]`: (position in ns, label).
pub fn time_ticks(t0_ns: f64, t1_ns: f64, max_ticks: usize) -> Vec<(f64, String)> {
    let unit = time_unit(t1_ns - t0_ns);
    let step = nice_step((t1_ns - t0_ns) / unit.ns, max_ticks);
    // Zoomed in far from the start, "21936 ms" reads better as "21.936 s": label in the
    // unit of the times themselves, with the decimals the step needs.
    let far = time_unit(t0_ns.abs().max(t1_ns.abs()));
    let label = if far.ns > unit.ns { far } else { unit };
    let decimals = decimals_for(step * unit.ns / label.ns);
    ticks(t0_ns / unit.ns, t1_ns / unit.ns, max_ticks)
        .into_iter()
        .map(|v| {
            let t = v * unit.ns;
            (t, format!("{:.decimals$} {}", t / label.ns, label.name))
        })
        .collect()
}

/// Ticks over `[t0_ns, t1_ns]` on `clock`: times, or whole event positions ("event 480").
pub fn clock_ticks(clock: Clock, t0_ns: f64, t1_ns: f64, max_ticks: usize) -> Vec<(f64, String)> {
    match clock {
        Clock::Time => time_ticks(t0_ns, t1_ns, max_ticks),
        Clock::Events => {
            // Whole events only: a step under one event would repeat labels.
            let step = nice_step(t1_ns - t0_ns, max_ticks).max(1.0);
            let first = (t0_ns / step).ceil() as i64;
            let last = (t1_ns / step).floor() as i64;
            if last < first || last - first > 1_000 {
                return Vec::new();
            }
            (first..=last)
                .map(|i| {
                    let t = i as f64 * step;
                    (t, clock.at(t))
                })
                .collect()
        }
    }
}

/// A byte unit: divisor and name.
pub fn byte_unit(max_bytes: f64) -> (f64, &'static str) {
    let (divisor, name) = collector::units::unit_for(max_bytes.abs() as u64, &BYTE_UNITS);
    (divisor as f64, name)
}

/// Byte ticks over `[0, max_bytes]`: (position in bytes, label).
pub fn byte_ticks(lo_bytes: f64, hi_bytes: f64, max_ticks: usize) -> Vec<(f64, String)> {
    let (div, name) = byte_unit(hi_bytes.abs().max(lo_bytes.abs()));
    let step = nice_step((hi_bytes - lo_bytes) / div, max_ticks);
    let decimals = decimals_for(step);
    ticks(lo_bytes / div, hi_bytes / div, max_ticks)
        .into_iter()
        .map(|v| (v * div, format!("{v:.decimals$} {name}")))
        .collect()
}

/// Decimals needed to print multiples of `step` exactly.
fn decimals_for(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    }
}

/// At most `max` characters, with an ellipsis.
pub fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_one_two_five() {
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(100.0, 4), 50.0);
        assert_eq!(nice_step(0.9, 10), 0.1);
        assert_eq!(nice_step(7.0, 7), 1.0);
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    }

    #[test]
    fn tick_labels_pick_units() {
        let t = time_ticks(0.0, 10e6, 5);
        assert_eq!(t.first().map(|x| x.1.as_str()), Some("0 ms"));
        assert_eq!(t.get(1).map(|x| x.1.as_str()), Some("2 ms"));
        // Far from the start, ticks read in the unit of the times.
        let far = time_ticks(21_936e6, 21_952e6, 8);
        assert_eq!(far.first().map(|x| x.1.as_str()), Some("21.936 s"));
        let b = byte_ticks(0.0, 3.0 * 1024.0 * 1024.0 * 1024.0, 4);
        assert_eq!(b.get(1).map(|x| x.1.as_str()), Some("1 GiB"));
    }
}
