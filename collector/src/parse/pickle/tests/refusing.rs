//! Refusing code, malformed and hostile input, with offsets.

use super::*;

#[test]
fn refuses_pickles_that_run_code_without_running_them() {
    let cases: [(&[u8], &str, u64); 6] = [
        (
            include_bytes!("../../../../../tests/fixtures/pickle/evil-system-p2.pickle"),
            "GLOBAL imports `posix system`",
            2,
        ),
        (
            include_bytes!("../../../../../tests/fixtures/pickle/evil-system-p4.pickle"),
            "STACK_GLOBAL imports `posix system`",
            43,
        ),
        (
            include_bytes!("../../../../../tests/fixtures/pickle/evil-open-p0.pickle"),
            "GLOBAL imports `io open`",
            0,
        ),
        (
            include_bytes!("../../../../../tests/fixtures/pickle/evil-open-p5.pickle"),
            "STACK_GLOBAL imports `io open`",
            23,
        ),
        (
            include_bytes!("../../../../../tests/fixtures/pickle/evil-builtins-open-p4.pickle"),
            "STACK_GLOBAL imports `builtins open`",
            18,
        ),
        // Protocol 2 has no bytes opcode: Python writes bytes as a call to _codecs.encode.
        (
            include_bytes!("../../../../../tests/fixtures/pickle/bytes-p2.pickle"),
            "GLOBAL imports `_codecs encode`",
            2,
        ),
    ];
    for (bytes, what, offset) in cases {
        let e = failure(bytes);
        assert_eq!(
            (e.kind, e.offset),
            (PickleErrorKind::Refused, offset),
            "{e}"
        );
        let expected = format!(
            "the pickle tries to run code ({what}); it was refused and nothing was executed at byte {offset}"
        );
        assert_eq!(e.to_string(), expected);
    }
    assert!(!std::path::Path::new(PICKLE_PWNED_PATH).exists());
}

#[test]
fn refuses_every_opcode_that_is_not_data() {
    let cases: [(&[u8], &str); 14] = [
        (
            b"\x80\x02NN\x85R.",
            "tries to run code (REDUCE calls a function)",
        ),
        (b"\x80\x02N}b.", "tries to run code (BUILD sets"),
        (
            b"(ios\nsystem\n.",
            "tries to run code (INST imports and calls `os system`)",
        ),
        (b"(N)o.", "tries to run code (OBJ creates"),
        (b"\x80\x02N)\x81.", "tries to run code (NEWOBJ creates"),
        (b"\x80\x04N)}\x92.", "tries to run code (NEWOBJ_EX creates"),
        (
            b"\x80\x04K\x01K\x02\x93.",
            "tries to run code (STACK_GLOBAL imports `? ?`)",
        ),
        (b"\x80\x02\x82\x01.", "refers to objects outside it (EXT1"),
        (
            b"\x80\x02\x83\x01\x00.",
            "refers to objects outside it (EXT2",
        ),
        (
            b"\x80\x02\x84\x01\x00\x00\x00.",
            "refers to objects outside it (EXT4",
        ),
        (b"Pkey\n.", "refers to objects outside it (PERSID"),
        (b"\x80\x02NQ.", "refers to objects outside it (BINPERSID"),
        (
            b"\x80\x05\x97.",
            "refers to objects outside it (NEXT_BUFFER",
        ),
        (
            b"\x80\x05N\x98.",
            "refers to objects outside it (READONLY_BUFFER",
        ),
    ];
    for (bytes, fragment) in cases {
        let e = failure(bytes);
        assert_eq!(e.kind, PickleErrorKind::Refused, "{e}");
        assert!(e.to_string().contains(fragment), "{e}");
    }
    let e = failure(b"cos\nsys");
    assert!(
        e.to_string().contains("GLOBAL imports `os (cut off)`"),
        "{e}"
    );
}

#[test]
fn malformed_input_is_an_error_with_its_offset() {
    use PickleErrorKind::{Malformed, Unsupported};
    let cases: [(&[u8], PickleErrorKind, u64, &str); 20] = [
        (b"\x80\x04a.", Malformed, 2, "APPEND finds too few values on the stack"),
        (b"\x80\x04.", Malformed, 2, "STOP finds too few values on the stack"),
        (b"\x80\x04}K\x01a.", Malformed, 5, "APPEND needs a list below its values, found a dict"),
        (b"\x80\x04]K\x01K\x02s.", Malformed, 7, "SETITEM needs a dict below its values, found a list"),
        (b"\x80\x04](K\x01K\x02u.", Malformed, 8, "SETITEMS needs a dict below its values, found a list"),
        (b"\x80\x04}(K\x01\x90.", Malformed, 6, "ADDITEMS needs a set below its values, found a dict"),
        (b"\x80\x04h\x05.", Malformed, 2, "BINGET asks for memo key 5, which was never stored"),
        (b"\x80\x04j\x00\x00\x01\x00.", Malformed, 2, "LONG_BINGET asks for memo key 65536"),
        (b"g3\n.", Malformed, 0, "GET asks for memo key 3"),
        (b"\x80\x04]e.", Malformed, 3, "APPENDS has no MARK before it"),
        // A MARK hides what is below it, as in Python: the list is out of APPEND's reach.
        (b"\x80\x04](K\x01a.", Malformed, 6, "APPEND finds too few values"),
        (b"\x80\x04}(K\x01u.", Malformed, 6, "SETITEMS has an odd number of keys and values"),
        (b"(K\x01d.", Malformed, 3, "DICT has an odd number"),
        (b"\x80\x04(\x86.", Malformed, 3, "TUPLE2 finds too few values"),
        (b"\x80\x04\xff.", Malformed, 2, "unknown opcode 0xff"),
        (b"\x80\x04\x8b\xff\xff\xff\xff.", Malformed, 2, "LONG4 has a negative length (-1)"),
        (b"Ix\n.", Malformed, 0, "INT has an integer that is not decimal: x"),
        (b"\x80\x06N.", Unsupported, 0, "pickle protocol 6: this reader takes protocols 2 to 5"),
        (b"\x80\x01N.", Unsupported, 0, "pickle protocol 1"),
        (b"\x80\x04\x8a\x11\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01.", Unsupported, 2, "LONG1 holds an integer wider than 128 bits"),
    ];
    for (bytes, kind, offset, fragment) in cases {
        let e = failure(bytes);
        assert_eq!((e.kind, e.offset), (kind, offset), "{e}");
        assert!(e.to_string().contains(fragment), "{e}");
        assert!(
            e.to_string().ends_with(&format!(" at byte {offset}")),
            "{e}"
        );
    }
}

#[test]
fn every_prefix_of_a_valid_pickle_is_an_error() {
    for (protocol, bytes) in DATA {
        for len in 0..bytes.len() {
            let e = failure(&bytes[..len]);
            assert_eq!(
                e.kind,
                PickleErrorKind::Truncated,
                "protocol {protocol}, {len} bytes: {e}"
            );
            assert_eq!(e.offset, len as u64, "{e}");
        }
    }
    let e = failure(b"\x80\x04\x8c\x05ab");
    assert_eq!(
        e.to_string(),
        "the pickle ends early at byte 6 inside SHORT_BINUNICODE at byte 2, whose length \
         field announces 5 bytes where 2 remain"
    );
    let e = failure(b"\x80\x04J\x01\x02");
    assert_eq!(
        e.to_string(),
        "the pickle ends early at byte 5 inside BININT (which starts at byte 2)"
    );
    let e = failure(b"\x80\x04N");
    assert_eq!(
        e.to_string(),
        "the pickle ends early at byte 3 before its STOP opcode"
    );
}

#[test]
fn huge_length_fields_fail_before_allocating() {
    let cases: [(&[u8], &str); 6] = [
        (
            &[
                b"\x80\x05\x8d".as_slice(),
                &(1u64 << 60).to_le_bytes(),
                b"ab.",
            ]
            .concat(),
            "BINUNICODE8",
        ),
        (
            &[b"\x80\x05\x8e".as_slice(), &u64::MAX.to_le_bytes(), b"ab."].concat(),
            "BINBYTES8",
        ),
        (
            &[
                b"\x80\x05\x96".as_slice(),
                &(1u64 << 40).to_le_bytes(),
                b".",
            ]
            .concat(),
            "BYTEARRAY8",
        ),
        (b"\x80\x04X\xff\xff\xff\xffab.", "BINUNICODE"),
        (b"\x80\x04\x8b\xff\xff\xff\x7f.", "LONG4"),
        (
            &[
                b"\x80\x04\x95".as_slice(),
                &(1u64 << 60).to_le_bytes(),
                b"N.",
            ]
            .concat(),
            "FRAME",
        ),
    ];
    for (bytes, opcode) in cases {
        let e = failure(bytes);
        assert_eq!(e.kind, PickleErrorKind::Truncated, "{e}");
        assert!(
            e.to_string()
                .contains(&format!("inside {opcode} at byte 2, whose length field")),
            "{e}"
        );
    }
}

#[test]
fn deep_nesting_needs_no_recursion() {
    const DEPTH: usize = 100_000;
    let mut bytes = b"\x80\x04".to_vec();
    bytes.extend(std::iter::repeat_n(b']', DEPTH));
    bytes.extend(std::iter::repeat_n(b'a', DEPTH - 1));
    bytes.push(b'.');
    let p = parsed(&bytes);
    let (mut depth, mut list) = (1, p.root());
    while let [inner] = p.items(list) {
        (depth, list) = (depth + 1, *inner);
    }
    assert_eq!(depth, DEPTH);
}
