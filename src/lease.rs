//! Leases against cache stampedes (issue 42): who may recompute a key that
//! is missing (`fill`) or stale (`refresh`), so that one client does it
//! while the others are served the stale value or told the key is being
//! filled. A lease is a token (an increasing 64-bit number, unique per
//! lease, not tied to a connection) held until it lapses, until its
//! holder hands it back (LEASE RELEASE), or until any write of the key,
//! which ends it (`key_changed`, at the key-change signal). `SET ...
//! LEASE token` writes only while the token holds the key's lease.
//!
//! Early refresh (XFetch, Vattani et al., VLDB 2015): the room measures,
//! per key, the time from granting a lease to the write that ends it
//! (`delta`, the last measurement, in ms), so that GETLEASE with BETA can
//! hand out `refresh` before the soft deadline with XFetch's probability.
//!
//! Leases live on the primary only and are never persisted: a restart or
//! DEBUG RELOAD drops them (`clear`).

use std::collections::{BTreeSet, HashMap};

/// What a lease is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseKind {
    /// The key is missing: the holder computes it.
    Fill,
    /// The key is stale: the holder recomputes it while others get the
    /// stale value.
    Refresh,
}

#[derive(Debug, Clone, Copy)]
struct Lease {
    token: u64,
    kind: LeaseKind,
    /// It lapses at this unix time (ms).
    until_ms: i64,
    /// When it was granted (unix ms): `delta` is measured from here.
    granted_ms: i64,
}

/// The counters INFO stats shows.
#[derive(Debug, Default, Clone, Copy)]
pub struct LeaseStats {
    /// GETLEASE calls answered `stale` (a refresh lease was out).
    pub stale_hits: u64,
    /// Leases handed out (`fill` or `refresh`).
    pub leases_granted: u64,
    /// Writes that ended a lease with its own token (`SET ... LEASE`).
    pub lease_fills: u64,
    /// GETLEASE calls that blocked (WAIT), counted when they block.
    pub lease_waits: u64,
    /// Blocked GETLEASE calls whose WAIT ran out (answered `busy`).
    pub lease_wait_timeouts: u64,
    /// Refresh leases handed out before the soft deadline (BETA).
    pub early_refreshes: u64,
}

/// The leases of every database.
#[derive(Default)]
pub struct Leases {
    by_key: HashMap<(usize, Box<[u8]>), Lease, crate::dict::DefaultHasher>,
    /// When each lease lapses, for waking the clients waiting on its key
    /// (and forgetting it).
    lapses: BTreeSet<(i64, usize, Box<[u8]>)>,
    /// Per key: how long its last lease took from grant to write (ms).
    deltas: HashMap<(usize, Box<[u8]>), i64, crate::dict::DefaultHasher>,
    last_token: u64,
    pub stats: LeaseStats,
}

/// What GETLEASE found for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// The caller now holds a new lease of this kind, with this token.
    Granted(LeaseKind, u64),
    /// Another client holds a live lease of this kind.
    Held(LeaseKind),
}

impl Leases {
    /// The live lease of `key`, if any (a lapsed one is gone).
    fn live(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<Lease> {
        if self.by_key.is_empty() {
            return None;
        }
        let k = (db, Box::<[u8]>::from(key));
        match self.by_key.get(&k) {
            Some(l) if l.until_ms > now_ms => Some(*l),
            Some(_) => {
                self.end(k);
                None
            }
            None => None,
        }
    }

    /// Ends the lease of `k` (its record and its place in `lapses`).
    fn end(&mut self, k: (usize, Box<[u8]>)) -> bool {
        let Some(lease) = self.by_key.remove(&k) else {
            return false;
        };
        let (db, key) = k;
        self.lapses.remove(&(lease.until_ms, db, key));
        true
    }

    /// A lease of `kind` on `key` for `lease_ms`, unless a live one is out.
    pub fn acquire(
        &mut self,
        db: usize,
        key: &[u8],
        kind: LeaseKind,
        lease_ms: i64,
        now_ms: i64,
    ) -> Grant {
        if let Some(held) = self.live(db, key, now_ms) {
            return Grant::Held(held.kind);
        }
        self.last_token += 1;
        let token = self.last_token;
        let until_ms = now_ms.saturating_add(lease_ms);
        self.by_key.insert(
            (db, key.into()),
            Lease {
                token,
                kind,
                until_ms,
                granted_ms: now_ms,
            },
        );
        self.lapses.insert((until_ms, db, key.into()));
        self.stats.leases_granted += 1;
        Grant::Granted(kind, token)
    }

    /// Whether `token` holds the live lease of `key` (`SET ... LEASE`).
    pub fn holds(&mut self, db: usize, key: &[u8], token: u64, now_ms: i64) -> bool {
        self.live(db, key, now_ms).is_some_and(|l| l.token == token)
    }

    /// A write of `key` with `token` (which holds its lease) is about to
    /// end it: counted as a fill.
    pub fn filled(&mut self) {
        self.stats.lease_fills += 1;
    }

    /// LEASE RELEASE: hands back `key`'s lease if `token` holds it.
    pub fn release(&mut self, db: usize, key: &[u8], token: u64, now_ms: i64) -> bool {
        if !self.holds(db, key, token, now_ms) {
            return false;
        }
        self.end((db, key.into()))
    }

    /// The key-change signal: a write ends its lease (and measures the
    /// key's `delta`), the key's deletion too (and forgets it); whether it
    /// had one (its waiters are then retried).
    pub fn key_changed(&mut self, db: usize, key: &[u8], deleted: bool, now_ms: i64) -> bool {
        if self.by_key.is_empty() && self.deltas.is_empty() {
            return false;
        }
        let k: (usize, Box<[u8]>) = (db, key.into());
        if deleted {
            self.deltas.remove(&k);
        } else if let Some(lease) = self.by_key.get(&k) {
            self.deltas
                .insert(k.clone(), now_ms.saturating_sub(lease.granted_ms).max(0));
        }
        self.end(k)
    }

    /// The key's last measured recompute time (ms), if any.
    pub fn delta(&self, db: usize, key: &[u8]) -> Option<i64> {
        if self.deltas.is_empty() {
            return None;
        }
        self.deltas.get(&(db, Box::<[u8]>::from(key))).copied()
    }

    /// The keys whose lease lapsed by `now_ms` (their waiters are retried:
    /// the earliest takes the lease over).
    pub fn take_lapsed(&mut self, now_ms: i64) -> Vec<(usize, Box<[u8]>)> {
        let mut lapsed = Vec::new();
        while let Some(first) = self.lapses.first() {
            if first.0 > now_ms {
                break;
            }
            let Some((until_ms, db, key)) = self.lapses.pop_first() else {
                break;
            };
            let k = (db, key);
            if self.by_key.get(&k).is_some_and(|l| l.until_ms == until_ms) {
                self.by_key.remove(&k);
                lapsed.push(k);
            }
        }
        lapsed
    }

    /// When the next lease lapses (the loop wakes then for its waiters).
    pub fn next_lapse_ms(&self) -> Option<i64> {
        self.lapses.first().map(|(at, _, _)| *at)
    }

    /// Leases out (INFO).
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// No lease out and no key's `delta` kept: nothing needs the
    /// key-change signal.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty() && self.deltas.is_empty()
    }

    /// Database `db` was emptied: its keys' `delta`s go with them (their
    /// leases stay until they lapse or the keys are written).
    pub fn db_flushed(&mut self, db: usize) {
        if !self.deltas.is_empty() {
            self.deltas.retain(|(d, _), _| *d != db);
        }
    }

    /// Drops every lease (DEBUG RELOAD).
    pub fn clear(&mut self) {
        self.by_key.clear();
        self.lapses.clear();
        self.deltas.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lease_per_key_until_it_lapses_is_released_or_the_key_changes() {
        let mut l = Leases::default();
        let Grant::Granted(LeaseKind::Fill, t1) = l.acquire(0, b"k", LeaseKind::Fill, 100, 1_000)
        else {
            panic!()
        };
        assert_eq!(
            l.acquire(0, b"k", LeaseKind::Fill, 100, 1_050),
            Grant::Held(LeaseKind::Fill)
        );
        // Another database's key is another key.
        assert!(matches!(
            l.acquire(1, b"k", LeaseKind::Refresh, 100, 1_050),
            Grant::Granted(LeaseKind::Refresh, t) if t > t1
        ));
        assert!(l.holds(0, b"k", t1, 1_099));
        assert!(!l.holds(0, b"k", t1, 1_100), "lapsed");
        let Grant::Granted(_, t2) = l.acquire(0, b"k", LeaseKind::Fill, 100, 1_100) else {
            panic!()
        };
        assert!(t2 > t1);
        assert!(!l.release(0, b"k", t1, 1_101));
        assert!(l.release(0, b"k", t2, 1_101));
        let Grant::Granted(_, t3) = l.acquire(0, b"k", LeaseKind::Fill, 100, 1_101) else {
            panic!()
        };
        assert_eq!(l.delta(0, b"k"), None);
        assert!(l.key_changed(0, b"k", false, 1_131));
        assert!(!l.holds(0, b"k", t3, 1_132));
        assert_eq!(l.delta(0, b"k"), Some(30), "from grant to write");
        assert!(!l.key_changed(0, b"k", true, 1_140));
        assert_eq!(l.delta(0, b"k"), None, "forgotten with the key");
        assert_eq!(l.stats.leases_granted, 4);
    }
}
