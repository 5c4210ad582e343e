//! Reading what CPython writes.

use super::*;

#[test]
fn reads_numbers_and_shared_lists_cpython_writes_for_every_protocol() {
    for (protocol, bytes) in DATA {
        let p = parsed(bytes);
        let root = p.root();
        let shared = field(&p, root, "shared_a");
        assert_eq!(p.get(root, "shared_b"), Some(shared), "protocol {protocol}");
        let [one, two, three_half] = p.items(shared) else {
            panic!("protocol {protocol}: shared list {:?}", p.node(shared));
        };
        assert_eq!(p.as_i64(*one), Some(1));
        assert_eq!(p.as_str(*two), Some("two"));
        assert_eq!(p.as_f64(*three_half), Some(3.5));

        let narrow = [
            0,
            1,
            -1,
            255,
            256,
            65535,
            65536,
            (1 << 31) - 1,
            -(1 << 31),
            1 << 31,
        ];
        let expected_ints: Vec<Option<i64>> = narrow
            .into_iter()
            .chain([i64::MAX, i64::MIN])
            .map(Some)
            .chain([None; 5]) // 2^63, 2^64-1, -2^63-1, 2^100, -2^100: BigInt, below
            .collect();
        let list = field(&p, root, "ints");
        assert_eq!(ints(&p, list), expected_ints, "protocol {protocol}");
        let wide: Vec<Node> = p.items(list)[12..].iter().map(|&id| p.node(id)).collect();
        let expected_wide = [
            1 << 63,
            (1 << 64) - 1,
            -(1 << 63) - 1,
            1 << 100,
            -(1 << 100),
        ];
        assert_eq!(wide, expected_wide.map(Node::BigInt));
        assert_eq!(p.as_u64(p.items(list)[13]), Some(u64::MAX));
        assert_eq!(p.as_u64(p.items(list)[12]), Some(1 << 63));
        assert_eq!(p.as_u64(p.items(list)[2]), None, "-1 is no u64");

        let floats: Vec<_> = p
            .items(field(&p, root, "floats"))
            .iter()
            .map(|&id| p.as_f64(id))
            .collect();
        assert_eq!(
            floats,
            [Some(0.0), Some(-1.5), Some(1e300), Some(f64::INFINITY)]
        );
    }
}

#[test]
fn reads_text_and_containers_cpython_writes_for_every_protocol() {
    for (protocol, bytes) in DATA {
        let p = parsed(bytes);
        let root = p.root();
        assert_eq!(
            p.as_str(field(&p, root, "text")),
            Some("naïve ☃ 𝄞"),
            "protocol {protocol}"
        );
        assert_eq!(p.as_str(field(&p, root, "empty")), Some(""));
        assert_eq!(p.node(field(&p, root, "none")), Node::None);
        let flags: Vec<_> = p
            .items(field(&p, root, "flags"))
            .iter()
            .map(|&id| p.as_bool(id))
            .collect();
        assert_eq!(flags, [Some(true), Some(false)]);

        let tuples: Vec<Vec<Option<i64>>> = p
            .items(field(&p, root, "tuples"))
            .iter()
            .map(|&t| ints(&p, t))
            .collect();
        let expected: [&[Option<i64>]; 5] = [
            &[],
            &[Some(1)],
            &[Some(1), None],
            &[Some(1), Some(2), Some(3)],
            &[Some(1), Some(2), Some(3), Some(4)],
        ];
        assert_eq!(tuples, expected, "protocol {protocol}");
        for &t in p.items(field(&p, root, "tuples")) {
            assert_eq!(p.type_name(t), "tuple");
        }

        let keyed: Vec<(Option<i64>, Option<&str>)> = p
            .entries(field(&p, root, "int_keys"))
            .iter()
            .map(|&(k, v)| (p.as_i64(k), p.as_str(v)))
            .collect();
        let expected = [
            (Some(1), Some("one")),
            (Some(-2), Some("minus two")),
            (Some(1 << 40), Some("big")),
        ];
        assert_eq!(keyed, expected);

        let bytes_node = p.get(root, "bytes").map(|id| p.node(id));
        let expected_bytes = Node::Bytes(b"\x00\xffabc".as_slice());
        assert_eq!(bytes_node, (protocol >= 3).then_some(expected_bytes));
        let set = p.get(root, "set").map(|id| ints(&p, id));
        assert_eq!(
            set,
            (protocol >= 4).then(|| vec![Some(1), Some(2), Some(3)])
        );
        let frozen = p.get(root, "frozenset").map(|id| ints(&p, id));
        assert_eq!(frozen, (protocol >= 4).then(|| vec![Some(4), Some(5)]));
        let bytearray = p.get(root, "bytearray").map(|id| p.node(id));
        let expected_bytearray = Node::Bytes(b"xy".as_slice());
        assert_eq!(bytearray, (protocol >= 5).then_some(expected_bytearray));
    }
}

#[test]
fn a_list_that_holds_itself_is_one_node() {
    let p = parsed(include_bytes!(
        "../../../../../tests/fixtures/pickle/cycle-p4.pickle"
    ));
    assert_eq!(p.items(p.root()), [p.root()]);
}

#[test]
fn reads_the_real_allocator_snapshot() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/traces/real/snapshot-cs336-magma27/memory_snapshot.pickle"
    );
    let bytes = std::fs::read(path).unwrap_or_else(|e| {
        panic!("the real snapshot sample is missing ({e}); expected at {path}")
    });
    let p = parsed(&bytes);
    let root = p.root();
    let keys: Vec<_> = p.entries(root).iter().map(|&(k, _)| p.as_str(k)).collect();
    let expected = [
        "segments",
        "device_traces",
        "allocator_settings",
        "external_annotations",
    ];
    assert_eq!(keys, expected.map(Some));

    let segments = p.items(field(&p, root, "segments"));
    assert_eq!(segments.len(), 216);
    for &segment in segments {
        let total = p.as_u64(field(&p, segment, "total_size"));
        let blocks = p.items(field(&p, segment, "blocks"));
        let sizes: Option<u64> = blocks.iter().map(|&b| p.as_u64(field(&p, b, "size"))).sum();
        assert_eq!(
            sizes,
            total,
            "segment at {:?}",
            p.as_u64(field(&p, segment, "address"))
        );
        assert_eq!(p.as_bool(field(&p, segment, "is_expandable")), Some(false));
    }
    let first = segments[0];
    assert_eq!(p.as_u64(field(&p, first, "address")), Some(47_294_971_904));
    assert_eq!(p.as_str(field(&p, first, "segment_type")), Some("large"));

    let traces = p.items(field(&p, root, "device_traces"));
    assert_eq!(traces.len(), 1);
    let entries = p.items(traces[0]);
    assert_eq!(entries.len(), 5163);
    let entry = entries[0];
    assert_eq!(p.as_str(field(&p, entry, "action")), Some("alloc"));
    assert_eq!(p.as_i64(field(&p, entry, "size")), Some(25_165_824));
    assert_eq!(
        p.as_i64(field(&p, entry, "time_us")),
        Some(1_776_479_641_085_368)
    );
    let frame = p.items(field(&p, entry, "frames"))[0];
    assert_eq!(p.as_str(field(&p, frame, "name")), Some("forward"));
    assert_eq!(p.as_i64(field(&p, frame, "line")), Some(54));

    let settings = field(&p, root, "allocator_settings");
    assert_eq!(
        p.as_f64(field(&p, settings, "garbage_collection_threshold")),
        Some(0.0)
    );
    assert_eq!(p.as_i64(field(&p, settings, "max_split_size")), Some(-1));
    assert!(p.items(field(&p, root, "external_annotations")).is_empty());
}

#[test]
fn reads_the_rarer_data_opcodes() {
    let cases: [(&[u8], Node<'static>); 16] = [
        (b"S'a\\x41\\n\\'\\101\\q'\n.", Node::Str("aA\n'A\\q")),
        (b"S\"\"\n.", Node::Str("")),
        (b"U\x02\xff\x00.", Node::Bytes(b"\xff\x00".as_slice())),
        (b"T\x02\x00\x00\x00hi.", Node::Str("hi")),
        (
            b"Vcaf\xe9 \\u2603 \\U0001d11e \\ud800\n.",
            Node::Str("café ☃ 𝄞 \u{fffd}"),
        ),
        (b"I01\n.", Node::Bool(true)),
        (b"I00\n.", Node::Bool(false)),
        (b"I-7\n.", Node::Int(-7)),
        (b"L18446744073709551615L\n.", Node::BigInt(u64::MAX.into())),
        (b"Fnan\n0Finf\n.", Node::Float(f64::INFINITY)),
        // A non-minimal LONG1 (17 bytes, top ones redundant sign bytes) still fits.
        (
            b"\x8a\x11\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff.",
            Node::Int(-1),
        ),
        (b"\x8a\x00.", Node::Int(0)),
        (b"\x80\x02K\x01K\x022.", Node::Int(2)),       // DUP
        (b"\x80\x02K\x01(K\x02K\x031.", Node::Int(1)), // POP_MARK
        (b"\x80\x02K\x01(0.", Node::Int(1)),           // POP with nothing above the mark drops it
        (
            b"\x80\x04X\x02\x00\x00\x00\xed\xa0.",
            Node::Str("\u{fffd}\u{fffd}"),
        ),
    ];
    for (bytes, expected) in cases {
        let p = parsed(bytes);
        assert_eq!(p.node(p.root()), expected, "{bytes:?}");
    }
}

#[test]
fn memo_keys_may_be_sparse_or_reused() {
    // PUT 1000000, LONG_BINPUT 2^32-1, MEMOIZE (key = number of keys = 2), then GETs.
    let bytes = b"\x80\x04(K\x07p1000000\nK\x08r\xff\xff\xff\xffK\x09\x94\
                  g1000000\nj\xff\xff\xff\xffh\x02l.";
    let p = parsed(bytes);
    let values: Vec<_> = ints(&p, p.root());
    assert_eq!(values, [7, 8, 9, 7, 8, 9].map(Some));
    // Key 1 first stored sparse, then reached by the dense range, is still one key: MEMOIZE
    // uses the number of keys, as Python's `memo[len(memo)]` does (checked with CPython).
    let bytes = b"\x80\x04(K\x07q\x01K\x08q\x00K\x09\x94h\x01h\x00h\x02\
                  K\x0aq\x01K\x0b\x94h\x01h\x03l.";
    let p = parsed(bytes);
    assert_eq!(
        ints(&p, p.root()),
        [7, 8, 9, 7, 8, 9, 10, 11, 10, 11].map(Some)
    );
}

#[test]
fn containers_filled_in_interleaved_batches_keep_their_items() {
    // Two memoized lists filled one APPEND at a time, alternately, then by APPENDS
    // batches, with a dict filled by SETITEM in between: each moves and grows.
    let mut bytes = b"\x80\x04]\x94]\x94}\x94".to_vec();
    let mut expected: [Vec<i64>; 2] = [vec![], vec![]];
    for i in 0..3000_i64 {
        let list = (i % 2) as u8;
        bytes.extend([b'h', list, b'J']);
        bytes.extend((i as i32).to_le_bytes());
        bytes.extend(b"a0");
        expected[list as usize].push(i);
        if i % 7 == 0 {
            bytes.extend(b"h\x02J");
            bytes.extend((i as i32).to_le_bytes());
            bytes.extend(b"K\x01s0");
        }
        if i % 500 == 0 {
            bytes.extend(b"h\x01(K\x05K\x06e0");
            expected[1].extend([5, 6]);
        }
    }
    bytes.extend(b"h\x00h\x01h\x02\x87.");
    let p = parsed(&bytes);
    let [a, b, d] = p.items(p.root()) else {
        panic!("{:?}", p.node(p.root()));
    };
    let all = |list| -> Vec<i64> { p.items(list).iter().filter_map(|&i| p.as_i64(i)).collect() };
    assert_eq!(all(*a), expected[0]);
    assert_eq!(all(*b), expected[1]);
    assert_eq!(p.entries(*d).len(), 3000 / 7 + 1);
    assert!(p.items.len() <= 4 * 6000 + 64, "{} slots", p.items.len());
}

/// A reader that hands out one byte at a time and fails after `fail_at` bytes.
struct Trickle<'a> {
    bytes: &'a [u8],
    fail_at: usize,
    read: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.read == self.fail_at {
            return Err(io::Error::other("disk on fire"));
        }
        let Some((&b, rest)) = self.bytes.split_first() else {
            return Ok(0);
        };
        let Some(slot) = buf.first_mut() else {
            return Ok(0);
        };
        *slot = b;
        self.bytes = rest;
        self.read += 1;
        Ok(1)
    }
}

#[test]
fn reading_from_a_reader_in_any_pieces_gives_the_same_values_and_errors() {
    let sample = include_bytes!("../../../../../tests/fixtures/pickle/cycle-p4.pickle");
    for (_, bytes) in DATA.iter().chain([&(4, sample.as_slice())]) {
        let whole = parsed(bytes);
        let trickle = Trickle {
            bytes,
            fail_at: usize::MAX,
            read: 0,
        };
        let pieces = parse_from(trickle, 0).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(format!("{whole:?}"), format!("{pieces:?}"));
        for len in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            let trickle = Trickle {
                bytes: &bytes[..len],
                fail_at: usize::MAX,
                read: 0,
            };
            match parse_from(trickle, 0) {
                Err(ReadError::Pickle(e)) => assert_eq!(e, failure(&bytes[..len])),
                other => panic!("{len} bytes: {other:?}"),
            }
        }
        let failing = Trickle {
            bytes,
            fail_at: 5,
            read: 0,
        };
        match parse_from(failing, 0) {
            Err(ReadError::Io { offset, error }) => {
                assert_eq!((offset, error.to_string()), (5, "disk on fire".into()))
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn accessors_answer_none_for_the_wrong_type() {
    let p = parsed(b"\x80\x04}(\x8c\x01aK\x01\x8c\x01aK\x02K\x03K\x04u.");
    let root = p.root();
    assert_eq!(
        p.get(root, "a").and_then(|id| p.as_i64(id)),
        Some(2),
        "the last value wins"
    );
    assert_eq!(p.entries(root).len(), 3);
    assert_eq!(p.get(root, "b"), None);
    let three = p.entries(root)[2].0;
    assert_eq!(
        (p.as_str(three), p.as_bool(three), p.as_f64(three)),
        (None, None, Some(3.0))
    );
    assert!(p.items(root).is_empty() && p.entries(three).is_empty());
    assert_eq!(p.get(three, "a"), None);
    assert_eq!(p.node(NodeId(u32::MAX - 1)), Node::None);
    assert_eq!(p.type_name(root), "dict");
    // None, the bools and the ints 0..=255 come first; the small ints K1..K4 are those, and
    // the two equal strings 'a' are one value.
    assert_eq!(p.entries(root)[0].0, p.entries(root)[1].0);
    assert_eq!(p.node_count(), 3 + 256 + 1 + 1);
}
