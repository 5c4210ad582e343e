//! A gzip member's header (RFC 1952 §2.3), read past: its optional fields (name, comment,
//! extra field, header CRC) are skipped without being kept, so a hostile header costs no
//! memory.

use std::io::{self, BufRead, Read};

use super::GzipProblem;

/// Read until `out` is full or the input ends; the number of bytes read.
pub(super) fn read_up_to(reader: &mut impl Read, out: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < out.len() {
        match reader.read(&mut out[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The flags of a member header (RFC 1952 §2.3.1).
pub(super) const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
const RESERVED_FLAGS: u8 = 0b1110_0000;
/// Compression method 8, the only one RFC 1952 defines.
const DEFLATE: u8 = 8;

/// Read a member header after its two magic bytes; the bytes it took.
pub(super) fn read_header_after_magic(
    file: &mut impl BufRead,
) -> io::Result<Result<u64, GzipProblem>> {
    // CM, FLG, MTIME (4), XFL, OS.
    let mut fixed = [0u8; 8];
    if read_up_to(file, &mut fixed)? < fixed.len() {
        return Ok(Err(GzipProblem::Truncated));
    }
    let [method, flags, ..] = fixed;
    if method != DEFLATE {
        let why = format!("compression method {method}, not deflate ({DEFLATE})");
        return Ok(Err(GzipProblem::Header(why)));
    }
    if flags & RESERVED_FLAGS != 0 {
        let why = format!("reserved flag bits set (0x{flags:02x})");
        return Ok(Err(GzipProblem::Header(why)));
    }
    let mut taken = fixed.len() as u64;
    if flags & FEXTRA != 0 {
        let mut xlen = [0u8; 2];
        if read_up_to(file, &mut xlen)? < 2 {
            return Ok(Err(GzipProblem::Truncated));
        }
        let want = u64::from(u16::from_le_bytes(xlen));
        if io::copy(&mut file.by_ref().take(want), &mut io::sink())? < want {
            return Ok(Err(GzipProblem::Truncated));
        }
        taken += 2 + want;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            match skip_through_zero(file)? {
                Some(n) => taken += n,
                None => return Ok(Err(GzipProblem::Truncated)),
            }
        }
    }
    if flags & FHCRC != 0 {
        let mut crc16 = [0u8; 2];
        if read_up_to(file, &mut crc16)? < 2 {
            return Ok(Err(GzipProblem::Truncated));
        }
        taken += 2;
    }
    Ok(Ok(taken))
}

/// Skip a zero-terminated field (file name, comment) without keeping it; the bytes
/// skipped with the zero, or `None` when the file ends first.
fn skip_through_zero(file: &mut impl BufRead) -> io::Result<Option<u64>> {
    let mut skipped = 0u64;
    loop {
        let buf = file.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        match buf.iter().position(|&b| b == 0) {
            Some(i) => {
                file.consume(i + 1);
                return Ok(Some(skipped + i as u64 + 1));
            }
            None => {
                let n = buf.len();
                file.consume(n);
                skipped += n as u64;
            }
        }
    }
}
