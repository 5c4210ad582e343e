//! What the Cached mode draws inside each segment: the bytes its allocations held, per
//! pixel column, from the collector's curve of them (`CacheBands::in_use_curve`) and its
//! min/max pyramid. A segment whose curve changes less often in view than it has columns
//! is walked change by change; a busier one (a segment that served thousands of
//! allocations) is asked of its pyramid column by column, only where it lives in view.
//! Either way the work is about what the segment shows: querying every column of every
//! segment took 171 ms a frame with the 1M snapshot benchmark's 16,598 segments, walking
//! every change of each ~20 ms.

use collector::analysis::pyramid::CurvePyramid;
use egui::{Color32, Mesh, Rect};

use super::super::paint::PlotFrame;
use super::DeviceBands;

/// A segment drawn narrower than this, in points, shows the most it ever held, without
/// asking its pyramid: asking cost ~1.2 µs a segment, 11–16 ms a frame over the ~10,000
/// segments of the 1M snapshot benchmark's whole run, most a few points wide.
const NARROW_POINTS: f32 = 8.0;

/// A segment's part in use is drawn as a height from this band height on, in points; on a
/// thinner band (where a height cannot be told) as a colour between free and used.
const IN_USE_MIN_POINTS: f32 = 2.0;

/// One segment's bytes in use over time: its curve with the curve's min/max pyramid, and
/// the most it ever held.
#[derive(Debug)]
pub struct InUse(CurvePyramid, i64);

impl InUse {
    /// The curve `points`; `None` where the segment was never used.
    pub fn build(points: Vec<(i64, i64)>) -> Option<InUse> {
        let most = points.iter().map(|p| p.1).max().unwrap_or(0);
        (most > 0).then(|| InUse(CurvePyramid::build(&points), most))
    }

    /// The bytes in use at `time_ns` (0 before the curve begins).
    #[cfg(test)]
    pub fn at(&self, time_ns: i64) -> i64 {
        self.0.value_at(time_ns).unwrap_or(0)
    }

    /// Heap bytes (for PERFORMANCE.md).
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.0.heap_bytes()
    }

    /// The most in use in each pixel column of `from..to` (whole points of `frame`), as
    /// runs of columns alike: (left, right, bytes).
    fn runs(&self, frame: &PlotFrame, origin: i64, (from, to): (f32, f32)) -> Vec<(f32, f32, i64)> {
        let at = |x: f32| origin + frame.t_at(x).round() as i64;
        let columns = (to - from).ceil().max(1.0) as usize;
        let (t0, t1) = (at(from), at(from + columns as f32));
        let mut runs: Vec<(f32, f32, i64)> = Vec::new();
        let mut push = |x0: f32, x1: f32, v: i64| match runs.last_mut() {
            Some(last) if last.2 == v && last.1 >= x0 => last.1 = x1,
            _ => runs.push((x0, x1, v)),
        };
        match self.0.count_in(t0, t1) > columns {
            true => {
                for (c, r) in self.0.column_ranges(t0, t1, columns).iter().enumerate() {
                    let x = from + c as f32;
                    push(x, (x + 1.0).min(to), r.map_or(0, |r| r.1));
                }
            }
            false => {
                // Each change from its column on; changes in one column: the most there.
                let column = |t: i64| frame.x((t - origin) as f64).floor().clamp(from, to);
                let mut open: Option<(f32, i64, i64)> = None; // (column, most, last)
                for (t, v) in self.0.points_in(t0, t1) {
                    let x = column(t);
                    open = match open {
                        Some((c, most, _)) if c == x => Some((c, most.max(v), v)),
                        Some((c, most, last)) => {
                            push(c, c + 1.0, most);
                            push(c + 1.0, x, last);
                            Some((x, last.max(v), v))
                        }
                        None => Some((x, v, v)),
                    };
                }
                if let Some((c, most, last)) = open {
                    push(c, c + 1.0, most);
                    push(c + 1.0, to, last);
                }
            }
        }
        runs
    }
}

/// Each segment's bytes in use over its stretches `placed` (segment, rectangle; in segment
/// order): a fill of the `used` colour from the band's bottom, or on a band too thin to
/// show a height, the band's colour moved towards `used` by the share in use, as a mesh of
/// rectangles.
pub(super) fn in_use_mesh(
    frame: &PlotFrame,
    bands: &DeviceBands,
    (placed, origin): (&[(u32, Rect)], i64),
    (free, used): (Color32, Color32),
) -> Mesh {
    let mut mesh = Mesh::default();
    let Some(cache) = bands.cache.as_ref() else {
        return mesh;
    };
    for run in placed.chunk_by(|x, y| x.0 == y.0) {
        let Some(&(s, _)) = run.first() else {
            continue;
        };
        let (Some(a), Some(Some(curve))) = (
            cache.timeline.allocations.get(s as usize),
            bands.in_use.get(s as usize),
        ) else {
            continue;
        };
        let from = (run.iter().map(|r| r.1.left())).fold(f32::INFINITY, f32::min);
        let to = (run.iter().map(|r| r.1.right())).fold(f32::NEG_INFINITY, f32::max);
        let (from, to) = (from.floor(), to.ceil());
        // A segment drawn narrower than a few points (thousands of them in a long run's
        // whole view) shows the most it ever held, without asking its pyramid.
        let columns = match to - from < NARROW_POINTS {
            true => vec![(from, to, curve.1)],
            false => curve.runs(frame, origin, (from, to)),
        };
        for &(_, r) in run {
            let start = columns.partition_point(|c| c.1 <= r.left());
            for &(x0, x1, bytes) in columns.get(start..).unwrap_or(&[]) {
                let (x0, x1) = (x0.max(r.left()), x1.min(r.right()));
                if x0 >= r.right() {
                    break;
                }
                let f = (bytes as f32 / a.bytes.max(1) as f32).clamp(0.0, 1.0);
                let (top, color) = match r.height() < IN_USE_MIN_POINTS {
                    true => (r.top(), free.lerp_to_gamma(used, f)),
                    false => (r.bottom() - f * r.height(), used),
                };
                if f > 0.0 && x1 > x0 {
                    mesh.add_colored_rect(Rect::from_x_y_ranges(x0..=x1, top..=r.bottom()), color);
                }
            }
        }
    }
    mesh
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::pos2;

    /// A plot 40 points wide over 0..`t1_ns` ns.
    fn frame(t1_ns: f64) -> PlotFrame {
        PlotFrame {
            rect: Rect::from_min_max(pos2(0.0, 0.0), pos2(40.0, 10.0)),
            t0_ns: 0.0,
            t1_ns,
            y0: 0.0,
            y1: 1.0,
        }
    }

    #[test]
    fn a_walked_curve_gives_each_column_the_most_it_held() {
        // GIVEN a curve of 4 changes over 40 ns, a column a ns: walked, not asked per column
        let curve = InUse::build(vec![(0, 0), (10, 5), (12, 7), (20, 0)]).expect("used");
        // THEN each column holds the most in it: the value carried in and any set there
        // (column 20 holds 7 until the change to 0 at its start's instant)
        let runs = curve.runs(&frame(40.0), 0, (0.0, 40.0));
        assert_eq!(
            runs,
            vec![
                (0.0, 10.0, 0),
                (10.0, 12.0, 5),
                (12.0, 21.0, 7),
                (21.0, 40.0, 0)
            ]
        );
    }

    #[test]
    fn a_busy_curve_is_asked_of_its_pyramid_column_by_column() {
        // GIVEN a change every ns for 400 ns (0..9 over and over), 40 columns of 10 ns
        let points: Vec<(i64, i64)> = (0..400).map(|t| (t, t % 10)).collect();
        let curve = InUse::build(points).expect("used");
        // THEN every column's most is 9, one run; a second curve rising at 200 ns shows it
        // from the column that ends at that instant (the pyramid counts a change at a
        // column's end to it, as the timeline's columns do)
        assert_eq!(
            curve.runs(&frame(400.0), 0, (0.0, 40.0)),
            vec![(0.0, 40.0, 9)]
        );
        let rising: Vec<(i64, i64)> = (0..400).map(|t| (t, if t < 200 { 1 } else { 3 })).collect();
        let curve = InUse::build(rising).expect("used");
        assert_eq!(
            curve.runs(&frame(400.0), 0, (0.0, 40.0)),
            vec![(0.0, 19.0, 1), (19.0, 40.0, 3)]
        );
    }
}
