//! Exact conversion of JSON microsecond numbers to integer nanoseconds.
//!
//! Modern traces write `"ts": 5346740461457.269` (µs with a ns fraction). An `f64` holds
//! that only to about 1 ns, and `× 1000` rounds again, so two events 1 ns apart can swap
//! or merge — which moves memory across op boundaries in the key_averages table. Parsing
//! the decimal text directly keeps every timestamp exact.

/// Parse a JSON number given in microseconds into nanoseconds, rounding half away from
/// zero below 1 ns. Returns `None` for text that is not a finite JSON number or overflows.
pub fn micros_text_to_ns(text: &[u8]) -> Option<i64> {
    if let Some(ns) = plain_micros_to_ns(text) {
        return Some(ns);
    }
    let (negative, mantissa, exp10) = parse_decimal(text)?;
    // µs → ns is one more power of ten.
    let magnitude = scale_by_power_of_ten(mantissa, exp10.saturating_add(3))?;
    let signed = if negative { -magnitude } else { magnitude };
    i64::try_from(signed).ok()
}

/// A JSON number's text as its sign, its mantissa digits (integer and fraction) as an
/// integer, and the decimal exponent that scales them. `None` for text that is not a
/// finite JSON number.
fn parse_decimal(text: &[u8]) -> Option<(bool, i128, i32)> {
    let mut i = 0;
    let negative = text.first() == Some(&b'-');
    if negative {
        i += 1;
    }
    // Mantissa digits (integer and fraction) as an integer, plus the decimal exponent.
    let mut mantissa: i128 = 0;
    let mut exp10: i32 = 0;
    let mut digits = 0usize;
    let mut seen_digit = false;
    let mut push_digit = |d: u8, frac: bool, mantissa: &mut i128, exp10: &mut i32| {
        // 36 significant digits fit an i128 with room; beyond that, digits only round.
        if digits < 36 {
            *mantissa = *mantissa * 10 + i128::from(d);
            if *mantissa != 0 {
                digits += 1;
            }
            if frac {
                *exp10 -= 1;
            }
        } else {
            let _ = d;
            if !frac {
                *exp10 += 1;
            }
        }
    };
    while let Some(&c) = text.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        push_digit(c - b'0', false, &mut mantissa, &mut exp10);
        seen_digit = true;
        i += 1;
    }
    if text.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while let Some(&c) = text.get(i) {
            if !c.is_ascii_digit() {
                break;
            }
            push_digit(c - b'0', true, &mut mantissa, &mut exp10);
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if !seen_digit {
        return None;
    }
    exp10 = exp10.saturating_add(exponent(text, &mut i)?);
    if i != text.len() {
        return None;
    }
    Some((negative, mantissa, exp10))
}

/// The exponent part at `text[*i..]` (`e`/`E`, an optional sign, digits; saturating), with
/// `*i` moved past it: 0 where there is none, `None` for an exponent without digits.
fn exponent(text: &[u8], i: &mut usize) -> Option<i32> {
    if !matches!(text.get(*i), Some(b'e' | b'E')) {
        return Some(0);
    }
    *i += 1;
    let exp_negative = match text.get(*i) {
        Some(b'-') => {
            *i += 1;
            true
        }
        Some(b'+') => {
            *i += 1;
            false
        }
        _ => false,
    };
    let start = *i;
    let mut e: i32 = 0;
    while let Some(&c) = text.get(*i) {
        if !c.is_ascii_digit() {
            break;
        }
        e = e.saturating_mul(10).saturating_add(i32::from(c - b'0'));
        *i += 1;
    }
    if *i == start {
        return None;
    }
    Some(if exp_negative { -e } else { e })
}

/// `mantissa × 10^scale`, rounded half away from zero where `scale` is negative; `None`
/// where it overflows `i128`.
fn scale_by_power_of_ten(mantissa: i128, scale: i32) -> Option<i128> {
    Some(if scale >= 0 {
        if scale > 38 && mantissa != 0 {
            return None;
        }
        let factor = 10i128.checked_pow(scale.min(38) as u32)?;
        mantissa.checked_mul(factor)?
    } else {
        let shift = (-scale).min(40) as u32;
        let divisor = 10i128.checked_pow(shift.min(38))?;
        if shift > 38 {
            0
        } else {
            let q = mantissa / divisor;
            let r = mantissa % divisor;
            // Half away from zero (digits past the 36th are below any tie that matters).
            if r * 2 >= divisor { q + 1 } else { q }
        }
    })
}

/// Digits before the point that [`plain_micros_to_ns`] takes: with 3 after it, 18 in all,
/// which `i64` holds.
pub(crate) const PLAIN_INTEGER_DIGITS: usize = 15;

/// The usual form, `[-]D+[.D{1,3}]` with at most [`PLAIN_INTEGER_DIGITS`] integer digits, in
/// `i64` arithmetic: exactly what the general path gives it (no rounding is needed, the
/// fraction has ns resolution at most). `None` for any other text, which the general path
/// then reads.
fn plain_micros_to_ns(text: &[u8]) -> Option<i64> {
    let (negative, body) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    let (int, frac) = match body.iter().position(|&b| b == b'.') {
        Some(dot) => (&body[..dot], body.get(dot + 1..)?),
        None => (body, &[][..]),
    };
    let dotted = int.len() != body.len();
    if int.is_empty()
        || int.len() > PLAIN_INTEGER_DIGITS
        || frac.len() > 3
        || (dotted && frac.is_empty())
    {
        return None;
    }
    let mut ns: i64 = 0;
    for &d in int.iter().chain(frac) {
        if !d.is_ascii_digit() {
            return None;
        }
        ns = ns * 10 + i64::from(d - b'0');
    }
    for _ in frac.len()..3 {
        ns *= 10;
    }
    Some(if negative { -ns } else { ns })
}

#[cfg(test)]
mod tests {
    use super::micros_text_to_ns;

    #[test]
    fn exact_where_f64_is_not() {
        let cases: &[(&str, Option<i64>)] = &[
            ("5346740461457.269", Some(5_346_740_461_457_269)),
            ("5346740461457.270", Some(5_346_740_461_457_270)),
            ("1623143089861123", Some(1_623_143_089_861_123_000)),
            ("0", Some(0)),
            ("22.51", Some(22_510)),
            ("-3.5", Some(-3_500)),
            ("1.0005", Some(1_001)),
            ("1.0004", Some(1_000)),
            ("1.5e3", Some(1_500_000)),
            ("15E-1", Some(1_500)),
            ("2e-4", Some(0)),
            ("1e30", None),
            ("", None),
            ("-", None),
            ("1.", None),
            ("1e", None),
            ("abc", None),
            ("12x", None),
            ("\"12\"", None),
        ];
        for (text, want) in cases {
            assert_eq!(micros_text_to_ns(text.as_bytes()), *want, "{text}");
        }
    }

    #[test]
    fn the_plain_form_reads_as_the_general_path_does() {
        let cases = [
            "0",
            "7",
            "-7",
            "007",
            "-0",
            "22.5",
            "22.51",
            "22.512",
            "5346740461457.269",
            "999999999999999.999",
            "-999999999999999.999",
            "1.",
            ".5",
            "1.2.3",
            "1e3",
            "-",
            "",
            "12a",
            "1.x",
            "+1",
            "1234567890123456",
            "0.000",
        ];
        for text in cases {
            if let Some(ns) = super::plain_micros_to_ns(text.as_bytes()) {
                // The general path alone, by hiding the plain form behind an exponent.
                let general = format!("{text}e0");
                assert_eq!(Some(ns), micros_text_to_ns(general.as_bytes()), "{text}");
            }
        }
        assert_eq!(
            super::plain_micros_to_ns(b"5346740461457.269"),
            Some(5_346_740_461_457_269)
        );
        assert_eq!(super::plain_micros_to_ns(b"1234567890123456"), None);
        assert_eq!(super::plain_micros_to_ns(b"1."), None);
    }

    #[test]
    fn long_fractions_round() {
        assert_eq!(
            micros_text_to_ns(b"0.0004999999999999999999999999999999999999999"),
            Some(0)
        );
        assert_eq!(micros_text_to_ns(b"1.00049999999"), Some(1_000));
        assert_eq!(micros_text_to_ns(b"1.00050000001"), Some(1_001));
    }
}
