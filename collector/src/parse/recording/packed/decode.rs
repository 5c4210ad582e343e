//! Decoding the columns of a packed recording. Decoding never trusts the file: every
//! arithmetic step wraps instead of overflowing, and every enum code and every column
//! length is checked.

use super::columns::{
    GpuColumns, HostColumns, MemColumns, OpColumns, ProcessColumns, Totals, kind_from_code,
};
use crate::model::{
    GpuProcessSample, GpuSample, HostSample, MemEvent, OpCategory, OpSpan, Recording, StackId,
    StrId, Total,
};
use crate::parse::SpanFilter;

/// Decoding state across lines.
#[derive(Default)]
pub struct Decoder {
    mem_ns: i64,
    totals: Totals,
    op_ns: i64,
    /// Spans decoded, kept or not (what the end record counts).
    pub ops_read: usize,
    gpu_ns: i64,
    process_ns: i64,
    host_ns: i64,
}

fn same_lengths(what: &str, lengths: &[usize]) -> Result<usize, String> {
    let n = lengths.first().copied().unwrap_or(0);
    if lengths.iter().any(|&l| l != n) {
        return Err(format!("{what} columns of different lengths {lengths:?}"));
    }
    Ok(n)
}

impl Decoder {
    /// Append the events of a `mem` record.
    pub fn mem(&mut self, c: MemColumns, out: &mut Vec<MemEvent>) -> Result<(), String> {
        let lengths = [
            c.t.len(),
            c.b.len(),
            c.a.len(),
            c.ta.len(),
            c.tr.len(),
            c.d.len(),
            c.th.len(),
            c.k.len(),
            c.s.len(),
        ];
        let n = same_lengths("memory event", &lengths)?;
        out.reserve(n);
        for i in 0..n {
            self.mem_ns = self.mem_ns.wrapping_add(c.t[i]);
            let kind =
                kind_from_code(c.k[i]).ok_or_else(|| format!("unknown event kind {}", c.k[i]))?;
            let mut e = MemEvent {
                time_ns: self.mem_ns,
                bytes: c.b[i],
                addr: c.a[i].into(),
                total_allocated_bytes: Total::UNKNOWN,
                total_reserved_bytes: Total::UNKNOWN,
                device: c.d[i],
                thread: c.th[i],
                kind,
                stack: c.s[i].map(StackId::new),
            };
            let (pa, pr) = self.totals.predict(&e);
            e.total_allocated_bytes = c.ta[i].map(|v| v.wrapping_add(pa)).into();
            e.total_reserved_bytes = c.tr[i].map(|v| v.wrapping_add(pr)).into();
            self.totals.update(&e);
            out.push(e);
        }
        Ok(())
    }

    /// Add the spans of an `ops` record to `rec`: to `ops`, or as `spans` asks (left out
    /// and counted, or held compressed; then each span's name and thread are checked here,
    /// since the references check after the last line sees only `ops`).
    pub fn ops(
        &mut self,
        c: OpColumns,
        rec: &mut Recording,
        spans: SpanFilter,
    ) -> Result<(), String> {
        let n = same_lengths(
            "op",
            &[c.n.len(), c.c.len(), c.th.len(), c.s.len(), c.d.len()],
        )?;
        if spans == SpanFilter::All {
            rec.ops.reserve(n);
        }
        for i in 0..n {
            self.op_ns = self.op_ns.wrapping_add(c.s[i]);
            let category = OpCategory::from_code(c.c[i])
                .ok_or_else(|| format!("unknown op category {}", c.c[i]))?;
            let span = OpSpan {
                name: StrId(c.n[i]),
                category,
                thread: c.th[i],
                start_ns: self.op_ns,
                end_ns: self.op_ns.wrapping_add(c.d[i]),
            };
            self.ops_read += 1;
            if spans == SpanFilter::All {
                rec.ops.push(span);
                continue;
            }
            if span.name.0 as usize >= rec.strings.len()
                || span.thread as usize >= rec.threads.len()
            {
                return Err(format!(
                    "op {} names string {} or thread {} of {} and {}",
                    self.ops_read - 1,
                    span.name.0,
                    span.thread,
                    rec.strings.len(),
                    rec.threads.len()
                ));
            }
            if !spans.keeps(category, rec.strings.get(span.name)) {
                rec.meta.spans_left_out += 1;
            } else if spans == SpanFilter::SummaryCompact {
                rec.compact_ops.push(&span);
            } else {
                rec.ops.push(span);
            }
        }
        Ok(())
    }

    /// Append the samples of a `gpu_samples` record.
    pub fn gpu(&mut self, c: GpuColumns, out: &mut Vec<GpuSample>) -> Result<(), String> {
        let lengths = [
            c.t.len(),
            c.d.len(),
            c.u.len(),
            c.tot.len(),
            c.p.len(),
            c.f.len(),
            c.r.len(),
        ];
        let n = same_lengths("GPU sample", &lengths)?;
        for i in 0..n {
            self.gpu_ns = self.gpu_ns.wrapping_add(c.t[i]);
            out.push(GpuSample {
                time_ns: self.gpu_ns,
                device: c.d[i],
                used_bytes: c.u[i],
                total_bytes: c.tot[i],
                process_bytes: c.p[i],
                free_bytes: c.f[i],
                driver_reserved_bytes: c.r[i],
            });
        }
        Ok(())
    }

    /// Append the samples of a `gpu_process_samples` record.
    pub fn gpu_process(
        &mut self,
        c: ProcessColumns,
        out: &mut Vec<GpuProcessSample>,
    ) -> Result<(), String> {
        let n = same_lengths(
            "GPU process sample",
            &[c.t.len(), c.d.len(), c.pid.len(), c.u.len()],
        )?;
        for i in 0..n {
            self.process_ns = self.process_ns.wrapping_add(c.t[i]);
            out.push(GpuProcessSample {
                time_ns: self.process_ns,
                device: c.d[i],
                pid: c.pid[i],
                used_bytes: c.u[i],
            });
        }
        Ok(())
    }

    /// Append the samples of a `host_samples` record.
    pub fn host(&mut self, c: HostColumns, out: &mut Vec<HostSample>) -> Result<(), String> {
        let n = same_lengths("host sample", &[c.t.len(), c.rss.len()])?;
        // Packs made before PSS and process counts were recorded lack those columns.
        let optional = |len: usize| if len == 0 { n } else { len };
        same_lengths(
            "host sample",
            &[n, optional(c.pss.len()), optional(c.n.len())],
        )?;
        for i in 0..n {
            self.host_ns = self.host_ns.wrapping_add(c.t[i]);
            out.push(HostSample {
                time_ns: self.host_ns,
                rss_bytes: c.rss[i],
                pss_bytes: c.pss.get(i).copied().flatten(),
                processes: c.n.get(i).copied().flatten(),
            });
        }
        Ok(())
    }
}
