//! A safe reader for Python pickles that hold data only, such as the PyTorch CUDA allocator
//! snapshots written by `torch.cuda.memory._dump_snapshot`.
//!
//! Why not a general unpickler: a pickle is a program for a small stack machine, and the
//! opcodes that import (`GLOBAL`, `STACK_GLOBAL`) and call (`REDUCE`, `BUILD`, `OBJ`, ...)
//! let a file run any code on the reader's machine. Snapshots need none of them (only dict,
//! list, tuple, str, int, float, bool and None), so this reader builds those values and
//! refuses every opcode that imports, calls or refers to objects outside the file. Nothing
//! in a file is ever executed.
//!
//! Values live in an arena ([`Pickle`]) and refer to each other by [`NodeId`], because
//! pickles share objects through the memo: a snapshot references the same frame dicts and
//! frame lists thousands of times, and a memoized list is filled by `APPENDS` *after* it
//! was memoized, so copying a value when it is memoized would be wrong. Sharing an id is
//! right and costs nothing. The graph may contain cycles (a list that holds itself), so a
//! consumer walking it recursively must bound its depth.
//!
//! The arena makes no allocation per value: each value is a 16-byte slot; the text of every
//! `str` lives in one pooled `String` (bytes likewise), the elements of every list, tuple
//! and set in one flat array and the pairs of every dict in another, each container owning
//! a range of it. A container filled in several batches (`APPENDS` of 1000 items at a time,
//! interleaved with the batches of the containers inside it) grows in place while it is
//! the last range, and otherwise moves to the end with twice the room, so filling is
//! amortized linear and the arrays stay within a small multiple of the items. Ints in
//! `0..=255` are made once and shared, as Python does.
//!
//! The reader is iterative (no recursion on nesting depth), checks every length field
//! against the remaining input before allocating, and reports every problem with the byte
//! offset of the opcode that caused it. Memory stays proportional to the input: each
//! opcode byte adds at most one 16-byte slot, one stack slot and a few container slots
//! (snapshots need about 2x their size in all). The input itself is read through a small
//! reused buffer ([`parse_from`]), never held whole. Measured (release, shared 2-core VM):
//! `vramscope summary` of a synthetic 109 MB snapshot of 1M trace entries, parse included,
//! takes 1.1-1.6 s of CPU and 286 MB peak RSS.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read};

/// Index of a value in a [`Pickle`]'s arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeId(u32);

impl NodeId {
    /// The position of the value in the arena: stable and dense, so callers can keep
    /// per-node caches in a `Vec` (for example, frames converted once per shared dict).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One Python value, as [`Pickle::node`] shows it. Containers hold ids into the same
/// [`Pickle`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Node<'p> {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An `int` that fits in 64 bits.
    Int(i64),
    /// An `int` outside the 64-bit range that fits in 128 bits (allocator addresses above
    /// 2^63 land here). Wider integers are refused with an error: no snapshot has them.
    BigInt(i128),
    /// A `float`.
    Float(f64),
    /// A `str`. Python strings may hold lone surrogates, which UTF-8 cannot: such code
    /// points (and any invalid UTF-8) become U+FFFD. A Python 2 `str` (`STRING`,
    /// `BINSTRING`) that is valid UTF-8 is a `Str` too, otherwise [`Node::Bytes`].
    Str(&'p str),
    /// A `bytes` or a `bytearray`.
    Bytes(&'p [u8]),
    /// A `list`.
    List(&'p [NodeId]),
    /// A `tuple`.
    Tuple(&'p [NodeId]),
    /// A `dict`: every key/value pair in the order the file set them. A key set twice
    /// appears twice; [`Pickle::get`] returns the last, which is what Python keeps.
    Dict(&'p [(NodeId, NodeId)]),
    /// A `set` or a `frozenset`, in file order.
    Set(&'p [NodeId]),
}

impl Node<'_> {
    /// The Python type name, for messages such as "expected a list, found a dict".
    pub fn type_name(&self) -> &'static str {
        match self {
            Node::None => "None",
            Node::Bool(_) => "bool",
            Node::Int(_) | Node::BigInt(_) => "int",
            Node::Float(_) => "float",
            Node::Str(_) => "str",
            Node::Bytes(_) => "bytes",
            Node::List(_) => "list",
            Node::Tuple(_) => "tuple",
            Node::Dict(_) => "dict",
            Node::Set(_) => "set",
        }
    }
}

/// A container's elements: the first `len` of the `cap` slots reserved at `start` of its
/// flat array ([`Pickle::items`] or [`Pickle::pairs`]). Reserved ranges never overlap;
/// slots past `len` hold a filler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seq {
    start: u32,
    len: u32,
    cap: u32,
}

impl Seq {
    fn range(self) -> std::ops::Range<usize> {
        let start = self.start as usize;
        start..start + self.len as usize
    }
}

/// One value in the arena: 16 bytes, no heap allocation of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot {
    None,
    Bool(bool),
    Int(i64),
    /// Index into [`Pickle::bigints`].
    BigInt(u32),
    Float(f64),
    /// `text[start..start + len]`.
    Str {
        start: u64,
        len: u32,
    },
    /// A `str` of 4 GiB or more: index into [`Pickle::long`], a range of `text`.
    LongStr(u32),
    /// `blobs[start..start + len]`.
    Bytes {
        start: u64,
        len: u32,
    },
    /// A `bytes` of 4 GiB or more: index into [`Pickle::long`], a range of `blobs`.
    LongBytes(u32),
    List(Seq),
    Tuple(Seq),
    Set(Seq),
    Dict(Seq),
}

const _: () = assert!(std::mem::size_of::<Slot>() == 16);

impl Slot {
    fn type_name(self) -> &'static str {
        match self {
            Slot::None => "None",
            Slot::Bool(_) => "bool",
            Slot::Int(_) | Slot::BigInt(_) => "int",
            Slot::Float(_) => "float",
            Slot::Str { .. } | Slot::LongStr(_) => "str",
            Slot::Bytes { .. } | Slot::LongBytes(_) => "bytes",
            Slot::List(_) => "list",
            Slot::Tuple(_) => "tuple",
            Slot::Dict(_) => "dict",
            Slot::Set(_) => "set",
        }
    }
}

/// A parsed pickle: every value in one arena, and the value the pickle returns.
#[derive(Clone, Debug)]
pub struct Pickle {
    nodes: Vec<Slot>,
    /// The elements of every list, tuple and set.
    items: Vec<NodeId>,
    /// The key/value pairs of every dict.
    pairs: Vec<(NodeId, NodeId)>,
    /// The text of every `str`.
    text: String,
    /// The content of every `bytes`.
    blobs: Vec<u8>,
    /// Ints outside the 64-bit range.
    bigints: Vec<i128>,
    /// Ranges of `text` or `blobs` too long for a slot.
    long: Vec<(usize, usize)>,
    root: NodeId,
}

impl Pickle {
    /// The value the pickle returns (the one on the stack at `STOP`).
    pub fn root(&self) -> NodeId {
        self.root
    }

    fn slot(&self, id: NodeId) -> Slot {
        self.nodes.get(id.index()).copied().unwrap_or(Slot::None)
    }

    /// The value `id` refers to. An id from another [`Pickle`] that is out of range
    /// answers `None` rather than panicking.
    pub fn node(&self, id: NodeId) -> Node<'_> {
        match self.slot(id) {
            Slot::None => Node::None,
            Slot::Bool(b) => Node::Bool(b),
            Slot::Int(i) => Node::Int(i),
            Slot::BigInt(i) => self
                .bigints
                .get(i as usize)
                .map_or(Node::None, |&i| Node::BigInt(i)),
            Slot::Float(f) => Node::Float(f),
            Slot::Str { .. } | Slot::LongStr(_) => self.as_str(id).map_or(Node::None, Node::Str),
            Slot::Bytes { start, len } => self
                .blobs
                .get(span(start, len))
                .map_or(Node::None, Node::Bytes),
            Slot::LongBytes(i) => self
                .long
                .get(i as usize)
                .and_then(|&(a, b)| self.blobs.get(a..b))
                .map_or(Node::None, Node::Bytes),
            Slot::List(_) => Node::List(self.items(id)),
            Slot::Tuple(_) => Node::Tuple(self.items(id)),
            Slot::Set(_) => Node::Set(self.items(id)),
            Slot::Dict(_) => Node::Dict(self.entries(id)),
        }
    }

    /// How many values the arena holds (shared values count once, and so do `None`,
    /// the bools and the ints `0..=255`, which are made once).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The Python type name of `id`'s value.
    pub fn type_name(&self, id: NodeId) -> &'static str {
        self.slot(id).type_name()
    }

    /// The value under string key `key` of dict `dict`; `None` when `dict` is not a dict
    /// or has no such key. A linear scan: snapshot dicts have a dozen keys at most.
    pub fn get(&self, dict: NodeId, key: &str) -> Option<NodeId> {
        let entries = self.entries(dict).iter().rev();
        entries
            .filter(|(k, _)| self.as_str(*k) == Some(key))
            .map(|&(_, value)| value)
            .next()
    }

    /// The text of a `str`.
    pub fn as_str(&self, id: NodeId) -> Option<&str> {
        match self.slot(id) {
            Slot::Str { start, len } => self.text.get(span(start, len)),
            Slot::LongStr(i) => {
                let &(a, b) = self.long.get(i as usize)?;
                self.text.get(a..b)
            }
            _ => None,
        }
    }

    fn big(&self, i: u32) -> Option<i128> {
        self.bigints.get(i as usize).copied()
    }

    /// An `int` that fits in `i64`. A `bool` is not an int here.
    pub fn as_i64(&self, id: NodeId) -> Option<i64> {
        match self.slot(id) {
            Slot::Int(i) => Some(i),
            Slot::BigInt(i) => i64::try_from(self.big(i)?).ok(),
            _ => None,
        }
    }

    /// An `int` in `0..=u64::MAX`: device addresses and sizes, which may exceed `i64`.
    pub fn as_u64(&self, id: NodeId) -> Option<u64> {
        match self.slot(id) {
            Slot::Int(i) => u64::try_from(i).ok(),
            Slot::BigInt(i) => u64::try_from(self.big(i)?).ok(),
            _ => None,
        }
    }

    /// A `float`, or an `int` converted to the nearest `f64`.
    pub fn as_f64(&self, id: NodeId) -> Option<f64> {
        match self.slot(id) {
            Slot::Float(f) => Some(f),
            Slot::Int(i) => Some(i as f64),
            Slot::BigInt(i) => Some(self.big(i)? as f64),
            _ => None,
        }
    }

    /// A `bool`.
    pub fn as_bool(&self, id: NodeId) -> Option<bool> {
        match self.slot(id) {
            Slot::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The elements of a list, tuple or set; empty for any other value.
    pub fn items(&self, id: NodeId) -> &[NodeId] {
        match self.slot(id) {
            Slot::List(seq) | Slot::Tuple(seq) | Slot::Set(seq) => {
                self.items.get(seq.range()).unwrap_or_default()
            }
            _ => &[],
        }
    }

    /// The key/value pairs of a dict in file order; empty for any other value.
    pub fn entries(&self, id: NodeId) -> &[(NodeId, NodeId)] {
        match self.slot(id) {
            Slot::Dict(seq) => self.pairs.get(seq.range()).unwrap_or_default(),
            _ => &[],
        }
    }
}

impl Pickle {
    /// The slot of a new `str`, its text copied into the pool.
    fn add_str(&mut self, text: &str) -> Slot {
        let start = self.text.len();
        self.text.push_str(text);
        match u32::try_from(text.len()) {
            Ok(len) => Slot::Str {
                start: start as u64,
                len,
            },
            Err(_) => {
                // At most 4 of these fit in the 16 GiB an input may hold.
                let index = u32::try_from(self.long.len()).unwrap_or(u32::MAX);
                self.long.push((start, self.text.len()));
                Slot::LongStr(index)
            }
        }
    }

    /// The slot of a new `bytes`, copied into the pool.
    fn add_bytes(&mut self, bytes: &[u8]) -> Slot {
        let start = self.blobs.len();
        self.blobs.extend_from_slice(bytes);
        match u32::try_from(bytes.len()) {
            Ok(len) => Slot::Bytes {
                start: start as u64,
                len,
            },
            Err(_) => {
                let index = u32::try_from(self.long.len()).unwrap_or(u32::MAX);
                self.long.push((start, self.blobs.len()));
                Slot::LongBytes(index)
            }
        }
    }

    /// The slot of a Python 2 `str`: text when it is UTF-8 (Python 3 reads it as ASCII by
    /// default), else the bytes.
    fn add_legacy(&mut self, bytes: &[u8]) -> Slot {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.add_str(text),
            Err(_) => self.add_bytes(bytes),
        }
    }
}

/// The range of a pool that a slot's `start` and `len` name.
fn span(start: u64, len: u32) -> std::ops::Range<usize> {
    let start = start as usize;
    start..start.saturating_add(len as usize)
}

/// The kind of a [`PickleError`], for callers that map it onto their own errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickleErrorKind {
    /// The input ends before `STOP`, or a length field announces more than remains.
    Truncated,
    /// The file tries to run code or refers to objects outside it; nothing was executed.
    Refused,
    /// A protocol, or a value, this reader does not take.
    Unsupported,
    /// The bytes are not a valid pickle (unknown opcode, stack underflow, bad memo key...).
    Malformed,
}

/// Why a pickle could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickleError {
    /// For [`PickleErrorKind::Truncated`], where the input ends; otherwise the offset of
    /// the opcode at fault.
    pub offset: u64,
    /// The kind of failure.
    pub kind: PickleErrorKind,
    /// What went wrong, without the offset. For `Truncated` it says where the input ends
    /// ("inside BINUNICODE", "before its STOP opcode").
    pub message: String,
}

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            PickleErrorKind::Truncated => write!(
                f,
                "the pickle ends early at byte {} {}",
                self.offset, self.message
            ),
            _ => write!(f, "{} at byte {}", self.message, self.offset),
        }
    }
}

impl std::error::Error for PickleError {}

/// Read a data-only pickle of protocol 2 to 5 (protocol 0 and 1 streams, which have no
/// `PROTO` opcode, read too). Bytes after `STOP` are ignored, as Python does.
pub fn parse(bytes: &[u8]) -> Result<Pickle, PickleError> {
    match parse_from(bytes, bytes.len()) {
        Ok(pickle) => Ok(pickle),
        Err(ReadError::Pickle(e)) => Err(e),
        // A slice never fails to read; should it, say so as a truncation.
        Err(ReadError::Io { offset, error }) => Err(PickleError {
            offset,
            kind: PickleErrorKind::Truncated,
            message: error.to_string(),
        }),
    }
}

/// Why [`parse_from`] could not read a pickle.
#[derive(Debug)]
pub enum ReadError {
    /// The bytes are not a pickle this reader takes.
    Pickle(PickleError),
    /// The reader failed after `offset` bytes.
    Io {
        /// Bytes read before the failure.
        offset: u64,
        /// The reader's error.
        error: io::Error,
    },
}

/// [`parse`] from a reader, through a small reused buffer rather than the whole input in
/// memory (a long string or line is buffered whole). Reading stops at `STOP`: what
/// follows stays in the buffer or the reader. `size_hint`, the expected input size, only
/// sizes the arena up front.
pub fn parse_from(reader: impl Read, size_hint: usize) -> Result<Pickle, ReadError> {
    let mut parser = Parser::new(reader, size_hint);
    match parser.run() {
        Ok(()) => Ok(parser.p),
        Err(e) => Err(match parser.io_error.take() {
            Some(error) => ReadError::Io {
                offset: parser.base + parser.filled as u64,
                error,
            },
            None => ReadError::Pickle(e),
        }),
    }
}

/// Opcode values, from CPython's `Lib/pickle.py` (checked against `pickletools.opcodes`).
mod op {
    /// Defines each opcode constant and `name`, which gives `pickletools`' name of a byte.
    macro_rules! opcodes {
        ($($name:ident = $code:expr;)*) => {
            $(pub const $name: u8 = $code;)*

            /// The name `pickletools` gives `code`, for messages.
            pub fn name(code: u8) -> &'static str {
                match code {
                    $($name => stringify!($name),)*
                    _ => "an unknown opcode",
                }
            }
        };
    }

    opcodes! {
        // Protocols 0 and 1.
        MARK = b'('; STOP = b'.'; POP = b'0'; POP_MARK = b'1'; DUP = b'2'; FLOAT = b'F';
        INT = b'I'; BININT = b'J'; BININT1 = b'K'; LONG = b'L'; BININT2 = b'M'; NONE = b'N';
        PERSID = b'P'; BINPERSID = b'Q'; REDUCE = b'R'; STRING = b'S'; BINSTRING = b'T';
        SHORT_BINSTRING = b'U'; UNICODE = b'V'; BINUNICODE = b'X'; APPEND = b'a';
        BUILD = b'b'; GLOBAL = b'c'; DICT = b'd'; EMPTY_DICT = b'}'; APPENDS = b'e';
        GET = b'g'; BINGET = b'h'; INST = b'i'; LONG_BINGET = b'j'; LIST = b'l';
        EMPTY_LIST = b']'; OBJ = b'o'; PUT = b'p'; BINPUT = b'q'; LONG_BINPUT = b'r';
        SETITEM = b's'; TUPLE = b't'; EMPTY_TUPLE = b')'; SETITEMS = b'u'; BINFLOAT = b'G';
        // Protocol 2.
        PROTO = 0x80; NEWOBJ = 0x81; EXT1 = 0x82; EXT2 = 0x83; EXT4 = 0x84; TUPLE1 = 0x85;
        TUPLE2 = 0x86; TUPLE3 = 0x87; NEWTRUE = 0x88; NEWFALSE = 0x89; LONG1 = 0x8a;
        LONG4 = 0x8b;
        // Protocol 3.
        BINBYTES = b'B'; SHORT_BINBYTES = b'C';
        // Protocol 4.
        SHORT_BINUNICODE = 0x8c; BINUNICODE8 = 0x8d; BINBYTES8 = 0x8e; EMPTY_SET = 0x8f;
        ADDITEMS = 0x90; FROZENSET = 0x91; NEWOBJ_EX = 0x92; STACK_GLOBAL = 0x93;
        MEMOIZE = 0x94; FRAME = 0x95;
        // Protocol 5.
        BYTEARRAY8 = 0x96; NEXT_BUFFER = 0x97; READONLY_BUFFER = 0x98;
    }
}

/// `None`, `False` and `True` are made once, at these ids, and shared by every use; so are
/// the ints `0..=255`, at `SMALL_INTS + value`.
const NONE_ID: NodeId = NodeId(0);
const FALSE_ID: NodeId = NodeId(1);
const TRUE_ID: NodeId = NodeId(2);
const SMALL_INTS: u32 = 3;

/// Bytes read from the input at a time (the buffer grows only for a longer argument).
const READ_CHUNK: usize = 256 << 10;

/// Input size beyond which `size_hint` no longer sizes the arena up front (it regrows).
const MAX_RESERVED_INPUT: usize = 1 << 30;

/// Arena slots reserved per input byte. Snapshots make about one node per 20 bytes (the
/// 495 KB sample: 41 k nodes, before small ints were shared); reserving for one per 16
/// bytes avoids most regrowth without over-committing for pickles that are mostly long
/// strings.
const INPUT_BYTES_PER_NODE: usize = 16;

/// How much of a refused module or attribute name a message shows.
const SHOWN_NAME_BYTES: usize = 80;

type Res<T> = Result<T, PickleError>;

/// The pickle machine's state. `stack` is one flat stack; `marks` hold the stack lengths
/// at each `MARK`, and `floor` (the last mark) keeps opcodes from reaching below it, as
/// Python's separate per-mark stacks do.
struct Parser<R> {
    reader: R,
    /// A window of the input: `data[..filled]` holds the bytes from offset `base` on,
    /// `pos` is the next unread one. `data` is initialized up to its length.
    data: Vec<u8>,
    filled: usize,
    pos: usize,
    base: u64,
    /// The reader has no more bytes (or failed, with `io_error`).
    eof: bool,
    io_error: Option<io::Error>,
    /// Offset and byte of the opcode being run, for messages.
    op_start: u64,
    op: u8,
    /// The arena being built (its `root` is set at `STOP`).
    p: Pickle,
    stack: Vec<NodeId>,
    marks: Vec<usize>,
    floor: usize,
    /// Memo keys `0..memo.len()`: `MEMOIZE` and pickles from Python fill them densely.
    memo: Vec<NodeId>,
    /// Memo keys above the dense range (hand-written `PUT`s), so a large key cannot make
    /// us allocate a huge vector. std's randomly seeded hasher, not Fx: the keys come from
    /// the file, and chosen colliding keys must not make inserts quadratic. Python's own
    /// pickles never get here.
    sparse_memo: HashMap<u64, NodeId>,
}

impl<R: Read> Parser<R> {
    fn new(reader: R, size_hint: usize) -> Parser<R> {
        let slots = size_hint.min(MAX_RESERVED_INPUT) / INPUT_BYTES_PER_NODE;
        let mut nodes = Vec::with_capacity(SMALL_INTS as usize + 256 + slots);
        nodes.extend([Slot::None, Slot::Bool(false), Slot::Bool(true)]);
        nodes.extend((0..256).map(Slot::Int));
        let p = Pickle {
            nodes,
            items: Vec::with_capacity(slots / 4),
            pairs: Vec::with_capacity(slots),
            text: String::new(),
            blobs: Vec::new(),
            bigints: Vec::new(),
            long: Vec::new(),
            root: NONE_ID,
        };
        Parser {
            reader,
            data: Vec::new(),
            filled: 0,
            pos: 0,
            base: 0,
            eof: false,
            io_error: None,
            op_start: 0,
            op: 0,
            p,
            stack: Vec::with_capacity(64),
            marks: Vec::with_capacity(16),
            floor: 0,
            memo: Vec::with_capacity(slots / 2),
            sparse_memo: HashMap::new(),
        }
    }

    /// Runs the opcodes up to `STOP`, which sets the root.
    fn run(&mut self) -> Res<()> {
        loop {
            self.op_start = self.base + self.pos as u64;
            let code = match self.data.get(self.pos) {
                Some(&code) if self.pos < self.filled => code,
                _ => {
                    if !self.fill(1)? {
                        return Err(self.truncated("before its STOP opcode".into()));
                    }
                    self.data.get(self.pos).copied().unwrap_or_default()
                }
            };
            self.op = code;
            self.pos += 1;
            if code == op::STOP {
                self.p.root = self.pop()?;
                return Ok(());
            }
            self.step(code)?;
        }
    }

    /// Makes `n` unread bytes available, reading more of the input as needed; false when
    /// the input ends first (everything up to its end is then buffered). The buffer grows
    /// only while it is full of unread bytes, so it stays within about twice the input.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, n: usize) -> Res<bool> {
        while self.filled - self.pos < n {
            if self.eof {
                return Ok(false);
            }
            if self.data.len() - self.filled < READ_CHUNK / 2 {
                // Move the unread bytes to the front, then grow if they still fill it.
                self.data.copy_within(self.pos..self.filled, 0);
                self.base += self.pos as u64;
                self.filled -= self.pos;
                self.pos = 0;
                if self.data.len() - self.filled < READ_CHUNK / 2 {
                    let len = (self.data.len() * 2).max(self.filled + READ_CHUNK);
                    self.data.resize(len, 0);
                }
            }
            let room = self.data.get_mut(self.filled..).unwrap_or_default();
            match self.reader.read(room) {
                Ok(0) => self.eof = true,
                Ok(read) => self.filled += read.min(room.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.eof = true;
                    self.io_error = Some(e);
                    return Err(self.truncated("where the reader failed".into()));
                }
            }
        }
        Ok(true)
    }

    /// Run one opcode other than `STOP`; its argument bytes follow `self.pos`.
    fn step(&mut self, code: u8) -> Res<()> {
        match code {
            op::BINGET | op::LONG_BINGET | op::BINPUT | op::LONG_BINPUT => self.binary_memo(code),
            op::MEMOIZE => self.put((self.memo.len() + self.sparse_memo.len()) as u64),
            op::EMPTY_DICT => self.push(Slot::Dict(empty(&self.p.pairs))),
            op::EMPTY_LIST => self.push(Slot::List(empty(&self.p.items))),
            op::MARK => {
                self.marks.push(self.stack.len());
                self.floor = self.stack.len();
                Ok(())
            }
            op::SETITEMS => self.setitems(),
            op::APPENDS => self.appends(),
            op::SHORT_BINUNICODE => self.unicode(1),
            op::BINUNICODE => self.unicode(4),
            op::BINUNICODE8 => self.unicode(8),
            op::BININT1 | op::BININT2 | op::BININT | op::BINFLOAT => self.binary_scalar(code),
            op::LONG1 => self.binary_long(1),
            op::LONG4 => self.binary_long(4),
            op::NONE => self.push_id(NONE_ID),
            op::NEWTRUE => self.push_id(TRUE_ID),
            op::NEWFALSE => self.push_id(FALSE_ID),
            op::APPEND => self.append(),
            op::SETITEM => self.setitem(),
            op::EMPTY_TUPLE => self.push(Slot::Tuple(empty(&self.p.items))),
            op::TUPLE1 => self.tuple_of(1),
            op::TUPLE2 => self.tuple_of(2),
            op::TUPLE3 => self.tuple_of(3),
            op::TUPLE => {
                let base = self.pop_mark()?;
                self.collect(base, Slot::Tuple)
            }
            op::LIST => {
                let base = self.pop_mark()?;
                self.collect(base, Slot::List)
            }
            op::DICT => self.dict(),
            op::EMPTY_SET => self.push(Slot::Set(empty(&self.p.items))),
            op::ADDITEMS => self.additems(),
            op::FROZENSET => {
                let base = self.pop_mark()?;
                self.collect(base, Slot::Set)
            }
            op::SHORT_BINBYTES => self.bytes(1),
            op::BINBYTES => self.bytes(4),
            op::BINBYTES8 | op::BYTEARRAY8 => self.bytes(8),
            op::SHORT_BINSTRING => self.binary_string(1),
            op::BINSTRING => self.binary_string(4),
            op::INT | op::LONG => self.text_int(),
            op::FLOAT => self.text_float(),
            op::STRING => self.quoted_string(),
            op::UNICODE => {
                let line = self.line()?;
                let line = line.as_slice();
                let text = raw_unicode_escape(line);
                self.push_str(&text)
            }
            op::PUT => {
                let key = self.text_memo_key()?;
                self.put(key)
            }
            op::GET => {
                let key = self.text_memo_key()?;
                self.get(key)
            }
            op::POP => self.pop_item_or_mark(),
            op::POP_MARK => self.pop_mark().map(|base| self.stack.truncate(base)),
            op::DUP => {
                let top = self.top()?;
                self.push_id(top)
            }
            op::FRAME => self.frame(),
            op::PROTO => self.proto(),
            _ => Err(self.refuse(code)),
        }
    }

    /// `BINGET`, `LONG_BINGET`, `BINPUT`, `LONG_BINPUT`: a 1- or 4-byte memo key.
    fn binary_memo(&mut self, code: u8) -> Res<()> {
        let key = if code == op::BINGET || code == op::BINPUT {
            u64::from(self.array::<1>()?[0])
        } else {
            u32::from_le_bytes(self.array()?).into()
        };
        if code == op::BINGET || code == op::LONG_BINGET {
            self.get(key)
        } else {
            self.put(key)
        }
    }

    /// `BININT1`, `BININT2`, `BININT`, `BINFLOAT`: fixed-width numbers.
    fn binary_scalar(&mut self, code: u8) -> Res<()> {
        match code {
            op::BININT1 => {
                let small = self.array::<1>()?[0];
                self.push_id(NodeId(SMALL_INTS + u32::from(small)))
            }
            op::BININT2 => {
                let int = u16::from_le_bytes(self.array()?);
                self.push_int(int.into())
            }
            op::BININT => {
                let int = i32::from_le_bytes(self.array()?);
                self.push_int(int.into())
            }
            _ => {
                let float = f64::from_be_bytes(self.array()?);
                self.push(Slot::Float(float))
            }
        }
    }

    // ---- Reading argument bytes ----

    /// Where the next `n` bytes are in `data`; an error when fewer remain. Valid until the
    /// next read.
    fn take(&mut self, n: usize) -> Res<std::ops::Range<usize>> {
        if self.filled - self.pos < n && !self.fill(n)? {
            return Err(self.ends_inside());
        }
        let start = self.pos;
        self.pos += n;
        Ok(start..self.pos)
    }

    fn array<const N: usize>(&mut self) -> Res<[u8; N]> {
        if self.filled - self.pos < N && !self.fill(N)? {
            return Err(self.ends_inside());
        }
        let rest = self.data.get(self.pos..self.filled).unwrap_or_default();
        match rest.first_chunk::<N>() {
            Some(bytes) => {
                self.pos += N;
                Ok(*bytes)
            }
            None => Err(self.ends_inside()),
        }
    }

    /// A little-endian unsigned length field of `width` bytes, checked against the input.
    fn length(&mut self, width: usize) -> Res<usize> {
        let claimed = match width {
            1 => u64::from(self.array::<1>()?[0]),
            4 => u32::from_le_bytes(self.array()?).into(),
            _ => u64::from_le_bytes(self.array()?),
        };
        self.checked_length(claimed)
    }

    /// `claimed`, once that many bytes are known to follow (read ahead, so a cut file is
    /// reported here, and no claim larger than the input is ever allocated).
    fn checked_length(&mut self, claimed: u64) -> Res<usize> {
        let n = usize::try_from(claimed).unwrap_or(usize::MAX);
        if self.filled - self.pos >= n || self.fill(n)? {
            return Ok(n);
        }
        let remaining = self.filled - self.pos;
        Err(self.truncated(format!(
            "inside {} at byte {}, whose length field announces {claimed} bytes where \
             {remaining} remain",
            op::name(self.op),
            self.op_start
        )))
    }

    /// A signed 4-byte length (`LONG4`, `BINSTRING`): negative is malformed.
    fn signed_length(&mut self) -> Res<usize> {
        let claimed = i32::from_le_bytes(self.array()?);
        match u64::try_from(claimed) {
            Ok(n) => self.checked_length(n),
            Err(_) => Err(self.malformed(format!("has a negative length ({claimed})"))),
        }
    }

    /// The text up to the next newline, which is consumed (protocol 0 arguments).
    fn line(&mut self) -> Res<Vec<u8>> {
        let mut searched = 0;
        loop {
            let rest = self.data.get(self.pos..self.filled).unwrap_or_default();
            if let Some(len) = rest.iter().skip(searched).position(|&b| b == b'\n') {
                let len = searched + len;
                let line = rest.get(..len).unwrap_or_default().to_vec();
                self.pos += len + 1;
                return Ok(line);
            }
            searched = rest.len();
            if !self.fill(searched + 1)? {
                return Err(self.ends_inside());
            }
        }
    }

    /// The bytes of a range [`take`](Self::take) returned.
    fn bytes_at(&self, range: std::ops::Range<usize>) -> &[u8] {
        self.data.get(range).unwrap_or_default()
    }

    // ---- The stack ----

    fn push(&mut self, slot: Slot) -> Res<()> {
        // u32::MAX itself is never handed out, so ids stay below it.
        let Some(id) = u32::try_from(self.p.nodes.len())
            .ok()
            .filter(|&i| i < u32::MAX)
        else {
            return Err(self.too_many());
        };
        self.p.nodes.push(slot);
        self.stack.push(NodeId(id));
        Ok(())
    }

    /// An int; `0..=255` are shared.
    fn push_int(&mut self, int: i64) -> Res<()> {
        match u32::try_from(int) {
            Ok(small) if small < 256 => self.push_id(NodeId(SMALL_INTS + small)),
            _ => self.push(Slot::Int(int)),
        }
    }

    fn push_wide_int(&mut self, int: i128) -> Res<()> {
        if let Ok(narrow) = i64::try_from(int) {
            return self.push_int(narrow);
        }
        // There are no more bigints than values, whose count `push` bounds.
        let index = u32::try_from(self.p.bigints.len()).unwrap_or(u32::MAX);
        self.p.bigints.push(int);
        self.push(Slot::BigInt(index))
    }

    /// A `str`, its text copied into the pool.
    fn push_str(&mut self, text: &str) -> Res<()> {
        let slot = self.p.add_str(text);
        self.push(slot)
    }

    /// A Python 2 `str`.
    fn push_legacy(&mut self, bytes: &[u8]) -> Res<()> {
        let slot = self.p.add_legacy(bytes);
        self.push(slot)
    }

    fn push_id(&mut self, id: NodeId) -> Res<()> {
        self.stack.push(id);
        Ok(())
    }

    fn pop(&mut self) -> Res<NodeId> {
        match self.stack.pop() {
            Some(id) if self.stack.len() >= self.floor => Ok(id),
            _ => Err(self.underflow()),
        }
    }

    fn top(&self) -> Res<NodeId> {
        match self.stack.last() {
            Some(&id) if self.stack.len() > self.floor => Ok(id),
            _ => Err(self.underflow()),
        }
    }

    /// The value just below stack position `base` (the container that the values above a
    /// mark go into), which must be above the enclosing mark.
    fn below(&self, base: usize) -> Res<NodeId> {
        match base.checked_sub(1).and_then(|i| self.stack.get(i)) {
            Some(&id) if base > self.floor => Ok(id),
            _ => Err(self.underflow()),
        }
    }

    /// Drop the innermost `MARK`; returns the stack length it recorded.
    fn pop_mark(&mut self) -> Res<usize> {
        let Some(base) = self.marks.pop() else {
            return Err(self.malformed("has no MARK before it".into()));
        };
        self.floor = self.marks.last().copied().unwrap_or(0);
        if base > self.stack.len() {
            return Err(self.underflow());
        }
        Ok(base)
    }

    /// A new tuple, list or set of the values above stack position `base`, which leave
    /// the stack.
    fn collect(&mut self, base: usize, make: fn(Seq) -> Slot) -> Res<()> {
        let values = self.stack.get(base..).unwrap_or_default();
        let Some(seq) = at_tail(&mut self.p.items, values.iter().copied()) else {
            return Err(self.too_many());
        };
        self.stack.truncate(base);
        self.push(make(seq))
    }

    /// `POP` with nothing above the innermost mark drops the mark, as Python does.
    fn pop_item_or_mark(&mut self) -> Res<()> {
        if self.stack.len() > self.floor {
            self.stack.pop();
            Ok(())
        } else {
            self.pop_mark().map(|_| ())
        }
    }

    fn tuple_of(&mut self, n: usize) -> Res<()> {
        if self.stack.len() < self.floor + n {
            return Err(self.underflow());
        }
        self.collect(self.stack.len() - n, Slot::Tuple)
    }

    // ---- Containers ----

    /// The stack position below the top `n` values, which must all be above the innermost
    /// mark (`APPEND`, `SETITEM`).
    fn top_base(&self, n: usize) -> Res<usize> {
        match self.stack.len().checked_sub(n) {
            Some(base) if base >= self.floor => Ok(base),
            _ => Err(self.underflow()),
        }
    }

    fn append(&mut self) -> Res<()> {
        let base = self.top_base(1)?;
        let target = self.below(base)?;
        self.add_items(target, base, false)
    }

    fn appends(&mut self) -> Res<()> {
        let base = self.pop_mark()?;
        let target = self.below(base)?;
        self.add_items(target, base, false)
    }

    fn additems(&mut self) -> Res<()> {
        let base = self.pop_mark()?;
        let target = self.below(base)?;
        self.add_items(target, base, true)
    }

    /// Moves the values above stack position `base` into list (or set) `target`.
    fn add_items(&mut self, target: NodeId, base: usize, set: bool) -> Res<()> {
        let values = self.stack.get(base..).unwrap_or_default();
        let grown = match self.p.nodes.get_mut(target.index()) {
            Some(Slot::List(seq)) if !set => {
                extend(&mut self.p.items, seq, values.iter().copied(), NONE_ID)
            }
            Some(Slot::Set(seq)) if set => {
                extend(&mut self.p.items, seq, values.iter().copied(), NONE_ID)
            }
            _ => {
                let expected = if set { "a set" } else { "a list" };
                return Err(self.wrong_target(target, expected));
            }
        };
        if !grown {
            return Err(self.too_many());
        }
        self.stack.truncate(base);
        Ok(())
    }

    fn setitem(&mut self) -> Res<()> {
        let base = self.top_base(2)?;
        let target = self.below(base)?;
        self.set_items(target, base)
    }

    fn setitems(&mut self) -> Res<()> {
        let base = self.pop_mark()?;
        let target = self.below(base)?;
        if self.stack.len().saturating_sub(base) % 2 != 0 {
            return Err(self.odd_items());
        }
        self.set_items(target, base)
    }

    /// Moves the keys and values above stack position `base` into dict `target`.
    fn set_items(&mut self, target: NodeId, base: usize) -> Res<()> {
        let values = self.stack.get(base..).unwrap_or_default();
        let grown = match self.p.nodes.get_mut(target.index()) {
            Some(Slot::Dict(seq)) => {
                let pairs = values.chunks_exact(2).map(pair);
                extend(&mut self.p.pairs, seq, pairs, (NONE_ID, NONE_ID))
            }
            _ => return Err(self.wrong_target(target, "a dict")),
        };
        if !grown {
            return Err(self.too_many());
        }
        self.stack.truncate(base);
        Ok(())
    }

    fn dict(&mut self) -> Res<()> {
        let base = self.pop_mark()?;
        let values = self.stack.get(base..).unwrap_or_default();
        if values.len() % 2 != 0 {
            return Err(self.odd_items());
        }
        let Some(seq) = at_tail(&mut self.p.pairs, values.chunks_exact(2).map(pair)) else {
            return Err(self.too_many());
        };
        self.stack.truncate(base);
        self.push(Slot::Dict(seq))
    }

    // ---- The memo ----

    fn put(&mut self, key: u64) -> Res<()> {
        let value = self.top()?;
        let dense_len = self.memo.len();
        match usize::try_from(key) {
            Ok(k) if k < dense_len => {
                if let Some(slot) = self.memo.get_mut(k) {
                    *slot = value;
                }
            }
            Ok(k) if k == dense_len => {
                self.memo.push(value);
                if !self.sparse_memo.is_empty() {
                    self.sparse_memo.remove(&key);
                }
            }
            _ => {
                self.sparse_memo.insert(key, value);
            }
        }
        Ok(())
    }

    fn get(&mut self, key: u64) -> Res<()> {
        let dense = usize::try_from(key).ok().and_then(|k| self.memo.get(k));
        match dense.or_else(|| self.sparse_memo.get(&key)) {
            Some(&id) => self.push_id(id),
            None => Err(self.malformed(format!("asks for memo key {key}, which was never stored"))),
        }
    }

    fn text_memo_key(&mut self) -> Res<u64> {
        let line = self.line()?;
        let line = line.as_slice();
        match std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            Some(key) => Ok(key),
            None => Err(self.malformed(format!(
                "has a memo key that is not a number: {}",
                shown(line)
            ))),
        }
    }

    // ---- Scalars ----

    fn binary_long(&mut self, width: usize) -> Res<()> {
        let n = if width == 1 {
            usize::from(self.array::<1>()?[0])
        } else {
            self.signed_length()?
        };
        let range = self.take(n)?;
        match int_from_le(self.bytes_at(range)) {
            Some(int) => self.push_wide_int(int),
            None => Err(self.too_wide()),
        }
    }

    /// `INT` and `LONG`: decimal text; `INT` `00`/`01` are protocol 0's `False`/`True`.
    fn text_int(&mut self) -> Res<()> {
        let line = self.line()?;
        let line = line.as_slice();
        match (self.op, line) {
            (op::INT, b"00") => return self.push_id(FALSE_ID),
            (op::INT, b"01") => return self.push_id(TRUE_ID),
            _ => {}
        }
        let digits = line.strip_suffix(b"L").unwrap_or(line);
        let text = std::str::from_utf8(digits).unwrap_or_default().trim();
        if let Ok(i) = text.parse::<i64>() {
            return self.push_int(i);
        }
        match text.parse::<i128>() {
            Ok(i) => self.push_wide_int(i),
            Err(_) if is_decimal(text) => Err(self.too_wide()),
            Err(_) => Err(self.malformed(format!(
                "has an integer that is not decimal: {}",
                shown(line)
            ))),
        }
    }

    fn text_float(&mut self) -> Res<()> {
        let line = self.line()?;
        let line = line.as_slice();
        let text = std::str::from_utf8(line).unwrap_or_default().trim();
        match text.parse::<f64>() {
            Ok(f) => self.push(Slot::Float(f)),
            Err(_) => {
                Err(self.malformed(format!("has a float that is not a number: {}", shown(line))))
            }
        }
    }

    fn unicode(&mut self, width: usize) -> Res<()> {
        let n = self.length(width)?;
        let range = self.take(n)?;
        let bytes = self.data.get(range).unwrap_or_default();
        let slot = match std::str::from_utf8(bytes) {
            Ok(text) => self.p.add_str(text),
            Err(_) => self.p.add_str(&String::from_utf8_lossy(bytes)),
        };
        self.push(slot)
    }

    fn bytes(&mut self, width: usize) -> Res<()> {
        let n = self.length(width)?;
        let range = self.take(n)?;
        let slot = self.p.add_bytes(self.data.get(range).unwrap_or_default());
        self.push(slot)
    }

    /// `SHORT_BINSTRING`, `BINSTRING`: a Python 2 `str`.
    fn binary_string(&mut self, width: usize) -> Res<()> {
        let n = if width == 1 {
            self.length(1)?
        } else {
            self.signed_length()?
        };
        let range = self.take(n)?;
        let slot = self.p.add_legacy(self.data.get(range).unwrap_or_default());
        self.push(slot)
    }

    /// `STRING`: a Python 2 `str` as a quoted, backslash-escaped literal.
    fn quoted_string(&mut self) -> Res<()> {
        let line = self.line()?;
        let line = line.as_slice();
        let inner = match line {
            [q @ (b'\'' | b'"'), inner @ .., end] if q == end => inner,
            _ => {
                return Err(self.malformed(format!(
                    "has an argument that is not quoted: {}",
                    shown(line)
                )));
            }
        };
        match escape_decode(inner) {
            Ok(bytes) => self.push_legacy(&bytes),
            Err(why) => Err(self.malformed(format!("has an argument with {why}"))),
        }
    }

    // ---- Framing ----

    fn proto(&mut self) -> Res<()> {
        let version = self.array::<1>()?[0];
        if (2..=5).contains(&version) {
            return Ok(());
        }
        Err(self.unsupported(format!(
            "pickle protocol {version}: this reader takes protocols 2 to 5 (allocator \
             snapshots are written with 4, or 5 from Python 3.14)"
        )))
    }

    /// `FRAME` only announces how many bytes the next opcodes take; the opcodes are read as
    /// usual. The length is checked so a cut file is reported at once.
    fn frame(&mut self) -> Res<()> {
        let claimed = u64::from_le_bytes(self.array()?);
        self.checked_length(claimed).map(|_| ())
    }

    // ---- Errors (cold: kept out of the hot loop) ----

    #[cold]
    fn error(&self, kind: PickleErrorKind, message: String) -> PickleError {
        PickleError {
            offset: self.op_start,
            kind,
            message,
        }
    }

    #[cold]
    fn truncated(&self, message: String) -> PickleError {
        PickleError {
            // Reported once the input has ended: its length.
            offset: self.base + self.filled as u64,
            kind: PickleErrorKind::Truncated,
            message,
        }
    }

    #[cold]
    fn ends_inside(&self) -> PickleError {
        let message = format!(
            "inside {} (which starts at byte {})",
            op::name(self.op),
            self.op_start
        );
        self.truncated(message)
    }

    #[cold]
    fn malformed(&self, what: String) -> PickleError {
        let message = format!("not a valid pickle: {} {what}", op::name(self.op));
        self.error(PickleErrorKind::Malformed, message)
    }

    #[cold]
    fn unsupported(&self, what: String) -> PickleError {
        self.error(
            PickleErrorKind::Unsupported,
            format!("unsupported pickle: {what}"),
        )
    }

    #[cold]
    fn underflow(&self) -> PickleError {
        let message = format!(
            "not a valid pickle: {} finds too few values on the stack",
            op::name(self.op)
        );
        self.error(PickleErrorKind::Malformed, message)
    }

    #[cold]
    fn too_many(&self) -> PickleError {
        self.unsupported("more than 4 billion values".into())
    }

    #[cold]
    fn odd_items(&self) -> PickleError {
        self.malformed("has an odd number of keys and values".into())
    }

    #[cold]
    fn too_wide(&self) -> PickleError {
        self.unsupported(format!(
            "{} holds an integer wider than 128 bits",
            op::name(self.op)
        ))
    }

    #[cold]
    fn wrong_target(&self, target: NodeId, expected: &str) -> PickleError {
        let found = self
            .p
            .nodes
            .get(target.index())
            .map_or("nothing", |slot| slot.type_name());
        let message = format!(
            "not a valid pickle: {} needs {expected} below its values, found a {found}",
            op::name(self.op)
        );
        self.error(PickleErrorKind::Malformed, message)
    }

    /// The refusal of an opcode that is not plain data: what it would do, named from the
    /// bytes or the stack without running anything.
    #[cold]
    fn refuse(&mut self, code: u8) -> PickleError {
        let name = op::name(code);
        let what = match code {
            op::GLOBAL | op::INST => {
                let module = self
                    .line()
                    .map_or_else(|_| "(cut off)".into(), |l| shown(&l));
                let attr = self
                    .line()
                    .map_or_else(|_| "(cut off)".into(), |l| shown(&l));
                let verb = if code == op::GLOBAL {
                    "imports"
                } else {
                    "imports and calls"
                };
                format!("{name} {verb} `{module} {attr}`")
            }
            op::STACK_GLOBAL => {
                let len = self.stack.len();
                let named = |i: Option<usize>| {
                    i.and_then(|i| self.stack.get(i))
                        .and_then(|&id| self.p.as_str(id))
                        .map(|s| shown(s.as_bytes()))
                        .unwrap_or_else(|| "?".into())
                };
                let module = named(len.checked_sub(2));
                let attr = named(len.checked_sub(1));
                format!("{name} imports `{module} {attr}`")
            }
            op::REDUCE => format!("{name} calls a function"),
            op::BUILD => format!("{name} sets an object's state (runs __setstate__)"),
            op::OBJ | op::NEWOBJ | op::NEWOBJ_EX => format!("{name} creates a class instance"),
            op::EXT1 | op::EXT2 | op::EXT4 => {
                let message = format!(
                    "the pickle refers to objects outside it ({name} loads an object from \
                     Python's copyreg extension registry); it was refused and nothing was \
                     executed"
                );
                return self.error(PickleErrorKind::Refused, message);
            }
            op::PERSID | op::BINPERSID | op::NEXT_BUFFER | op::READONLY_BUFFER => {
                let message = format!(
                    "the pickle refers to objects outside it ({name} asks the reader for a \
                     persistent object or out-of-band buffer); it was refused"
                );
                return self.error(PickleErrorKind::Refused, message);
            }
            _ => {
                let message = format!("not a valid pickle: unknown opcode 0x{code:02x}");
                return self.error(PickleErrorKind::Malformed, message);
            }
        };
        let message = format!(
            "the pickle tries to run code ({what}); it was refused and nothing was executed"
        );
        self.error(PickleErrorKind::Refused, message)
    }
}

fn pair(chunk: &[NodeId]) -> (NodeId, NodeId) {
    match *chunk {
        [key, value] => (key, value),
        _ => (NONE_ID, NONE_ID), // chunks_exact(2) never yields another length
    }
}

/// A little-endian two's-complement integer (`LONG1`, `LONG4`); `None` past 128 bits.
fn int_from_le(bytes: &[u8]) -> Option<i128> {
    let mut bytes = bytes;
    // Python writes the shortest form; drop redundant sign bytes of a longer one.
    while bytes.len() > 16 {
        let (&last, rest) = bytes.split_last()?;
        let below_negative = rest.last().is_some_and(|b| b & 0x80 != 0);
        if (last == 0 && !below_negative) || (last == 0xff && below_negative) {
            bytes = rest;
        } else {
            return None;
        }
    }
    let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
    let mut wide = if negative { [0xff; 16] } else { [0; 16] };
    wide.get_mut(..bytes.len())?.copy_from_slice(bytes);
    Some(i128::from_le_bytes(wide))
}

/// Whether `text` is an optionally signed run of decimal digits.
fn is_decimal(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A container with nothing in it yet, at the end of `flat`.
fn empty<T>(flat: &[T]) -> Seq {
    let start = u32::try_from(flat.len()).unwrap_or(u32::MAX);
    Seq {
        start,
        len: 0,
        cap: 0,
    }
}

/// A new container holding `values`, at the end of `flat`; `None` past 4 billion slots.
fn at_tail<T>(flat: &mut Vec<T>, values: impl ExactSizeIterator<Item = T>) -> Option<Seq> {
    let start = u32::try_from(flat.len()).ok()?;
    let len = u32::try_from(values.len()).ok()?;
    start.checked_add(len)?;
    flat.extend(values);
    Some(Seq {
        start,
        len,
        cap: len,
    })
}

/// Appends `values` to container `seq` of `flat`: in place while its range is the last
/// one or has room, otherwise moved to the end with twice its room (filled with
/// `filler`), so filling a container batch by batch costs amortized linear time and
/// `flat` stays within 4x the items it holds. False (nothing changed) past 4 billion
/// slots.
fn extend<T: Copy>(
    flat: &mut Vec<T>,
    seq: &mut Seq,
    values: impl IntoIterator<Item = T, IntoIter: ExactSizeIterator>,
    filler: T,
) -> bool {
    let values = values.into_iter();
    let Some(len) = u32::try_from(values.len())
        .ok()
        .and_then(|n| seq.len.checked_add(n))
    else {
        return false;
    };
    let used = seq.range();
    if used.end == flat.len() {
        // The last range (no room reserved past `len`): grow the array.
        if seq.start.checked_add(len).is_none() {
            return false;
        }
        flat.extend(values);
        seq.len = len;
        seq.cap = len;
        return true;
    }
    if len <= seq.cap {
        let room = flat.get_mut(used.end..).unwrap_or_default();
        for (slot, value) in room.iter_mut().zip(values) {
            *slot = value;
        }
        seq.len = len;
        return true;
    }
    let cap = if seq.len == 0 {
        len
    } else {
        len.max(seq.cap.saturating_mul(2))
    };
    let Some(start) = u32::try_from(flat.len())
        .ok()
        .filter(|start| start.checked_add(cap).is_some())
    else {
        return false;
    };
    flat.reserve(cap as usize);
    flat.extend_from_within(used);
    flat.extend(values);
    flat.resize(start as usize + cap as usize, filler);
    *seq = Seq { start, len, cap };
    true
}

/// Python's `codecs.escape_decode`, for the `STRING` opcode's quoted literal.
fn escape_decode(text: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some((&b, after)) = rest.split_first() {
        rest = after;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some((&e, after)) = rest.split_first() else {
            return Err("a trailing backslash");
        };
        rest = after;
        let simple = match e {
            b'\\' | b'\'' | b'"' => Some(e),
            b'a' => Some(7),
            b'b' => Some(8),
            b't' => Some(9),
            b'n' => Some(10),
            b'v' => Some(11),
            b'f' => Some(12),
            b'r' => Some(13),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
        } else if e.is_ascii_digit() && e < b'8' {
            let mut value = u32::from(e - b'0');
            for _ in 0..2 {
                match rest.split_first() {
                    Some((&d @ b'0'..=b'7', after)) => {
                        value = value * 8 + u32::from(d - b'0');
                        rest = after;
                    }
                    _ => break,
                }
            }
            out.push((value & 0xff) as u8);
        } else if e == b'x' {
            let hex = rest.get(..2).and_then(|h| std::str::from_utf8(h).ok());
            let Some(byte) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) else {
                return Err("an invalid \\x escape");
            };
            out.push(byte);
            rest = rest.get(2..).unwrap_or_default();
        } else {
            out.extend([b'\\', e]); // Python keeps unknown escapes as they are
        }
    }
    Ok(out)
}

/// Python's `raw-unicode-escape` decoding, for the `UNICODE` opcode: bytes are Latin-1
/// characters, except `\uXXXX` and `\UXXXXXXXX`.
fn raw_unicode_escape(line: &[u8]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some((&b, after)) = rest.split_first() {
        let digits = match after.first() {
            Some(b'u') if b == b'\\' => 4,
            Some(b'U') if b == b'\\' => 8,
            _ => 0,
        };
        let hex = after
            .get(1..1 + digits)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u32::from_str_radix(h, 16).ok()) {
            Some(code) if digits > 0 => {
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                rest = after.get(1 + digits..).unwrap_or_default();
            }
            _ => {
                out.push(char::from(b));
                rest = after;
            }
        }
    }
    out
}

/// Input bytes for a message: lossy UTF-8, escaped to one line, cut to a readable length.
fn shown(bytes: &[u8]) -> String {
    let cut = bytes.get(..SHOWN_NAME_BYTES).unwrap_or(bytes);
    let mut text: String = String::from_utf8_lossy(cut).escape_debug().collect();
    if cut.len() < bytes.len() {
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const PICKLE_PWNED_PATH: &str = "/tmp/vramscope-pwned";

    fn parsed(bytes: &[u8]) -> Pickle {
        match parse(bytes) {
            Ok(pickle) => pickle,
            Err(e) => panic!("{e}"),
        }
    }

    fn failure(bytes: &[u8]) -> PickleError {
        match parse(bytes) {
            Ok(pickle) => panic!("parsed, but should not: {:?}", pickle.node(pickle.root())),
            Err(e) => e,
        }
    }

    fn field(p: &Pickle, dict: NodeId, key: &str) -> NodeId {
        p.get(dict, key).unwrap_or_else(|| panic!("no key {key:?}"))
    }

    fn ints(p: &Pickle, list: NodeId) -> Vec<Option<i64>> {
        p.items(list).iter().map(|&id| p.as_i64(id)).collect()
    }

    /// The fixtures `make_fixtures.py` writes with `pickle.dumps(data(p), protocol=p)`.
    const DATA: [(u8, &[u8]); 6] = [
        (
            0,
            include_bytes!("../../../tests/fixtures/pickle/data-p0.pickle"),
        ),
        (
            1,
            include_bytes!("../../../tests/fixtures/pickle/data-p1.pickle"),
        ),
        (
            2,
            include_bytes!("../../../tests/fixtures/pickle/data-p2.pickle"),
        ),
        (
            3,
            include_bytes!("../../../tests/fixtures/pickle/data-p3.pickle"),
        ),
        (
            4,
            include_bytes!("../../../tests/fixtures/pickle/data-p4.pickle"),
        ),
        (
            5,
            include_bytes!("../../../tests/fixtures/pickle/data-p5.pickle"),
        ),
    ];

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
            "../../../tests/fixtures/pickle/cycle-p4.pickle"
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
    fn refuses_pickles_that_run_code_without_running_them() {
        let cases: [(&[u8], &str, u64); 6] = [
            (
                include_bytes!("../../../tests/fixtures/pickle/evil-system-p2.pickle"),
                "GLOBAL imports `posix system`",
                2,
            ),
            (
                include_bytes!("../../../tests/fixtures/pickle/evil-system-p4.pickle"),
                "STACK_GLOBAL imports `posix system`",
                43,
            ),
            (
                include_bytes!("../../../tests/fixtures/pickle/evil-open-p0.pickle"),
                "GLOBAL imports `io open`",
                0,
            ),
            (
                include_bytes!("../../../tests/fixtures/pickle/evil-open-p5.pickle"),
                "STACK_GLOBAL imports `io open`",
                23,
            ),
            (
                include_bytes!("../../../tests/fixtures/pickle/evil-builtins-open-p4.pickle"),
                "STACK_GLOBAL imports `builtins open`",
                18,
            ),
            // Protocol 2 has no bytes opcode: Python writes bytes as a call to _codecs.encode.
            (
                include_bytes!("../../../tests/fixtures/pickle/bytes-p2.pickle"),
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
            (b"\x80\x02K\x01K\x022.", Node::Int(2)), // DUP
            (b"\x80\x02K\x01(K\x02K\x031.", Node::Int(1)), // POP_MARK
            (b"\x80\x02K\x01(0.", Node::Int(1)),     // POP with nothing above the mark drops it
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
        let all =
            |list| -> Vec<i64> { p.items(list).iter().filter_map(|&i| p.as_i64(i)).collect() };
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
        let sample = include_bytes!("../../../tests/fixtures/pickle/cycle-p4.pickle");
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
        // None, the bools and the ints 0..=255 come first; the small ints K1..K4 are those.
        assert_eq!(p.node_count(), 3 + 256 + 1 + 2);
    }
}
