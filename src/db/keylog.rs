//! The key-change signal: what happened to which key, in order.
//!
//! `Db` records an event here whenever a command signals a change
//! (`Db::signal`), a key expires, a key is created (when someone wants
//! `new` events) or a read misses (`keymiss`, likewise). The loop drains
//! the log after each command and after the active cycle, and hands each
//! event to its readers: WATCH, keyspace notifications, the propagation
//! of expired keys, and later blocked clients. Keys are copied into one
//! reused buffer, so a recorded event allocates nothing in steady state.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Orders events across databases (MOVE and COPY record in two logs; the
/// readers need them in the order they happened). Only the loop thread
/// records, so the counter is never contended.
static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

/// The kind of event, as Redis's keyspace notification classes (the bit
/// values are Redis's `NOTIFY_*`, so the `notify-keyspace-events` flags map
/// onto them one to one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventClass(pub u32);

impl EventClass {
    pub const KEYSPACE: EventClass = EventClass(1 << 0);
    pub const KEYEVENT: EventClass = EventClass(1 << 1);
    pub const GENERIC: EventClass = EventClass(1 << 2);
    pub const STRING: EventClass = EventClass(1 << 3);
    pub const LIST: EventClass = EventClass(1 << 4);
    pub const SET: EventClass = EventClass(1 << 5);
    pub const HASH: EventClass = EventClass(1 << 6);
    pub const ZSET: EventClass = EventClass(1 << 7);
    pub const EXPIRED: EventClass = EventClass(1 << 8);
    pub const EVICTED: EventClass = EventClass(1 << 9);
    pub const STREAM: EventClass = EventClass(1 << 10);
    pub const KEY_MISS: EventClass = EventClass(1 << 11);
    pub const MODULE: EventClass = EventClass(1 << 13);
    pub const NEW: EventClass = EventClass(1 << 14);
    /// A change WATCH and client tracking see but no notification names
    /// (Redis's `signalModifiedKey` alone: PFCOUNT refreshing its cached
    /// count, PFDEBUG turning a HyperLogLog dense).
    pub const SILENT: EventClass = EventClass(1 << 15);

    pub fn intersects(self, other: u32) -> bool {
        self.0 & other != 0
    }

    /// Whether the event changed the key's value (WATCH and the dirty
    /// count care; `new` and `keymiss` are side notes, expiry is counted
    /// on its own).
    pub fn is_write(self) -> bool {
        !matches!(
            self,
            EventClass::NEW | EventClass::KEY_MISS | EventClass::EXPIRED
        )
    }
}

/// One recorded event.
#[derive(Debug, Clone)]
pub struct KeyEvent {
    /// When it happened, relative to events in other databases.
    pub seq: u64,
    pub class: EventClass,
    /// The event name notifications carry (`set`, `lpush`, `expired`, ...).
    pub name: &'static str,
    key: Range<usize>,
}

/// Events in the order they happened.
#[derive(Debug, Default)]
pub struct KeyLog {
    events: Vec<KeyEvent>,
    keys: Vec<u8>,
}

impl KeyLog {
    pub fn push(&mut self, class: EventClass, name: &'static str, key: &[u8]) {
        let start = self.keys.len();
        self.keys.extend_from_slice(key);
        self.events.push(KeyEvent {
            seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed),
            class,
            name,
            key: start..self.keys.len(),
        });
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&KeyEvent, &[u8])> {
        self.events.iter().map(|e| (e, &self.keys[e.key.clone()]))
    }

    /// Forgets the events, keeping the buffers (a huge burst, say a FLUSH
    /// of watched keys, gives its memory back).
    pub fn clear(&mut self) {
        self.events.clear();
        self.keys.clear();
        if self.keys.capacity() > 1 << 20 {
            self.keys = Vec::new();
            self.events = Vec::new();
        }
    }
}
