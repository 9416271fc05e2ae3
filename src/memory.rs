//! Memory accounting: the counting allocator behind INFO `used_memory`
//! (and `maxmemory`), the peak, and what the OS reports (RSS, available
//! and total memory).

use std::sync::atomic::{AtomicUsize, Ordering};

/// An allocator that counts live heap bytes (INFO `used_memory`). The binary
/// installs it as the global allocator; without it `used_memory` reads 0.
pub struct CountingAlloc;

static USED_MEMORY: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter is only bookkeeping.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        USED_MEMORY.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: our caller keeps `GlobalAlloc`'s contract, which is the
        // system allocator's: the call is forwarded as received.
        unsafe { std::alloc::System.alloc(layout) }
    }

    /// Forwarded as such (calloc): a big zeroed buffer (a bucket array at
    /// a resize) then arrives as fresh pages the OS zeroes on first touch,
    /// instead of being written with zeros by the loop (the default does
    /// `alloc` plus a memset: 184 ms at 8M keys).
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        USED_MEMORY.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: our caller keeps `GlobalAlloc`'s contract, which is the
        // system allocator's: the call is forwarded as received.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        USED_MEMORY.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: our caller keeps `GlobalAlloc`'s contract, which is the
        // system allocator's: the call is forwarded as received.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        USED_MEMORY.fetch_sub(layout.size(), Ordering::Relaxed);
        USED_MEMORY.fetch_add(new_size, Ordering::Relaxed);
        // SAFETY: our caller keeps `GlobalAlloc`'s contract, which is the
        // system allocator's: the call is forwarded as received.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

pub fn used_memory() -> usize {
    USED_MEMORY.load(Ordering::Relaxed)
}

/// The most `used_memory` has been, sampled after every command, by the
/// cron and by INFO, as Redis samples `used_memory_peak`.
static PEAK_MEMORY: AtomicUsize = AtomicUsize::new(0);

/// Records the memory in use now towards the peak; returns the peak.
pub fn sample_peak_memory() -> usize {
    let used = used_memory();
    let peak = PEAK_MEMORY.load(Ordering::Relaxed);
    if used <= peak {
        return peak;
    }
    PEAK_MEMORY.fetch_max(used, Ordering::Relaxed).max(used)
}

/// Memory the OS says is available (`MemAvailable` in /proc/meminfo),
/// in bytes; `None` where it cannot tell.
pub fn available_memory() -> Option<u64> {
    meminfo_bytes("MemAvailable:")
}

/// The machine's memory (`MemTotal`), for INFO `total_system_memory`.
pub fn system_memory() -> Option<u64> {
    meminfo_bytes("MemTotal:")
}

/// A /proc/meminfo line's value (kB there), in bytes.
fn meminfo_bytes(field: &str) -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Resident set size in bytes, from /proc (0 where unavailable).
pub fn rss_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}
