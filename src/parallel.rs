//! Per-file work spread over the machine's cores: discovery parses every YAML file, the plan
//! edits and verifies every changed one, each file on its own. On 10,000 apps that is most
//! of a run (docs/performance.md), and nothing else runs meanwhile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The cores this process may use (fewer under an address-space limit:
/// [`crate::limits::threads`]), asked once: `available_parallelism` reads the cgroup files
/// under /proc and /sys on every call, and the plan calls `map` once per change set (10,000
/// times on the benchmark's 10,000 apps: a tenth of the run's CPU).
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        crate::limits::threads(cores)
    })
}

/// Below this many items a second thread costs more than it saves.
const MIN_ITEMS: usize = 64;

/// How many items a thread of [`map`] takes at a time: few enough that the threads finish
/// together, enough that each block's results are one small vector.
const BLOCK: usize = 16;

/// `items.iter().map(f).collect()`, computed on up to as many threads as there are cores;
/// the results are in the order of `items`, whatever thread computed them.
///
/// Each thread takes the next [`BLOCK`] of items and keeps that block's results in a
/// vector of their own; the blocks are then moved, in order, into one vector of exactly the
/// items' length. No large vector is grown by doubling (at 10,000 files, every copy was a
/// block of up to a megabyte of fresh memory, left resident by the allocator:
/// docs/performance.md); only the short lists of each thread's blocks grow.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = cores().min(items.len() / MIN_ITEMS);
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, Vec<R>)> = Vec::new();
        loop {
            let first = next.fetch_add(BLOCK, Ordering::Relaxed);
            let Some(block) = items.get(first..).filter(|rest| !rest.is_empty()) else {
                return done;
            };
            let block = block.get(..BLOCK).unwrap_or(block);
            done.push((first, block.iter().map(&f).collect()));
        }
    };
    let mut blocks: Vec<(usize, Vec<R>)> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut blocks = work();
        for h in helpers {
            match h.join() {
                Ok(done) => blocks.extend(done),
                // A panic in `f` is a bug; let it surface as it would have without threads.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        blocks
    });
    blocks.sort_unstable_by_key(|(first, _)| *first);
    let mut all = Vec::with_capacity(items.len());
    for (_, results) in blocks {
        all.extend(results);
    }
    all
}

/// `for item in items { consume(f(item)) }`, with `f` computed on other threads while the
/// calling thread consumes the results in the order of `items`, each as soon as it and
/// those before it are done (discovery folds every file while the later ones are still
/// being parsed). As many threads as cores, the calling one among them: on two cores, one
/// thread computes while the other consumes. A computing thread per core beside the
/// consuming one ran three threads on two cores, and each computing thread keeps what it
/// makes in pages of its own: the extra thread cost resident memory and saved almost no
/// time (docs/performance.md).
pub fn for_each_ordered<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
    mut consume: impl FnMut(R),
) {
    let threads = cores().min(items.len() / MIN_ITEMS);
    if threads <= 1 {
        items.iter().for_each(|item| consume(f(item)));
        return;
    }
    // The calling thread is one of them.
    let threads = threads.saturating_sub(1);
    let next = AtomicUsize::new(0);
    let window = Window::new(threads.saturating_mul(CHUNK).saturating_mul(AHEAD));
    let (next, f, window) = (&next, &f, &window);
    std::thread::scope(|s| {
        // Results go over in runs of CHUNK items: one message, and one wake-up of the
        // consuming thread, per run rather than per item.
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Vec<R>)>();
        for _ in 0..threads {
            let tx = tx.clone();
            // A panic in `f` ends its thread (and the window, so that the others stop);
            // the scope's join then raises it here.
            s.spawn(move || {
                let _close = Closer(window);
                loop {
                    let first = next.fetch_add(CHUNK, Ordering::Relaxed);
                    let Some(run) = items.get(first..).filter(|r| !r.is_empty()) else {
                        return;
                    };
                    if !window.wait_for(first) {
                        return;
                    }
                    let done = run.iter().take(CHUNK).map(f).collect();
                    if tx.send((first, done)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // Should consuming panic, no computing thread waits on.
        let _close = Closer(window);
        let mut early = std::collections::BTreeMap::new();
        let mut wanted = 0usize;
        for (first, run) in rx {
            early.insert(first, run);
            while let Some(run) = early.remove(&wanted) {
                run.into_iter().for_each(&mut consume);
                wanted = wanted.saturating_add(CHUNK);
                window.consumed(wanted);
            }
        }
    });
}

/// How far the computing threads of [`for_each_ordered`] may run ahead of the consuming
/// one, in runs per thread. Without a bound the results wait in memory when the consumer
/// is the slower: discovery's 10,000-app run held up to 3,500 parsed files at once
/// (docs/performance.md).
const AHEAD: usize = 4;

/// The items consumed so far, for the computing threads to wait on.
struct Window {
    /// Items consumed; `None` once the work is over (ended, or a thread panicked).
    state: std::sync::Mutex<Option<usize>>,
    moved: std::sync::Condvar,
    width: usize,
}

impl Window {
    fn new(width: usize) -> Window {
        Window {
            state: std::sync::Mutex::new(Some(0)),
            moved: std::sync::Condvar::new(),
            width,
        }
    }

    /// Wait until the item `first` is within the window; false when the work is over.
    fn wait_for(&self, first: usize) -> bool {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let width = self.width;
        let state = self
            .moved
            .wait_while(state, |s| {
                s.is_some_and(|done| first >= done.saturating_add(width))
            })
            .unwrap_or_else(|p| p.into_inner());
        state.is_some()
    }

    fn consumed(&self, items: usize) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(done) = state.as_mut() {
            *done = items;
        }
        drop(state);
        self.moved.notify_all();
    }

    fn close(&self) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.moved.notify_all();
    }
}

/// Closes its window when its thread unwinds, so that no other thread waits on it.
struct Closer<'a>(&'a Window);

impl Drop for Closer<'_> {
    fn drop(&mut self) {
        // A thread that ends normally leaves the window to the others: every computing
        // thread has returned before the consuming one ends.
        if std::thread::panicking() {
            self.0.close();
        }
    }
}

/// Items computed in one go by a thread of [`for_each_ordered`] and handed over together.
/// Small enough that the consuming thread starts early and has little to wait for at the end.
const CHUNK: usize = 8;

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_order_of_the_items() {
        let items: Vec<usize> = (0..1000).collect();
        let out = super::map(&items, |&i| {
            // Uneven work, so threads finish out of order.
            std::hint::black_box((0..(i % 7) * 1000).fold(0usize, |a, b| a ^ b));
            i
        });
        assert_eq!(out, items);
        // Lengths from where a second thread starts (twice `MIN_ITEMS`) and around the edges
        // of the threads' blocks: each item once, in order.
        let two = 2 * super::MIN_ITEMS;
        for n in [two, two + 1, two + 15, two + 16, two + 17, 1007] {
            let items: Vec<usize> = (0..n).collect();
            assert_eq!(
                super::map(&items, |&i| i * 3),
                (0..n).map(|i| i * 3).collect::<Vec<_>>()
            );
        }
        assert_eq!(super::map(&[1, 2, 3], |x| x * 2), vec![2, 4, 6]);
        assert!(super::map(&[] as &[u8], |x| *x).is_empty());
    }

    #[test]
    fn streamed_results_are_consumed_in_the_order_of_the_items() {
        for n in [0usize, 3, 1000, 1003] {
            let items: Vec<usize> = (0..n).collect();
            let mut seen = Vec::new();
            super::for_each_ordered(
                &items,
                |&i| {
                    std::hint::black_box((0..(i % 7) * 1000).fold(0usize, |a, b| a ^ b));
                    i * 2
                },
                |r| seen.push(r),
            );
            assert_eq!(seen, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn computing_runs_at_most_a_window_ahead_of_consuming() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let items: Vec<usize> = (0..2000).collect();
        let computed = AtomicUsize::new(0);
        let mut consumed = 0usize;
        let mut most = 0usize;
        super::for_each_ordered(
            &items,
            |&i| {
                computed.fetch_add(1, Ordering::SeqCst);
                i
            },
            |_| {
                // A slow consumer: unbounded, the computing threads would finish first.
                std::thread::sleep(std::time::Duration::from_micros(50));
                consumed += 1;
                most = most.max(computed.load(Ordering::SeqCst) - consumed);
            },
        );
        assert_eq!(consumed, items.len());
        let threads = super::cores().min(items.len() / super::MIN_ITEMS);
        if threads > 1 {
            // The window, plus the run each computing thread (all but the calling one) may
            // be computing.
            let bound = (threads - 1) * super::CHUNK * (super::AHEAD + 1);
            assert!(most <= bound, "{most} items computed ahead, bound {bound}");
        }
    }

    #[test]
    fn a_panic_while_computing_or_consuming_is_raised_not_hung() {
        let items: Vec<usize> = (0..2000).collect();
        let computing = std::panic::catch_unwind(|| {
            super::for_each_ordered(&items, |&i| assert!(i != 700, "boom"), |_| ());
        });
        assert!(computing.is_err());
        let consuming = std::panic::catch_unwind(|| {
            super::for_each_ordered(&items, |&i| i, |i| assert!(i != 300, "boom"));
        });
        assert!(consuming.is_err());
    }
}
