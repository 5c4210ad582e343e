//! Tests of the pickle reader: reading every data opcode CPython writes, and refusing
//! everything else.

mod folding;
mod limits;
mod reading;
mod refusing;
mod sharing;
mod whole;

use super::*;
pub(super) use super::{
    Node, NodeId, Pickle, PickleError, PickleErrorKind, ReadError, parse, parse_folding, parse_from,
};

pub(super) const PICKLE_PWNED_PATH: &str = "/tmp/vramscope-pwned";

pub(super) fn parsed(bytes: &[u8]) -> Pickle {
    match parse(bytes) {
        Ok(pickle) => pickle,
        Err(e) => panic!("{e}"),
    }
}

pub(super) fn failure(bytes: &[u8]) -> PickleError {
    match parse(bytes) {
        Ok(pickle) => panic!("parsed, but should not: {:?}", pickle.node(pickle.root())),
        Err(e) => e,
    }
}

pub(super) fn field(p: &Pickle, dict: NodeId, key: &str) -> NodeId {
    p.get(dict, key).unwrap_or_else(|| panic!("no key {key:?}"))
}

pub(super) fn ints(p: &Pickle, list: NodeId) -> Vec<Option<i64>> {
    p.items(list).iter().map(|&id| p.as_i64(id)).collect()
}

/// The fixtures `make_fixtures.py` writes with `pickle.dumps(data(p), protocol=p)`.
pub(super) const DATA: [(u8, &[u8]); 6] = [
    (
        0,
        include_bytes!("../../../../../tests/fixtures/pickle/data-p0.pickle"),
    ),
    (
        1,
        include_bytes!("../../../../../tests/fixtures/pickle/data-p1.pickle"),
    ),
    (
        2,
        include_bytes!("../../../../../tests/fixtures/pickle/data-p2.pickle"),
    ),
    (
        3,
        include_bytes!("../../../../../tests/fixtures/pickle/data-p3.pickle"),
    ),
    (
        4,
        include_bytes!("../../../../../tests/fixtures/pickle/data-p4.pickle"),
    ),
    (
        5,
        include_bytes!("../../../../../tests/fixtures/pickle/data-p5.pickle"),
    ),
];
