//! gzip content, member by member (RFC 1952: a gzip file is a series of members whose
//! contents, concatenated, are the file's content). Each member is checked against its
//! trailer — the CRC-32 and ISIZE of its content — as soon as its deflate data ends, however
//! much of the content the importer wanted; the decompressed bytes are capped so that a
//! small file cannot expand without bound; bytes after the last member that are not a gzip
//! member are counted and reported, never read as content.
//!
//! What went wrong is kept in [`GzipReport`] beside the reader, so the loader can say it in
//! its own words whatever an importer made of the read error.

use std::fmt;
use std::io::{self, BufRead, Read};
use std::sync::{Arc, Mutex};

use flate2::Crc;
use flate2::bufread::DeflateDecoder;

use crate::units::bytes_iec;
use header::{read_header_after_magic, read_up_to};

mod header;

/// The compressed bytes a gzip reader reads (the file, buffered).
pub type Compressed = Box<dyn BufRead + Send>;

/// What is wrong with a gzip input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GzipProblem {
    /// The file ends inside a member: cut off.
    Truncated,
    /// The deflate data cannot be decoded.
    Corrupt,
    /// A member header vramscope cannot read (not deflate, reserved flags).
    Header(String),
    /// The member's content does not have the CRC-32 its trailer records.
    Checksum { recorded: u32, computed: u32 },
    /// The member's content does not have the length (mod 2³²) its trailer records.
    Length { recorded: u32, computed: u32 },
    /// More decompressed content than the limit allows: `decompressed_bytes` by the
    /// damage's compressed offset.
    TooLarge {
        limit_bytes: u64,
        decompressed_bytes: u64,
    },
}

/// A gzip problem and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GzipDamage {
    /// What is wrong.
    pub problem: GzipProblem,
    /// The member it is in (1 for the first).
    pub member: u64,
    /// Offset in the file (compressed bytes) where it was found.
    pub compressed_offset: u64,
    /// Decompressed bytes of content read before it.
    pub content_bytes: u64,
}

impl fmt::Display for GzipDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (member, at, content) = (self.member, self.compressed_offset, self.content_bytes);
        match &self.problem {
            GzipProblem::Truncated => write!(f, "the gzip data ends inside member {member}")?,
            GzipProblem::Corrupt => write!(f, "gzip member {member} has corrupt deflate data")?,
            GzipProblem::Header(why) => write!(f, "gzip member {member}'s header: {why}")?,
            GzipProblem::Checksum { recorded, computed } => write!(
                f,
                "gzip member {member} fails its CRC-32 check (trailer 0x{recorded:08x}, \
                 content 0x{computed:08x}): its content is corrupt"
            )?,
            GzipProblem::Length { recorded, computed } => write!(
                f,
                "gzip member {member} fails its length check (trailer {recorded} bytes, \
                 content {computed} mod 2^32): its content is incomplete or corrupt"
            )?,
            GzipProblem::TooLarge {
                limit_bytes,
                decompressed_bytes,
            } => {
                let ratio = decompressed_bytes / at.max(1);
                return write!(
                    f,
                    "the gzip content is larger than the limit of {} ({limit_bytes} bytes): \
                     its first {at} compressed bytes already decompress to {} ({ratio}× their size)",
                    bytes_iec(*limit_bytes as i64),
                    bytes_iec(*decompressed_bytes as i64),
                );
            }
        }
        write!(
            f,
            " (compressed byte {at}, after {content} decompressed bytes)"
        )
    }
}

impl std::error::Error for GzipDamage {}

impl GzipDamage {
    /// The damage an I/O error from the gzip reader carries, if it is such an error.
    pub fn from_io(error: &io::Error) -> Option<GzipDamage> {
        error.get_ref()?.downcast_ref::<GzipDamage>().cloned()
    }
}

/// Bytes after the last gzip member that are not a gzip member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrailingBytes {
    /// Offset of the first such byte in the file.
    pub compressed_offset: u64,
    /// How many there are (up to the end of the file).
    pub bytes: u64,
}

/// What the gzip reader met: members, content, trailing bytes, damage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GzipReport {
    /// Members read whole and checked.
    pub members: u64,
    /// Decompressed bytes handed out.
    pub content_bytes: u64,
    /// Non-gzip bytes after the last member, ignored.
    pub trailing: Option<TrailingBytes>,
    /// The first problem; reading stopped there.
    pub damage: Option<GzipDamage>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// At a member's first byte, or at the end of the file.
    Header,
    /// Inside a member's deflate data.
    Body,
    /// Nothing more to read.
    End,
}

/// The content of a gzip file: its members' contents, each checked against its trailer.
pub struct Members<R> {
    decoder: DeflateDecoder<R>,
    phase: Phase,
    /// CRC-32 and length of the current member's content so far.
    crc: Crc,
    /// File offset of the next byte outside a member's deflate data (inside it: of its start).
    offset: u64,
    limit_bytes: Option<u64>,
    /// Whether damage ends the content quietly (the report says where) instead of failing.
    salvage: bool,
    report: GzipReport,
}

impl<R: BufRead> Members<R> {
    /// Read `compressed`, which starts with a gzip member's magic bytes. More than
    /// `limit_bytes` of content fails; with `salvage`, damage ends the content instead.
    pub fn new(compressed: R, limit_bytes: Option<u64>, salvage: bool) -> Members<R> {
        Members {
            decoder: DeflateDecoder::new(compressed),
            phase: Phase::Header,
            crc: Crc::new(),
            offset: 0,
            limit_bytes,
            salvage,
            report: GzipReport::default(),
        }
    }

    /// What was met so far.
    pub fn report(&self) -> &GzipReport {
        &self.report
    }

    /// Start the next member, or see that there is none (end of file, or trailing bytes).
    fn start_member(&mut self) -> io::Result<Result<(), GzipProblem>> {
        let file = self.decoder.get_mut();
        let mut magic = [0u8; 2];
        let got = read_up_to(file, &mut magic)?;
        if got == 0 {
            self.phase = Phase::End;
            return Ok(Ok(()));
        }
        if got < 2 || magic != [0x1f, 0x8b] {
            let rest = io::copy(file, &mut io::sink())?;
            self.report.trailing = Some(TrailingBytes {
                compressed_offset: self.offset,
                bytes: got as u64 + rest,
            });
            self.phase = Phase::End;
            return Ok(Ok(()));
        }
        match read_header_after_magic(file)? {
            Ok(header_bytes) => {
                self.offset += 2 + header_bytes;
                self.decoder.reset_data();
                self.crc.reset();
                self.phase = Phase::Body;
                Ok(Ok(()))
            }
            Err(problem) => Ok(Err(problem)),
        }
    }

    /// Check the trailer of the member whose deflate data just ended.
    fn finish_member(&mut self) -> io::Result<Result<(), GzipProblem>> {
        self.offset += self.decoder.total_in();
        self.phase = Phase::Header;
        let mut trailer = [0u8; 8];
        if read_up_to(self.decoder.get_mut(), &mut trailer)? < trailer.len() {
            return Ok(Err(GzipProblem::Truncated));
        }
        let [c0, c1, c2, c3, l0, l1, l2, l3] = trailer;
        let recorded_crc = u32::from_le_bytes([c0, c1, c2, c3]);
        let recorded_len = u32::from_le_bytes([l0, l1, l2, l3]);
        if recorded_crc != self.crc.sum() {
            return Ok(Err(GzipProblem::Checksum {
                recorded: recorded_crc,
                computed: self.crc.sum(),
            }));
        }
        if recorded_len != self.crc.amount() {
            return Ok(Err(GzipProblem::Length {
                recorded: recorded_len,
                computed: self.crc.amount(),
            }));
        }
        self.offset += trailer.len() as u64;
        self.report.members += 1;
        Ok(Ok(()))
    }

    /// Record `problem` and end the content: an error, or with salvage the end of it
    /// (never for the size limit, which only `--max-decompressed-size` lifts).
    fn damaged(&mut self, problem: GzipProblem) -> io::Result<usize> {
        let in_body = if self.phase == Phase::Body {
            self.decoder.total_in()
        } else {
            0
        };
        let damage = GzipDamage {
            member: self.report.members + 1,
            compressed_offset: self.offset + in_body,
            content_bytes: self.report.content_bytes,
            problem,
        };
        self.phase = Phase::End;
        let quiet = self.salvage && !matches!(damage.problem, GzipProblem::TooLarge { .. });
        self.report.damage = Some(damage.clone());
        if quiet {
            Ok(0)
        } else {
            Err(io::Error::new(io::ErrorKind::InvalidData, damage))
        }
    }

    /// Content from the current member's deflate data into `buf`; 0 when it has ended.
    fn read_body(&mut self, buf: &mut [u8]) -> io::Result<Result<usize, GzipProblem>> {
        let n = match self.decoder.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Ok(Err(GzipProblem::Truncated));
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                return Ok(Err(GzipProblem::Corrupt));
            }
            Err(e) => return Err(e),
        };
        let content = self.report.content_bytes + n as u64;
        if let Some(limit_bytes) = self.limit_bytes.filter(|&l| content > l) {
            return Ok(Err(GzipProblem::TooLarge {
                limit_bytes,
                decompressed_bytes: content,
            }));
        }
        self.crc.update(buf.get(..n).unwrap_or_default());
        self.report.content_bytes = content;
        Ok(Ok(n))
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let step = match self.phase {
                Phase::End => {
                    return match &self.report.damage {
                        Some(d) if !self.salvage => {
                            Err(io::Error::new(io::ErrorKind::InvalidData, d.clone()))
                        }
                        _ => Ok(0),
                    };
                }
                Phase::Header => self.start_member()?,
                Phase::Body => match self.read_body(buf)? {
                    Ok(0) => self.finish_member()?,
                    Ok(n) => return Ok(n),
                    Err(problem) => Err(problem),
                },
            };
            if let Err(problem) = step {
                return self.damaged(problem);
            }
        }
    }
}

/// A gzip reader shared between the importer that reads the content and the loader, which
/// reads on to the end afterwards (so every member is checked) and asks what was met.
#[derive(Clone)]
pub struct SharedMembers(Arc<Mutex<Members<Compressed>>>);

impl SharedMembers {
    /// Share `members`.
    pub fn new(members: Members<Compressed>) -> SharedMembers {
        SharedMembers(Arc::new(Mutex::new(members)))
    }

    fn lock(&self) -> io::Result<std::sync::MutexGuard<'_, Members<Compressed>>> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("a reading thread panicked"))
    }

    /// Read the rest of the content (which no importer wanted) to its end, checking every
    /// member; the bytes read.
    pub fn read_to_end(&self) -> io::Result<u64> {
        let mut members = self.lock()?;
        io::copy(&mut *members, &mut io::sink())
    }

    /// What was met so far.
    pub fn report(&self) -> GzipReport {
        self.lock().map(|m| m.report().clone()).unwrap_or_default()
    }
}

impl Read for SharedMembers {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.lock()?.read(buf)
    }
}

#[cfg(test)]
mod tests;
