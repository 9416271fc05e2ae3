//! Clients blocked on keys (BLPOP and friends): who waits on which key, in
//! the order they blocked; which keys became ready; when each times out.
//!
//! Owns only bookkeeping. The loop (`server`) serves ready keys after each
//! command by re-running each waiter's command as if it had just arrived,
//! and answers timeouts; commands block through `Ctx::block`. Waking costs
//! O(clients woken): a key with no waiters is never looked at, and the
//! timeout table is ordered by deadline.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use crate::command_table::Command;
use crate::protocol::OwnedArgs;

/// What a blocked client is waiting to run again.
#[derive(Debug)]
pub struct BlockedOn {
    pub cmd: &'static Command,
    pub args: OwnedArgs,
    /// The database its keys are in.
    pub db: usize,
    pub keys: Vec<Vec<u8>>,
    /// Unix ms after which it gives up; `None` waits forever.
    pub deadline_ms: Option<i64>,
    /// What it is answered when it gives up.
    pub on_timeout: OnTimeout,
}

/// The reply of a wait that ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// A null array (BLPOP and its kind).
    NullArray,
    /// GETLEASE's `[nil, busy, nil]`.
    LeaseBusy,
}

/// A blocked client: its id and connection slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Waiter {
    pub client: u64,
    pub token: usize,
}

/// How a wait ends without data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unblock {
    /// As if the timeout had passed (a null reply).
    Timeout,
    /// With `-UNBLOCKED client unblocked via CLIENT UNBLOCK`.
    Error,
    /// The server became a replica: an error, then the connection closes
    /// (Redis's `disconnectAllBlockedClients`), so that no blocked write
    /// runs on a replica.
    StateChanged,
    /// With this error: in cluster mode, the keys' slot moved away or
    /// the cluster went down (Redis's
    /// `clusterRedirectBlockedClientIfNeeded`).
    Refused(Vec<u8>),
}

/// A key in a database.
type DbKey = (usize, Vec<u8>);

type WaitMap = HashMap<Vec<u8>, VecDeque<Waiter>, foldhash::fast::RandomState>;

/// One client's wait: who, on which keys, until when.
#[derive(Debug)]
struct Wait {
    who: Waiter,
    keys: Vec<DbKey>,
    deadline_ms: Option<i64>,
    /// Counted in `overwrite_waiters`.
    on_overwrite: bool,
}

#[derive(Debug, Default)]
pub struct Blocking {
    /// Per database, each key to the clients waiting on it, first blocked
    /// first. Looked up with the changed key's bytes on every write while
    /// anyone waits: no allocation, a fast hasher.
    waiting: Vec<WaitMap>,
    /// Each blocked client's keys and deadline.
    clients: HashMap<u64, Wait>,
    /// Keys with waiters that changed, in order, not yet served.
    ready: VecDeque<DbKey>,
    ready_set: HashSet<DbKey>,
    /// (deadline, waiter) of clients that wait with a timeout.
    timeouts: BTreeSet<(i64, Waiter)>,
    /// CLIENT UNBLOCK requests for the loop to carry out.
    unblocks: Vec<(Waiter, Unblock)>,
    /// Waiters that a key overwritten with any type concerns (XREADGROUP:
    /// it ends with an error then); the others need list, sorted-set,
    /// stream and generic changes only.
    overwrite_waiters: usize,
}

impl Blocking {
    /// Records that `who` waits on `keys` of `db` until `deadline_ms`;
    /// `on_overwrite`: any write of the keys concerns it (see
    /// `overwrite_waiters`).
    pub fn block(
        &mut self,
        who: Waiter,
        db: usize,
        keys: &[Vec<u8>],
        deadline_ms: Option<i64>,
        on_overwrite: bool,
    ) {
        self.overwrite_waiters += usize::from(on_overwrite);
        let mut mine = Vec::new();
        for key in keys {
            let entry = (db, key.clone());
            if mine.contains(&entry) {
                continue;
            }
            if self.waiting.len() <= db {
                self.waiting.resize_with(db + 1, WaitMap::default);
            }
            self.waiting[db]
                .entry(key.clone())
                .or_default()
                .push_back(who);
            mine.push(entry);
        }
        if let Some(at) = deadline_ms {
            self.timeouts.insert((at, who));
        }
        self.clients.insert(
            who.client,
            Wait {
                who,
                keys: mine,
                deadline_ms,
                on_overwrite,
            },
        );
    }

    /// Forgets `client`'s wait (served, timed out, disconnected).
    pub fn unblock(&mut self, client: u64) {
        let Some(wait) = self.clients.remove(&client) else {
            return;
        };
        self.overwrite_waiters -= usize::from(wait.on_overwrite);
        for (db, key) in wait.keys {
            let Some(map) = self.waiting.get_mut(db) else {
                continue;
            };
            if let Some(queue) = map.get_mut(&key) {
                // Waiters are served in the order they blocked: the one
                // leaving is usually first (O(1), not a scan of them all).
                if queue.front().is_some_and(|w| w.client == client) {
                    queue.pop_front();
                } else {
                    queue.retain(|w| w.client != client);
                }
                if queue.is_empty() {
                    map.remove(&key);
                }
            }
        }
        if let Some(at) = wait.deadline_ms {
            self.timeouts.remove(&(at, wait.who));
        }
    }

    /// Blocked clients that wait with a timeout (INFO
    /// `clients_in_timeout_table`).
    pub fn with_timeout_count(&self) -> usize {
        self.timeouts.len()
    }

    pub fn blocked_count(&self) -> usize {
        self.clients.len()
    }

    pub fn any(&self) -> bool {
        !self.clients.is_empty()
    }

    /// Whether a waiter cares for any write of its keys (see
    /// `overwrite_waiters`).
    pub fn any_overwrite_waiter(&self) -> bool {
        self.overwrite_waiters > 0
    }

    /// A key changed: if anyone waits on it, it is served after the
    /// command (Redis's `signalKeyAsReady`).
    pub fn key_changed(&mut self, db: usize, key: &[u8]) {
        if !self.waiting.get(db).is_some_and(|m| m.contains_key(key)) {
            return;
        }
        let entry = (db, key.to_vec());
        if self.ready_set.insert(entry.clone()) {
            self.ready.push_back(entry);
        }
    }

    /// Every waited key of `db` is ready (SWAPDB brought in new contents).
    pub fn db_changed(&mut self, db: usize) {
        let keys: Vec<Vec<u8>> = self
            .waiting
            .get(db)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            self.key_changed(db, &key);
        }
    }

    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The waiters of the next ready key, in the order they blocked.
    pub fn next_ready(&mut self) -> Option<Vec<Waiter>> {
        while let Some(entry) = self.ready.pop_front() {
            self.ready_set.remove(&entry);
            if let Some(queue) = self.waiting.get(entry.0).and_then(|m| m.get(&entry.1)) {
                return Some(queue.iter().copied().collect());
            }
        }
        None
    }

    /// The clients whose deadline has passed, forgotten. As Redis, a
    /// deadline is past once `now_ms` is beyond it: the clock counts whole
    /// milliseconds, so a wait that ended at its own millisecond could be
    /// up to one short of what the client asked for.
    pub fn take_timed_out(&mut self, now_ms: i64) -> Vec<Waiter> {
        let due: Vec<(i64, Waiter)> = self
            .timeouts
            .iter()
            .take_while(|(at, _)| deadline_passed(*at, now_ms))
            .copied()
            .collect();
        due.into_iter()
            .map(|(_, who)| {
                self.unblock(who.client);
                who
            })
            .collect()
    }

    /// The first millisecond at which a blocked client's wait is over
    /// (the loop's sleep).
    pub fn next_deadline_ms(&self) -> Option<i64> {
        self.timeouts.first().map(|(at, _)| at.saturating_add(1))
    }

    /// CLIENT UNBLOCK: false if `client` is not blocked.
    pub fn request_unblock(&mut self, client: u64, how: Unblock) -> bool {
        match self.clients.get(&client) {
            Some(wait) => {
                self.unblocks.push((wait.who, how));
                true
            }
            None => false,
        }
    }

    /// Ends every wait (the server became a replica).
    pub fn request_unblock_all(&mut self, how: Unblock) {
        self.unblocks
            .extend(self.clients.values().map(|wait| (wait.who, how.clone())));
    }

    /// Whether CLIENT UNBLOCK or a timeout asked to end a wait (checked
    /// after every request: one load).
    #[inline]
    pub fn has_unblock_requests(&self) -> bool {
        !self.unblocks.is_empty()
    }

    pub fn take_unblock_requests(&mut self) -> Vec<(Waiter, Unblock)> {
        std::mem::take(&mut self.unblocks)
    }
}

/// Whether a wait until `deadline_ms` is over at `now_ms`: only once the
/// clock is past it (Redis's `timeout < now`), so no client waits less
/// than it asked for.
pub fn deadline_passed(deadline_ms: i64, now_ms: i64) -> bool {
    deadline_ms < now_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_only_once_the_clock_is_past_its_deadline() {
        let mut blocking = Blocking::default();
        let who = Waiter {
            client: 7,
            token: 1,
        };
        blocking.block(who, 0, &[b"k".to_vec()], Some(1_100), false);
        // The loop sleeps until the first millisecond the wait is over.
        assert_eq!(blocking.next_deadline_ms(), Some(1_101));
        // At its own millisecond the wait may have begun up to 1 ms late
        // on the clock (whole milliseconds): not over yet.
        assert!(blocking.take_timed_out(1_100).is_empty());
        assert_eq!(blocking.take_timed_out(1_101), vec![who]);
        assert_eq!(blocking.next_deadline_ms(), None);
    }
}
