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
//!
//! It frees at a measured pace. Freeing a big value in one go puts tens of
//! milliseconds of kernel work (returning pages) into one burst, and on a
//! small machine that burst delays the event loop by milliseconds even from
//! another thread (measured: a 400 MiB string, or the 32 MiB entry array
//! of a 1M-member set, stalled a PINGing client 1.5-4 ms; the same UNLINK
//! with the free skipped stalled nothing). So the thread drops aggregates a
//! slice of elements at a time, returns big buffers' pages 256 KiB at a
//! time, and sleeps `PAUSE` after every `SLICE` of work, unless more than
//! `CATCH_UP_OBJECTS` wait: then it works flat out until the backlog is
//! half that, so that a loop deleting faster than the paced thread frees
//! cannot grow memory without bound.
//!
//! The thread runs in the normal scheduling class: the pacing alone keeps
//! its bursts short. In `SCHED_IDLE` (tried) it got no core while the loop
//! and busy clients took both of a small machine's, fell hundreds of
//! thousands of objects behind under FLUSHALL ASYNC churn, and, preempted
//! while holding the allocator's lock, made the loop wait for it.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::value::effort::estimated_bytes;
use crate::value::{Hash, Set, Value, ZSet};

/// Anything that can be dropped on another thread, and how many values
/// it holds.
type Garbage = (Box<dyn Any + Send>, u64, u64);

/// Work the freer does before it pauses.
const SLICE: Duration = Duration::from_micros(100);
/// How long it pauses: the freer uses at most about a third of a core.
const PAUSE: Duration = Duration::from_micros(200);
/// Objects waiting past which the freer catches up: no pauses, until the
/// backlog is half that again. At a third of a core it may not keep up
/// with a loop that deletes faster, and memory held would grow.
const CATCH_UP_OBJECTS: u64 = 1_000_000;

/// Bytes of a buffer's pages returned to the OS per step.
const RELEASE_STEP_BYTES: usize = 256 * 1024;

/// Keeps the freer's bursts of work short (see the module comment), unless
/// the backlog says it must catch up.
struct Pacer {
    slice_started: Instant,
    /// Objects handed over and not yet freed (shared with the loop).
    backlog: Arc<AtomicU64>,
    /// Working flat out, without pauses.
    catching_up: bool,
}

impl Pacer {
    fn new(backlog: Arc<AtomicU64>) -> Self {
        Self {
            slice_started: Instant::now(),
            backlog,
            catching_up: false,
        }
    }

    /// Called between small units of work: pauses once a slice is used up,
    /// except while catching up.
    fn tick(&mut self) {
        if self.slice_started.elapsed() < SLICE {
            return;
        }
        let backlog = self.backlog.load(Ordering::Relaxed);
        if backlog > CATCH_UP_OBJECTS {
            self.catching_up = true;
        } else if backlog <= CATCH_UP_OBJECTS / 2 {
            self.catching_up = false;
        }
        if !self.catching_up {
            std::thread::sleep(PAUSE);
        }
        self.slice_started = Instant::now();
    }

    /// Returns the whole pages inside `[start, start + bytes)` to the OS,
    /// a step at a time. The caller owns that memory, frees it next and
    /// never reads it again. Pages partly outside (where the allocator
    /// keeps its bookkeeping) are left alone.
    fn release(&mut self, start: *mut u8, bytes: usize) {
        #[cfg(target_os = "linux")]
        {
            const PAGE: usize = 4096;
            let base = start as usize;
            let mut at = (base + PAGE - 1) & !(PAGE - 1);
            let end = base.saturating_add(bytes) & !(PAGE - 1);
            while at < end {
                let len = RELEASE_STEP_BYTES.min(end - at);
                // SAFETY: `[at, at + len)` is whole pages of memory the
                // caller owns and will free without reading; MADV_DONTNEED
                // only discards their contents.
                unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_DONTNEED) };
                at += len;
                self.tick();
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (start, bytes);
    }
}

/// Drops `garbage` at the pacer's pace: values and flushed databases
/// piece by piece, anything else at once.
fn free_paced(mut garbage: Box<dyn Any + Send>, pacer: &mut Pacer) {
    // One pacer serves both callbacks: `tick` between slices, `release`
    // for the buffers once they are empty.
    let pacer = std::cell::RefCell::new(pacer);
    let mut tick = || pacer.borrow_mut().tick();
    let mut release = |start: *mut u8, bytes: usize| pacer.borrow_mut().release(start, bytes);
    if let Some(value) = garbage.downcast_mut::<Value>() {
        clear_value(value, &mut tick, &mut release);
    } else if let Some(table) = garbage.downcast_mut::<crate::dict::Dict<crate::db::Entry>>() {
        table.clear_paced(&mut tick, &mut release);
    }
    drop(garbage);
}

fn clear_value(value: &mut Value, tick: &mut dyn FnMut(), release: &mut dyn FnMut(*mut u8, usize)) {
    match value {
        Value::Str(s) => release(s.as_mut_ptr(), s.capacity()),
        Value::List(l) => l.clear_paced(tick),
        Value::Hash(Hash::Table(h)) => h.clear_paced(tick, release),
        Value::Hash(Hash::Packed(_)) => {}
        Value::Set(Set::Table(s)) => s.clear_paced(tick, release),
        Value::Set(_) => {}
        Value::ZSet(ZSet::Tree(z)) => z.clear_paced(tick, release),
        Value::ZSet(ZSet::Packed(_)) => {}
        Value::Stream(_) => {}
    }
}

/// The background freer.
pub struct LazyFree {
    tx: Option<Sender<Garbage>>,
    /// Objects handed over and not yet freed (INFO `lazyfree_pending_objects`).
    pending: Arc<AtomicU64>,
    /// Objects freed by the thread so far (INFO `lazyfreed_objects`).
    freed: Arc<AtomicU64>,
    /// About how many bytes the objects handed over and not yet freed
    /// hold (`estimated_bytes`): memory on its way back, which eviction
    /// counts as gone so that it does not evict more meanwhile.
    pending_bytes: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    trimmer: Trimmer,
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
        let pending_bytes = Arc::new(AtomicU64::new(0));
        let thread = {
            let (pending, freed, bytes) = (pending.clone(), freed.clone(), pending_bytes.clone());
            std::thread::Builder::new()
                .name("lazyfree".into())
                .spawn(move || {
                    let mut pacer = Pacer::new(pending.clone());
                    while let Ok((garbage, objects, size)) = rx.recv() {
                        free_paced(garbage, &mut pacer);
                        bytes.fetch_sub(size, Ordering::Relaxed);
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
            pending_bytes,
            thread,
            trimmer: Trimmer::default(),
        }
    }

    /// Frees `garbage` on the background thread.
    pub fn free_async<T: Any + Send>(&self, garbage: T) {
        self.free_async_counted(garbage, 1);
    }

    /// Frees `garbage` (holding `objects` values, e.g. a flushed database)
    /// on the background thread.
    pub fn free_async_counted<T: Any + Send>(&self, garbage: T, objects: u64) {
        self.free_async_sized(garbage, objects, 0);
    }

    /// Frees a value on the background thread, counting its memory as
    /// on its way back until it is (`pending_bytes`).
    pub fn free_value(&self, value: Value) {
        let bytes = estimated_bytes(&value) as u64;
        self.free_async_sized(value, 1, bytes);
    }

    fn free_async_sized<T: Any + Send>(&self, garbage: T, objects: u64, bytes: u64) {
        let Some(tx) = &self.tx else {
            return drop(garbage);
        };
        self.pending.fetch_add(objects, Ordering::Relaxed);
        self.pending_bytes.fetch_add(bytes, Ordering::Relaxed);
        if let Err(returned) = tx.send((Box::new(garbage), objects, bytes)) {
            // The thread is gone: free here.
            self.pending.fetch_sub(objects, Ordering::Relaxed);
            self.pending_bytes.fetch_sub(bytes, Ordering::Relaxed);
            drop(returned);
        }
    }

    /// About how many bytes are on their way back (see `pending_bytes`).
    pub fn pending_bytes(&self) -> u64 {
        self.pending_bytes.load(Ordering::Relaxed)
    }

    /// The cron's part, `hz` times a second: gives freed memory back to
    /// the OS when `Trimmer` says so (`commands`: INFO
    /// `total_commands_processed`).
    pub fn cron(&mut self, commands: u64) {
        let idle = self.pending_objects() == 0;
        self.trimmer.cron(idle, commands);
    }

    pub fn pending_objects(&self) -> u64 {
        self.pending.load(Ordering::Relaxed)
    }

    pub fn freed_objects(&self) -> u64 {
        self.freed.load(Ordering::Relaxed)
    }

    /// CONFIG RESETSTAT: `lazyfreed_objects` counts from zero again.
    pub fn reset_stats(&self) {
        self.freed.store(0, Ordering::Relaxed);
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

/// Tunes glibc's allocator for a server whose frees happen on two
/// threads: no fastbins (`M_MXFAST` 0). A fastbin defers coalescing, and
/// glibc pays it back all at once (`malloc_consolidate`, walking every
/// deferred chunk) when a large block is freed or requested, under the
/// arena's lock. With FLUSHALL ASYNC every second under 8 writers, the
/// freer met such a walk of hundreds of thousands of chunks every few
/// frees and the loop waited for the lock: the freer fell a million
/// entries behind (~750 MB RSS) and PINGs took 5-17 ms for 200 ms after
/// each flush. Without fastbins (the per-thread tcache still serves the
/// hot path) the freer keeps up (nothing pending at each second, 480 MB)
/// and PING p99 is under 1 ms (`benches/flush_churn.py`). Call once at
/// startup; best effort.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's own parameters.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

/// Decides when freed memory goes back to the OS. glibc keeps what is
/// freed in its free lists, reused by later allocations but still
/// resident: after a FLUSHALL of 1.3 GB, 1.2 GB stayed resident with one
/// key left (redis-server's jemalloc returns it over about 10 s). Asking
/// for it back (`malloc_trim`) walks every free chunk holding the
/// allocator's lock, a pause of the loop (37 ms for that 1.2 GB). So it is
/// asked when it pays and meets almost no one: more than
/// `TRIM_HELD_BYTES` held beyond what the last trim left, nothing waiting
/// for the freer, and a quiet server (at most `QUIET_COMMANDS` commands
/// since the last look). A busy server reuses the memory instead.
struct Trimmer {
    last_look: Instant,
    /// `total_commands_processed` at the last look.
    commands_seen: u64,
    /// Bytes resident beyond `used_memory` that a trim could not return
    /// (allocator overhead, pages shared by live blocks): what the last
    /// trim left, lowered whenever less is held; 0 before any trim.
    floor_bytes: u64,
}

/// How often the trimmer looks.
const TRIM_LOOK_EVERY: Duration = Duration::from_secs(1);
/// Resident bytes beyond `used_memory` and the floor that make a trim
/// worth its pause.
const TRIM_HELD_BYTES: u64 = 64 * 1024 * 1024;
/// Commands since the last look up to which the server counts as quiet.
const QUIET_COMMANDS: u64 = 1000;

impl Default for Trimmer {
    fn default() -> Self {
        Self {
            last_look: Instant::now(),
            commands_seen: 0,
            floor_bytes: 0,
        }
    }
}

impl Trimmer {
    fn cron(&mut self, freer_idle: bool, commands: u64) {
        if self.last_look.elapsed() < TRIM_LOOK_EVERY {
            return;
        }
        self.last_look = Instant::now();
        let quiet = commands.saturating_sub(self.commands_seen) <= QUIET_COMMANDS;
        self.commands_seen = commands;
        let held = held_beyond_used();
        self.floor_bytes = self.floor_bytes.min(held);
        if quiet && freer_idle && held > self.floor_bytes.saturating_add(TRIM_HELD_BYTES) {
            return_free_memory();
            self.floor_bytes = held_beyond_used();
        }
    }
}

/// Resident bytes beyond the heap bytes in use.
fn held_beyond_used() -> u64 {
    crate::memory::rss_bytes().saturating_sub(crate::memory::used_memory() as u64)
}

/// Asks glibc to hand free pages back to the OS (freed buffers scattered
/// through the heap otherwise stay resident): MEMORY PURGE, and the
/// `Trimmer`.
pub fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::effort::{free_effort, is_big};

    #[test]
    fn effort_counts_big_strings_by_size() {
        assert_eq!(free_effort(&Value::Str(b"small".to_vec())), 1);
        assert!(!is_big(&Value::Str(vec![0; 4 * 1024 * 1024 - 1])));
        assert!(is_big(&Value::Str(vec![0; 5 * 1024 * 1024])));
    }

    #[test]
    fn effort_counts_aggregate_elements_and_list_chunks() {
        use crate::value::list::{End, List};
        use crate::value::SetLimits;
        // Packed: one unit, as Redis counts a listpack.
        let mut set = Set::default();
        for i in 0..65 {
            set.add(format!("m{i}").as_bytes(), SetLimits::DEFAULT);
        }
        assert!(!is_big(&Value::Set(set.clone())));
        for i in 65..200 {
            set.add(format!("m{i}").as_bytes(), SetLimits::DEFAULT);
        }
        assert_eq!(set.view().encoding(), "hashtable");
        assert!(is_big(&Value::Set(set)));
        // Short elements pack hundreds to a chunk: 10,000 fit in few chunks.
        let mut list = List::default();
        (0..10_000).for_each(|i| {
            list.push(
                End::Right,
                format!("e{i}").as_bytes(),
                crate::value::ListLimits::DEFAULT,
            )
        });
        assert!(!is_big(&Value::List(list.clone())));
        (0..100_000).for_each(|i| {
            list.push(
                End::Right,
                format!("e{i}").as_bytes(),
                crate::value::ListLimits::DEFAULT,
            )
        });
        assert!(is_big(&Value::List(list)));
    }

    #[test]
    fn the_freer_stops_pausing_while_far_behind_until_half_caught_up() {
        let backlog = Arc::new(AtomicU64::new(0));
        let mut pacer = Pacer::new(backlog.clone());
        let mut tick_at = |objects: u64| {
            backlog.store(objects, Ordering::Relaxed);
            pacer.slice_started = Instant::now() - 2 * SLICE;
            pacer.tick();
            pacer.catching_up
        };
        assert!(!tick_at(10));
        assert!(tick_at(CATCH_UP_OBJECTS + 1));
        assert!(tick_at(CATCH_UP_OBJECTS / 2 + 1));
        assert!(!tick_at(CATCH_UP_OBJECTS / 2));
        assert!(!tick_at(CATCH_UP_OBJECTS / 2 + 1));
    }

    /// After `tune_allocator`, freed small blocks never wait in fastbins
    /// (whose later consolidation stalled the loop): freeing a thousand
    /// 24-byte blocks adds none (other tests' threads can only make the
    /// count fall meanwhile, by consolidating theirs).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn small_frees_bypass_fastbins() {
        tune_allocator();
        std::thread::spawn(|| {
            let blocks: Vec<Box<[u8; 24]>> = (0..1000).map(|_| Box::new([7; 24])).collect();
            // SAFETY: mallinfo2 only reads the allocator's statistics.
            let before = unsafe { libc::mallinfo2() }.smblks;
            drop(blocks);
            let after = unsafe { libc::mallinfo2() }.smblks;
            assert!(after <= before, "fastbin blocks {before} -> {after}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn handed_over_values_are_freed_and_counted() {
        let mut lazy = LazyFree::start();
        lazy.free_async(Value::Str(vec![0; 8 * 1024 * 1024]));
        lazy.free_async_counted(vec![Value::Str(vec![0; 16]); 10], 10);
        let mut hash = Hash::default();
        for i in 0..5000 {
            let field = format!("field-long-enough-for-the-heap-{i}");
            hash.set(field.as_bytes(), b"v", crate::value::PackLimits::HASH);
        }
        assert_eq!(hash.view().encoding(), "hashtable");
        lazy.free_async(Value::Hash(hash));
        let mut list = crate::value::List::default();
        (0..50_000).for_each(|i| {
            list.push(
                crate::value::list::End::Left,
                format!("{i}").as_bytes(),
                crate::value::ListLimits::DEFAULT,
            )
        });
        lazy.free_async(Value::List(list));
        lazy.shutdown();
        assert_eq!(lazy.freed_objects(), 13);
        assert_eq!(lazy.pending_objects(), 0);
    }
}
