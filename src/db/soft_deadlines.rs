//! Soft deadlines (issue 42's `SET ... STALE`): a key is fresh until its
//! soft deadline and stale from then to its hard deadline, its ordinary
//! TTL. What is kept per key is the grace, the length of the stale time,
//! so that EXPIRE and its kind move both deadlines and keep the grace
//! (the soft deadline is the hard one minus it), and, until it passes,
//! the soft deadline in order, for the `stale` event the active cycle
//! signals on time. That order is kept only while the event has readers
//! (`notify-keyspace-events` with `x`): otherwise SET STALE would pay
//! for two more random memory accesses (the order's record and its
//! position) that nothing reads; it is rebuilt from the graces when the
//! event is turned on. Keys are dict positions, as in `EntryDeadlines`;
//! a database with none spends one emptiness check per write on them.
//!
//! Any write of the key but a new deadline drops its soft deadline
//! (`Db::signal`), and so do its deletion and the loss of its TTL.
//!
//! Files and replicas keep a soft deadline as an absolute time beside
//! the key's ordinary TTL, in a form redis-server reads and ignores
//! (`encode`): an RDB AUX field named `LABEL` after the key, and in the
//! AOF and the replication stream `ECHO "LABEL:..."` after the write.

use std::collections::HashMap;

use super::entry_deadlines::{move_key, swap_keys, EntryDeadlines};

/// The name of the AUX field, and the prefix of the ECHO message, that
/// carry a soft deadline.
pub const LABEL: &str = "lapse-soft-deadline";

/// A soft deadline as files and replicas carry it: `ms:key`.
pub fn encode(key: &[u8], soft_ms: i64) -> Vec<u8> {
    let mut out = format!("{soft_ms}:").into_bytes();
    out.extend_from_slice(key);
    out
}

/// `encode`'s soft deadline and key.
pub fn decode(payload: &[u8]) -> Option<(i64, &[u8])> {
    let colon = payload.iter().position(|&b| b == b':')?;
    let ms = std::str::from_utf8(&payload[..colon]).ok()?.parse().ok()?;
    Some((ms, &payload[colon + 1..]))
}

/// The ECHO message carrying a soft deadline in the AOF and the
/// replication stream.
pub fn echo_message(key: &[u8], soft_ms: i64) -> Vec<u8> {
    let mut out = format!("{LABEL}:").into_bytes();
    out.extend_from_slice(&encode(key, soft_ms));
    out
}

/// `echo_message`'s soft deadline and key, if `message` is one.
pub fn from_echo_message(message: &[u8]) -> Option<(i64, &[u8])> {
    decode(message.strip_prefix(LABEL.as_bytes())?.strip_prefix(b":")?)
}

#[derive(Default)]
pub struct SoftDeadlines {
    /// Dict position -> grace, ms.
    graces: HashMap<u32, i64, crate::dict::DefaultHasher>,
    /// The soft deadlines not reached yet (their `stale` event to come).
    /// A record whose key lost its grace stays until it comes up or the
    /// key goes (`forget`): a write that drops a soft deadline costs one
    /// map removal, and SET STALE over the same key raises the record in
    /// place (O(1)) instead of a removal and an insertion in the heap.
    pending: EntryDeadlines,
    /// The `stale` event has readers: `pending` is kept.
    on_time: bool,
}

impl SoftDeadlines {
    /// No key has a soft deadline (writes need not look).
    pub fn is_empty(&self) -> bool {
        self.graces.is_empty()
    }

    /// Nothing is kept by dict position (entry moves need not look).
    pub fn is_idle(&self) -> bool {
        self.graces.is_empty() && self.pending.is_empty()
    }

    /// The key at `entry`, whose hard deadline is `hard_ms`, is stale
    /// from `soft_ms` (its grace is the time between).
    pub fn set(&mut self, entry: u32, soft_ms: i64, hard_ms: i64) {
        let soft_ms = soft_ms.min(hard_ms);
        self.graces.insert(entry, hard_ms.saturating_sub(soft_ms));
        if self.on_time {
            self.pending.set(entry, soft_ms);
        }
    }

    pub fn keeps_order(&self) -> bool {
        self.on_time
    }

    /// Keeps the soft deadlines to come in order (`on`: the `stale` event
    /// has readers) or not; turned on at `now_ms`, the order is rebuilt
    /// from the graces and `hard_of`, the hard deadline of an entry.
    pub fn keep_order(&mut self, on: bool, now_ms: i64, hard_of: impl Fn(u32) -> Option<i64>) {
        if on == self.on_time {
            return;
        }
        self.on_time = on;
        self.pending = EntryDeadlines::default();
        if on {
            for (&entry, &grace) in &self.graces {
                let Some(hard_ms) = hard_of(entry) else {
                    continue;
                };
                let soft_ms = hard_ms.saturating_sub(grace);
                if soft_ms > now_ms {
                    self.pending.set(entry, soft_ms);
                }
            }
        }
    }

    pub fn grace(&self, entry: u32) -> Option<i64> {
        if self.graces.is_empty() {
            return None;
        }
        self.graces.get(&entry).copied()
    }

    /// The key at `entry` has a new hard deadline at `now_ms`: its soft
    /// one follows, the grace kept (a key already stale that stays stale
    /// is not signalled again).
    pub fn hard_moved(&mut self, entry: u32, hard_ms: i64, now_ms: i64) {
        if !self.on_time {
            return;
        }
        if let Some(grace) = self.grace(entry) {
            let soft_ms = hard_ms.saturating_sub(grace);
            if soft_ms > now_ms || self.pending.contains(entry) {
                self.pending.set(entry, soft_ms);
            }
        }
    }

    /// The key at `entry` has no soft deadline (any more); its record,
    /// if any, is left to lapse.
    pub fn clear(&mut self, entry: u32) {
        self.graces.remove(&entry);
    }

    /// The key at `entry` is gone: nothing of it is kept.
    pub fn forget(&mut self, entry: u32) {
        self.graces.remove(&entry);
        self.pending.clear(entry);
    }

    /// No soft deadline is reached before this time.
    pub fn earliest_ms(&self) -> Option<i64> {
        self.pending.earliest_ms()
    }

    /// A key whose soft deadline was reached by `now_ms`, the earliest
    /// first: it is stale from now on (and signalled once).
    pub fn pop_reached(&mut self, now_ms: i64) -> Option<u32> {
        loop {
            let entry = self.pending.pop_due(now_ms)?;
            if self.graces.contains_key(&entry) {
                return Some(entry);
            }
        }
    }

    /// The dict entry at `from` moved to `to` (whose own entry was
    /// removed).
    pub fn entry_moved(&mut self, from: u32, to: u32) {
        move_key(&mut self.graces, from, to);
        self.pending.entry_moved(from, to);
    }

    /// Dict entries `a` and `b` traded places (a save in progress).
    pub fn entries_swapped(&mut self, a: u32, b: u32) {
        swap_keys(&mut self.graces, a, b);
        self.pending.entries_swapped(a, b);
    }

    pub fn clear_all(&mut self) {
        *self = SoftDeadlines {
            on_time: self.on_time,
            ..SoftDeadlines::default()
        };
    }
}
