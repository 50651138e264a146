//! Threads: rayon pools by size, and work shared out by the calling thread and a pool's
//! threads so that none waits for another to wake (the executor's components and GEMM
//! panels, the factorizations' sectors).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

type Pools = Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>>;

/// A rayon pool of `threads` threads, built once per size; None when the OS refuses the
/// threads (the step then runs sequentially: same result).
pub(crate) fn pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let pools = POOLS.get_or_init(|| Mutex::new(Vec::new()));
    let mut g = pools.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = g.iter().find(|(n, _)| *n == threads) {
        return Some(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .ok()?,
    );
    g.push((threads, p.clone()));
    Some(p)
}

/// Runs `work(i)` for every `i < n`, each once, on the calling thread and on `helpers` tasks
/// of `pool`, each taking the next index when free; returns when all have run. The caller
/// starts at once and never waits for a helper to wake: one that wakes late finds the indices
/// taken and does nothing. (With the work handed to the pool instead, a sleeping pool thread
/// on the 2-vCPU machines this was measured on often woke only after the other had run every
/// component, and 2 threads ran the Heisenberg m = 512 `gemm` at 1.1-1.3x the time of 1.)
/// A panic in `work` reaches the caller once no helper runs `work` any more.
pub(crate) fn share_out(
    pool: &rayon::ThreadPool,
    helpers: usize,
    n: usize,
    work: &(dyn Fn(usize) + Sync),
) {
    let shared = Arc::new(Shared {
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panic: Mutex::new(None),
    });
    // SAFETY: only the lifetime is erased. A helper calls `work` only for an index it claimed
    // below `n`, and counts it done after the call; the caller returns only once all `n` are
    // done, after which every claim is at least `n`.
    let erased: *const (dyn Fn(usize) + Sync + 'static) =
        unsafe { std::mem::transmute(work as *const (dyn Fn(usize) + Sync + '_)) };
    for _ in 0..helpers {
        let (s, w) = (shared.clone(), Erased(erased));
        pool.spawn(move || {
            let w = w;
            // SAFETY: dereferenced only for a claimed index (see above).
            s.take_all(n, |i| unsafe { (*w.0)(i) });
        });
    }
    // the caller's loop ends once every index is claimed; wait for those still running
    shared.take_all(n, work);
    while shared.done.load(Ordering::Acquire) < n {
        std::thread::yield_now();
    }
    let panic = shared
        .panic
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
}

/// The state [`share_out`]'s caller and helpers share: the next index to claim, how many are
/// done, and the first panic (after which the indices left are claimed and skipped).
struct Shared {
    next: AtomicUsize,
    done: AtomicUsize,
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl Shared {
    /// Claims indices below `n` until none is left, running each (skipping it once a run
    /// panicked) and counting it done after.
    fn take_all(&self, n: usize, f: impl Fn(usize)) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return;
            }
            let failed = self
                .panic
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some();
            if !failed {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i)));
                if let Err(p) = r {
                    let mut g = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                    g.get_or_insert(p);
                }
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// A lifetime-erased pointer to [`share_out`]'s work, sent to its helpers.
struct Erased(*const (dyn Fn(usize) + Sync + 'static));
// SAFETY: the pointee is `Sync`; when it may be used is [`share_out`]'s contract.
unsafe impl Send for Erased {}

/// Runs `work(i)` for every `i < n`, each once: on `threads` threads ([`share_out`], the
/// calling thread one of them) when there are several of both, else in order on this thread.
pub(crate) fn for_each(threads: usize, n: usize, work: &(dyn Fn(usize) + Sync)) {
    match (threads > 1 && n > 1).then(|| pool(threads)).flatten() {
        Some(p) => share_out(&p, threads - 1, n, work),
        None => (0..n).for_each(work),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `share_out` runs every index once, on the caller and the pool's threads, and returns
    /// while the pool's only thread is busy elsewhere (the caller runs everything then: it
    /// never waits for a helper to start); the helper's task, run later, does nothing.
    #[test]
    fn shared_work_runs_each_index_once_and_never_waits_for_a_helper_to_start() {
        use std::sync::atomic::AtomicU32;
        use std::sync::mpsc;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        // the pool's thread idle: indices shared, each run once
        let runs: Vec<AtomicU32> = (0..64).map(|_| AtomicU32::new(0)).collect();
        let work = |i: usize| {
            runs[i].fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_micros(200));
        };
        share_out(&pool, 1, runs.len(), &work);
        assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1));
        // the pool's thread blocked until after share_out returns
        let (release, blocked) = mpsc::channel::<()>();
        let (started, is_blocked) = mpsc::channel::<()>();
        pool.spawn(move || {
            started.send(()).unwrap();
            blocked.recv().unwrap();
        });
        is_blocked.recv().unwrap();
        let ran_by: Mutex<Vec<std::thread::ThreadId>> = Mutex::new(Vec::new());
        let work = |_: usize| ran_by.lock().unwrap().push(std::thread::current().id());
        let (finished, is_finished) = mpsc::channel();
        let returned = std::thread::scope(|sc| {
            sc.spawn(|| {
                share_out(&pool, 1, 16, &work);
                finished.send(std::thread::current().id()).unwrap();
            });
            let r = is_finished.recv_timeout(std::time::Duration::from_secs(30));
            // released either way, so that a share_out that waits for the helper ends too
            release.send(()).unwrap();
            r
        });
        let caller = returned.expect("share_out waited for the busy pool thread");
        let ran_by = ran_by.into_inner().unwrap();
        assert_eq!(ran_by.len(), 16);
        assert!(ran_by.iter().all(|&t| t == caller));
        // the late helper task ran, found nothing, and the pool still works
        pool.install(|| ());
    }

    /// A panic in the work reaches `share_out`'s caller after every index is accounted for;
    /// the indices after it are skipped, none runs twice.
    #[test]
    fn a_panic_in_shared_work_reaches_the_caller() {
        use std::sync::atomic::AtomicU32;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let runs: Vec<AtomicU32> = (0..40).map(|_| AtomicU32::new(0)).collect();
        let work = |i: usize| {
            runs[i].fetch_add(1, Ordering::Relaxed);
            if i == 5 {
                panic!("index 5");
            }
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            share_out(&pool, 2, runs.len(), &work)
        }));
        let p = r.expect_err("the panic is passed on");
        assert_eq!(p.downcast_ref::<&str>(), Some(&"index 5"));
        assert_eq!(runs[5].load(Ordering::Relaxed), 1);
        assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) <= 1));
    }
}
