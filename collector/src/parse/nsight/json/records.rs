//! The serde shapes of `nsys export --type json` lines. Every field is optional: what a
//! record lacks is counted by the reader, never a parse failure.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// An integer written as a JSON number or as a numeric string (nsys writes 64-bit values
/// as strings, some above `i64::MAX`), kept wide so nothing wraps while parsing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Num(pub i128);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a numeric string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(i128::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(i128::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                if v.is_finite() && v.fract() == 0.0 && v.abs() < 1.0e38 {
                    Ok(Num(v as i128))
                } else {
                    Err(E::custom("not an integer"))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                v.trim()
                    .parse()
                    .map(Num)
                    .map_err(|_| E::custom("not an integer"))
            }
        }
        d.deserialize_any(V)
    }
}

impl Num {
    /// As a signed time or id; `None` outside `i64`.
    pub fn i64(self) -> Option<i64> {
        i64::try_from(self.0).ok()
    }

    /// As an unsigned 64-bit id: negative values are their two's complement, as SQLite
    /// stores the same ids.
    pub fn u64(self) -> Option<u64> {
        u64::try_from(self.0)
            .ok()
            .or_else(|| i64::try_from(self.0).ok().map(|v| v as u64))
    }

    pub(super) fn from_value(v: &Value) -> Option<Num> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .map(Num),
            Value::String(s) => s.trim().parse().ok().map(Num),
            _ => None,
        }
    }
}

/// An element of a `{"data":[...]}` line: a string-table entry or a thread name.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum DataItem {
    Text(String),
    ThreadName {
        #[serde(rename = "nameIdx")]
        name_idx: Num,
        #[serde(rename = "globalTid")]
        global_tid: Num,
    },
    Other(IgnoredAny),
}

/// `data` read element by element, so a huge string table is never a `Value`.
pub(super) struct DataList(pub(super) Vec<DataItem>);

impl<'de> Deserialize<'de> for DataList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DataList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DataList, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(DataList(items))
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize)]
pub(super) struct NvtxBody<'a> {
    #[serde(rename = "Type")]
    pub(super) event_type: Option<Num>,
    #[serde(rename = "Timestamp")]
    pub(super) timestamp: Option<Num>,
    #[serde(rename = "EndTimestamp")]
    pub(super) end_timestamp: Option<Num>,
    #[serde(rename = "Text", borrow)]
    pub(super) text: Option<Cow<'a, str>>,
    #[serde(rename = "TextId")]
    pub(super) text_id: Option<Num>,
    #[serde(rename = "GlobalTid")]
    pub(super) global_tid: Option<Num>,
    #[serde(rename = "DomainId")]
    pub(super) domain_id: Option<Num>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TraceBody {
    pub(super) start_ns: Option<Num>,
    pub(super) end_ns: Option<Num>,
    pub(super) correlation_id: Option<Num>,
    pub(super) event_class: Option<Num>,
    pub(super) name: Option<Num>,
    pub(super) global_tid: Option<Num>,
}

/// One line of the export. Unknown keys (other event kinds) are skipped by serde.
#[derive(Deserialize)]
pub(super) struct Record<'a> {
    #[serde(rename = "Type")]
    pub(super) event_type: Option<Num>,
    #[serde(rename = "type", borrow)]
    pub(super) record_type: Option<Cow<'a, str>>,
    pub(super) data: Option<DataList>,
    #[serde(rename = "NvtxEvent", borrow)]
    pub(super) nvtx: Option<NvtxBody<'a>>,
    #[serde(rename = "TraceProcessEvent")]
    pub(super) trace: Option<TraceBody>,
    #[serde(rename = "CudaEvent")]
    pub(super) cuda: Option<Map<String, Value>>,
    pub(super) id: Option<Num>,
    #[serde(borrow)]
    pub(super) value: Option<Cow<'a, str>>,
    #[serde(rename = "globalTid")]
    pub(super) global_tid: Option<Num>,
    #[serde(rename = "nameId")]
    pub(super) name_id: Option<Num>,
}
