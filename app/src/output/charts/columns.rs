//! A step curve cut into one column per chart pixel (min and max per column), and drawn
//! as an outline or as filled bands: what lets a million-point curve become a ~100 KB SVG
//! whose spikes survive any zoom-out.

use collector::analysis::decimate::column_ranges;

/// A step curve cut into one column per pixel: each column's min and max (the value carried
/// in and every value set inside), so spikes survive any zoom-out.
pub(super) struct Columns {
    /// Time range drawn, ns.
    pub t0: i64,
    /// End of the range.
    pub t1: i64,
    /// Pixel columns.
    pub columns: usize,
    /// The range in chart x units.
    pub x0: f64,
    /// End of the range in chart x units.
    pub x1: f64,
    /// Bytes per chart y unit.
    pub b_div: f64,
    /// Chart y units per pixel.
    pub pixel_bytes: f64,
    /// Where the curve's recording ended (ns, like `t0`): nothing is drawn after it.
    pub end_ns: Option<i64>,
}

impl Columns {
    fn ranges(&self, points: &[(i64, i64)]) -> impl Iterator<Item = (f64, Option<(f64, f64)>)> {
        let step = (self.x1 - self.x0) / self.columns as f64;
        let span = (self.t1 - self.t0).max(1) as f64;
        let end_column = self.end_ns.map_or(usize::MAX, |end| {
            ((end - self.t0) as f64 / span * self.columns as f64)
                .ceil()
                .max(0.0) as usize
        });
        column_ranges(points, self.t0, self.t1, self.columns)
            .into_iter()
            .enumerate()
            .map(move |(i, r)| {
                let x = self.x0 + i as f64 * step;
                let r = r.filter(|_| i <= end_column);
                (
                    x,
                    r.map(|(lo, hi)| (lo as f64 / self.b_div, hi as f64 / self.b_div)),
                )
            })
    }

    /// A zig-zag through each column's min and max: the outline of a filled area, or a
    /// thin (1 px) line.
    pub fn envelope(&self, points: &[(i64, i64)]) -> Vec<(f64, f64)> {
        let half = (self.x1 - self.x0) / self.columns as f64 * 0.5;
        let mut out = Vec::with_capacity(self.columns * 2);
        for (x, r) in self.ranges(points) {
            if let Some((lo, hi)) = r {
                out.push((x, lo));
                out.push((x + half, hi));
            }
        }
        out
    }

    /// Each column's maximum held across the column: the top edge of a stacked layer, so
    /// that layers stacked on cumulative curves never cross (the maximum of a larger
    /// cumulative curve is never below a smaller one's).
    pub fn maxima(&self, points: &[(i64, i64)]) -> Vec<(f64, f64)> {
        let step = (self.x1 - self.x0) / self.columns as f64;
        let mut out = Vec::with_capacity(self.columns * 2);
        for (x, r) in self.ranges(points) {
            if let Some((_, hi)) = r {
                out.push((x, hi));
                out.push((x + step, hi));
            }
        }
        out
    }

    /// The curve as filled polygons `2 × half_width_px` thick around each column's range.
    /// A thick polyline through a zig-zag would grow miter spikes at every sharp turn;
    /// polygons are exact.
    pub fn bands(&self, points: &[(i64, i64)], half_width_px: f64) -> Vec<Vec<(f64, f64)>> {
        let pad = self.pixel_bytes * half_width_px;
        let step = (self.x1 - self.x0) / self.columns as f64;
        let mut out = Vec::new();
        let mut top: Vec<(f64, f64)> = Vec::new();
        let mut bottom: Vec<(f64, f64)> = Vec::new();
        let mut flush = |top: &mut Vec<(f64, f64)>, bottom: &mut Vec<(f64, f64)>| {
            if !top.is_empty() {
                let mut polygon = std::mem::take(top);
                polygon.extend(bottom.drain(..).rev());
                out.push(polygon);
            }
        };
        for (x, r) in self.ranges(points) {
            match r {
                Some((lo, hi)) => {
                    top.push((x, hi + pad));
                    top.push((x + step, hi + pad));
                    bottom.push((x, lo - pad));
                    bottom.push((x + step, lo - pad));
                }
                None => flush(&mut top, &mut bottom),
            }
        }
        flush(&mut top, &mut bottom);
        out
    }
}
