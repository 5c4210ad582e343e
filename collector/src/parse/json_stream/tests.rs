use super::*;

/// A reader that returns at most `step` bytes per read, to force straddling.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn numbers(doc: &[u8], step: usize) -> Result<Vec<i64>, StreamError> {
    let mut s = JsonStream::new(Trickle { data: doc, step });
    s.expect(b'[', "at the start")?;
    let mut out = Vec::new();
    loop {
        if s.peek()? == Some(b']') {
            s.bump();
            break;
        }
        let v = s.value("in the array", |w| parse_one::<serde_json::Value>(w))?;
        out.push(v.as_i64().unwrap_or(-1));
        match s.peek()? {
            Some(b',') => s.bump(),
            Some(b']') => {
                s.bump();
                break;
            }
            None => {
                return Err(StreamError::Truncated {
                    offset: s.offset(),
                    context: "the array",
                });
            }
            _ => {
                return Err(StreamError::Syntax {
                    offset: s.offset(),
                    message: "bad".into(),
                });
            }
        }
    }
    Ok(out)
}

#[test]
fn numbers_split_across_reads_are_not_cut() {
    for step in [1, 2, 3, 7, 1 << 20] {
        let got = numbers(b"[12345, 678, 9]", step).expect("parses");
        assert_eq!(got, vec![12345, 678, 9], "step {step}");
    }
}

#[test]
fn errors_carry_offsets() {
    match numbers(b"[1, 2, x]", 3) {
        Err(StreamError::Syntax { offset, .. }) => assert_eq!(offset, 7),
        other => panic!("unexpected {other:?}"),
    }
    match numbers(b"[1, 2, 3", 2) {
        Err(StreamError::Truncated { offset, .. }) => assert_eq!(offset, 8),
        other => panic!("unexpected {other:?}"),
    }
    match numbers(b"[1, 2, {\"a\": [1, 2", 4) {
        Err(StreamError::Truncated { offset, .. }) => assert_eq!(offset, 18),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn line_col_maps_to_bytes() {
    let text = b"ab\ncd\nef";
    assert_eq!(line_col_to_offset(text, 1, 1), 0);
    assert_eq!(line_col_to_offset(text, 2, 2), 4);
    assert_eq!(line_col_to_offset(text, 3, 1), 6);
}
