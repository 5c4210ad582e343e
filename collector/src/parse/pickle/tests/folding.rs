//! Folding: dicts handed to a consumer as they are completed, read whole from the buffer
//! or opcode by opcode with the same result, and the numbers made for a folded dict
//! dropped only when nothing else can refer to them.

use super::*;
use crate::parse::pickle::{Fold, FoldValue, parse_opcode_by_opcode};

/// Folds every dict with a key `action`, noting each pair as text.
#[derive(Default)]
pub(super) struct Recorder {
    pub(super) folds: Vec<Vec<String>>,
}

impl Fold for Recorder {
    fn fold(&mut self, p: &Pickle, pairs: &[(NodeId, FoldValue)]) -> Option<u32> {
        if !pairs.iter().any(|&(k, _)| p.as_str(k) == Some("action")) {
            return None;
        }
        let text = |v: FoldValue| match (p.fold_i64(v), v.node().and_then(|v| p.as_str(v))) {
            (Some(i), _) => i.to_string(),
            (_, Some(s)) => s.to_owned(),
            _ => format!("{:?}", v.node().map(|v| p.type_name(v))),
        };
        let pair = |&(k, v): &(NodeId, FoldValue)| format!("{:?}={}", p.as_str(k), text(v));
        self.folds.push(pairs.iter().map(pair).collect());
        u32::try_from(self.folds.len() - 1).ok()
    }

    fn forget_from(&mut self, _: usize) {}
}

fn folded(bytes: &[u8]) -> (Pickle, Recorder) {
    let mut recorder = Recorder::default();
    match parse_folding(bytes, bytes.len(), &mut recorder) {
        Ok(p) => (p, recorder),
        Err(e) => panic!("{e:?}"),
    }
}

/// `['action', 'alloc', 'addr', {'action': 'alloc', 'addr': 2**40}, <the same int>]`,
/// the int memoized inside the dict and got again after it.
const MEMOIZED_INT: &[u8] = b"\x80\x04]\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94\
}\x94(h\x01h\x02h\x03\x8a\x06\x00\x00\x00\x00\x00\x01\x94uh\x05e.";

#[test]
fn a_number_memoized_inside_a_folded_dict_is_kept() {
    let (p, recorder) = folded(MEMOIZED_INT);
    let items = p.items(p.root());
    assert_eq!(items.len(), 5);
    assert_eq!(p.folded(items[3]), Some(0));
    assert_eq!(p.as_i64(items[4]), Some(1 << 40));
    assert_eq!(
        recorder.folds,
        [[r#"Some("action")=alloc"#, r#"Some("addr")=1099511627776"#]]
    );
}

/// `['action', 'free', D, 7 * 10**12, D]` with `D = {'action': 'free'}`: the dict made,
/// an int pushed over it, the dict got again and filled. The int is newer than the dict
/// but below it on the stack: it must survive the fold.
const REPUSHED_DICT: &[u8] = b"\x80\x04]\x94(\x8c\x06action\x94\x8c\x04free\x94}\x94\
\x8a\x06\x00p\x83\xd0]\x06h\x03(h\x01h\x02ue.";

#[test]
fn values_below_a_dict_got_again_survive_its_fold() {
    let (p, recorder) = folded(REPUSHED_DICT);
    assert_eq!(recorder.folds, [[r#"Some("action")=free"#]]);
    let items = p.items(p.root());
    assert_eq!(items.len(), 5);
    assert_eq!(p.folded(items[2]), Some(0));
    assert_eq!(p.as_i64(items[3]), Some(7_000_000_000_000));
    assert_eq!(items[4], items[2]);
}

/// `['action', 'alloc', {'action': <a new 'alloc'>}, <that one got again>]`: the dict's
/// value a string whose text was made before, memoized after the dict.
const KNOWN_TEXT_MEMOIZED: &[u8] = b"\x80\x04]\x94(\x8c\x06action\x94\x8c\x05alloc\x94}\x94\
(h\x01\x8c\x05alloc\x94uh\x04e.";

#[test]
fn a_string_memoized_inside_a_dict_read_whole_is_got_again() {
    let (p, recorder) = folded(KNOWN_TEXT_MEMOIZED);
    assert_eq!(recorder.folds, [[r#"Some("action")=alloc"#]]);
    let items = p.items(p.root());
    assert_eq!(items.len(), 4);
    assert_eq!(p.folded(items[2]), Some(0));
    assert_eq!(p.as_str(items[3]), Some("alloc"));
    // Equal texts share the first string's value.
    assert_eq!(items[3], items[1]);
    let mut slow = Recorder::default();
    let bytes = KNOWN_TEXT_MEMOIZED;
    let one_by_one = parse_opcode_by_opcode(bytes, bytes.len(), &mut slow).expect("pickle");
    assert_eq!(slow.folds, recorder.folds);
    assert_eq!(one_by_one.items(one_by_one.root()), items);
}
