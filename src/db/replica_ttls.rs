//! On a writable replica, the deadlines its own clients set (Redis's
//! `slaveKeysWithExpire`): the only keys a replica expires by itself; the
//! primary's DELs remove the rest. Kept in deadline order, so a key
//! leaves on time, not when a random sample finds it.
//!
//! A key is remembered with the deadline its client gave it. When that
//! deadline comes, the key is expired only if it still has exactly that
//! deadline: a key the primary has since rewritten, given another TTL,
//! or deleted is left alone (and forgotten).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

#[derive(Default)]
pub struct ReplicaTtls {
    /// Key → the deadline its client set last (unix ms).
    by_key: HashMap<Box<[u8]>, i64>,
    /// The same, earliest first; an entry whose deadline is no longer the
    /// key's in `by_key` is stale and skipped.
    due: BinaryHeap<Reverse<(i64, Box<[u8]>)>>,
}

impl ReplicaTtls {
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// A client of this replica gave `key` the deadline `at_ms`.
    pub fn remember(&mut self, key: &[u8], at_ms: i64) {
        if self.by_key.get(key) == Some(&at_ms) {
            return;
        }
        self.by_key.insert(key.into(), at_ms);
        self.due.push(Reverse((at_ms, key.into())));
        // Stale entries (keys given a new deadline again and again) never
        // outnumber the live ones by much.
        if self.due.len() > 2 * self.by_key.len() + 1024 {
            self.due = self
                .by_key
                .iter()
                .map(|(k, &at)| Reverse((at, k.clone())))
                .collect();
        }
    }

    /// The next key whose remembered deadline is at or before `now_ms`,
    /// with that deadline; it is forgotten.
    pub fn pop_due(&mut self, now_ms: i64) -> Option<(Box<[u8]>, i64)> {
        while let Some(Reverse((at_ms, _))) = self.due.peek() {
            if *at_ms > now_ms {
                return None;
            }
            let Reverse((at_ms, key)) = self.due.pop()?;
            if self.by_key.get(&key) == Some(&at_ms) {
                self.by_key.remove(&key);
                return Some((key, at_ms));
            }
        }
        None
    }

    pub fn clear(&mut self) {
        self.by_key.clear();
        self.due.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_due_in_order_with_their_last_deadline() {
        let mut t = ReplicaTtls::default();
        t.remember(b"a", 300);
        t.remember(b"b", 100);
        t.remember(b"a", 200);
        t.remember(b"c", 250);
        assert_eq!(t.len(), 3);
        assert_eq!(t.pop_due(50), None);
        assert_eq!(t.pop_due(1000), Some((b"b"[..].into(), 100)));
        assert_eq!(t.pop_due(1000), Some((b"a"[..].into(), 200)));
        assert_eq!(t.pop_due(1000), Some((b"c"[..].into(), 250)));
        // a's old deadline (300) is stale.
        assert_eq!(t.pop_due(1000), None);
        assert!(t.is_empty());
    }

    #[test]
    fn stale_entries_stay_bounded() {
        let mut t = ReplicaTtls::default();
        for at in 0..100_000 {
            t.remember(b"k", at);
        }
        assert!(t.due.len() <= 1026, "{}", t.due.len());
        assert_eq!(t.pop_due(i64::MAX), Some((b"k"[..].into(), 99_999)));
    }
}
