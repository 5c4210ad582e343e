//! The serde shapes of a Chrome trace's values, and [`Fields`], the one view of an event that
//! the builder reads whichever reader produced it ([`super::fast`] or serde).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;

use crate::parse::decimal::micros_text_to_ns;

/// A pid/tid: traces mix integers, numeric strings and labels ("stream 7", "Spans").
#[derive(Debug, PartialEq)]
pub(super) enum RawId<'a> {
    Int(i64),
    Text(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for RawId<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawId<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or string id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(RawId::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(RawId::Int(v as i64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(RawId::Text(Cow::Owned(v.to_string())))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawId::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawId::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawId::Text(Cow::Borrowed("")))
            }
        }
        d.deserialize_any(V)
    }
}

impl RawId<'_> {
    /// Numeric strings become numbers, so torch 1.9's `"25738"` matches `25738`.
    pub(super) fn normalized(&self) -> Cow<'_, str> {
        match self {
            RawId::Int(v) => Cow::Owned(v.to_string()),
            RawId::Text(t) => match t.trim().parse::<i64>() {
                Ok(v) => Cow::Owned(v.to_string()),
                Err(_) => Cow::Borrowed(t),
            },
        }
    }
}

/// An integer argument that may be written as an integer, a float or a numeric string.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Int(pub(super) i128);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                Ok(Int(i128::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                Ok(Int(i128::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int, E> {
                if v.is_finite() && v.fract() == 0.0 && v.abs() < 1.7e38 {
                    Ok(Int(v as i128))
                } else {
                    Err(E::custom("not an integer"))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Int, E> {
                v.trim()
                    .parse::<i128>()
                    .map(Int)
                    .map_err(|_| E::custom("not an integer"))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Int, E> {
                Ok(Int(i128::from(v)))
            }
        }
        d.deserialize_any(V)
    }
}

impl Int {
    /// Allocator totals are written as `uint64`: a negative running total wraps to ≥ 2^63.
    pub(super) fn as_wrapped_i64(self) -> i64 {
        self.0 as u64 as i64
    }
}

/// The `args` fields of memory and metadata events; every other key is skipped.
#[derive(Deserialize, Default, Debug, Clone, PartialEq)]
pub(super) struct RawArgs<'a> {
    #[serde(rename = "Bytes")]
    pub(super) bytes: Option<Int>,
    #[serde(rename = "Addr")]
    pub(super) addr: Option<Int>,
    #[serde(rename = "Total Allocated")]
    pub(super) total_allocated: Option<Int>,
    #[serde(rename = "Total Reserved")]
    pub(super) total_reserved: Option<Int>,
    #[serde(rename = "Device Id")]
    pub(super) device_id: Option<Int>,
    #[serde(rename = "Device Type")]
    pub(super) device_type: Option<Int>,
    /// Metadata events (`thread_name`, `process_name`) carry the name here.
    #[serde(borrow)]
    pub(super) name: Option<Cow<'a, str>>,
}

/// A trace event as serde reads it.
#[derive(Deserialize)]
pub(super) struct RawEvent<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pid: Option<RawId<'a>>,
    #[serde(borrow)]
    tid: Option<RawId<'a>>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    #[serde(borrow)]
    /// Kept raw and read only for the few events that need it (memory, metadata): operator
    /// args (shapes, strides, concrete inputs) are most of a trace's bytes and are unused.
    args: Option<&'a RawValue>,
}

/// `deviceProperties` entries.
#[derive(Deserialize)]
pub(super) struct RawDeviceProps {
    pub(super) id: Option<Int>,
    pub(super) name: Option<String>,
    #[serde(rename = "totalGlobalMem")]
    pub(super) total_global_mem: Option<Int>,
}

/// `distributedInfo`.
#[derive(Deserialize)]
pub(super) struct RawDistributed {
    pub(super) backend: Option<String>,
    pub(super) rank: Option<Int>,
    pub(super) world_size: Option<Int>,
}

/// One trace event's fields, as the builder reads them. Times are parsed exactly from their
/// decimal text; `args` stay raw JSON text (valid UTF-8, kept as bytes) unless the reader
/// already read the memory/metadata fields of an event that needs them.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Fields<'a> {
    pub(super) ph: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) cat: Option<Cow<'a, str>>,
    pub(super) pid: Option<RawId<'a>>,
    pub(super) tid: Option<RawId<'a>>,
    pub(super) ts: Option<Micros>,
    pub(super) dur: Option<Micros>,
    pub(super) args: Option<Args<'a>>,
}

/// A JSON number of µs, read: its exact ns (`None` if unreadable) and whether it was
/// written with a decimal point (which tells the trace's era).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Micros {
    pub(super) ns: Option<i64>,
    pub(super) fractional: bool,
}

impl Micros {
    /// Read the raw JSON text of a `ts` or `dur` value.
    pub(super) fn of(text: &[u8]) -> Micros {
        Micros {
            ns: micros_text_to_ns(text),
            fractional: text.contains(&b'.'),
        }
    }
}

/// An event's `args`: raw JSON text, or the memory/metadata fields already read from it.
/// Lives on the stack for one event at a time, so its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Args<'a> {
    Raw(&'a [u8]),
    Read(RawArgs<'a>),
}

impl<'a> Args<'a> {
    /// The memory and metadata fields (see [`read_args`]).
    pub(super) fn read(&self) -> Option<RawArgs<'a>> {
        match self {
            Args::Raw(raw) => read_args(raw),
            Args::Read(args) => Some(args.clone()),
        }
    }
}

impl<'a> From<RawEvent<'a>> for Fields<'a> {
    fn from(ev: RawEvent<'a>) -> Self {
        Fields {
            ph: ev.ph,
            name: ev.name,
            cat: ev.cat,
            pid: ev.pid,
            tid: ev.tid,
            ts: ev.ts.map(|v| Micros::of(v.get().as_bytes())),
            dur: ev.dur.map(|v| Micros::of(v.get().as_bytes())),
            args: ev.args.map(|v| Args::Raw(v.get().as_bytes())),
        }
    }
}

/// The memory and metadata fields of an event's raw `args`; `None` when they are not an
/// object of the expected field types (the event is then skipped and counted).
pub(super) fn read_args(raw: &[u8]) -> Option<RawArgs<'_>> {
    if let Some(args) = super::fast::args(raw) {
        return Some(args);
    }
    let text = std::str::from_utf8(raw).ok()?;
    match serde_json::from_str::<RawArgs<'_>>(text) {
        Ok(args) => Some(args),
        Err(e) if is_duplicate(&e) => {
            let last_wins = serde_json::from_str::<serde_json::Value>(text).ok()?;
            let text = last_wins.to_string();
            let args = serde_json::from_str::<RawArgs<'_>>(&text).ok()?;
            Some(RawArgs {
                name: args.name.map(|n| Cow::Owned(n.into_owned())),
                ..args
            })
        }
        Err(_) => None,
    }
}

/// Counted when an event, or its `args`, gives a key twice: read as Python's json reads
/// it, the last value kept (serde_json's derived readers refuse it; its `Value` keeps the
/// last).
pub(super) const DUPLICATE_KEYS_NOTE: &str =
    "events with a key given twice read with its last value (as Python's json does)";

/// Whether serde refused an object for a key given twice.
pub(super) fn is_duplicate(e: &serde_json::Error) -> bool {
    e.classify() == serde_json::error::Category::Data
        && e.to_string().starts_with("duplicate field")
}
