//! One trace event into the builder, whichever reader takes it: the fast scanner, else
//! serde; an event that gives a key twice is read as Python's json reads it (the last
//! value), one of unexpected field types skipped and counted.

use serde::de::IgnoredAny;

use super::builder::Builder;
use super::fast;
use super::raw::{self, Fields, RawEvent};
use crate::parse::json_stream::{ValueError, parse_one};

/// Read the event at the start of `w` into the builder: the fast reader, else serde.
/// Returns the bytes it used.
pub(super) fn read_one(b: &mut Builder, w: &[u8]) -> Result<((), usize), ValueError> {
    if let Some((ev, n)) = fast::event(w) {
        b.add(ev);
        return Ok(((), n));
    }
    match parse_one::<RawEvent<'_>>(w) {
        Ok((ev, n)) => {
            b.add(Fields::from(ev));
            Ok(((), n))
        }
        Err(ValueError::Json(j)) if raw::is_duplicate(&j) => {
            let (last_wins, n) = parse_one::<serde_json::Value>(w)?;
            let text = last_wins.to_string();
            let (ev, _) = parse_one::<RawEvent<'_>>(text.as_bytes())?;
            b.add(Fields::from(ev));
            b.diagnostics.note(raw::DUPLICATE_KEYS_NOTE);
            Ok(((), n))
        }
        // Valid JSON of another shape (a string where a number belongs, a non-object):
        // skip that one event, count it, and go on.
        Err(ValueError::Json(j)) if j.classify() == serde_json::error::Category::Data => {
            let (_, n) = parse_one::<IgnoredAny>(w)?;
            b.diagnostics
                .note("trace events with unexpected field types skipped");
            Ok(((), n))
        }
        Err(e) => Err(e),
    }
}
