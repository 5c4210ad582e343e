//! The memory curve re-evaluated with allocations reshaped: each technique turns an
//! allocation's one life into zero or more segments (smaller, shorter, or split in two), and
//! may add memory of its own; the estimated peak is the maximum of the measured curve plus
//! every change, over the whole run — not the peak's composition scaled.

/// A span of memory in the reshaped run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Seg {
    pub start_ns: i64,
    /// `None`: still live at the end.
    pub end_ns: Option<i64>,
    pub bytes: i64,
}

/// Changes to the measured curve: (time, bytes added from then on).
#[derive(Default)]
pub(super) struct Changes {
    deltas: Vec<(i64, i64)>,
}

impl Changes {
    /// Replace the segment `from` by `to`.
    pub fn replace(&mut self, from: Seg, to: &[Seg]) {
        if to.len() == 1 && to.first() == Some(&from) {
            return;
        }
        self.remove(from);
        for &s in to {
            self.add(s);
        }
    }

    /// Memory the technique adds.
    pub fn add(&mut self, s: Seg) {
        if s.bytes == 0 {
            return;
        }
        self.deltas.push((s.start_ns, s.bytes));
        if let Some(e) = s.end_ns {
            self.deltas.push((e, -s.bytes));
        }
    }

    fn remove(&mut self, s: Seg) {
        self.add(Seg {
            bytes: -s.bytes,
            ..s
        });
    }

    /// The peak of `points` (time, allocated bytes) with the changes applied: changes at a
    /// point's time apply before it is read; between points, after each change (releases
    /// before additions at one time).
    pub fn peak(mut self, points: &[(i64, i64)]) -> i64 {
        self.deltas.sort_unstable();
        let mut deltas = self.deltas.iter().peekable();
        let (mut added, mut now) = (0i64, 0i64);
        let mut best = points.first().map_or(0, |p| p.1);
        for &(t, allocated) in points {
            while let Some(&&(dt, b)) = deltas.peek() {
                if dt > t {
                    break;
                }
                added += b;
                deltas.next();
                if dt < t {
                    best = best.max(now + added);
                }
            }
            now = allocated;
            best = best.max(now + added);
        }
        for &(_, b) in deltas {
            added += b;
            best = best.max(now + added);
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_halved_allocation_lowers_the_peak_by_half_its_size() {
        // GIVEN 100 B allocated at 10, freed at 30, on top of 50 B from 0
        let points = [(0, 50), (10, 150), (30, 50)];
        let mut c = Changes::default();
        let life = Seg {
            start_ns: 10,
            end_ns: Some(30),
            bytes: 100,
        };
        // WHEN it is halved, THEN the peak is 100
        c.replace(life, &[Seg { bytes: 50, ..life }]);
        assert_eq!(c.peak(&points), 100);
        // WHEN it is split in two halves of its life at full size, the peak stays 150
        let mut c = Changes::default();
        let split = [
            Seg {
                start_ns: 10,
                end_ns: Some(15),
                bytes: 100,
            },
            Seg {
                start_ns: 25,
                end_ns: Some(30),
                bytes: 100,
            },
        ];
        c.replace(life, &split);
        assert_eq!(c.peak(&points), 150);
        // WHEN 70 B are added between points, THEN the peak is 220
        let mut c = Changes::default();
        c.add(Seg {
            start_ns: 12,
            end_ns: Some(20),
            bytes: 70,
        });
        assert_eq!(c.peak(&points), 220);
    }
}
