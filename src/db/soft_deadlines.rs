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
//! event is turned on. Keys are dict positions, as in `EntryDeadlines`,
//! their graces in a map or, once many keys have one, an array by
//! position (`Graces`); a database with none spends one emptiness check
//! per write on them.
//!
//! Any write of the key but a new deadline drops its soft deadline
//! (`Db::signal`), and so do its deletion and the loss of its TTL.
//!
//! Files and replicas keep a soft deadline as an absolute time beside
//! the key's ordinary TTL, in a form redis-server reads and ignores
//! (`encode`): an RDB AUX field named `LABEL` after the key, and in the
//! AOF and the replication stream `ECHO "LABEL:..."` after the write.

use std::collections::HashMap;

use super::entry_deadlines::EntryDeadlines;

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

/// Dict position -> grace, ms: a map while few keys have one; once many
/// do (an eighth of the positions), an array of one `u32` a position,
/// where a write finds the grace in one memory access instead of a map's
/// two (its control bytes and its record, both cold on a large keyspace:
/// what made SET STALE slower than SET EX on random keys). A grace of 49
/// days or more stays in the map beside the array.
#[derive(Default)]
struct Graces {
    /// Dense: a position's grace, or `NONE`, or `IN_MAP` (too long for a
    /// `u32`); empty while sparse.
    dense: Vec<u32>,
    /// Sparse: every grace; dense: the long ones.
    map: HashMap<u32, i64, crate::dict::DefaultHasher>,
    len: usize,
}

const NONE: u32 = u32::MAX;
const IN_MAP: u32 = u32::MAX - 1;
/// Fewer graces than this stay in the map.
const DENSE_MIN: usize = 1024;

impl Graces {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn is_dense(&self) -> bool {
        !self.dense.is_empty()
    }

    fn get(&self, entry: u32) -> Option<i64> {
        if !self.is_dense() {
            return self.map.get(&entry).copied();
        }
        match self.dense.get(entry as usize).copied().unwrap_or(NONE) {
            NONE => None,
            IN_MAP => self.map.get(&entry).copied(),
            ms => Some(i64::from(ms)),
        }
    }

    /// Takes the dense form if an eighth of the dict's `positions` or
    /// more have a grace.
    fn fit(&mut self, positions: usize) {
        if !self.is_dense() && self.len >= DENSE_MIN && self.len * 8 >= positions {
            let graces: Vec<(u32, i64)> = self.map.drain().collect();
            self.len = 0;
            self.dense = vec![NONE; positions];
            for (entry, grace) in graces {
                self.insert(entry, grace);
            }
        }
    }

    fn insert(&mut self, entry: u32, grace: i64) {
        if !self.is_dense() {
            if self.map.insert(entry, grace).is_none() {
                self.len += 1;
            }
            return;
        }
        let at = entry as usize;
        if at >= self.dense.len() {
            self.dense.resize(at + 1, NONE);
        }
        let old = self.dense[at];
        if old == NONE {
            self.len += 1;
        } else if old == IN_MAP {
            self.map.remove(&entry);
        }
        self.dense[at] = match u32::try_from(grace) {
            Ok(ms) if ms < IN_MAP => ms,
            _ => {
                self.map.insert(entry, grace);
                IN_MAP
            }
        };
    }

    /// Drops `entry`'s grace; what it was.
    fn remove(&mut self, entry: u32) -> Option<i64> {
        let grace = if self.is_dense() {
            let slot = self.dense.get_mut(entry as usize)?;
            let ms = std::mem::replace(slot, NONE);
            match ms {
                NONE => None,
                IN_MAP => self.map.remove(&entry),
                ms => Some(i64::from(ms)),
            }
        } else {
            self.map.remove(&entry)
        };
        if grace.is_some() {
            self.len -= 1;
            if self.is_dense() && self.len * 32 < self.dense.len() {
                self.make_sparse();
            }
        }
        grace
    }

    /// The entry at `from` is now at `to` (`move_key` for this store).
    fn moved(&mut self, from: u32, to: u32) {
        if let Some(grace) = self.remove(from) {
            self.insert(to, grace);
        }
    }

    /// Entries `a` and `b` traded places (`swap_keys` for this store).
    fn swapped(&mut self, a: u32, b: u32) {
        let (ga, gb) = (self.remove(a), self.remove(b));
        if let Some(grace) = ga {
            self.insert(b, grace);
        }
        if let Some(grace) = gb {
            self.insert(a, grace);
        }
    }

    fn iter(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter(|&(_, &ms)| ms < IN_MAP)
            .map(|(at, &ms)| (at as u32, i64::from(ms)));
        dense.chain(self.map.iter().map(|(&entry, &grace)| (entry, grace)))
    }

    fn make_sparse(&mut self) {
        let graces: Vec<(u32, i64)> = self.iter().collect();
        *self = Graces::default();
        for (entry, grace) in graces {
            self.insert(entry, grace);
        }
    }
}

#[derive(Default)]
pub struct SoftDeadlines {
    graces: Graces,
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
    /// `positions`: how many the dict has.
    pub fn set(&mut self, entry: u32, soft_ms: i64, hard_ms: i64, positions: usize) {
        let soft_ms = soft_ms.min(hard_ms);
        self.graces.fit(positions);
        self.graces.insert(entry, hard_ms.saturating_sub(soft_ms));
        if self.on_time {
            self.pending.set(entry, soft_ms);
        }
    }

    #[cfg(test)]
    pub fn graces_are_dense(&self) -> bool {
        self.graces.is_dense()
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
            for (entry, grace) in self.graces.iter() {
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
        self.graces.get(entry)
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
        self.graces.remove(entry);
    }

    /// The key at `entry` is gone: nothing of it is kept.
    pub fn forget(&mut self, entry: u32) {
        self.graces.remove(entry);
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
            if self.graces.get(entry).is_some() {
                return Some(entry);
            }
        }
    }

    /// The dict entry at `from` moved to `to` (whose own entry was
    /// removed).
    pub fn entry_moved(&mut self, from: u32, to: u32) {
        self.graces.moved(from, to);
        self.pending.entry_moved(from, to);
    }

    /// Dict entries `a` and `b` traded places (a save in progress).
    pub fn entries_swapped(&mut self, a: u32, b: u32) {
        self.graces.swapped(a, b);
        self.pending.entries_swapped(a, b);
    }

    pub fn clear_all(&mut self) {
        *self = SoftDeadlines {
            on_time: self.on_time,
            ..SoftDeadlines::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Graces answer as a plain map would, through the change to the
    /// dense form and back, long graces (kept in the map) included.
    #[test]
    fn graces_answer_as_a_map_in_either_form() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(42);
        let mut graces = Graces::default();
        let mut model: HashMap<u32, i64> = HashMap::new();
        let (mut densified, mut sparsified) = (false, false);
        let positions = 20_000;
        for round in 0..200_000 {
            let entry = rng.gen_range(0..positions as u32);
            // Mostly inserts first (the dense form comes), mostly
            // removals after (it goes).
            let insert = rng.gen_bool(if round < 100_000 { 0.8 } else { 0.01 });
            if insert {
                let grace = if rng.gen_bool(0.05) {
                    i64::from(u32::MAX) + rng.gen_range(-3..1000)
                } else {
                    rng.gen_range(0..100_000)
                };
                graces.fit(positions);
                graces.insert(entry, grace);
                model.insert(entry, grace);
            } else {
                assert_eq!(graces.remove(entry), model.remove(&entry));
            }
            densified |= graces.is_dense();
            sparsified |= densified && !graces.is_dense();
            assert_eq!(graces.len, model.len());
            if round % 10_000 == 0 {
                let mut all: Vec<(u32, i64)> = graces.iter().collect();
                all.sort_unstable();
                let mut expected: Vec<(u32, i64)> = model.iter().map(|(&e, &g)| (e, g)).collect();
                expected.sort_unstable();
                assert_eq!(all, expected);
            }
            let probe = rng.gen_range(0..positions as u32 + 10);
            assert_eq!(graces.get(probe), model.get(&probe).copied());
        }
        assert!(densified && sparsified);
    }
}
