//! Numbers as text that JSON carries unescaped and a reader decodes without parsing JSON
//! numbers: variable-length quantities in base-64 digits, as source maps write them. Each
//! character carries 5 bits of the number, least significant first, and a sixth bit that
//! says another character follows; so 0–31 take one character, a 20-bit time delta four.
//! Signed numbers are zigzagged (0, −1, 1, −2, … → 0, 1, 2, 3, …) and an optional number
//! is 0 for none, else the number plus one. A number is always whole characters, so gzip
//! finds repeated values as it finds repeated text.
//!
//! Decoding never trusts the text: a character outside the alphabet, a number cut short
//! or too long for its type, and a column holding more or fewer numbers than its record
//! says are errors naming the column and the character's position.

/// The 64 digits, in order of value: 0–31 end a number, 32–63 say more follow.
const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/// A digit's bit that says another digit follows.
const MORE: u8 = 32;
/// Bits of the number in each digit.
const BITS_PER_DIGIT: u32 = 5;
/// Most digits in one number: 26 carry 130 bits, enough for an optional 64-bit number
/// (65 bits); a longer number is damage, refused before it can cost anything.
const MAX_DIGITS: usize = 26;
/// Digits the fast path gathers in a `u64`: 12 carry 60 bits.
const U64_DIGITS: usize = 12;
/// [`VALUES`]' mark for a byte that is not a digit.
const NOT_A_DIGIT: u8 = 0xff;

/// Each byte's digit value, or [`NOT_A_DIGIT`].
static VALUES: [u8; 256] = {
    let mut values = [NOT_A_DIGIT; 256];
    let mut i = 0;
    while i < DIGITS.len() {
        values[DIGITS[i] as usize] = i as u8;
        i += 1;
    }
    values
};

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// One column being written.
#[derive(Default)]
pub struct Writer(String);

impl Writer {
    fn digits(&mut self, mut v: u128) {
        loop {
            let digit = (v & 0x1f) as u8;
            v >>= BITS_PER_DIGIT;
            if v == 0 {
                self.0.push(DIGITS[digit as usize] as char);
                return;
            }
            self.0.push(DIGITS[(digit | MORE) as usize] as char);
        }
    }

    /// An unsigned number.
    pub fn u64(&mut self, v: u64) {
        self.digits(u128::from(v));
    }

    /// A signed number.
    pub fn i64(&mut self, v: i64) {
        self.u64(zigzag(v));
    }

    /// An optional unsigned number.
    pub fn opt_u64(&mut self, v: Option<u64>) {
        self.digits(v.map_or(0, |v| u128::from(v) + 1));
    }

    /// An optional signed number.
    pub fn opt_i64(&mut self, v: Option<i64>) {
        self.opt_u64(v.map(zigzag));
    }

    /// The column's text.
    pub fn finish(self) -> String {
        self.0
    }
}

/// One column being read.
pub struct Reader<'a> {
    text: &'a [u8],
    at: usize,
    column: &'static str,
}

impl<'a> Reader<'a> {
    fn error(&self, what: &str) -> String {
        format!(
            "column {:?} of a packed record: {what} at character {}",
            self.column, self.at
        )
    }

    /// The next number. Most are a few digits: those are gathered in a `u64` here, and
    /// anything else (a longer number, damage) is left to [`Self::long_digits`].
    #[inline(always)]
    fn digits(&mut self) -> Result<u128, String> {
        let mut v = 0u64;
        let mut at = self.at;
        for digit in 0..U64_DIGITS {
            let Some(&c) = self.text.get(at) else { break };
            let d = VALUES[c as usize];
            if d == NOT_A_DIGIT {
                break;
            }
            at += 1;
            v |= u64::from(d & !MORE) << (digit as u32 * BITS_PER_DIGIT);
            if d & MORE == 0 {
                self.at = at;
                return Ok(u128::from(v));
            }
        }
        self.long_digits()
    }

    /// The next number, read digit by digit in a `u128`, every digit checked.
    #[cold]
    fn long_digits(&mut self) -> Result<u128, String> {
        let mut v = 0u128;
        for digit in 0..MAX_DIGITS {
            let Some(&c) = self.text.get(self.at) else {
                return Err(self.error("the text ends inside a number"));
            };
            let d = VALUES[c as usize];
            if d == NOT_A_DIGIT {
                return Err(self.error(&format!("{:?} is not a digit", c as char)));
            }
            self.at += 1;
            v |= u128::from(d & !MORE) << (digit as u32 * BITS_PER_DIGIT);
            if d & MORE == 0 {
                return Ok(v);
            }
        }
        Err(self.error(&format!("a number longer than {MAX_DIGITS} digits")))
    }

    #[inline]
    fn narrow<T: TryFrom<u128>>(&self, v: u128) -> Result<T, String> {
        T::try_from(v).map_err(|_| {
            let what = std::any::type_name::<T>();
            self.error(&format!("{v} is too large for {what}"))
        })
    }

    /// An unsigned number that must fit `T`.
    #[inline]
    pub fn unsigned<T: TryFrom<u128>>(&mut self) -> Result<T, String> {
        let v = self.digits()?;
        self.narrow(v)
    }

    /// A signed number.
    pub fn i64(&mut self) -> Result<i64, String> {
        self.unsigned::<u64>().map(unzigzag)
    }

    /// An optional unsigned number that must fit `T`.
    pub fn opt_unsigned<T: TryFrom<u128>>(&mut self) -> Result<Option<T>, String> {
        match self.digits()? {
            0 => Ok(None),
            v => self.narrow(v - 1).map(Some),
        }
    }

    /// An optional signed number.
    pub fn opt_i64(&mut self) -> Result<Option<i64>, String> {
        Ok(self.opt_unsigned::<u64>()?.map(unzigzag))
    }
}

/// The `count` numbers of `column`, each read by `read`; an error if the text holds more
/// or fewer. Reserves no more than the text can hold (a number is at least one digit),
/// whatever `count` claims.
pub fn column<'a, T>(
    name: &'static str,
    text: &'a str,
    count: usize,
    mut read: impl FnMut(&mut Reader<'a>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let mut r = Reader {
        text: text.as_bytes(),
        at: 0,
        column: name,
    };
    let mut out = Vec::with_capacity(count.min(text.len()));
    for _ in 0..count {
        out.push(read(&mut r)?);
    }
    if r.at != r.text.len() {
        return Err(r.error(&format!("more than the record's {count} numbers")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_at_their_edges() {
        let unsigned = [0, 1, 31, 32, 1023, 1024, u64::from(u32::MAX), u64::MAX];
        let signed = [0, -1, 1, -16, 16, -17, i64::MIN, i64::MAX];
        let mut w = Writer::default();
        unsigned.iter().for_each(|&v| w.u64(v));
        signed.iter().for_each(|&v| w.i64(v));
        [None, Some(0), Some(u64::MAX)]
            .iter()
            .for_each(|&v| w.opt_u64(v));
        [None, Some(i64::MIN), Some(-1)]
            .iter()
            .for_each(|&v| w.opt_i64(v));
        let text = w.finish();
        // 0, 1, 31 take one digit each; 32 two; 1023 two; 1024 three (0, 0, 1).
        assert!(text.starts_with("ABfgB/fggB"), "{text}");
        let one = |v: u64| {
            let mut w = Writer::default();
            w.u64(v);
            w.finish()
        };
        assert_eq!(one(u64::from(u32::MAX)).len(), 7);
        assert_eq!(one(u64::MAX).len(), 13);
        let mut r = Reader {
            text: text.as_bytes(),
            at: 0,
            column: "t",
        };
        for v in unsigned {
            assert_eq!(r.unsigned::<u64>(), Ok(v));
        }
        for v in signed {
            assert_eq!(r.i64(), Ok(v));
        }
        assert_eq!(r.opt_unsigned::<u64>(), Ok(None));
        assert_eq!(r.opt_unsigned::<u64>(), Ok(Some(0)));
        assert_eq!(r.opt_unsigned::<u64>(), Ok(Some(u64::MAX)));
        assert_eq!(r.opt_i64(), Ok(None));
        assert_eq!(r.opt_i64(), Ok(Some(i64::MIN)));
        assert_eq!(r.opt_i64(), Ok(Some(-1)));
        assert_eq!(r.at, text.len());
    }

    #[test]
    fn damaged_columns_are_errors_naming_column_and_character() {
        let err = |text: &str, count: usize| {
            column("b", text, count, |r| r.unsigned::<u16>()).expect_err(text)
        };
        assert_eq!(
            err("AB*", 3),
            "column \"b\" of a packed record: '*' is not a digit at character 2"
        );
        assert!(err("Ag", 2).contains("the text ends inside a number at character 2"));
        assert!(err("ABC", 2).contains("more than the record's 2 numbers at character 2"));
        // 2^16 does not fit a u16.
        assert!(err("gggC", 1).contains("65536 is too large for u16"));
        assert!(err(&"g".repeat(40), 1).contains("longer than 26 digits at character 26"));
        // A count far beyond the text reserves only what the text can hold.
        assert!(err("A", usize::MAX).contains("ends inside a number at character 1"));
        assert_eq!(
            column("b", "ABC", 3, |r| r.unsigned::<u16>()),
            Ok(vec![0, 1, 2])
        );
    }
}
