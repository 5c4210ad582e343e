//! Every way a pickle can fail, each with the byte offset of the opcode at fault (or where
//! the input ends), and the messages that name what the file tried to do.

use std::fmt;
use std::io::Read;

use super::arena::Full;
use super::opcodes as op;
use super::reader::{MAX_OPEN_MARKS, MAX_STACK_VALUES, Parser, SHOWN_NAME_BYTES};
use super::{Fold, NodeId};

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

impl<R: Read, F: Fold> Parser<R, F> {
    // ---- Errors (cold: kept out of the hot loop) ----

    #[cold]
    pub(super) fn error(&self, kind: PickleErrorKind, message: String) -> PickleError {
        PickleError {
            offset: self.op_start,
            kind,
            message,
        }
    }

    #[cold]
    pub(super) fn truncated(&self, message: String) -> PickleError {
        PickleError {
            // Reported once the input has ended: its length.
            offset: self.base + self.filled as u64,
            kind: PickleErrorKind::Truncated,
            message,
        }
    }

    #[cold]
    pub(super) fn ends_inside(&self) -> PickleError {
        let message = format!(
            "inside {} (which starts at byte {})",
            op::name(self.op),
            self.op_start
        );
        self.truncated(message)
    }

    #[cold]
    pub(super) fn malformed(&self, what: String) -> PickleError {
        let message = format!("not a valid pickle: {} {what}", op::name(self.op));
        self.error(PickleErrorKind::Malformed, message)
    }

    #[cold]
    pub(super) fn unsupported(&self, what: String) -> PickleError {
        self.error(
            PickleErrorKind::Unsupported,
            format!("unsupported pickle: {what}"),
        )
    }

    #[cold]
    pub(super) fn underflow(&self) -> PickleError {
        let message = format!(
            "not a valid pickle: {} finds too few values on the stack",
            op::name(self.op)
        );
        self.error(PickleErrorKind::Malformed, message)
    }

    #[cold]
    pub(super) fn too_many(&self) -> PickleError {
        self.unsupported("more than 4 billion values".into())
    }

    /// The error of an arena, memo or stack that could not take another value.
    #[cold]
    pub(super) fn full(&self, full: Full) -> PickleError {
        match full {
            Full::Count => self.too_many(),
            Full::Memory => self.out_of_memory(),
        }
    }

    #[cold]
    pub(super) fn out_of_memory(&self) -> PickleError {
        self.unsupported(format!(
            "this machine has no memory left for the pickle's values ({} read so far)",
            self.p.nodes.len()
        ))
    }

    #[cold]
    pub(super) fn stack_full(&self) -> PickleError {
        self.unsupported(format!(
            "{} would put more than {MAX_STACK_VALUES} values on the stack at once \
             (MAX_STACK_VALUES: a snapshot keeps a few thousand there)",
            op::name(self.op)
        ))
    }

    #[cold]
    pub(super) fn marks_full(&self) -> PickleError {
        self.unsupported(format!(
            "MARK would open more than {MAX_OPEN_MARKS} marks at once (MAX_OPEN_MARKS: \
             Python opens one per container it is filling, a snapshot under 10)"
        ))
    }

    #[cold]
    pub(super) fn odd_items(&self) -> PickleError {
        self.malformed("has an odd number of keys and values".into())
    }

    #[cold]
    pub(super) fn too_wide(&self) -> PickleError {
        self.unsupported(format!(
            "{} holds an integer wider than 128 bits",
            op::name(self.op)
        ))
    }

    #[cold]
    pub(super) fn wrong_target(&self, target: NodeId, expected: &str) -> PickleError {
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
    pub(super) fn refuse(&mut self, code: u8) -> PickleError {
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

/// Input bytes for a message: lossy UTF-8, escaped to one line, cut to a readable length.
pub(super) fn shown(bytes: &[u8]) -> String {
    let cut = bytes.get(..SHOWN_NAME_BYTES).unwrap_or(bytes);
    let mut text: String = String::from_utf8_lossy(cut).escape_debug().collect();
    if cut.len() < bytes.len() {
        text.push('…');
    }
    text
}
