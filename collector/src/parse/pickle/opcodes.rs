//! Opcode values, from CPython's `Lib/pickle.py` (checked against `pickletools.opcodes`),
//! and the dispatch of each data opcode to its handler; every other opcode is refused.

use std::io::Read;

use super::Fold;
use super::arena::{Slot, empty};
use super::reader::{FALSE_ID, NONE_ID, Parser, Res, TRUE_ID};
use super::scalars::raw_unicode_escape;

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

impl<R: Read, F: Fold> Parser<R, F> {
    /// Run one opcode other than `STOP`; its argument bytes follow `self.pos`.
    pub(super) fn step(&mut self, code: u8) -> Res<()> {
        match code {
            BINGET | LONG_BINGET | BINPUT | LONG_BINPUT => self.binary_memo(code),
            MEMOIZE => self.put(self.next_memo_key()),
            // Read whole where the usual shape allows (`fast`), else opcode by opcode.
            EMPTY_DICT if self.read_whole && self.fast_dict()? => Ok(()),
            EMPTY_DICT => self.push(Slot::Dict(empty(&self.p.pairs))),
            EMPTY_LIST => self.push(Slot::List(empty(&self.p.items))),
            MARK => self.mark(),
            SETITEMS => self.setitems(),
            APPENDS => self.appends(),
            SHORT_BINUNICODE => self.unicode(1),
            BINUNICODE => self.unicode(4),
            BINUNICODE8 => self.unicode(8),
            BININT1 | BININT2 | BININT | BINFLOAT => self.binary_scalar(code),
            LONG1 => self.binary_long(1),
            LONG4 => self.binary_long(4),
            NONE => self.push_id(NONE_ID),
            NEWTRUE => self.push_id(TRUE_ID),
            NEWFALSE => self.push_id(FALSE_ID),
            APPEND => self.append(),
            SETITEM => self.setitem(),
            EMPTY_TUPLE => self.push(Slot::Tuple(empty(&self.p.items))),
            TUPLE1 => self.tuple_of(1),
            TUPLE2 => self.tuple_of(2),
            TUPLE3 => self.tuple_of(3),
            TUPLE => {
                let base = self.pop_mark()?;
                self.collect(base, Slot::Tuple)
            }
            LIST => {
                let base = self.pop_mark()?;
                self.collect(base, Slot::List)
            }
            DICT => self.dict(),
            EMPTY_SET => self.push(Slot::Set(empty(&self.p.items))),
            ADDITEMS => self.additems(),
            FROZENSET => {
                let base = self.pop_mark()?;
                self.collect(base, Slot::Set)
            }
            SHORT_BINBYTES => self.bytes(1),
            BINBYTES => self.bytes(4),
            BINBYTES8 | BYTEARRAY8 => self.bytes(8),
            SHORT_BINSTRING => self.binary_string(1),
            BINSTRING => self.binary_string(4),
            INT | LONG => self.text_int(),
            FLOAT => self.text_float(),
            STRING => self.quoted_string(),
            UNICODE => {
                let line = self.line()?;
                let line = line.as_slice();
                let text = raw_unicode_escape(line);
                self.push_str(&text)
            }
            PUT => {
                let key = self.text_memo_key()?;
                self.put(key)
            }
            GET => {
                let key = self.text_memo_key()?;
                self.get(key)
            }
            POP => self.pop_item_or_mark(),
            POP_MARK => self.pop_mark().map(|base| self.stack.truncate(base)),
            DUP => {
                let top = self.top()?;
                self.repush(top)
            }
            FRAME => self.frame(),
            PROTO => self.proto(),
            _ => Err(self.refuse(code)),
        }
    }
}
