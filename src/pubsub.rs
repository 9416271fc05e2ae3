//! Pub/sub: channels, patterns, shard channels, and the messages waiting
//! to be written to subscribers.
//!
//! Owns who is subscribed to what. Publishing never touches a socket or
//! another client's buffer: it queues deliveries in the outbox, and the
//! loop (`server`) encodes each for its subscriber's protocol and queues
//! it on that connection, applying the pubsub output limit. Keyspace
//! notifications publish through the same path (`notify`).

use std::collections::HashMap;
use std::rc::Rc;

use crate::glob;
use crate::protocol::Reply;

/// A subscribed client: its id and the connection table slot it lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscriber {
    pub client: u64,
    pub token: usize,
}

/// Which namespace a subscription is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    /// The reply words of (un)subscribing, as Redis spells them.
    pub fn words(self) -> (&'static str, &'static str) {
        match self {
            Kind::Channel => ("subscribe", "unsubscribe"),
            Kind::Pattern => ("psubscribe", "punsubscribe"),
            Kind::Shard => ("ssubscribe", "sunsubscribe"),
        }
    }
}

/// One published message, shared by every delivery of it.
#[derive(Debug)]
pub struct Message {
    pub channel: Vec<u8>,
    pub payload: Vec<u8>,
    /// Published with SPUBLISH (delivered as `smessage`).
    pub shard: bool,
    /// The frame subscribers of the channel itself get, encoded once per
    /// protocol (RESP2, RESP3) and copied to each: a message to 100
    /// subscribers is formatted twice at most, not 100 times.
    framed: [std::cell::OnceCell<Vec<u8>>; 2],
}

/// A message on its way to one subscriber.
#[derive(Debug)]
pub struct Delivery {
    pub to: Subscriber,
    pub message: Rc<Message>,
    /// The pattern that matched (`pmessage`), if any.
    pub pattern: Option<Rc<Vec<u8>>>,
}

impl Delivery {
    /// Encodes the message as the subscriber's protocol frames it: a push
    /// in RESP3, an array in RESP2.
    pub fn encode(&self, out: &mut Reply) {
        let m = &self.message;
        match &self.pattern {
            Some(pattern) => {
                out.push(4);
                out.bulk(b"pmessage");
                out.bulk(pattern);
                out.bulk(&m.channel);
                out.bulk(&m.payload);
            }
            None => {
                let frame = m.framed[usize::from(out.resp3)].get_or_init(|| {
                    let mut one = Reply {
                        resp3: out.resp3,
                        ..Reply::default()
                    };
                    one.push(3);
                    one.bulk(if m.shard { b"smessage" } else { b"message" });
                    one.bulk(&m.channel);
                    one.bulk(&m.payload);
                    one.buf
                });
                out.buf.extend_from_slice(frame);
            }
        }
    }
}

/// One client's subscriptions.
#[derive(Debug, Default)]
struct Subscriptions {
    channels: Vec<Vec<u8>>,
    patterns: Vec<Vec<u8>>,
    shard: Vec<Vec<u8>>,
}

impl Subscriptions {
    fn of(&mut self, kind: Kind) -> &mut Vec<Vec<u8>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }
}

#[derive(Debug, Default)]
pub struct PubSub {
    channels: HashMap<Vec<u8>, Vec<Subscriber>>,
    patterns: HashMap<Vec<u8>, Vec<Subscriber>>,
    shard: HashMap<Vec<u8>, Vec<Subscriber>>,
    clients: HashMap<u64, Subscriptions>,
    /// Deliveries queued since the loop last took them.
    outbox: Vec<Delivery>,
}

impl PubSub {
    fn table(&mut self, kind: Kind) -> &mut HashMap<Vec<u8>, Vec<Subscriber>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// Subscribes; false if it already was.
    pub fn subscribe(&mut self, who: Subscriber, kind: Kind, name: &[u8]) -> bool {
        let mine = self.clients.entry(who.client).or_default().of(kind);
        if mine.iter().any(|n| n == name) {
            return false;
        }
        mine.push(name.to_vec());
        self.table(kind).entry(name.to_vec()).or_default().push(who);
        true
    }

    /// Unsubscribes; false if it was not subscribed.
    pub fn unsubscribe(&mut self, client: u64, kind: Kind, name: &[u8]) -> bool {
        let Some(subs) = self.clients.get_mut(&client) else {
            return false;
        };
        let mine = subs.of(kind);
        let Some(at) = mine.iter().position(|n| n == name) else {
            return false;
        };
        mine.swap_remove(at);
        if subs.channels.is_empty() && subs.patterns.is_empty() && subs.shard.is_empty() {
            self.clients.remove(&client);
        }
        let table = self.table(kind);
        if let Some(list) = table.get_mut(name) {
            list.retain(|s| s.client != client);
            if list.is_empty() {
                table.remove(name);
            }
        }
        true
    }

    /// What `client` is subscribed to in `kind` (for unsubscribe-all).
    pub fn subscriptions(&self, client: u64, kind: Kind) -> Vec<Vec<u8>> {
        self.clients
            .get(&client)
            .map_or_else(Vec::new, |s| match kind {
                Kind::Channel => s.channels.clone(),
                Kind::Pattern => s.patterns.clone(),
                Kind::Shard => s.shard.clone(),
            })
    }

    /// (channels, patterns, shard channels) of `client`.
    pub fn counts(&self, client: u64) -> (usize, usize, usize) {
        self.clients.get(&client).map_or((0, 0, 0), |s| {
            (s.channels.len(), s.patterns.len(), s.shard.len())
        })
    }

    /// Forgets a disconnected client.
    pub fn forget(&mut self, client: u64) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in self.subscriptions(client, kind) {
                self.unsubscribe(client, kind, &name);
            }
        }
    }

    /// Queues `payload` for every subscriber of `channel` and every
    /// matching pattern (or of the shard channel, with `shard`). Returns
    /// how many receive it.
    pub fn publish(&mut self, channel: &[u8], payload: &[u8], shard: bool) -> usize {
        let message = Rc::new(Message {
            channel: channel.to_vec(),
            payload: payload.to_vec(),
            shard,
            framed: Default::default(),
        });
        let direct = if shard { &self.shard } else { &self.channels };
        let mut count = 0;
        for &to in direct.get(channel).into_iter().flatten() {
            self.outbox.push(Delivery {
                to,
                message: message.clone(),
                pattern: None,
            });
            count += 1;
        }
        if !shard {
            for (pattern, subs) in &self.patterns {
                if !glob::matches(pattern, channel, false) {
                    continue;
                }
                let pattern = Rc::new(pattern.clone());
                for &to in subs {
                    self.outbox.push(Delivery {
                        to,
                        message: message.clone(),
                        pattern: Some(pattern.clone()),
                    });
                    count += 1;
                }
            }
        }
        count
    }

    pub fn is_idle(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty()
    }

    pub fn take_outbox(&mut self) -> Vec<Delivery> {
        std::mem::take(&mut self.outbox)
    }

    /// Puts back deliveries taken out and not made (order kept).
    pub fn requeue(&mut self, mut deliveries: Vec<Delivery>) {
        deliveries.append(&mut self.outbox);
        self.outbox = deliveries;
    }

    pub fn has_outbox(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Active channels (PUBSUB CHANNELS / SHARDCHANNELS), filtered by `pattern`.
    pub fn channel_names(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let table = if shard { &self.shard } else { &self.channels };
        table
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob::matches(p, c, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of one channel (PUBSUB NUMSUB / SHARDNUMSUB).
    pub fn subscriber_count(&self, shard: bool, channel: &[u8]) -> usize {
        let table = if shard { &self.shard } else { &self.channels };
        table.get(channel).map_or(0, Vec::len)
    }

    /// (channels, patterns, shard channels) with subscribers: INFO, NUMPAT.
    pub fn totals(&self) -> (usize, usize, usize) {
        (self.channels.len(), self.patterns.len(), self.shard.len())
    }
}
