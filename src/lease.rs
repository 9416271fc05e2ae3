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

use std::collections::{BTreeMap, HashMap};

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

/// What the room knows of one key: its lease, and how long its last
/// lease took from grant to write (`delta`, ms).
#[derive(Debug, Default, Clone, Copy)]
struct KeyState {
    lease: Option<Lease>,
    delta_ms: Option<i64>,
}

type KeyMap = HashMap<Box<[u8]>, KeyState, crate::dict::DefaultHasher>;

/// A key in a database.
type DbKey = (usize, Box<[u8]>);

/// The leases of every database.
#[derive(Default)]
pub struct Leases {
    /// Per database, per key (looked up by the key's bytes: no
    /// allocation on the write path).
    dbs: Vec<KeyMap>,
    /// Keys with a state, all databases together: nothing to do at 0.
    keys: usize,
    /// When each lease lapses (by its token), for waking the clients
    /// waiting on its key and forgetting it.
    lapses: BTreeMap<(i64, u64), DbKey>,
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
    fn state(&self, db: usize, key: &[u8]) -> Option<&KeyState> {
        self.dbs.get(db)?.get(key)
    }

    /// Ends the lease of `key` (its record and its lapse); the lease.
    fn end(&mut self, db: usize, key: &[u8]) -> Option<Lease> {
        let map = self.dbs.get_mut(db)?;
        let state = map.get_mut(key)?;
        let lease = state.lease.take()?;
        if state.delta_ms.is_none() {
            map.remove(key);
            self.keys -= 1;
        }
        self.lapses.remove(&(lease.until_ms, lease.token));
        Some(lease)
    }

    /// The live lease of `key`, if any (a lapsed one is gone).
    fn live(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<Lease> {
        if self.keys == 0 {
            return None;
        }
        let lease = self.state(db, key)?.lease?;
        if lease.until_ms > now_ms {
            return Some(lease);
        }
        self.end(db, key);
        None
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
        if self.dbs.len() <= db {
            self.dbs.resize_with(db + 1, KeyMap::default);
        }
        let state = match self.dbs[db].get_mut(key) {
            Some(state) => state,
            None => {
                self.keys += 1;
                self.dbs[db].entry(key.into()).or_default()
            }
        };
        state.lease = Some(Lease {
            token,
            kind,
            until_ms,
            granted_ms: now_ms,
        });
        self.lapses.insert((until_ms, token), (db, key.into()));
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
        self.holds(db, key, token, now_ms) && self.end(db, key).is_some()
    }

    /// The key-change signal: a write ends its lease (and measures the
    /// key's `delta`), the key's deletion too (and forgets it); whether it
    /// had one (its waiters are then retried).
    pub fn key_changed(&mut self, db: usize, key: &[u8], deleted: bool, now_ms: i64) -> bool {
        if self.keys == 0 {
            return false;
        }
        // A fill lease is for a missing key: a deletion cannot end it
        // (it is the expired key the fill's own lookup found and removed).
        let lease = self.state(db, key).and_then(|s| s.lease);
        if deleted && lease.is_some_and(|l| l.kind == LeaseKind::Fill) {
            return false;
        }
        let ended = self.end(db, key);
        let Some(map) = self.dbs.get_mut(db) else {
            return false;
        };
        let delta_ms = match (deleted, ended) {
            (true, _) => None,
            (false, Some(lease)) => Some(now_ms.saturating_sub(lease.granted_ms).max(0)),
            (false, None) => return false,
        };
        match (map.get_mut(key), delta_ms) {
            (Some(state), Some(_)) => state.delta_ms = delta_ms,
            (Some(_), None) => {
                map.remove(key);
                self.keys -= 1;
            }
            (None, Some(_)) => {
                map.insert(
                    key.into(),
                    KeyState {
                        lease: None,
                        delta_ms,
                    },
                );
                self.keys += 1;
            }
            (None, None) => {}
        }
        ended.is_some()
    }

    /// The key's last measured recompute time (ms), if any.
    pub fn delta(&self, db: usize, key: &[u8]) -> Option<i64> {
        self.state(db, key)?.delta_ms
    }

    /// The keys whose lease lapsed by `now_ms` (their waiters are retried:
    /// the earliest takes the lease over).
    pub fn take_lapsed(&mut self, now_ms: i64) -> Vec<DbKey> {
        let mut lapsed = Vec::new();
        while let Some(entry) = self.lapses.first_entry() {
            if entry.key().0 > now_ms {
                break;
            }
            let (db, key) = entry.remove();
            if self.end(db, &key).is_some() {
                lapsed.push((db, key));
            }
        }
        lapsed
    }

    /// When the next lease lapses (the loop wakes then for its waiters).
    pub fn next_lapse_ms(&self) -> Option<i64> {
        self.lapses.keys().next().map(|(at, _)| *at)
    }

    /// No lease out and no key's `delta` kept: nothing needs the
    /// key-change signal.
    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }

    /// Database `db` was emptied: its keys' `delta`s go with them (their
    /// leases stay until they lapse or the keys are written).
    pub fn db_flushed(&mut self, db: usize) {
        let Some(map) = self.dbs.get_mut(db) else {
            return;
        };
        let before = map.len();
        map.retain(|_, state| {
            state.delta_ms = None;
            state.lease.is_some()
        });
        self.keys -= before - map.len();
    }

    /// Drops every lease (DEBUG RELOAD).
    pub fn clear(&mut self) {
        self.dbs.clear();
        self.keys = 0;
        self.lapses.clear();
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
