//! Equal strings share one value, and so do equal folded values: a folded dict or list
//! that nothing but the stack and one memo key refers to gives its slot back to the first
//! equal one; any other reference keeps it.

use super::*;
use crate::parse::pickle::{Fold, FoldValue};

/// Folds `{'name': text}` dicts by their text and lists of them by their items, equal ones
/// to one index (as the snapshot reader folds frames and stacks).
#[derive(Default)]
struct Sharer {
    names: Vec<String>,
    lists: Vec<Vec<u32>>,
}

impl Fold for Sharer {
    fn fold(&mut self, p: &Pickle, pairs: &[(NodeId, FoldValue)]) -> Option<u32> {
        let &[(key, value)] = pairs else { return None };
        (p.as_str(key) == Some("name")).then_some(())?;
        let text = p.as_str(value.node()?)?;
        let index = self.names.iter().position(|n| n == text);
        let index = index.unwrap_or_else(|| {
            self.names.push(text.to_owned());
            self.names.len() - 1
        });
        u32::try_from(index).ok()
    }

    fn forget_from(&mut self, _: usize) {}

    fn fold_list(&mut self, p: &Pickle, items: &[NodeId]) -> Option<u32> {
        let folded: Vec<u32> = items.iter().map(|&i| p.folded(i)).collect::<Option<_>>()?;
        let index = self.lists.iter().position(|l| *l == folded);
        let index = index.unwrap_or_else(|| {
            self.lists.push(folded);
            self.lists.len() - 1
        });
        u32::try_from(index).ok()
    }

    fn shares(&self, _: u32) -> bool {
        true
    }

    fn shares_list(&self, _: u32) -> bool {
        true
    }
}

fn shared(bytes: &[u8]) -> Pickle {
    match parse_folding(bytes, bytes.len(), &mut Sharer::default()) {
        Ok(p) => p,
        Err(e) => panic!("{e:?}"),
    }
}

/// `[A, B, C, B, B[0], C[0]]` where A, B and C are each `[{'name': 'f'}]`, built anew (B's
/// dict opcode by opcode, its 'f' a new string; C's dict read whole from the buffer).
const THREE_EQUAL_LISTS: &[u8] = b"\x80\x04]\x94(]\x94}\x94(\x8c\x04name\x94\x8c\x01f\x94ua\
]\x94}\x94(h\x03\x8c\x01f\x94ua]\x94}\x94(h\x03h\x04uah\x05h\x06h\x09e.";

#[test]
fn equal_folded_values_share_the_first_slot() {
    let p = shared(THREE_EQUAL_LISTS);
    let items = p.items(p.root());
    assert_eq!(items.len(), 6);
    let a = items[0];
    assert_eq!(p.folded_list(a), Some(0));
    assert_eq!(&items[1..4], &[a, a, a], "B and C, and B got again, are A");
    assert_eq!(p.folded(items[4]), Some(0));
    assert_eq!(items[5], items[4], "the dicts got again are A's");
    // The shared None, bools and small ints, the root, A, its dict, 'name' and 'f'.
    assert_eq!(p.node_count(), 259 + 5);
}

/// `[A, D, 2**40, D]`: A as above, D = `{'name': 'f'}` memoized twice (keys 5 and 6),
/// then an int (which would take D's id had D given it back), then D got by key 6.
const MEMOIZED_TWICE: &[u8] = b"\x80\x04]\x94(]\x94}\x94(\x8c\x04name\x94\x8c\x01f\x94ua\
}\x94\x94(h\x03h\x04u\x8a\x06\x00\x00\x00\x00\x00\x01h\x06e.";

#[test]
fn a_value_memoized_twice_keeps_its_slot() {
    let p = shared(MEMOIZED_TWICE);
    let items = p.items(p.root());
    assert_eq!(items.len(), 4);
    assert_eq!(p.folded(items[1]), Some(0));
    assert_eq!(p.as_i64(items[2]), Some(1 << 40));
    assert_eq!(items[3], items[1]);
    assert_eq!(p.folded(items[3]), Some(0));
}

/// `[A, D, D, 2**40]`: D duplicated on the stack (`DUP`) before it is filled.
const DUPLICATED: &[u8] = b"\x80\x04]\x94(]\x94}\x94(\x8c\x04name\x94\x8c\x01f\x94ua\
}\x942(h\x03h\x04u\x8a\x06\x00\x00\x00\x00\x00\x01e.";

#[test]
fn a_value_on_the_stack_twice_keeps_its_slot() {
    let p = shared(DUPLICATED);
    let items = p.items(p.root());
    assert_eq!(items.len(), 4);
    assert_eq!(items[1], items[2]);
    assert_eq!(p.folded(items[2]), Some(0));
    assert_eq!(p.as_i64(items[3]), Some(1 << 40));
}

/// `A` as above, then `A.append({'name': 'f'})`: appending to a list read whole is refused.
const APPEND_TO_FOLDED: &[u8] = b"\x80\x04]\x94(]\x94}\x94(\x8c\x04name\x94\x8c\x01f\x94ua\
}\x94(h\x03h\x04uae.";

#[test]
fn appending_to_a_folded_list_is_an_error() {
    let e = match parse_folding(APPEND_TO_FOLDED, 0, &mut Sharer::default()) {
        Ok(_) => panic!("parsed"),
        Err(ReadError::Pickle(e)) => e,
        Err(e) => panic!("{e:?}"),
    };
    assert!(e.message.contains("already read whole"), "{}", e.message);
    assert_eq!(e.offset, 31, "the APPEND");
}
