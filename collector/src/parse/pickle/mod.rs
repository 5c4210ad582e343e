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
//! offset of the opcode that caused it. Its own memory per input byte is a small constant:
//! the stack and the open marks are capped ([`reader::MAX_STACK_VALUES`], 4 MiB, and
//! [`reader::MAX_OPEN_MARKS`], 256 KiB: a flood of one-byte `None` or `MARK` opcodes fails
//! at the cap, with its name and the byte offset, rather than take 4 or 8 bytes per input
//! byte until the process aborts), and what remains grows with the values a
//! file makes — at most one 16-byte slot per two opcode bytes that make and drop a value,
//! 8 bytes per input byte (an `EMPTY_LIST`, `POP` flood: 2.1 GB for 256 MiB); snapshots need
//! about 2x their size in all. Every growth is a `try_reserve`, so memory the allocator
//! refuses is an error, not an abort. The input itself is read through a small
//! reused buffer ([`parse_from`]), never held whole. Measured (release, shared 2-core VM,
//! `bench/snapshot.sh`): `vramscope summary` of a synthetic 537 MB snapshot of 6.2M trace
//! entries, parse included, takes 1.9 s and 614 MiB peak RSS (21x Python's `pickle.load`
//! and replay); folding the entries, reading dicts whole and sharing values is what keeps
//! it there (docs/PERFORMANCE.md).
//!
//! A [`Fold`] may take dicts over as they are completed (the snapshot reader folds its
//! millions of trace entries into 32-byte records), and lists as they are filled (its
//! frames lists, as interned stacks), so their pairs and items need no room in the arena.
//!
//! Values are shared where nothing can tell ([`shared`]): equal strings are one value (a
//! `str` is immutable), and a folded dict or list the folder says equals an earlier one
//! gives its slot back to that one when nothing but the stack and one memo key refers to
//! it: the 537 MB snapshot's arena holds 6.9M values for its 30M.
//!
//! Files: [`arena`] (the values and their accessors), [`reader`] (the machine's state and
//! its input window), [`opcodes`] (opcode values and dispatch), [`stack`] (stack, containers,
//! memo), [`fold`] (dicts taken over as they are completed), [`fast`] (the usual dict shape
//! read in one go), [`shared`] (equal strings and folded values sharing one slot), [`scalars`]
//! (numbers, strings, framing), [`errors`] (every error, with its offset).

mod arena;
mod errors;
mod fast;
mod fold;
mod opcodes;
mod reader;
mod scalars;
mod shared;
mod stack;

use std::io::{self, Read};

pub use arena::Pickle;
pub use errors::{PickleError, PickleErrorKind};
pub use fold::{Fold, FoldValue, NoFold};
use reader::Parser;

/// Index of a value in a [`Pickle`]'s arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeId(u32);

impl NodeId {
    /// The position of the value in the arena: stable and dense, so callers can keep
    /// per-node caches in a `Vec` (for example, frames converted once per shared dict).
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id at position `index` (kept as a number by a [`Fold`]). An id past the arena
    /// reads as `None` from every accessor.
    pub fn from_index(index: u32) -> NodeId {
        NodeId(index)
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
    /// A dict the reader's [`Fold`] took over when it was complete: the folder's index.
    Folded(u32),
    /// A list the reader's [`Fold`] took over when it was filled: the folder's index.
    FoldedList(u32),
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
            Node::List(_) | Node::FoldedList(_) => "list",
            Node::Tuple(_) => "tuple",
            Node::Dict(_) | Node::Folded(_) => "dict",
            Node::Set(_) => "set",
        }
    }
}

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
    parse_folding(reader, size_hint, &mut NoFold)
}

/// [`parse_from`], handing each dict to `folder` as it is completed ([`Fold`]).
pub fn parse_folding(
    reader: impl Read,
    size_hint: usize,
    folder: &mut impl Fold,
) -> Result<Pickle, ReadError> {
    run(Parser::new(reader, size_hint, folder))
}

/// [`parse_folding`] with every opcode run one by one, no dict read whole ([`fast`]): what
/// the tests hold the fast path to.
#[cfg(test)]
pub(crate) fn parse_opcode_by_opcode(
    reader: impl Read,
    size_hint: usize,
    folder: &mut impl Fold,
) -> Result<Pickle, ReadError> {
    let mut parser = Parser::new(reader, size_hint, folder);
    parser.read_whole = false;
    run(parser)
}

fn run<R: Read, F: Fold>(mut parser: Parser<R, F>) -> Result<Pickle, ReadError> {
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

#[cfg(test)]
mod tests;
