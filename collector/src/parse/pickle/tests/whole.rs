//! Dicts read whole ([`super::super::fast`]) must give what running their opcodes one by
//! one gives: the same values, shared the same way, the same dicts and lists folded.

use std::collections::HashMap;
use std::fmt::Write;

use super::folding::Recorder;
use super::*;
use crate::parse::pickle::{Fold, NoFold, parse_opcode_by_opcode};

/// Every value reachable from the root, as text: containers numbered in the order first
/// met, and a container met again by its number (so sharing shows); scalars by value.
fn described(p: &Pickle) -> String {
    let mut out = String::new();
    let mut seen = HashMap::new();
    describe(p, p.root(), &mut seen, &mut out);
    out
}

fn describe(p: &Pickle, id: NodeId, seen: &mut HashMap<NodeId, usize>, out: &mut String) {
    let items = match p.node(id) {
        Node::List(items) | Node::Tuple(items) | Node::Set(items) => Some(items),
        Node::Dict(_) => None,
        scalar => {
            let _ = write!(out, "{scalar:?} ");
            return;
        }
    };
    if let Some(number) = seen.get(&id) {
        let _ = write!(out, "#{number} ");
        return;
    }
    let number = seen.len();
    seen.insert(id, number);
    let _ = write!(out, "@{number}:{}[ ", p.type_name(id));
    match items {
        Some(items) => items.iter().for_each(|&i| describe(p, i, seen, out)),
        None => {
            for &(k, v) in p.entries(id) {
                describe(p, k, seen, out);
                out.push_str("= ");
                describe(p, v, seen, out);
            }
        }
    }
    out.push_str("] ");
}

/// `bytes` parsed with dicts read whole and opcode by opcode, each with its own folder.
fn both<F: Fold + Default>(bytes: &[u8]) -> ((Pickle, F), (Pickle, F)) {
    let (mut fast, mut slow) = (F::default(), F::default());
    let whole = parse_folding(bytes, bytes.len(), &mut fast).expect("pickle");
    let one_by_one = parse_opcode_by_opcode(bytes, bytes.len(), &mut slow).expect("pickle");
    ((whole, fast), (one_by_one, slow))
}

const DICTS_READ_WHOLE: &[u8] =
    include_bytes!("../../../../../tests/fixtures/pickle/dicts-read-whole-p4.pickle");

fn samples() -> Vec<Vec<u8>> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut out: Vec<Vec<u8>> = DATA.iter().map(|(_, b)| b.to_vec()).collect();
    out.push(DICTS_READ_WHOLE.to_vec());
    for name in ["basic", "ring", "oom", "graphs", "multi_gpu"] {
        let path = format!("{root}/tests/fixtures/snapshot/{name}.pickle");
        out.push(std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}")));
    }
    let real =
        format!("{root}/../shared/traces/real/snapshot-cs336-magma27/memory_snapshot.pickle");
    out.push(std::fs::read(&real).expect("the real snapshot sample"));
    out
}

#[test]
fn dicts_read_whole_give_the_values_of_their_opcodes() {
    for bytes in samples() {
        let ((whole, _), (one_by_one, _)) = both::<NoFold>(&bytes);
        assert_eq!(described(&whole), described(&one_by_one));
        // Nothing is folded: the same values are made, in another order.
        assert_eq!(whole.node_count(), one_by_one.node_count());
    }
}

#[test]
fn dicts_read_whole_fold_as_opcode_by_opcode() {
    for bytes in samples() {
        let ((whole, fast), (one_by_one, slow)) = both::<Recorder>(&bytes);
        assert_eq!(fast.folds, slow.folds);
        assert_eq!(described(&whole), described(&one_by_one));
        // A folded dict read whole makes no slots for its ints.
        assert!(whole.node_count() <= one_by_one.node_count());
    }
}

#[test]
fn every_shape_of_the_fixture_is_read() {
    let ((whole, fast), (one_by_one, _)) = both::<Recorder>(DICTS_READ_WHOLE);
    // The entries and the block dict, whose frames are a list of the frame dict.
    let entries = whole.items(whole.items(whole.root())[0]);
    let folded: Vec<Option<u32>> = entries.iter().map(|&e| whole.folded(e)).collect();
    assert_eq!(
        folded,
        [
            None,
            Some(0),
            Some(1),
            Some(2),
            Some(3),
            Some(4),
            None,
            Some(5),
            None,
            Some(6),
            Some(7)
        ]
    );
    assert_eq!(fast.folds[3][2], r#"Some("frames")=Some("list")"#);
    // The list got again after its entry is the entry's frames list.
    let frames = |p: &Pickle, e: NodeId| p.items(e).to_vec();
    assert_eq!(frames(&whole, entries[6]).len(), 1);
    assert_eq!(
        frames(
            &one_by_one,
            one_by_one.items(one_by_one.items(one_by_one.root())[0])[6]
        )
        .len(),
        1
    );
    // Ints of 64 bits and wider, in folded and unfolded dicts.
    assert_eq!(fast.folds[0][1], r#"Some("addr")=1099511627776"#);
    assert_eq!(fast.folds[6][1], r#"Some("addr")=Some("int")"#);
    assert_eq!(fast.folds[7][1], r#"Some("addr")=-1099511627776"#);
    assert_eq!(fast.folds[7][3], r#"Some("size")=-9223372036854775808"#);
    assert!(whole.node_count() < one_by_one.node_count());
}

/// Damaged copies of the fixture (bytes changed, dropped, inserted, opcodes swapped in):
/// each reads whole as it reads opcode by opcode, or fails with the same error.
#[test]
fn damaged_pickles_read_whole_as_opcode_by_opcode() {
    let opcodes = b"}]\x94(euaK\x8a\x8chjMJN\x88\x89.\x95";
    let mut rng = crate::test_rng::TestRng::new(0x9E37_79B9_7F4A_7C15);
    let mut next = move |below: usize| rng.below(below);
    let base = samples();
    for case in 0..4000 {
        let mut bytes = base[6 + case % (base.len() - 6)].clone();
        for _ in 0..1 + next(3) {
            let at = next(bytes.len());
            match next(4) {
                0 => bytes[at] = next(256) as u8,
                1 => drop(bytes.remove(at)),
                2 => bytes.insert(at, opcodes[next(opcodes.len())]),
                _ => bytes[at] = opcodes[next(opcodes.len())],
            }
        }
        let mut fast = Recorder::default();
        let whole = parse_folding(&bytes[..], bytes.len(), &mut fast);
        let mut slow = Recorder::default();
        let one_by_one = parse_opcode_by_opcode(&bytes[..], bytes.len(), &mut slow);
        match (whole, one_by_one) {
            (Ok(a), Ok(b)) => {
                assert_eq!(described(&a), described(&b), "case {case}");
                assert_eq!(fast.folds, slow.folds, "case {case}");
            }
            (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "case {case}"),
            (a, b) => panic!("case {case}: {:?} vs {:?}", a.err(), b.err()),
        }
    }
}
