//! Client-side caching (CLIENT TRACKING): which clients may hold which
//! keys, and the invalidation messages owed to them.
//!
//! Owns the tracking table (key → the clients that read it, Redis's
//! default mode), the broadcast prefixes (BCAST) with the keys changed
//! under them since the loop last sent, and each tracking client's
//! options. It attaches at the key-change signal (`ServerState::
//! handle_key_event` calls `key_changed` for every write, expiry and
//! eviction) and at flushes; it never touches a socket or another
//! client's buffer: invalidations wait in the outbox, and the loop
//! (`server`) frames each for its receiver (a RESP3 push, or a
//! `__redis__:invalidate` message to a RESP2 client subscribed elsewhere
//! through REDIRECT) as Redis 7.0's `sendTrackingMessage` does.

use std::collections::HashMap;
use std::rc::Rc;

use crate::pubsub::Subscriber;

/// One tracking client's options (CLIENT TRACKING ON ...).
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    pub token: usize,
    /// REDIRECT: the client that gets the invalidations (its token too).
    pub redirect: Option<Subscriber>,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING YES (OPTIN) / NO (OPTOUT) given for the next command.
    pub caching: bool,
    /// The redirect target was gone when an invalidation was due.
    pub broken_redirect: bool,
    /// BCAST prefixes, in the order given ("" when none was).
    pub prefixes: Vec<Vec<u8>>,
}

/// An invalidation on its way: to the tracking client `to` (or its
/// redirect target), of `keys` (`None`: everything, after a flush).
#[derive(Debug)]
pub struct Invalidation {
    pub to: Subscriber,
    pub redirect: Option<Subscriber>,
    pub keys: Option<Rc<Vec<Vec<u8>>>>,
}

/// A BCAST prefix: its clients, and the keys changed under it (with the
/// client that changed each last, for NOLOOP) since the last broadcast.
#[derive(Debug, Default)]
struct Prefix {
    prefix: Vec<u8>,
    clients: Vec<u64>,
    /// In key order, as Redis's radix tree sends them.
    changed: std::collections::BTreeMap<Vec<u8>, u64>,
}

#[derive(Debug, Default)]
pub struct Tracking {
    /// Key → the clients that may hold it (default mode).
    keys: HashMap<Vec<u8>, Vec<u64>>,
    /// Ids across `keys` (INFO `tracking_total_items`).
    items: usize,
    clients: HashMap<u64, Tracker>,
    prefixes: Vec<Prefix>,
    outbox: Vec<Invalidation>,
    /// The client whose command is running (NOLOOP); 0: the server.
    pub current: u64,
    /// Rounds of `limit_used_slots` in a row that left the table over.
    limit_rounds: usize,
}

impl Tracking {
    /// Any client tracks: the key-change log must record every write.
    pub fn any(&self) -> bool {
        !self.clients.is_empty()
    }

    pub fn tracker(&self, client: u64) -> Option<&Tracker> {
        self.clients.get(&client)
    }

    pub fn tracker_mut(&mut self, client: u64) -> Option<&mut Tracker> {
        self.clients.get_mut(&client)
    }

    /// CLIENT TRACKING ON with checked options: a client already tracking
    /// keeps its prefixes and adds the new ones (as Redis).
    pub fn enable(&mut self, client: u64, mut options: Tracker) {
        let old = self.clients.remove(&client);
        let mut prefixes = old.map(|t| t.prefixes).unwrap_or_default();
        if options.bcast {
            if options.prefixes.is_empty() && prefixes.is_empty() {
                options.prefixes.push(Vec::new());
            }
            for prefix in std::mem::take(&mut options.prefixes) {
                if !prefixes.contains(&prefix) {
                    self.prefix_entry(&prefix).clients.push(client);
                    prefixes.push(prefix);
                }
            }
        }
        // Listed in order, as Redis's radix tree keeps them.
        prefixes.sort();
        options.prefixes = prefixes;
        self.clients.insert(client, options);
    }

    fn prefix_entry(&mut self, prefix: &[u8]) -> &mut Prefix {
        // Kept in order: each round sends the prefixes in Redis's order.
        let at = match self
            .prefixes
            .binary_search_by(|p| p.prefix.as_slice().cmp(prefix))
        {
            Ok(at) => at,
            Err(at) => {
                self.prefixes.insert(
                    at,
                    Prefix {
                        prefix: prefix.to_vec(),
                        ..Prefix::default()
                    },
                );
                at
            }
        };
        &mut self.prefixes[at]
    }

    /// CLIENT TRACKING OFF, or the client left. Keys it read stay in the
    /// table until changed (as in Redis); their entries are skipped.
    pub fn disable(&mut self, client: u64) {
        if self.clients.remove(&client).is_none() {
            return;
        }
        for p in &mut self.prefixes {
            p.clients.retain(|&c| c != client);
        }
        self.prefixes.retain(|p| !p.clients.is_empty());
    }

    /// After a read-only command of a tracking client (default mode):
    /// `keys` may now be cached by it. OPTIN tracks only after CACHING
    /// YES, OPTOUT not after CACHING NO. The table may grow past
    /// `tracking-table-max-keys` until [`Tracking::limit_used_slots`].
    pub fn remember(&mut self, client: u64, keys: &[&[u8]]) {
        let Some(t) = self.clients.get(&client) else {
            return;
        };
        if t.bcast || (t.optin && !t.caching) || (t.optout && t.caching) {
            return;
        }
        for key in keys {
            let ids = self.keys.entry(key.to_vec()).or_default();
            if !ids.contains(&client) {
                ids.push(client);
                self.items += 1;
            }
        }
    }

    /// Brings the table back under `max_keys` (0: no limit) by
    /// invalidating keys, before each command and from the cron, as
    /// Redis's `trackingLimitUsedSlots`: at most 100 keys the first time
    /// it finds the table over, 100 more each time after that it still is.
    pub fn limit_used_slots(&mut self, max_keys: usize) {
        if max_keys == 0 || self.keys.len() <= max_keys {
            self.limit_rounds = 0;
            return;
        }
        let mut effort = 100 * (self.limit_rounds + 1);
        while effort > 0 {
            effort -= 1;
            let Some(victim) = self.keys.keys().next().cloned() else {
                break;
            };
            self.invalidate(&victim, 0);
            if self.keys.len() <= max_keys {
                self.limit_rounds = 0;
                return;
            }
        }
        self.limit_rounds += 1;
    }

    /// A key changed (written, expired, evicted) by `self.current`.
    pub fn key_changed(&mut self, key: &[u8]) {
        let by = self.current;
        for p in &mut self.prefixes {
            if key.starts_with(&p.prefix) {
                p.changed.insert(key.to_vec(), by);
            }
        }
        self.invalidate(key, by);
    }

    /// Every holder of `key` (but a NOLOOP one that changed it itself)
    /// gets an invalidation; the key leaves the table.
    fn invalidate(&mut self, key: &[u8], by: u64) {
        let Some(ids) = self.keys.remove(key) else {
            return;
        };
        self.items -= ids.len();
        let keys = Rc::new(vec![key.to_vec()]);
        for id in ids {
            let Some(t) = self.clients.get(&id) else {
                continue;
            };
            if t.bcast || (t.noloop && id == by) {
                continue;
            }
            self.outbox.push(Invalidation {
                to: Subscriber {
                    client: id,
                    token: t.token,
                },
                redirect: t.redirect,
                keys: Some(Rc::clone(&keys)),
            });
        }
    }

    /// FLUSHALL / FLUSHDB: every tracking client is told to drop
    /// everything, and the table is emptied.
    pub fn flushed(&mut self) {
        for (&id, t) in &self.clients {
            self.outbox.push(Invalidation {
                to: Subscriber {
                    client: id,
                    token: t.token,
                },
                redirect: t.redirect,
                keys: None,
            });
        }
        self.keys.clear();
        self.items = 0;
    }

    /// BCAST: each prefix's changed keys to its clients, once per loop
    /// iteration (a NOLOOP client without the keys it changed itself).
    pub fn broadcast(&mut self) {
        for p in &mut self.prefixes {
            if p.changed.is_empty() {
                continue;
            }
            let changed = std::mem::take(&mut p.changed);
            let all = Rc::new(changed.keys().cloned().collect::<Vec<_>>());
            for &id in &p.clients {
                let Some(t) = self.clients.get(&id) else {
                    continue;
                };
                let keys = if t.noloop {
                    let others: Vec<Vec<u8>> = changed
                        .iter()
                        .filter(|(_, by)| **by != id)
                        .map(|(k, _)| k.clone())
                        .collect();
                    if others.is_empty() {
                        continue;
                    }
                    Rc::new(others)
                } else {
                    Rc::clone(&all)
                };
                self.outbox.push(Invalidation {
                    to: Subscriber {
                        client: id,
                        token: t.token,
                    },
                    redirect: t.redirect,
                    keys: Some(keys),
                });
            }
        }
    }

    pub fn has_broadcasts(&self) -> bool {
        self.prefixes.iter().any(|p| !p.changed.is_empty())
    }

    pub fn has_outbox(&self) -> bool {
        !self.outbox.is_empty()
    }

    pub fn take_outbox(&mut self) -> Vec<Invalidation> {
        std::mem::take(&mut self.outbox)
    }

    /// The invalidations owed to `client` itself (not redirected), taken
    /// out of the outbox in order; the others stay.
    pub fn take_own(&mut self, client: u64) -> Vec<Invalidation> {
        let (own, others) = std::mem::take(&mut self.outbox)
            .into_iter()
            .partition(|i: &Invalidation| i.to.client == client && i.redirect.is_none());
        self.outbox = others;
        own
    }

    /// INFO: tracking clients, keys, items (key-client pairs), prefixes.
    pub fn totals(&self) -> (usize, usize, usize, usize) {
        (
            self.clients.len(),
            self.keys.len(),
            self.items,
            self.prefixes.len(),
        )
    }
}

/// Frames `invalidation` into a client's reply `out` as Redis's
/// `sendTrackingMessage`: a RESP3 push, or, to a RESP2 client that the
/// invalidation was redirected to and that is `subscribed`, a message on
/// `__redis__:invalidate`; a RESP2 client otherwise gets nothing (RESP2
/// has no pushes). A flush's null is in the tracking client's protocol
/// (`own_resp3`).
pub fn encode(
    invalidation: &Invalidation,
    own_resp3: bool,
    redirected: bool,
    subscribed: bool,
    out: &mut crate::protocol::Reply,
) {
    if out.resp3 {
        out.push(2);
        out.bulk(b"invalidate");
    } else if redirected && subscribed {
        out.push(3);
        out.bulk(b"message");
        out.bulk(b"__redis__:invalidate");
    } else {
        return;
    }
    match &invalidation.keys {
        Some(keys) => {
            out.array(keys.len());
            for key in keys.iter() {
                out.bulk(key);
            }
        }
        None if own_resp3 => out.buf.extend_from_slice(b"_\r\n"),
        None => out.buf.extend_from_slice(b"$-1\r\n"),
    }
}

/// Whether two BCAST prefixes overlap (one starts the other): a client's
/// prefixes must not (Redis's `checkPrefixCollisionsOrReply`).
pub fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(token: usize) -> Tracker {
        Tracker {
            token,
            ..Tracker::default()
        }
    }

    #[test]
    fn a_read_key_is_invalidated_once_when_changed_not_for_noloop_self() {
        let mut t = Tracking::default();
        t.enable(1, tracker(10));
        t.enable(
            2,
            Tracker {
                noloop: true,
                ..tracker(20)
            },
        );
        t.remember(1, &[b"k"]);
        t.remember(2, &[b"k"]);
        assert_eq!(t.totals(), (2, 1, 2, 0));
        t.current = 2;
        t.key_changed(b"k");
        let out = t.take_outbox();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].to.client, 1);
        t.key_changed(b"k");
        assert!(t.take_outbox().is_empty(), "invalidated once");
        assert_eq!(t.totals().1, 0);
    }

    #[test]
    fn optin_tracks_only_after_caching_yes_and_the_table_is_capped() {
        let mut t = Tracking::default();
        t.enable(
            1,
            Tracker {
                optin: true,
                ..tracker(1)
            },
        );
        t.remember(1, &[b"a"]);
        assert_eq!(t.totals().1, 0);
        t.tracker_mut(1).unwrap().caching = true;
        t.remember(1, &[b"a", b"b", b"c"]);
        assert_eq!(t.totals().1, 3);
        t.limit_used_slots(2);
        assert_eq!(t.totals().1, 2);
        assert_eq!(t.take_outbox().len(), 1, "the dropped key is invalidated");
    }

    #[test]
    fn an_overfull_table_is_emptied_with_growing_effort() {
        let mut t = Tracking::default();
        t.enable(1, tracker(1));
        let keys: Vec<Vec<u8>> = (0..450).map(|i| format!("k{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        t.remember(1, &refs);
        for (round, left) in [(1, 350), (2, 150), (3, 1)] {
            t.limit_used_slots(1);
            assert_eq!(t.totals().1, left, "after round {round}");
        }
        assert_eq!(t.take_outbox().len(), 449);
    }

    #[test]
    fn bcast_sends_changed_keys_under_each_prefix_once_per_round() {
        let mut t = Tracking::default();
        t.enable(
            1,
            Tracker {
                bcast: true,
                prefixes: vec![b"user:".to_vec()],
                ..tracker(1)
            },
        );
        t.enable(
            2,
            Tracker {
                bcast: true,
                noloop: true,
                ..tracker(2)
            },
        );
        t.current = 2;
        t.key_changed(b"user:1");
        t.key_changed(b"user:1");
        t.key_changed(b"other");
        t.current = 0;
        t.key_changed(b"user:2");
        assert!(t.take_outbox().is_empty(), "nothing before the round");
        t.broadcast();
        let out = t.take_outbox();
        let got: Vec<(u64, Vec<Vec<u8>>)> = out
            .iter()
            .map(|i| (i.to.client, i.keys.as_ref().unwrap().to_vec()))
            .collect();
        assert_eq!(
            got,
            // Prefixes in order: "" (client 2's) before "user:".
            vec![
                (2, vec![b"user:2".to_vec()]),
                (1, vec![b"user:1".to_vec(), b"user:2".to_vec()]),
            ]
        );
        t.disable(1);
        t.disable(2);
        assert_eq!(t.totals(), (0, 0, 0, 0));
        assert!(overlap(b"a", b"ab") && !overlap(b"ab", b"ac") && overlap(b"", b"x"));
    }
}
