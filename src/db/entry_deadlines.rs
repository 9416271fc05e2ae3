//! Some of a database's keys, each with one deadline of its own, in
//! deadline order: the values with element deadlines by the earliest of
//! them (hash fields, set and sorted-set members: where the active cycle
//! finds elements that are due, issues 21 and 40), and the keys whose
//! soft deadline is still to come (their `stale` event, issue 42).
//! Entries are dict positions, in the keyspace's own deadline heap
//! (`Expires`), with a sparse map back from position to record, so a
//! database without such keys spends nothing on them.
//!
//! A raised deadline keeps its record's place until it reaches the top,
//! where it settles (element deadlines keep a lower bound of the value's
//! earliest, refreshed after every change of the value).

use std::collections::HashMap;

use crate::deadlines::Expires;

/// What a map by dict position kept for `from` is now `to`'s (its entry
/// moved there); the value, if any.
pub fn move_key<V: Copy, S: std::hash::BuildHasher>(
    map: &mut HashMap<u32, V, S>,
    from: u32,
    to: u32,
) -> Option<V> {
    let value = map.remove(&from)?;
    map.insert(to, value);
    Some(value)
}

/// Dict positions `a` and `b` traded places in a map by position: what
/// is now `b`'s (was `a`'s) and what is now `a`'s.
pub fn swap_keys<V: Copy, S: std::hash::BuildHasher>(
    map: &mut HashMap<u32, V, S>,
    a: u32,
    b: u32,
) -> (Option<V>, Option<V>) {
    let (va, vb) = (map.remove(&a), map.remove(&b));
    if let Some(v) = va {
        map.insert(b, v);
    }
    if let Some(v) = vb {
        map.insert(a, v);
    }
    (va, vb)
}

#[derive(Default)]
pub struct EntryDeadlines {
    heap: Expires,
    /// Dict position -> record position in `heap`.
    pos: HashMap<u32, u32, crate::dict::DefaultHasher>,
}

impl EntryDeadlines {
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// The key at `entry` has its deadline at `at_ms`.
    pub fn set(&mut self, entry: u32, at_ms: i64) {
        if !self.heap.is_ordered() {
            self.heap.set_ordered(true, &mut |_, _| {});
        }
        let current = self.pos.get(&entry).copied();
        let pos = &mut self.pos;
        let mut moved = |entry: u32, to: u32| {
            pos.insert(entry, to);
        };
        match current {
            Some(at) => {
                // A lower deadline moves up now; a raised one keeps its
                // place until it reaches the top, where it settles.
                self.heap.update(at, at_ms, &mut moved);
                if self.heap.top().is_some_and(|top| top.entry == entry) {
                    self.heap.settle_top(&mut moved);
                }
            }
            None => self.heap.push(entry, at_ms, &mut moved),
        }
    }

    pub fn contains(&self, entry: u32) -> bool {
        self.pos.contains_key(&entry)
    }

    /// The key at `entry` has no deadline here (or is gone).
    pub fn clear(&mut self, entry: u32) {
        if self.pos.is_empty() {
            return;
        }
        if let Some(at) = self.pos.remove(&entry) {
            let pos = &mut self.pos;
            self.heap.remove(at, &mut |entry, to| {
                pos.insert(entry, to);
            });
        }
    }

    /// The record of the key at `entry` (tests).
    #[cfg(test)]
    pub fn bound(&self, entry: u32) -> Option<i64> {
        self.pos.get(&entry).map(|&at| self.heap.get(at).at_ms)
    }

    /// The key that may be due first, and its deadline (a lower bound).
    pub fn top(&self) -> Option<(u32, i64)> {
        self.heap
            .top()
            .map(|v| (v.entry, self.heap.earliest_ms().unwrap_or(v.at_ms)))
    }

    /// Nothing is due before this time.
    pub fn earliest_ms(&self) -> Option<i64> {
        self.heap.earliest_ms()
    }

    /// Takes out the key whose deadline is due by `now_ms`, the earliest
    /// first (a raised record settles on the way).
    pub fn pop_due(&mut self, now_ms: i64) -> Option<u32> {
        loop {
            let top = self.heap.top()?;
            if self.heap.earliest_ms()? > now_ms {
                return None;
            }
            if top.at_ms > now_ms {
                let pos = &mut self.pos;
                self.heap.settle_top(&mut |entry, to| {
                    pos.insert(entry, to);
                });
                continue;
            }
            self.clear(top.entry);
            return Some(top.entry);
        }
    }

    /// The dict entry at `from` moved to `to` (whose own entry was
    /// removed).
    pub fn entry_moved(&mut self, from: u32, to: u32) {
        if let Some(at) = move_key(&mut self.pos, from, to) {
            self.heap.set_entry(at, to);
        }
    }

    /// Dict entries `a` and `b` traded places (a save in progress).
    pub fn entries_swapped(&mut self, a: u32, b: u32) {
        let (at_b, at_a) = swap_keys(&mut self.pos, a, b);
        for (at, entry) in [(at_b, b), (at_a, a)] {
            if let Some(at) = at {
                self.heap.set_entry(at, entry);
            }
        }
    }

    pub fn clear_all(&mut self) {
        *self = EntryDeadlines::default();
    }
}
