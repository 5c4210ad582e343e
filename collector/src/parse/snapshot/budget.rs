//! What a snapshot may make the reader build: records in proportion to the pickle's bytes
//! (a pickle can repeat a 2-byte reference to one dict without end), and sizes a device
//! can hold (a size near 2^64 would wrap the totals negative).

use super::entry::Trace;
use super::parse::Reader;
use crate::model::Segment;
use crate::parse::SourceError;

/// Fewest bytes of pickle a record of a real snapshot takes (a segment, block, trace entry
/// or annotation): a dict of four or more memoized keys (2 bytes each) and values (2 to 9),
/// with its EMPTY_DICT, MARK and SETITEMS — 40 to 60 bytes in torch's. A list may repeat a
/// 2-byte reference to one dict, which a copy per reference would turn into a record of
/// 100 to 180 bytes each (5e7 references, 100 MB, took 3.5 GB): the reader takes at most
/// one record per this many bytes of the pickle, so what it builds stays within about six
/// times the file.
pub(super) const MIN_RECORD_BYTES: u64 = 32;

/// Largest size of a segment, block or trace entry taken (1 PiB): past any device's memory
/// by far, and small enough that the totals of a million of them stay within `i64`.
pub(super) const MAX_SIZE_BYTES: u64 = 1 << 50;

impl Reader<'_> {
    /// Take `n` records of `what` from the budget ([`MIN_RECORD_BYTES`]) and room for
    /// them in `v`; an error when the pickle names more than its size can hold, or the
    /// memory is refused.
    pub(super) fn take_records<T>(
        &mut self,
        v: &mut Vec<T>,
        n: usize,
        what: &str,
    ) -> Result<(), SourceError> {
        let wanted = n as u64;
        if wanted > self.records_left {
            let most = self.pickle_bytes / MIN_RECORD_BYTES;
            return Err(SourceError::shape(
                None,
                format!(
                    "its {what} repeat references to the same records: more segments, blocks, \
                     trace entries and annotations than a pickle of {} bytes holds (at most \
                     {most}, one per {MIN_RECORD_BYTES} bytes); it was not written by \
                     torch.cuda.memory._snapshot(): take the snapshot again",
                    self.pickle_bytes
                ),
            ));
        }
        self.records_left -= wanted;
        v.try_reserve_exact(n).map_err(|_| {
            SourceError::shape(
                None,
                format!("memory for {n} {what} refused; free memory and try again"),
            )
        })
    }
}

/// `bytes` as the size of `what`, or the error naming it when over [`MAX_SIZE_BYTES`].
pub(super) fn size_in_range(what: &str, bytes: u64) -> Result<u64, SourceError> {
    if bytes > MAX_SIZE_BYTES {
        return Err(SourceError::shape(
            None,
            format!(
                "{what} of {bytes} bytes, more than any device holds (over {MAX_SIZE_BYTES}, \
                 MAX_SIZE_BYTES): the snapshot is damaged; take it again"
            ),
        ));
    }
    Ok(bytes)
}

/// The most the segments and trace entries of a snapshot may add up to (1 EiB): every
/// total the replay keeps (allocated, requested, reserved) is at most this sum, so within
/// it no total can pass i64; a real history adds up to a few hundred GiB per device.
pub(super) const MAX_TOTAL_BYTES: u64 = 1 << 60;

/// Every trace entry's size within [`MAX_SIZE_BYTES`], and all of them with the segments
/// within [`MAX_TOTAL_BYTES`].
pub(super) fn sizes_in_range(
    per_device: &[(i32, Trace)],
    segments: &[Segment],
) -> Result<(), SourceError> {
    let mut total = segments
        .iter()
        .try_fold(0u64, |t, s| t.checked_add(s.total_size_bytes));
    for (device, trace) in per_device {
        if let Some(e) = trace.entries.iter().find(|e| e.size > MAX_SIZE_BYTES) {
            size_in_range(&format!("a trace entry on cuda:{device}"), e.size)?;
        }
        total = (trace.entries.iter()).fold(total, |t, e| t?.checked_add(e.size));
    }
    match total {
        Some(bytes) if bytes <= MAX_TOTAL_BYTES => Ok(()),
        _ => Err(SourceError::shape(
            None,
            format!(
                "the snapshot's segments and trace entries add up to more than any device \
                 holds (over {MAX_TOTAL_BYTES} bytes, MAX_TOTAL_BYTES): the snapshot is \
                 damaged; take it again"
            ),
        )),
    }
}
