//! Opening an input: gzip is recognised by its magic bytes, never by the file name, read
//! member by member with every member checked ([`gzip`]), and its decompressed size capped
//! ([`DecompressedLimit`]).

mod gzip;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub use gzip::{GzipDamage, GzipProblem, GzipReport, SharedMembers, TrailingBytes};

use super::LoadOptions;

/// Size of each read from disk, and of the parallel trace reader's chunks. Measured on the
/// 111 MB benchmark trace: 256 KiB instead of 1 MiB lowers the parse's peak RSS by about
/// 6 MiB (the JSON window, the reader's buffer and three chunks in flight all scale with
/// it) for no measurable time (~450 reads and chunk hand-overs of ~10 µs each).
pub const READ_CHUNK_BYTES: usize = 256 << 10;

/// An opened input: its decompressed byte stream and what we know about the container.
pub struct Input {
    /// The (decompressed) content.
    pub reader: Box<dyn Read + Send>,
    /// Whether the file is gzip.
    pub compressed: bool,
    /// Bytes of the file read so far (compressed bytes for gzip).
    pub file_bytes_read: Arc<AtomicU64>,
    /// Size of the file on disk.
    pub file_len: u64,
    /// The first bytes of the content (after decompression), for sniffing.
    pub head: Vec<u8>,
}

/// Counts bytes as they are read, so a decoder error can report the file position and a
/// viewer can show progress; stops with [`CANCELLED`] once `cancel` is set.
struct CountingReader<R> {
    inner: R,
    count: Arc<AtomicU64>,
    cancel: Option<Arc<AtomicBool>>,
}

/// The message of the I/O error a cancelled read fails with.
pub const CANCELLED: &str = "loading was cancelled";

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err(io::Error::other(CANCELLED));
        }
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A reader that first replays already-read bytes, then continues with the rest.
struct Replay<R> {
    head: Vec<u8>,
    pos: usize,
    rest: R,
}

impl<R: Read> Read for Replay<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.head.len() {
            let n = (self.head.len() - self.pos).min(buf.len());
            buf[..n].copy_from_slice(&self.head[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.rest.read(buf)
    }
}

/// The UTF-8 byte-order mark some editors put before a text's first byte.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// A text's content after its UTF-8 byte-order mark, if it has one.
pub fn without_bom(text: &[u8]) -> &[u8] {
    text.strip_prefix(UTF8_BOM).unwrap_or(text)
}

/// How many content bytes are kept for sniffing the format.
pub const SNIFF_BYTES: usize = 4096;
/// Bytes past a text's first token the sniffer wants to see (Nsight's JSON is told from a
/// trace by the first key of its first object).
const TOKEN_LOOKAHEAD_BYTES: usize = 256;
/// Leading whitespace (and a UTF-8 byte-order mark) read past to find a text's first
/// token. It costs its size in memory once, while the head is replayed; a file with more
/// is reported as holding only whitespace.
pub const MAX_LEADING_WHITESPACE_BYTES: usize = 64 << 20;

/// Read the head: [`SNIFF_BYTES`], or on past leading whitespace until the first token and
/// [`TOKEN_LOOKAHEAD_BYTES`] after it are in (at most [`MAX_LEADING_WHITESPACE_BYTES`]).
fn read_head(reader: &mut impl Read, head: &mut Vec<u8>) -> io::Result<()> {
    read_up_to(reader, head, SNIFF_BYTES)?;
    loop {
        let text = without_bom(head);
        let token = text.iter().position(|b| !b.is_ascii_whitespace());
        let enough = token.is_some_and(|i| text.len() >= i + TOKEN_LOOKAHEAD_BYTES);
        if enough || head.len() >= MAX_LEADING_WHITESPACE_BYTES {
            return Ok(());
        }
        let before = head.len();
        read_up_to(reader, head, before + SNIFF_BYTES)?;
        if head.len() == before {
            return Ok(());
        }
    }
}

/// The first two bytes of every gzip member.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Default cap on the decompressed content of a gzip input, as a multiple of the file's
/// size. Real inputs compress 10–30× (the 16 traces in `../shared/traces` and the fixtures:
/// 17–30×), so 200× leaves room. It costs what reading that much costs, since the pickle
/// reader and the model grow with the content: measured, a 1.4 MiB gzip of a 3 GB pickle
/// (a list of small ints) stops at its 278 MiB limit after 4.6 s at 0.55 GiB peak RSS
/// (debug build), where reading it whole would take several GiB.
pub const MAX_DECOMPRESSION_RATIO: u64 = 200;
/// The default cap is never below this: a small file (a test trace, an empty run) may
/// compress far better than a real one. Reading 64 MiB takes well under a second.
pub const MIN_DECOMPRESSED_LIMIT_BYTES: u64 = 64 << 20;
/// The default cap is never above this, however large the file: reading it takes minutes
/// and the recording can take tens of GiB.
pub const MAX_DECOMPRESSED_BYTES: u64 = 16 << 30;

/// How much decompressed content a gzip input may hold (`--max-decompressed-size`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DecompressedLimit {
    /// [`MAX_DECOMPRESSION_RATIO`] times the file's size, within
    /// [`MIN_DECOMPRESSED_LIMIT_BYTES`]..=[`MAX_DECOMPRESSED_BYTES`].
    #[default]
    Default,
    /// At most this many bytes, whatever the file's size.
    Bytes(u64),
    /// No limit.
    Unlimited,
}

impl DecompressedLimit {
    /// The most decompressed bytes a gzip file of `compressed_bytes` may hold (`None`: any).
    pub fn bytes_for(self, compressed_bytes: u64) -> Option<u64> {
        match self {
            DecompressedLimit::Default => Some(
                compressed_bytes
                    .saturating_mul(MAX_DECOMPRESSION_RATIO)
                    .clamp(MIN_DECOMPRESSED_LIMIT_BYTES, MAX_DECOMPRESSED_BYTES),
            ),
            DecompressedLimit::Bytes(bytes) => Some(bytes),
            DecompressedLimit::Unlimited => None,
        }
    }
}

/// An opened input and, for gzip, its member reader, which the loader reads on to the end
/// after the importer (so every member is checked) and asks what it met.
pub struct Opened {
    /// The input, for the importer.
    pub input: Input,
    /// The gzip reader behind `input.reader`, for a gzip file.
    pub gzip: Option<SharedMembers>,
}

/// Open `path`, transparently decompressing gzip, and read the first bytes for sniffing.
pub fn open(path: &Path) -> io::Result<Input> {
    let count = Arc::new(AtomicU64::new(0));
    open_watched(path, count, None, LoadOptions::default()).map(|opened| opened.input)
}

/// [`open`], counting the file's bytes into `count` as they are read (for a progress bar),
/// failing every read with [`CANCELLED`] once `cancel` is set, and reading gzip as
/// `options` say (its decompressed limit; with salvage, damage ends the content).
pub fn open_watched(
    path: &Path,
    count: Arc<AtomicU64>,
    cancel: Option<Arc<AtomicBool>>,
    options: LoadOptions,
) -> io::Result<Opened> {
    let file = File::open(path)?;
    let file_len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let counted = CountingReader {
        inner: file,
        count: Arc::clone(&count),
        cancel,
    };
    let mut raw = BufReader::with_capacity(READ_CHUNK_BYTES, counted);
    let compressed = raw.fill_buf()?.starts_with(&GZIP_MAGIC);
    let (mut reader, gzip): (Box<dyn Read + Send>, _) = if compressed {
        let limit = options.max_decompressed.bytes_for(file_len);
        let members = gzip::Members::new(
            Box::new(raw) as gzip::Compressed,
            limit,
            options.salvage_truncated,
        );
        let shared = SharedMembers::new(members);
        (Box::new(shared.clone()), Some(shared))
    } else {
        (Box::new(raw), None)
    };
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    match read_head(&mut reader, &mut head) {
        Ok(()) => {}
        // Damage inside the head: the bytes before it are sniffed, and the gzip reader
        // fails again where it is, so the importer of the format reports it.
        Err(e) if GzipDamage::from_io(&e).is_some() => {}
        Err(e) => return Err(e),
    }
    let reader = Box::new(Replay {
        head: head.clone(),
        pos: 0,
        rest: reader,
    });
    let input = Input {
        reader,
        compressed,
        file_bytes_read: count,
        file_len,
        head,
    };
    Ok(Opened { input, gzip })
}

/// Read until `out` holds `limit` bytes or the stream ends.
fn read_up_to(reader: &mut impl Read, out: &mut Vec<u8>, limit: usize) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    while out.len() < limit {
        let want = (limit - out.len()).min(chunk.len());
        match reader.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("vramscope-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write temp file");
        path
    }

    #[test]
    fn gzip_is_detected_by_content_not_name() {
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(b"{\"traceEvents\": []}").expect("gzip");
        let gz = enc.finish().expect("gzip");
        let path = temp_file("looks-plain.json", &gz);
        let mut input = open(&path).expect("open");
        assert!(input.compressed);
        assert!(input.head.starts_with(b"{\"traceEvents\""));
        let mut all = String::new();
        input.reader.read_to_string(&mut all).expect("read");
        assert_eq!(all, "{\"traceEvents\": []}");

        let plain = temp_file("looks-compressed.gz", b"[1]");
        let input = open(&plain).expect("open");
        assert!(!input.compressed);
        assert_eq!(input.head, b"[1]");
    }

    #[test]
    fn watched_reads_count_bytes_and_stop_when_cancelled() {
        let body = vec![b' '; 3 * READ_CHUNK_BYTES];
        let path = temp_file("watched.json", &body);
        let count = Arc::new(AtomicU64::new(0));
        let cancel = Arc::new(AtomicBool::new(false));
        let options = LoadOptions::default();
        let watched = open_watched(&path, count.clone(), Some(cancel.clone()), options);
        let mut input = watched.expect("open").input;
        let mut chunk = vec![0u8; 1024];
        input.reader.read_exact(&mut chunk).expect("read");
        // Reading is buffered a chunk at a time: the counter runs ahead of the consumer.
        let seen = count.load(Ordering::Relaxed);
        assert!(seen >= 1024 && seen <= body.len() as u64, "{seen}");
        cancel.store(true, Ordering::Relaxed);
        let mut rest = Vec::new();
        let err = input.reader.read_to_end(&mut rest).expect_err("cancelled");
        assert_eq!(err.to_string(), CANCELLED);
        assert!((rest.len() as u64) < body.len() as u64);
    }
}
