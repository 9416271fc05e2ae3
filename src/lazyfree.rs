//! Lazy free: decides *where* a value's memory is freed, inline or on a
//! background thread, so that dropping a huge value never stalls the loop.
//!
//! The rule follows Redis: a value whose free effort exceeds
//! `LAZYFREE_THRESHOLD` goes to the thread; anything smaller is dropped
//! inline, where it is cheaper than the hand-over. Unlike Redis, which counts
//! every string as effort 1, big strings count by their size.
//!
//! The thread only ever receives ownership of garbage to drop; it never
//! touches the keyspace.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::value::Value;

/// Values with more free effort than this are freed on the background
/// thread (Redis's `LAZYFREE_THRESHOLD`).
pub const LAZYFREE_THRESHOLD: usize = 64;
/// Bytes of string that count as one unit of free effort: strings above
/// 64 × 64 KiB = 4 MiB are handed over.
pub const STRING_EFFORT_UNIT_BYTES: usize = 64 * 1024;

/// How much work freeing `value` is, in Redis's units: elements for hashes,
/// sets and sorted sets (as Redis counts its hash tables and skiplists),
/// chunks for lists (as Redis counts quicklist nodes).
pub fn free_effort(value: &Value) -> usize {
    match value {
        Value::Str(s) => 1 + s.len() / STRING_EFFORT_UNIT_BYTES,
        Value::List(l) => l.chunk_count(),
        Value::Hash(h) => h.len(),
        Value::Set(s) => s.len(),
        Value::ZSet(z) => z.len(),
    }
}

/// Whether `value` is worth handing to the background thread.
pub fn is_big(value: &Value) -> bool {
    free_effort(value) > LAZYFREE_THRESHOLD
}

/// Puts the calling thread in Linux's `SCHED_IDLE` class: it runs only on a
/// CPU nothing else wants. Freeing a big value takes tens of milliseconds
/// of CPU; at normal priority, on a machine with few cores, the scheduler
/// hands the freer whole time slices while the event loop waits for a
/// core, which is the very stall lazy free exists to avoid. Best effort:
/// if the call fails the thread keeps its normal priority.
fn run_at_idle_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: plain system call on the calling thread with a valid,
        // initialised parameter; it touches no memory we own.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        if rc != 0 {
            tracing::debug!("lazyfree thread keeps normal priority (sched_setscheduler failed)");
        }
    }
}

/// Anything that can be dropped on another thread, and how many values
/// it holds.
type Garbage = (Box<dyn Send>, u64);

/// The background freer.
pub struct LazyFree {
    tx: Option<Sender<Garbage>>,
    /// Objects handed over and not yet freed (INFO `lazyfree_pending_objects`).
    pending: Arc<AtomicU64>,
    /// Objects freed by the thread so far (INFO `lazyfreed_objects`).
    freed: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Default for LazyFree {
    fn default() -> Self {
        Self::start()
    }
}

impl LazyFree {
    /// Starts the thread. If the OS refuses a thread, everything is freed
    /// inline instead: slower for huge values, never wrong.
    pub fn start() -> Self {
        let (tx, rx) = channel::<Garbage>();
        let pending = Arc::new(AtomicU64::new(0));
        let freed = Arc::new(AtomicU64::new(0));
        let thread = {
            let (pending, freed) = (pending.clone(), freed.clone());
            std::thread::Builder::new()
                .name("lazyfree".into())
                .spawn(move || {
                    run_at_idle_priority();
                    for (garbage, objects) in rx {
                        drop(garbage);
                        pending.fetch_sub(objects, Ordering::Relaxed);
                        freed.fetch_add(objects, Ordering::Relaxed);
                    }
                })
                .ok()
        };
        Self {
            tx: thread.as_ref().map(|_| tx),
            pending,
            freed,
            thread,
        }
    }

    /// Frees `garbage` on the background thread.
    pub fn free_async<T: Send + 'static>(&self, garbage: T) {
        self.free_async_counted(garbage, 1);
    }

    /// Frees `garbage` (holding `objects` values, e.g. a flushed database)
    /// on the background thread.
    pub fn free_async_counted<T: Send + 'static>(&self, garbage: T, objects: u64) {
        let Some(tx) = &self.tx else {
            return drop(garbage);
        };
        self.pending.fetch_add(objects, Ordering::Relaxed);
        if let Err(returned) = tx.send((Box::new(garbage), objects)) {
            // The thread is gone: free here.
            self.pending.fetch_sub(objects, Ordering::Relaxed);
            drop(returned);
        }
    }

    pub fn pending_objects(&self) -> u64 {
        self.pending.load(Ordering::Relaxed)
    }

    pub fn freed_objects(&self) -> u64 {
        self.freed.load(Ordering::Relaxed)
    }

    /// Waits until everything handed over is freed and stops the thread.
    pub fn shutdown(&mut self) {
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for LazyFree {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effort_counts_big_strings_by_size() {
        assert_eq!(free_effort(&Value::Str(b"small".to_vec())), 1);
        assert!(!is_big(&Value::Str(vec![0; 4 * 1024 * 1024 - 1])));
        assert!(is_big(&Value::Str(vec![0; 5 * 1024 * 1024])));
    }

    #[test]
    fn effort_counts_aggregate_elements_and_list_chunks() {
        use crate::value::list::{End, List};
        use crate::value::{Elem, Set};
        let mut set = Set::default();
        for i in 0..65 {
            set.insert_new(Elem::new(format!("m{i}").as_bytes()));
        }
        assert!(is_big(&Value::Set(Box::new(set))));
        // Short elements pack hundreds to a chunk: 10,000 fit in few chunks.
        let mut list = List::default();
        (0..10_000).for_each(|i| list.push(End::Right, format!("e{i}").as_bytes()));
        assert!(!is_big(&Value::List(Box::new(list.clone()))));
        (0..100_000).for_each(|i| list.push(End::Right, format!("e{i}").as_bytes()));
        assert!(is_big(&Value::List(Box::new(list))));
    }

    #[test]
    fn handed_over_values_are_freed_and_counted() {
        let mut lazy = LazyFree::start();
        lazy.free_async(Value::Str(vec![0; 8 * 1024 * 1024]));
        lazy.free_async_counted(vec![Value::Str(vec![0; 16]); 10], 10);
        lazy.shutdown();
        assert_eq!(lazy.freed_objects(), 11);
        assert_eq!(lazy.pending_objects(), 0);
    }
}
