//! The pickle machine's state and its window on the input.

use std::collections::HashMap;
use std::io::{self, Read};

use super::arena::{Pickle, Slot};
use super::errors::PickleError;
use super::opcodes as op;
use super::shared::{MemoRecords, SharedStrs};
use super::{Fold, FoldValue, NodeId};
use rustc_hash::FxHashMap;

/// `None`, `False` and `True` are made once, at these ids, and shared by every use; so are
/// the ints `0..=255`, at `SMALL_INTS + value`.
pub(super) const NONE_ID: NodeId = NodeId(0);
pub(super) const FALSE_ID: NodeId = NodeId(1);
pub(super) const TRUE_ID: NodeId = NodeId(2);
pub(super) const SMALL_INTS: u32 = 3;

/// Bytes read from the input at a time (the buffer grows only for a longer argument).
pub(super) const READ_CHUNK: usize = 256 << 10;

/// Input size beyond which `size_hint` no longer sizes the arena up front (it regrows).
pub(super) const MAX_RESERVED_INPUT: usize = 1 << 30;

/// Arena slots reserved per input byte. Snapshots make about one node per 20 bytes (the
/// 495 KB sample: 41 k nodes, before small ints were shared); reserving for one per 16
/// bytes avoids most regrowth without over-committing for pickles that are mostly long
/// strings.
pub(super) const INPUT_BYTES_PER_NODE: usize = 16;

/// MARKs open at once. Python's pickler opens one per container it is filling, so a
/// pickle from Python has about as many as its data nests deep (a snapshot: under 10), and
/// its recursion limit keeps that under about 1,000. The cap costs 256 KiB of marks at
/// most; without it 512 MiB of `MARK` bytes took 4.1 GB.
pub(super) const MAX_OPEN_MARKS: usize = 1 << 16;

/// Values on the stack at once. A snapshot keeps a few thousand there at most: the
/// containers being filled and one batch of up to 1,000 items each (Python writes lists,
/// dicts and sets in batches); only a tuple's or frozenset's items all wait on the stack,
/// and a snapshot's have a few. The cap costs 4 MiB of stack at most; without it a
/// flood of `None` (one byte each, no arena slot) took 4 bytes of stack per input byte and
/// 4 GiB of them aborted the process.
pub(super) const MAX_STACK_VALUES: usize = 1 << 20;

/// How much of a refused module or attribute name a message shows.
pub(super) const SHOWN_NAME_BYTES: usize = 80;

pub(super) type Res<T> = Result<T, PickleError>;

/// The pickle machine's state. `stack` is one flat stack of at most [`MAX_STACK_VALUES`];
/// `marks` hold the stack lengths at each `MARK` (at most [`MAX_OPEN_MARKS`]; `u32`, as
/// the stack is shorter), and `floor` (the last mark) keeps opcodes from reaching below
/// it, as Python's separate per-mark stacks do.
pub(super) struct Parser<R, F> {
    pub(super) reader: R,
    /// A window of the input: `data[..filled]` holds the bytes from offset `base` on,
    /// `pos` is the next unread one. `data` is initialized up to its length.
    pub(super) data: Vec<u8>,
    pub(super) filled: usize,
    pub(super) pos: usize,
    pub(super) base: u64,
    /// The reader has no more bytes (or failed, with `io_error`).
    pub(super) eof: bool,
    pub(super) io_error: Option<io::Error>,
    /// Offset and byte of the opcode being run, for messages.
    pub(super) op_start: u64,
    pub(super) op: u8,
    /// The arena being built (its `root` is set at `STOP`).
    pub(super) p: Pickle,
    pub(super) stack: Vec<NodeId>,
    pub(super) marks: Vec<u32>,
    pub(super) floor: usize,
    /// Memo keys `0..memo.len()`: `MEMOIZE` and pickles from Python fill them densely.
    pub(super) memo: Vec<NodeId>,
    /// Memo keys above the dense range (hand-written `PUT`s), so a large key cannot make
    /// us allocate a huge vector. std's randomly seeded hasher, not Fx: the keys come from
    /// the file, and chosen colliding keys must not make inserts quadratic. Python's own
    /// pickles never get here.
    pub(super) sparse_memo: HashMap<u64, NodeId>,
    /// Takes dicts over as they are completed ([`Fold`]).
    pub(super) folder: F,
    /// What may refer to a value made after a folded dict, other than the dict itself:
    /// the newest value memoized, the newest value re-pushed (`GET`, `DUP`) while newer
    /// ones existed, the newest value put in an older container. The values after a
    /// folded dict are dropped only when all three are older than the dict (see
    /// `Parser::fold_setitems`).
    pub(super) memo_records: MemoRecords,
    pub(super) newest_repushed: u32,
    pub(super) newest_contained: u32,
    /// The newest value re-pushed at all (a value shared by [`Parser::share_folded`] must
    /// have been pushed once only).
    pub(super) newest_repushed_ever: u32,
    /// The first slot of each folded value the folder shares, by `fold index | list << 32`.
    pub(super) canonical: FxHashMap<u64, NodeId>,
    /// Reused buffer for the pairs offered to the folder.
    pub(super) fold_pairs: Vec<(NodeId, FoldValue)>,
    /// Reused buffers of the dicts read whole ([`super::fast`]), unless `read_whole` is off.
    pub(super) fast: super::fast::DictRead,
    pub(super) read_whole: bool,
    /// Strings by text, so that equal ones share a value ([`SharedStrs`]).
    pub(super) shared: SharedStrs,
}

impl<R: Read, F: Fold> Parser<R, F> {
    pub(super) fn new(reader: R, size_hint: usize, folder: F) -> Parser<R, F> {
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
            end_offset: 0,
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
            folder,
            memo_records: MemoRecords::default(),
            newest_repushed: 0,
            newest_contained: 0,
            newest_repushed_ever: 0,
            canonical: FxHashMap::default(),
            fold_pairs: Vec::new(),
            fast: super::fast::DictRead::default(),
            read_whole: true,
            shared: SharedStrs::default(),
        }
    }

    /// Runs the opcodes up to `STOP`, which sets the root.
    pub(super) fn run(&mut self) -> Res<()> {
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
                self.p.end_offset = self.base + self.pos as u64;
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
    pub(super) fn fill(&mut self, n: usize) -> Res<bool> {
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
                    if self.data.try_reserve_exact(len - self.data.len()).is_err() {
                        return Err(self.out_of_memory());
                    }
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

    // ---- Reading argument bytes ----

    /// Where the next `n` bytes are in `data`; an error when fewer remain. Valid until the
    /// next read.
    pub(super) fn take(&mut self, n: usize) -> Res<std::ops::Range<usize>> {
        if self.filled - self.pos < n && !self.fill(n)? {
            return Err(self.ends_inside());
        }
        let start = self.pos;
        self.pos += n;
        Ok(start..self.pos)
    }

    pub(super) fn array<const N: usize>(&mut self) -> Res<[u8; N]> {
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
    pub(super) fn length(&mut self, width: usize) -> Res<usize> {
        let claimed = match width {
            1 => u64::from(self.array::<1>()?[0]),
            4 => u32::from_le_bytes(self.array()?).into(),
            _ => u64::from_le_bytes(self.array()?),
        };
        self.checked_length(claimed)
    }

    /// `claimed`, once that many bytes are known to follow (read ahead, so a cut file is
    /// reported here, and no claim larger than the input is ever allocated).
    pub(super) fn checked_length(&mut self, claimed: u64) -> Res<usize> {
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
    pub(super) fn signed_length(&mut self) -> Res<usize> {
        let claimed = i32::from_le_bytes(self.array()?);
        match u64::try_from(claimed) {
            Ok(n) => self.checked_length(n),
            Err(_) => Err(self.malformed(format!("has a negative length ({claimed})"))),
        }
    }

    /// The text up to the next newline, which is consumed (protocol 0 arguments).
    pub(super) fn line(&mut self) -> Res<Vec<u8>> {
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
    pub(super) fn bytes_at(&self, range: std::ops::Range<usize>) -> &[u8] {
        self.data.get(range).unwrap_or_default()
    }
}
