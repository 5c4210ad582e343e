//! The memory-event and op columns of packs of format version 3: each column one string
//! of [`super::vlq`] numbers instead of a JSON array. Reading a version-2 pack of a 2 GB
//! trace spent ~40 % of its time in serde_json parsing those arrays' integers; these
//! strings decode in a table lookup per character, and are about half the text to inflate.
//!
//! The columns hold what [`MemColumns`] and [`OpColumns`] hold (the same deltas and
//! predictions, carried across records by the encoders and the decoder), except that a
//! memory event's address is its difference from the record's previous address, so
//! neighbouring allocations cost a few digits instead of ten.

use serde::{Deserialize, Serialize};

use super::columns::{MemColumns, OpColumns};
use super::vlq::{Writer, column};

/// Memory events: [`MemColumns`], each column a string of numbers.
#[derive(Serialize, Deserialize)]
pub struct MemVlq {
    /// Events in the record; every column holds this many numbers.
    n: usize,
    t: String,
    b: String,
    /// Address minus the record's previous address (wrapping), optional.
    a: String,
    ta: String,
    tr: String,
    d: String,
    th: String,
    k: String,
    s: String,
}

/// Ops: [`OpColumns`], each column a string of numbers.
#[derive(Serialize, Deserialize)]
pub struct OpsVlq {
    /// Ops in the record; every column holds this many numbers.
    n: usize,
    name: String,
    c: String,
    th: String,
    s: String,
    d: String,
}

/// Each element of `values` written by `put`.
fn text<T: Copy>(values: &[T], mut put: impl FnMut(&mut Writer, T)) -> String {
    let mut w = Writer::default();
    for &v in values {
        put(&mut w, v);
    }
    w.finish()
}

/// Addresses as differences from the previous present address (absent ones stay absent).
fn address_deltas(addresses: &[Option<u64>]) -> String {
    let mut previous = 0u64;
    text(addresses, |w, a| {
        w.opt_i64(a.map(|a| a.wrapping_sub(previous) as i64));
        if let Some(a) = a {
            previous = a;
        }
    })
}

/// [`address_deltas`] undone.
fn addresses(deltas: Vec<Option<i64>>) -> Vec<Option<u64>> {
    let mut previous = 0u64;
    deltas
        .into_iter()
        .map(|d| {
            let a = d.map(|d| previous.wrapping_add(d as u64));
            if let Some(a) = a {
                previous = a;
            }
            a
        })
        .collect()
}

impl MemVlq {
    /// The text of `c`.
    pub fn from_columns(c: &MemColumns) -> MemVlq {
        MemVlq {
            n: c.t.len(),
            t: text(&c.t, Writer::i64),
            b: text(&c.b, Writer::i64),
            a: address_deltas(&c.a),
            ta: text(&c.ta, Writer::opt_i64),
            tr: text(&c.tr, Writer::opt_i64),
            d: text(&c.d, |w, d| w.u64(d.into())),
            th: text(&c.th, |w, th| w.u64(th.into())),
            k: text(&c.k, |w, k| w.u64(k.into())),
            s: text(&c.s, |w, s| w.opt_u64(s.map(u64::from))),
        }
    }

    /// The columns, every number checked to fit its type.
    pub fn into_columns(self) -> Result<MemColumns, String> {
        let n = self.n;
        Ok(MemColumns {
            t: column("t", &self.t, n, |r| r.i64())?,
            b: column("b", &self.b, n, |r| r.i64())?,
            a: addresses(column("a", &self.a, n, |r| r.opt_i64())?),
            ta: column("ta", &self.ta, n, |r| r.opt_i64())?,
            tr: column("tr", &self.tr, n, |r| r.opt_i64())?,
            d: column("d", &self.d, n, |r| r.unsigned())?,
            th: column("th", &self.th, n, |r| r.unsigned())?,
            k: column("k", &self.k, n, |r| r.unsigned())?,
            s: column("s", &self.s, n, |r| r.opt_unsigned())?,
        })
    }
}

impl OpsVlq {
    /// Ops in the record, as it says (for a reader that counts them without decoding).
    pub fn count(&self) -> usize {
        self.n
    }

    /// The text of `c`.
    pub fn from_columns(c: &OpColumns) -> OpsVlq {
        OpsVlq {
            n: c.n.len(),
            name: text(&c.n, |w, n| w.u64(n.into())),
            c: text(&c.c, |w, c| w.u64(c.into())),
            th: text(&c.th, |w, th| w.u64(th.into())),
            s: text(&c.s, Writer::i64),
            d: text(&c.d, Writer::i64),
        }
    }

    /// The columns, every number checked to fit its type.
    pub fn into_columns(self) -> Result<OpColumns, String> {
        let n = self.n;
        Ok(OpColumns {
            n: column("name", &self.name, n, |r| r.unsigned())?,
            c: column("c", &self.c, n, |r| r.unsigned())?,
            th: column("th", &self.th, n, |r| r.unsigned())?,
            s: column("s", &self.s, n, |r| r.i64())?,
            d: column("d", &self.d, n, |r| r.i64())?,
        })
    }
}
