//! Binary search from a hint: answers that move a little from one question to the next
//! (times asked in rising order) cost O(log distance) instead of O(log n) cache misses.

/// `list.partition_point(before)` (`before` true on a prefix of the sorted `list`), found by
/// galloping from `hint` in the direction the answer lies: O(log distance).
pub fn search_from<T>(list: &[T], hint: usize, before: impl Fn(&T) -> bool) -> usize {
    let hint = hint.min(list.len());
    let (mut lo, mut hi);
    if hint < list.len() && before(&list[hint]) {
        // The answer is after `hint`: gallop right.
        let mut step = 1;
        lo = hint + 1;
        hi = lo;
        while hi < list.len() && before(&list[hi]) {
            lo = hi + 1;
            hi = (hi + step).min(list.len());
            step *= 2;
        }
    } else {
        // The answer is at or before `hint`: gallop left.
        let mut step = 1;
        hi = hint;
        lo = hint;
        while lo > 0 && !before(&list[lo - 1]) {
            hi = lo - 1;
            lo = lo.saturating_sub(step);
            step *= 2;
        }
    }
    lo + list[lo..hi].partition_point(&before)
}

#[cfg(test)]
mod tests {
    use super::search_from;

    #[test]
    fn a_search_from_any_hint_finds_the_partition_point() {
        let list: Vec<i64> = (0..200).map(|i| i / 3 * 10).collect();
        for x in [-5, 0, 5, 10, 11, 300, 660, 661, 10_000] {
            let want = list.partition_point(|&t| t < x);
            let want_le = list.partition_point(|&t| t <= x);
            for hint in [0, 1, 2, 50, 99, 150, 199, 200, 500] {
                assert_eq!(
                    search_from(&list, hint, |&t| t < x),
                    want,
                    "< {x} from {hint}"
                );
                assert_eq!(
                    search_from(&list, hint, |&t| t <= x),
                    want_le,
                    "<= {x} from {hint}"
                );
            }
        }
        assert_eq!(search_from(&[] as &[i64], 3, |&t| t < 1), 0);
    }
}
