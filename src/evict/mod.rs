//! The memory limit (`maxmemory`): before a command runs, keys are evicted
//! until the memory the server counts is under the limit, as Redis's
//! `performEvictions` does; a command that may grow memory (`denyoom`) is
//! refused when nothing more can be evicted.
//!
//! `evict` decides *which* key goes; `db` removes it (the `evicted` event,
//! from which the loop propagates its DEL and publishes the notification),
//! `lazyfree` decides where its value is freed.
//!
//! Victims, by `maxmemory-policy`:
//! - LRU and LFU: Redis's approximation — `maxmemory-samples` random keys
//!   per database scored by idle time (LRU) or by how rarely they are used
//!   (LFU, the decayed logarithmic counter), merged into a pool of the 16
//!   best candidates kept across calls; the best still present goes.
//! - volatile-ttl: exactly the key nearest its deadline, from the
//!   deadline order the keyspace keeps (Redis samples it); sampled when
//!   `expire-strategy uniform` keeps no order.
//! - random: one uniformly random key, the databases taken in turn.

pub mod pool;

use std::time::{Duration, Instant};

use crate::config::Policy;
use crate::db::access::Access;
use crate::state::ServerState;

/// What `perform_evictions` achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Under the limit (or no limit).
    Ok,
    /// Still over, but evicting: time ran out for this call.
    Running,
    /// Over the limit and nothing (more) can be evicted.
    Fail,
}

/// Memory counted against `maxmemory`: what is allocated minus
/// `not_counted` (replicas' output and the AOF buffer, as Redis leaves
/// them out so that writing them never causes evictions) and minus what
/// the lazyfree thread is still freeing (already evicted: counting it
/// would evict more while it is returned).
fn counted_memory(state: &ServerState, not_counted: usize) -> usize {
    crate::memory::used_memory()
        .saturating_sub(not_counted)
        .saturating_sub(state.lazyfree.pending_bytes() as usize)
}

/// Bytes allocated that do not count against `maxmemory` (Redis's
/// `freeMemoryGetNotCountedMemory`): the AOF buffer and what waits to go
/// to replicas, so that sending them never causes evictions.
pub fn not_counted(state: &ServerState, peers: &dyn crate::connection::Sessions) -> usize {
    let mut bytes = state.aof.buffer_len();
    peers.for_each_session(&mut |s| {
        if let Some(link) = &s.replica {
            bytes += s.reply.pending() + link.held.len();
        }
    });
    bytes
}

/// Whether all that is allocated is over `maxmemory` (a set one): one
/// load of a counter, the check every command makes first.
pub fn over_limit(state: &ServerState) -> bool {
    let limit = state.config.maxmemory as usize;
    limit > 0 && crate::memory::used_memory() > limit
}

/// How long one call may evict (Redis's `evictionTimeLimitUs` from
/// `maxmemory-eviction-tenacity`: 500 µs at the default 10, growing 15%
/// a step up to 99; 100 means no limit).
fn time_limit(tenacity: u32) -> Option<Duration> {
    if tenacity >= 100 {
        return None;
    }
    let us = if tenacity <= 10 {
        50.0 * f64::from(tenacity)
    } else {
        500.0 * 1.15f64.powi(tenacity as i32 - 10)
    };
    Some(Duration::from_micros(us as u64))
}

/// Evicts keys until the counted memory is under `maxmemory` or time runs
/// out; the evictions' DELs and notifications go out before it returns.
pub fn perform_evictions(state: &mut ServerState, not_counted: usize, now_ms: i64) -> Outcome {
    let limit = state.config.maxmemory as usize;
    // Under CLIENT PAUSE the dataset stays as it is (Redis 7.0).
    if state.pause.is_on() || !over_limit(state) || counted_memory(state, not_counted) <= limit {
        end_exceeded_spell(state);
        return Outcome::Ok;
    }
    state
        .stats
        .eviction_exceeded_since
        .get_or_insert_with(Instant::now);
    let policy = state.config.maxmemory_policy;
    if policy == Policy::NoEviction {
        return Outcome::Fail;
    }
    let started = Instant::now();
    let threshold_ms = state.config.latency_monitor_threshold;
    let budget = time_limit(state.config.maxmemory_eviction_tenacity);
    let lazy = state.config.lazyfree.eviction;
    let mut outcome = Outcome::Ok;
    let mut evicted = 0usize;
    while counted_memory(state, not_counted) > limit {
        let Some((db, key)) = select_victim(state, policy, now_ms) else {
            outcome = Outcome::Fail;
            break;
        };
        // A candidate deleted meanwhile is not there: the next one is.
        if state.dbs[db].evict(&key, lazy) {
            evicted += 1;
            if lazy {
                // Its value goes to the lazyfree thread (counted as gone).
                state.free_garbage_of(db);
            }
        }
        if evicted.is_multiple_of(16) && budget.is_some_and(|b| started.elapsed() > b) {
            outcome = Outcome::Running;
            break;
        }
    }
    if evicted > 0 {
        state.process_key_events();
    }
    // Redis's latency event for a round of evictions.
    let ms = started.elapsed().as_millis() as u64;
    state
        .latency
        .add_if_needed(threshold_ms, "eviction-cycle", ms, now_ms / 1000);
    outcome
}

/// Memory is back under the limit: the time it was over is counted
/// (INFO `total_eviction_exceeded_time`).
pub fn end_exceeded_spell(state: &mut ServerState) {
    if let Some(since) = state.stats.eviction_exceeded_since.take() {
        state.stats.eviction_exceeded_ms += since.elapsed().as_millis() as u64;
    }
}

/// The next key to evict under `policy`, and its database.
fn select_victim(state: &mut ServerState, policy: Policy, now_ms: i64) -> Option<(usize, Vec<u8>)> {
    match policy {
        Policy::NoEviction => None,
        Policy::AllKeysRandom | Policy::VolatileRandom => random_victim(state, policy.volatile()),
        Policy::VolatileTtl => {
            nearest_deadline(state).or_else(|| pooled_victim(state, policy, now_ms))
        }
        _ => pooled_victim(state, policy, now_ms),
    }
}

/// The key nearest its deadline over all databases.
fn nearest_deadline(state: &mut ServerState) -> Option<(usize, Vec<u8>)> {
    let mut best: Option<(i64, usize, Vec<u8>)> = None;
    for db in &mut state.dbs {
        if let Some((at_ms, key)) = db.nearest_deadline() {
            if best.as_ref().is_none_or(|b| at_ms < b.0) {
                best = Some((at_ms, db.index, key));
            }
        }
    }
    best.map(|(_, db, key)| (db, key))
}

/// A random key (with a TTL if `volatile`), the databases in turn.
fn random_victim(state: &mut ServerState, volatile: bool) -> Option<(usize, Vec<u8>)> {
    let n = state.dbs.len();
    for i in 0..n {
        let db = (state.evict.next_db + i) % n;
        let mut picked = None;
        state.dbs[db].eviction_sample(&mut state.rng, volatile, 1, &mut |_, _, key| {
            picked = Some(key.to_vec())
        });
        if let Some(key) = picked {
            state.evict.next_db = db + 1;
            return Some((db, key));
        }
    }
    None
}

/// Samples every database into the pool and takes its best candidate
/// (Redis's `evictionPoolPopulate` + the pick).
fn pooled_victim(state: &mut ServerState, policy: Policy, now_ms: i64) -> Option<(usize, Vec<u8>)> {
    let samples = state.config.maxmemory_samples as usize;
    let volatile = policy.volatile();
    let access_policy = state.config.access_policy();
    let score = |access: Access, deadline: Option<i64>| -> u64 {
        match policy {
            Policy::VolatileTtl => u64::MAX - deadline.unwrap_or(i64::MAX).max(0) as u64,
            p if p.is_lfu() => 255 - u64::from(access.lfu_count(access_policy, now_ms)),
            _ => access.idle_ms(now_ms),
        }
    };
    for db in &state.dbs {
        let pool = &mut state.evict;
        db.eviction_sample(
            &mut state.rng,
            volatile,
            samples,
            &mut |access, deadline, key| pool.insert(score(access, deadline), db.index, key),
        );
    }
    // The best candidate. (One deleted since it entered the pool is found
    // missing by the eviction, which then asks again.)
    state.evict.take_best()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenacity_sets_the_time_limit_as_redis() {
        assert_eq!(time_limit(10), Some(Duration::from_micros(500)));
        assert_eq!(time_limit(0), Some(Duration::ZERO));
        assert!(time_limit(20).unwrap() > Duration::from_millis(2));
        assert_eq!(time_limit(100), None);
    }
}
