//! Transactions: the commands a client queued after MULTI, and WATCH.
//!
//! Owns the watched-key table: which clients watch which keys, and which
//! clients saw a watched key change (their EXEC will fail). It learns of
//! changes from the key-change log (`ServerState::process_key_events`) and
//! from FLUSHDB/FLUSHALL/SWAPDB, never by looking at commands. It reads
//! the keyspace only to ask whether a key exists or has expired.

use std::collections::{HashMap, HashSet};

use crate::command_table::Command;
use crate::db::Db;
use crate::protocol::OwnedArgs;

/// A client's open transaction (between MULTI and EXEC/DISCARD).
#[derive(Debug, Default)]
pub struct Transaction {
    /// The queued commands, checked for existence and arity already.
    pub queue: Vec<(&'static Command, OwnedArgs)>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub aborted: bool,
}

impl Transaction {
    /// Bytes held by the queue (CLIENT LIST `multi-mem`).
    pub fn heap_bytes(&self) -> usize {
        self.queue.iter().map(|(_, a)| a.heap_bytes()).sum()
    }
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// One client watching one key.
#[derive(Debug, Clone, Copy)]
struct Watcher {
    client: u64,
    /// The key was already logically expired when WATCH ran: its deletion
    /// is not a change (Redis's `wk->expired`).
    expired_at_watch: bool,
}

type WatchMap = HashMap<Vec<u8>, Vec<Watcher>, foldhash::fast::RandomState>;

/// Who watches what.
#[derive(Debug, Default)]
pub struct WatchTable {
    /// Per database, each watched key to the clients watching it (looked
    /// up with a changed key's bytes: no allocation per change).
    keys: Vec<WatchMap>,
    /// Each client's watched (db, key) pairs, for UNWATCH and EXEC.
    by_client: HashMap<u64, Vec<(usize, Vec<u8>)>>,
    /// Clients that saw a watched key change (Redis's CLIENT_DIRTY_CAS).
    touched: HashSet<u64>,
}

impl WatchTable {
    /// WATCH `key` in `db` for `client`; `expired` says whether the key is
    /// logically expired right now.
    pub fn watch(&mut self, client: u64, db: usize, key: &[u8], expired: bool) {
        let mine = self.by_client.entry(client).or_default();
        if mine.iter().any(|(d, k)| *d == db && k == key) {
            return;
        }
        mine.push((db, key.to_vec()));
        if self.keys.len() <= db {
            self.keys.resize_with(db + 1, WatchMap::default);
        }
        self.keys[db]
            .entry(key.to_vec())
            .or_default()
            .push(Watcher {
                client,
                expired_at_watch: expired,
            });
    }

    /// Forgets every key `client` watches and whether one changed (UNWATCH,
    /// EXEC, DISCARD, disconnection).
    pub fn unwatch_all(&mut self, client: u64) {
        self.touched.remove(&client);
        let Some(mine) = self.by_client.remove(&client) else {
            return;
        };
        for (db, key) in mine {
            let Some(map) = self.keys.get_mut(db) else {
                continue;
            };
            if let Some(watchers) = map.get_mut(&key) {
                watchers.retain(|w| w.client != client);
                if watchers.is_empty() {
                    map.remove(&key);
                }
            }
        }
    }

    pub fn watches_in(&self, db: usize) -> bool {
        self.keys.get(db).is_some_and(|m| !m.is_empty())
    }

    /// Whether any client watches anything.
    pub fn any(&self) -> bool {
        !self.by_client.is_empty()
    }

    /// `key` in `db` changed (`touchWatchedKey`). `gone` says the change
    /// removed it: then a key already expired when watched did not change.
    pub fn touch(&mut self, db: usize, key: &[u8], gone: bool) {
        let Some(watchers) = self.keys.get_mut(db).and_then(|m| m.get_mut(key)) else {
            return;
        };
        for w in watchers.iter_mut() {
            if w.expired_at_watch && gone {
                w.expired_at_watch = false;
                continue;
            }
            self.touched.insert(w.client);
        }
    }

    /// Every watched key of `emptied` is touched when it existed there, or
    /// exists in `replaced_with` (FLUSHDB, FLUSHALL, SWAPDB:
    /// `touchAllWatchedKeysInDb`). `now_ms` decides what is expired.
    pub fn touch_all_in_db(&mut self, emptied: &Db, replaced_with: Option<&Db>, now_ms: i64) {
        let Some(map) = self.keys.get_mut(emptied.index) else {
            return;
        };
        for (key, watchers) in map.iter_mut() {
            let in_emptied = emptied.exists_raw(key);
            let in_replacement = replaced_with.is_some_and(|r| r.exists_raw(key));
            if !in_emptied && !in_replacement {
                continue;
            }
            let replacement_expired =
                replaced_with.is_some_and(|r| r.is_logically_expired(key, now_ms));
            for w in watchers.iter_mut() {
                if w.expired_at_watch {
                    if !in_replacement {
                        // The expired key is simply gone: no logical change.
                        w.expired_at_watch = false;
                        continue;
                    }
                    if replacement_expired {
                        continue;
                    }
                } else if !in_emptied && replacement_expired {
                    // A missing key replaced by an expired one: still missing.
                    w.expired_at_watch = true;
                    continue;
                }
                self.touched.insert(w.client);
            }
        }
    }

    /// Whether `client`'s EXEC must fail: a watched key changed, or one
    /// that was live when watched has expired since (`isWatchedKeyExpired`).
    pub fn exec_must_fail(&self, client: u64, dbs: &[Db], now_ms: i64) -> bool {
        if self.touched.contains(&client) {
            return true;
        }
        let Some(mine) = self.by_client.get(&client) else {
            return false;
        };
        mine.iter().any(|(db, key)| {
            let expired_at_watch = self
                .keys
                .get(*db)
                .and_then(|m| m.get(key))
                .is_some_and(|ws| ws.iter().any(|w| w.client == client && w.expired_at_watch));
            !expired_at_watch && dbs[*db].is_logically_expired(key, now_ms)
        })
    }

    /// How many keys `client` watches (CLIENT LIST `watch=`).
    pub fn count(&self, client: u64) -> usize {
        self.by_client.get(&client).map_or(0, Vec::len)
    }
}
