//! A frame's work over the bands (or segments) in view, split over two threads where there
//! are many: the allocation view's whole-run frame of a million-block snapshot asks ~6,000
//! bands for their moves, ~3 µs each, and the UI thread alone took 17–23 ms.

/// From how many items in view a frame asks a second thread for half of them: a scoped
/// thread costs ~30 µs to start, what ~10 bands' moves cost; below this, the frame is
/// short anyway.
const PARALLEL_ITEMS: usize = 1024;

/// `work` on `items` on this thread, or from [`PARALLEL_ITEMS`] of them, on the first half
/// here and the second half on a second thread, the two answers then `join`ed in that
/// order (what one thread would have made: the first half's, then the second's).
pub(super) fn on_two_threads<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&[T]) -> R + Sync,
    join: impl FnOnce(R, R) -> R,
) -> R {
    if items.len() < PARALLEL_ITEMS {
        return work(items);
    }
    let (first, second) = items.split_at(items.len() / 2);
    let (mine, theirs) = std::thread::scope(|scope| {
        let helper = scope.spawn(|| work(second));
        let mine = work(first);
        let theirs = helper
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (mine, theirs)
    });
    join(mine, theirs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use egui::{Color32, Mesh, Rect, pos2};

    /// Split over two threads, a mesh is the one a single thread makes: the same
    /// rectangles in the same order (the first half's, then the second's).
    #[test]
    fn two_threads_make_the_mesh_one_makes() {
        let ids: Vec<u32> = (0..(PARALLEL_ITEMS as u32 * 3)).collect();
        let mesh_of = |ids: &[u32]| {
            let mut mesh = Mesh::default();
            for &i in ids {
                let x = i as f32;
                let r = Rect::from_min_max(pos2(x, x % 7.0), pos2(x + 1.0, 10.0 + x % 5.0));
                mesh.add_colored_rect(r, Color32::from_gray((i % 251) as u8));
            }
            (mesh, ids.len())
        };
        let joins = std::cell::Cell::new(0);
        let joined = |ids: &[u32]| {
            on_two_threads(ids, mesh_of, |(mut mesh, n), (other, m)| {
                joins.set(joins.get() + 1);
                mesh.append(other);
                (mesh, n + m)
            })
        };
        let (serial, n) = mesh_of(&ids);
        let (split, m) = joined(&ids);
        assert_eq!(joins.get(), 1, "two threads asked");
        assert_eq!((m, split.indices.len()), (n, serial.indices.len()));
        assert_eq!(split.indices, serial.indices);
        assert!(
            split
                .vertices
                .iter()
                .zip(&serial.vertices)
                .all(|(a, b)| a == b)
        );
        // Below the threshold, one thread and the same answer.
        let few = &ids[..10];
        assert_eq!(joined(few).0.indices, mesh_of(few).0.indices);
        assert_eq!(joins.get(), 1, "one thread for a few");
    }
}
