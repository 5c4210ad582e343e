//! The reader's own memory per input byte: floods of one-byte opcodes meet a named cap
//! and fail with its name and the byte offset, instead of growing without bound.

use super::super::arena::{Full, room};
use super::super::reader::{MAX_OPEN_MARKS, MAX_STACK_VALUES};
use super::*;

/// `PROTO 2` followed by `body`.
fn protocol_2(body: impl IntoIterator<Item = u8>) -> Vec<u8> {
    let mut bytes = vec![0x80, 2];
    bytes.extend(body);
    bytes
}

#[test]
fn a_flood_of_marks_stops_at_the_cap() {
    // GIVEN one MARK more than the cap
    let flood = protocol_2(std::iter::repeat_n(b'(', MAX_OPEN_MARKS + 1));
    // THEN the read fails at that MARK, naming the cap
    let e = failure(&flood);
    assert_eq!(e.kind, PickleErrorKind::Unsupported);
    assert_eq!(e.offset, 2 + MAX_OPEN_MARKS as u64);
    assert_eq!(
        e.to_string(),
        "unsupported pickle: MARK would open more than 65536 marks at once (MAX_OPEN_MARKS: \
         Python opens one per container it is filling, a snapshot under 10) at byte 65538"
    );
    // and exactly the cap is read: the marks stay open under the value STOP returns
    let mut full = protocol_2(std::iter::repeat_n(b'(', MAX_OPEN_MARKS));
    full.extend(*b"N.");
    let p = parsed(&full);
    assert_eq!(p.node(p.root()), Node::None);
}

#[test]
fn a_flood_of_none_stops_at_the_stack_cap() {
    // GIVEN one None more than the stack holds (None takes no arena slot, only stack)
    let flood = protocol_2(std::iter::repeat_n(b'N', MAX_STACK_VALUES + 1));
    let e = failure(&flood);
    assert_eq!(e.kind, PickleErrorKind::Unsupported);
    assert_eq!(e.offset, 2 + MAX_STACK_VALUES as u64);
    assert_eq!(
        e.to_string(),
        "unsupported pickle: NONE would put more than 1048576 values on the stack at once \
         (MAX_STACK_VALUES: a snapshot keeps a few thousand there) at byte 1048578"
    );
    // Values that make arena slots (empty lists) stop at the same cap.
    let lists = protocol_2(std::iter::repeat_n(b']', MAX_STACK_VALUES + 1));
    let e = failure(&lists);
    assert_eq!(e.offset, 2 + MAX_STACK_VALUES as u64);
    assert!(
        e.message
            .starts_with("unsupported pickle: EMPTY_LIST would put")
    );
    // A tuple of exactly the cap is read.
    let mut tuple = protocol_2([b'(']);
    tuple.extend(std::iter::repeat_n(b'N', MAX_STACK_VALUES));
    tuple.extend(*b"t.");
    let p = parsed(&tuple);
    assert_eq!(p.items(p.root()).len(), MAX_STACK_VALUES);
}

#[test]
fn popped_floods_stay_small() {
    // MARK/POP_MARK and None/POP pairs leave nothing behind: 2 MB of them read.
    let mut pairs = protocol_2([]);
    for _ in 0..(1 << 19) {
        pairs.extend(*b"(1N0");
    }
    pairs.extend(*b"N.");
    let p = parsed(&pairs);
    assert_eq!(p.node(p.root()), Node::None);
    assert_eq!(
        p.node_count(),
        3 + 256,
        "only the shared None, bools and small ints"
    );
}

#[test]
fn growth_the_allocator_refuses_is_an_error() {
    let mut items: Vec<NodeId> = Vec::new();
    assert_eq!(room(&mut items, usize::MAX / 2), Err(Full::Memory));
    assert_eq!(room(&mut items, 16), Ok(()));
    assert!(items.capacity() >= 16);
}
