//! What was live on a device at a bounded number of instants, for the composition the
//! page shows at the peak and where the user clicks: the collector's `live_at` grouped
//! by op and by stack (as `vramscope live --group-by op|stack` prints them), and the
//! bytes per category — the summary's composition at the peak, the categories series'
//! point elsewhere (as the viewer's composition panel reads them). A click shows the
//! nearest computed instant and says which; computing every instant a user could click
//! would cost a `live_at` per pixel.

use collector::analysis::DeviceSummary;
use collector::analysis::categories::{Category, CategorySeries};
use collector::analysis::live::{GroupBy, LiveGroup, fold_after, live_at};
use collector::timeline::DeviceTimeline;
use collector::units::{bytes_iec, duration_between};
use serde::Serialize;

use super::Input;
use super::strings::Strings;
use crate::output::text::{cut, percent};

/// Instants computed over the run besides the peak and the OOMs: the highest point of
/// each of this many equal slices of it. Each costs two groupings of what was live then
/// and ~1 KB of JSON (the sample trace's whole page, all 48, is written in 0.05 s).
pub const COMPOSITION_INSTANTS: usize = 48;
/// A group's label in the table, in characters (its whole stack is a click away).
pub const LABEL_CHARS: usize = 240;
/// Groups kept per grouping and instant (the rest folded into one, as `live --limit`).
pub const GROUPS_SHOWN: usize = 12;

/// The compositions of one device, in time order.
#[derive(Debug, Default, Serialize)]
pub struct Compositions {
    /// The instants.
    pub instants: Vec<InstantDoc>,
    /// Which of them is the allocated peak.
    pub peak: Option<usize>,
}

/// What was live at one instant.
#[derive(Debug, Serialize)]
pub struct InstantDoc {
    /// When, ns since the input's start.
    pub t: i64,
    /// When, as the CLI says it (a string id).
    pub when: u32,
    /// Allocated bytes then, as text (a string id).
    pub allocated: u32,
    /// By the op running at the allocation.
    pub by_op: Vec<GroupDoc>,
    /// By stack (from its first user frame out).
    pub by_stack: Vec<GroupDoc>,
    /// By category.
    pub by_category: Vec<GroupDoc>,
}

/// A group: label, bytes, bytes as text, share as text, blocks, the whole stack (string
/// ids of its frames, innermost first).
#[derive(Debug, Serialize)]
pub struct GroupDoc(u32, i64, u32, u32, u64, Vec<u32>);

/// The compositions of device `d` (summarised as `ds`), `series` its categories.
pub fn compositions(
    input: &Input<'_>,
    d: &DeviceTimeline,
    ds: &DeviceSummary,
    series: Option<&CategorySeries>,
    s: &mut Strings,
) -> Compositions {
    if !d.allocated_known || d.allocations.is_empty() {
        return Compositions::default();
    }
    let peak_ns = d
        .peak_allocated
        .and_then(|p| d.points.get(p))
        .map(|p| p.time_ns);
    let mut times = highest_per_slice(d);
    times.extend(peak_ns);
    let ooms = input.summary.ooms.iter().filter(|o| o.device == ds.device);
    times.extend(ooms.map(|o| o.at_ns));
    times.sort_unstable();
    times.dedup();
    let origin = input.summary.start_ns;
    let instants: Vec<InstantDoc> = times
        .iter()
        .map(|&t| {
            let at_peak = Some(t) == peak_ns;
            let groups = |by, s: &mut Strings| {
                let live = live_at(input.rec, input.timeline, d.device, t, by);
                fold_after(live.groups, GROUPS_SHOWN)
                    .iter()
                    .map(|g| group(g, s))
                    .collect()
            };
            let allocated = d.at(t).map_or(0, |p| p.allocated_bytes);
            let categories = if at_peak {
                ds.composition_at_peak.as_ref().map(|c| c.bytes)
            } else {
                series.and_then(|se| point_at(se, t))
            };
            InstantDoc {
                t: t - origin,
                when: s.id(&duration_between(origin, t)),
                allocated: s.id(&bytes_iec(allocated)),
                by_op: groups(GroupBy::Op, s),
                by_stack: groups(GroupBy::Stack, s),
                by_category: categories.map_or_else(Vec::new, |b| by_category(&b, s)),
            }
        })
        .collect();
    Compositions {
        peak: peak_ns.and_then(|p| times.iter().position(|&t| t == p)),
        instants,
    }
}

fn group(g: &LiveGroup, s: &mut Strings) -> GroupDoc {
    GroupDoc(
        s.id(&cut(&g.short_site(), LABEL_CHARS)),
        g.bytes,
        s.id(&bytes_iec(g.bytes)),
        s.id(&percent(g.share)),
        g.blocks,
        s.ids(g.frames.iter().map(String::as_str)),
    )
}

/// Bytes per category as groups, largest first.
fn by_category(bytes: &[i64; 9], s: &mut Strings) -> Vec<GroupDoc> {
    let total: i64 = bytes.iter().sum();
    let mut groups: Vec<(Category, i64)> = Category::ALL
        .iter()
        .map(|&c| (c, bytes.get(c.index()).copied().unwrap_or(0)))
        .filter(|&(_, b)| b != 0)
        .collect();
    groups.sort_by_key(|&(_, b)| std::cmp::Reverse(b));
    groups
        .into_iter()
        .map(|(c, b)| {
            let share = if total == 0 {
                0.0
            } else {
                b as f64 / total as f64
            };
            GroupDoc(
                s.id(c.as_str()),
                b,
                s.id(&bytes_iec(b)),
                s.id(&percent(share)),
                0,
                Vec::new(),
            )
        })
        .collect()
}

/// The series' bytes holding at `time_ns` (its last point at or before it).
fn point_at(series: &CategorySeries, time_ns: i64) -> Option<[i64; 9]> {
    let n = series.times_ns.partition_point(|&t| t <= time_ns);
    series.bytes.get(n.checked_sub(1)?).copied()
}

/// The time of the highest allocated point in each of [`COMPOSITION_INSTANTS`] equal
/// slices of the device's run.
fn highest_per_slice(d: &DeviceTimeline) -> Vec<i64> {
    let (Some(first), Some(last)) = (d.points.first(), d.points.last()) else {
        return Vec::new();
    };
    let span = (last.time_ns - first.time_ns).max(1) as i128;
    let slice =
        |t: i64| ((t - first.time_ns) as i128 * COMPOSITION_INSTANTS as i128 / span) as usize;
    let mut best: Vec<Option<(i64, i64)>> = vec![None; COMPOSITION_INSTANTS + 1];
    for p in &d.points {
        if let Some(slot) = best.get_mut(slice(p.time_ns))
            && slot.is_none_or(|(_, b)| p.allocated_bytes > b)
        {
            *slot = Some((p.time_ns, p.allocated_bytes));
        }
    }
    best.into_iter().flatten().map(|(t, _)| t).collect()
}
