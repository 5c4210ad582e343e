//! Memory categories as people and tools read them: the composition at the peak (a map in
//! `summary --format json`, a few lines of the text summary) and the categories over the
//! whole run (`vramscope categories`, CSV or JSON like torch's `export_memory_timeline`).

use std::io::{self, Write};

use collector::analysis::DeviceSummary;
use collector::analysis::categories::{
    BeforeTrace, Category, CategorySeries, Composition, Evidence, LikelyBefore, OutsidePytorch,
    UnseenWeights,
};
use collector::units::{bytes_iec, us_after};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// `"composition_at_peak"`: `{category: bytes}` for the categories with bytes, in
/// [`Category::ALL`] order; the values sum to `peak_allocated_bytes`.
pub struct CompositionDoc<'a>(pub &'a Composition);

impl Serialize for CompositionDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entries: Vec<(Category, i64)> = self.0.entries().collect();
        let mut map = s.serialize_map(Some(entries.len()))?;
        for (c, bytes) in entries {
            map.serialize_entry(c.as_str(), &bytes)?;
        }
        map.end()
    }
}

/// `"composition_evidence"`: per category with bytes, `{evidence: bytes}` for the kinds of
/// evidence that decided some of them (`metadata`, `frames`, `scopes`, `matching`,
/// `inference`, `residual`); each category's values sum to its `composition_at_peak` bytes.
pub struct EvidenceDoc<'a>(pub &'a Composition);

impl Serialize for EvidenceDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entries: Vec<(Category, i64)> = self.0.entries().collect();
        let mut map = s.serialize_map(Some(entries.len()))?;
        for (c, _) in entries {
            map.serialize_entry(c.as_str(), &EvidenceRow(self.0, c))?;
        }
        map.end()
    }
}

/// One category's bytes by evidence.
struct EvidenceRow<'a>(&'a Composition, Category);

impl Serialize for EvidenceRow<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let row = by_evidence(self.0, self.1);
        let mut map = s.serialize_map(Some(row.len()))?;
        for (e, bytes) in row {
            map.serialize_entry(e.as_str(), &bytes)?;
        }
        map.end()
    }
}

/// A category's bytes by the evidence that decided them, the kinds with bytes only.
fn by_evidence(c: &Composition, category: Category) -> Vec<(Evidence, i64)> {
    let row = c
        .evidence
        .get(category.index())
        .copied()
        .unwrap_or_default();
    Evidence::ALL
        .into_iter()
        .map(|e| (e, row.get(e as usize).copied().unwrap_or(0)))
        .filter(|&(_, b)| b != 0)
        .collect()
}

/// What decided a category's bytes, for the report: "scopes", or each kind with its bytes
/// where several did ("frames 1.20 MiB, matching 3.00 MiB"); inferred kinds say so.
pub fn decided_words(c: &Composition, category: Category) -> String {
    let kinds = by_evidence(c, category);
    let name = |e: Evidence| match e.is_inferred() {
        true => format!("{} (inferred)", e.as_str()),
        false => e.as_str().to_owned(),
    };
    match kinds.as_slice() {
        [(e, _)] => name(*e),
        _ => kinds
            .iter()
            .map(|&(e, b)| format!("{} {}", name(e), bytes_iec(b)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// How much of a category's `bytes` was inferred: "" (none), "inferred" (all) or "1.20 MiB
/// of it inferred"; the text summary and the report mark it alike.
pub fn inferred_words(c: &Composition, category: Category, bytes: i64) -> String {
    match c.inferred_bytes(category) {
        0 => String::new(),
        b if b == bytes => "inferred".to_owned(),
        b => format!("{} of it inferred", bytes_iec(b)),
    }
}

/// The label column of the text summary's device lines ("  peak allocated   ").
const LABEL: &str = "  at the peak      ";

/// The composition at the peak, one line per category, largest first:
/// `  at the peak      activation 2.40 MiB (56%)`.
pub fn composition_text(out: &mut impl Write, d: &DeviceSummary) -> io::Result<()> {
    let Some(c) = &d.composition_at_peak else {
        return Ok(());
    };
    let mut entries: Vec<(Category, i64)> = c.entries().collect();
    entries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (i, (category, bytes)) in entries.iter().enumerate() {
        let label = if i == 0 {
            LABEL.to_owned()
        } else {
            " ".repeat(LABEL.len())
        };
        let how = match inferred_words(c, *category, *bytes) {
            w if w.is_empty() => w,
            w => format!(", {w}"),
        };
        writeln!(
            out,
            "{label}{} {} ({}{how})",
            category.as_str(),
            bytes_iec(*bytes),
            share(*bytes, c.total_bytes)
        )?;
    }
    if let Some(u) = c.unseen_weights {
        let [what, why] = unseen_words(&u);
        let pad = " ".repeat(LABEL.len());
        writeln!(out, "{pad}{what}\n{pad}  {why}")?;
    }
    if let Some(b) = c.before_trace {
        let pad = " ".repeat(LABEL.len());
        for (i, line) in before_trace_words(&b).iter().enumerate() {
            let indent = if i == 0 { "" } else { "  " };
            writeln!(out, "{pad}{indent}{line}")?;
        }
    }
    if let Some(o) = c.outside_pytorch {
        writeln!(
            out,
            "{}outside pytorch {} ({})",
            " ".repeat(LABEL.len()),
            bytes_iec(o.bytes),
            outside_parts(&o)
        )?;
    }
    Ok(())
}

/// What the memory from before a trace likely is and why, in lines of at most 60
/// characters (the summary indents them under the composition).
pub fn before_trace_words(b: &BeforeTrace) -> [String; 3] {
    let start = bytes_iec(b.at_start_bytes);
    let kept = if b.held_throughout_bytes >= b.at_start_bytes {
        "never freed".to_owned()
    } else {
        format!("{} of it never freed", bytes_iec(b.held_throughout_bytes))
    };
    match b.likely {
        LikelyBefore::Weights => [
            "before_trace is likely the model's weights and buffers,".to_owned(),
            format!("loaded before profiling: {start} at the first event,"),
            if b.backward_ran {
                format!("{kept}, and no optimizer step ran")
            } else {
                format!("{kept}, and no backward or optimizer step ran")
            },
        ],
        LikelyBefore::WeightsAndTrainingState => [
            "before_trace is likely the weights and what training keeps".to_owned(),
            format!("between steps (optimizer state): {start} at the first"),
            format!("event, {kept} while the trace ran"),
        ],
    }
}

/// What the peak leaves out of a CPU trace whose model was built before profiling, and
/// why, in two lines of at most 80 characters.
pub fn unseen_words(u: &UnseenWeights) -> [String; 2] {
    let size = match u.at_least_bytes {
        Some(b) => format!(", at least {} (from the gradients and state)", bytes_iec(b)),
        None => String::new(),
    };
    [
        format!("not counted: the weights{size},"),
        "made before profiling began (torch counts CPU memory only while profiling is on)"
            .to_owned(),
    ]
}

/// A device's `outside_pytorch_*` keys in `summary --format json`, beside its composition.
#[derive(serde::Serialize)]
pub struct OutsideDoc {
    outside_pytorch_at_peak_bytes: i64,
    /// The recorded processes' own share (NVML per process), where reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    outside_pytorch_own_process_at_peak_bytes: Option<i64>,
    /// Other processes' and the driver's.
    #[serde(skip_serializing_if = "Option::is_none")]
    outside_pytorch_other_processes_at_peak_bytes: Option<i64>,
}

impl From<OutsidePytorch> for OutsideDoc {
    fn from(o: OutsidePytorch) -> OutsideDoc {
        OutsideDoc {
            outside_pytorch_at_peak_bytes: o.bytes,
            outside_pytorch_own_process_at_peak_bytes: o.own_process_bytes,
            outside_pytorch_other_processes_at_peak_bytes: o.other_processes_bytes,
        }
    }
}

/// What `outside pytorch` is, with its split where NVML gave per-process memory: "device
/// memory used beyond the reserve: 348.00 MiB this program's, 150.00 MiB other processes'…".
pub fn outside_parts(o: &OutsidePytorch) -> String {
    let what = "device memory used beyond the reserve";
    match (o.own_process_bytes, o.other_processes_bytes) {
        (Some(own), Some(other)) => format!(
            "{what}: {} this program's, {} other processes' and the driver's",
            bytes_iec(own),
            bytes_iec(other)
        ),
        _ => what.to_owned(),
    }
}

/// `bytes` as a whole percentage of `total` ("<1%" for a sliver).
pub fn share(bytes: i64, total: i64) -> String {
    if total <= 0 {
        return "-".to_owned();
    }
    let pct = 100.0 * bytes as f64 / total as f64;
    if pct > 0.0 && pct < 1.0 {
        "<1%".to_owned()
    } else {
        format!("{pct:.0}%")
    }
}

/// One device's series with its name for output.
pub struct NamedSeries<'a> {
    /// `cuda:0`, `cpu`.
    pub device: String,
    /// The series.
    pub series: &'a CategorySeries,
}

/// CSV: `device,time_us,<category>...` — one row per kept point, bytes per category.
pub fn categories_csv(
    out: &mut impl Write,
    start_ns: i64,
    all: &[NamedSeries<'_>],
) -> io::Result<()> {
    let names: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    writeln!(out, "device,time_us,{}", names.join(","))?;
    for s in all {
        for (t, bytes) in s.series.times_ns.iter().zip(&s.series.bytes) {
            let values: Vec<String> = bytes.iter().map(i64::to_string).collect();
            writeln!(
                out,
                "{},{},{}",
                s.device,
                us_after(start_ns, *t),
                values.join(",")
            )?;
        }
    }
    Ok(())
}

/// JSON: `{"categories":[...],"devices":[{"device","events","times_us":[..],"bytes":[[..]..]}]}`
/// — torch's `export_memory_timeline` shape (times, then sizes per category) per device.
pub fn categories_json(
    out: &mut impl Write,
    start_ns: i64,
    all: &[NamedSeries<'_>],
) -> io::Result<()> {
    let devices: Vec<serde_json::Value> = all
        .iter()
        .map(|s| {
            let times: Vec<f64> = s
                .series
                .times_ns
                .iter()
                .map(|&t| us_after(start_ns, t))
                .collect();
            serde_json::json!({
                "device": s.device,
                "events": s.series.events,
                "times_us": times,
                "bytes": s.series.bytes,
            })
        })
        .collect();
    let names: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    let doc = serde_json::json!({ "categories": names, "devices": devices });
    serde_json::to_writer(&mut *out, &doc)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_pytorch_keys_and_words_carry_the_split_only_where_known() {
        // GIVEN 498 MiB beyond the reserve, split 348 / 150 MiB, and the same unsplit.
        let split = OutsidePytorch {
            bytes: 498 << 20,
            own_process_bytes: Some(348 << 20),
            other_processes_bytes: Some(150 << 20),
        };
        let whole = OutsidePytorch {
            own_process_bytes: None,
            other_processes_bytes: None,
            ..split
        };
        // THEN the JSON has the three keys, or only the whole.
        let json = |o| serde_json::to_value(OutsideDoc::from(o)).expect("json");
        assert_eq!(
            json(split),
            serde_json::json!({
                "outside_pytorch_at_peak_bytes": 498u64 << 20,
                "outside_pytorch_own_process_at_peak_bytes": 348u64 << 20,
                "outside_pytorch_other_processes_at_peak_bytes": 150u64 << 20,
            })
        );
        assert_eq!(
            json(whole),
            serde_json::json!({"outside_pytorch_at_peak_bytes": 498u64 << 20})
        );
        // AND the text names both parts.
        assert_eq!(
            outside_parts(&split),
            "device memory used beyond the reserve: 348.00 MiB this program's, \
             150.00 MiB other processes' and the driver's"
        );
        assert_eq!(
            outside_parts(&whole),
            "device memory used beyond the reserve"
        );
    }
}
