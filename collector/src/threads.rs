//! Two pieces of work at once: the caller's thread and one more.

use std::sync::Mutex;

/// Run `here` on this thread and `beside` on a second one named `name`; return both
/// results. Where no thread can start, `beside` runs here after `here`. A panic in either
/// goes on on this thread.
pub(crate) fn join<A, B: Send>(
    name: &str,
    here: impl FnOnce() -> A,
    beside: impl FnOnce() -> B + Send,
) -> (A, B) {
    // Whichever thread takes `beside` runs it: the second, or this one if it never started.
    let beside = Mutex::new(Some(beside));
    let take = || beside.lock().unwrap_or_else(|p| p.into_inner()).take();
    std::thread::scope(|scope| {
        let started = std::thread::Builder::new()
            .name(name.into())
            .spawn_scoped(scope, || take().map(|f| f()));
        let a = here();
        let b = match started {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => None,
        };
        let b = b.or_else(|| take().map(|f| f()));
        (a, b.expect("`beside` ran on one of the two threads"))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn both_results_come_back_and_the_second_runs_on_its_own_thread() {
        let here_id = std::thread::current().id();
        let (a, (b, beside_id)) = super::join(
            "vramscope-test",
            || (1..=10).sum::<u64>(),
            || ((1..=4).product::<u64>(), std::thread::current().id()),
        );
        assert_eq!((a, b), (55, 24));
        assert_ne!(beside_id, here_id);
    }

    #[test]
    fn a_panic_beside_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            super::join("vramscope-test", || 1, || -> u8 { panic!("beside failed") })
        });
        assert!(caught.is_err());
    }
}
