//! The keyspace: one `Db` per logical database.
//!
//! Owns the main map (key → value) and the expires side (which keys have a
//! deadline, as absolute unix milliseconds), and every invariant joining
//! them:
//! - every key on the expires side is in the main map;
//! - a write that replaces a value says what happens to the TTL (`Ttl`);
//! - passive expiry lives in the lookups: a key whose deadline is at or
//!   before the command's time snapshot is deleted through `delete_expired`
//!   (the one expired-key delete path, which counts `expired_keys`) and
//!   treated as absent.
//!
//! Commands use only the methods here; nothing outside touches the maps.
//!
//! The expires side is a dense array of (entry, deadline) pairs with a
//! back-pointer from each entry, so a uniformly random key with a TTL is one
//! random index: O(1), no key copies, no key bytes stored twice.
//!
//! Memory per key: a 48-byte dict node (small keys and values inline in it,
//! see `slot`; the node's second word is the key's place on the expires
//! side, not its hash), about 4 bytes of bucket array, and 16 bytes on the
//! expires side (`expires`) for keys with a TTL.

pub mod access;
pub mod entry_deadlines;
pub mod keylog;
pub mod other_deadlines;
pub mod replica_ttls;
pub mod slot;
pub mod slot_index;
pub mod snapshot;
pub mod soft_deadlines;

use crate::deadlines::Expires;
use crate::dict::{Dict, DictEntry, Moved};
pub use keylog::{EventClass, KeyLog};
pub use other_deadlines::{member_expiry, member_expiry_deletion};
use rand::Rng;
use slot::Slot;
pub use slot::StrEncoding;

use crate::histogram::Histogram;
use crate::value::{Value, ValueRef};

const NO_EXPIRE: u32 = u32::MAX;

/// A key, its value, its string encoding and access history (the slot's
/// `Meta`). Where its deadline lives (an index into `Db::expires`, or
/// `NO_EXPIRE`) is the dict node's word (`expire_slot`).
pub struct Entry {
    slot: Slot,
}

impl Entry {
    fn encoding(&self) -> StrEncoding {
        self.slot.meta().encoding
    }

    fn set_encoding(&mut self, encoding: StrEncoding) {
        self.slot.meta_mut().encoding = encoding;
    }

    fn access(&self) -> access::Access {
        self.slot.meta().access
    }

    fn set_access(&mut self, access: access::Access) {
        self.slot.meta_mut().access = access;
    }
}

/// A key's value with what travels with it when it moves or is copied
/// (RENAME, MOVE, COPY): its deadline and its string encoding.
pub struct Detached {
    pub value: Value,
    pub expire_at_ms: Option<i64>,
    encoding: StrEncoding,
}

impl DictEntry for Entry {
    fn key(&self) -> &[u8] {
        self.slot.key()
    }
    /// The node's word is the deadline position; inline keys compare in
    /// the node as fast as a kept hash would.
    const KEEPS_HASH: bool = false;
}

/// A value for `load_key`: a string's bytes (stored without building a
/// `Value`), or any value.
pub enum NewValue<'a> {
    Str(&'a [u8]),
    Value(Value),
}

/// What a write does to the key's existing TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// Remove any TTL (plain SET, GETSET).
    Clear,
    /// Keep the current TTL (SET KEEPTTL, APPEND-style in-place updates).
    Keep,
    /// Set the deadline to this absolute unix time in ms.
    At(i64),
}

/// The outcome of sampling one key with a TTL (for the active cycle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// The key was due and has been deleted.
    Expired,
    /// The key is alive; its deadline is this far ahead, in ms.
    Alive { ttl_ms: i64 },
    /// (Deadline strategy) the first key's TTL had been raised; it was moved
    /// to its real place and nothing was decided yet.
    Settled,
}

/// Which mechanism removed an expired key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reclaim {
    /// A lookup found it past its deadline.
    Passive,
    /// The active cycle sampled it.
    Active,
}

/// Counters kept by the keyspace itself, summed over databases by INFO.
#[derive(Debug, Default, Clone)]
pub struct DbStats {
    /// Keys deleted because their deadline passed (passive and active).
    pub expired_keys: u64,
    /// Of those, removed by the active cycle.
    pub expired_keys_active: u64,
    /// Hash fields deleted because their deadline passed
    /// (`expired_subkeys`).
    pub expired_subkeys: u64,
    /// Read lookups that found / did not find their key.
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    /// Keys evicted by the memory limit (`evicted_keys`).
    pub evicted_keys: u64,
    /// How long after its deadline each expired key was removed, ms.
    pub lag_active: Histogram,
    pub lag_passive: Histogram,
}

#[derive(Default)]
pub struct Db {
    /// This database's number (SELECT index), for events and propagation.
    pub index: usize,
    dict: Dict<Entry>,
    /// Cluster mode: the keys by hash slot.
    slot_index: Option<Box<slot_index::SlotIndex>>,
    expires: Expires,
    pub stats: DbStats,
    /// Running estimate of the TTL of sampled live keys, ms (INFO avg_ttl).
    pub avg_ttl_ms: i64,
    /// `lazyfree-lazy-expire` / `lazyfree-lazy-server-del`: hand big values
    /// removed by expiry / overwritten by the server to the lazyfree thread.
    pub lazy_expire: bool,
    pub lazy_server_del: bool,
    /// Big values removed and waiting to go to the lazyfree thread (the
    /// loop drains this; `lazyfree` decides what is big).
    garbage: Vec<Value>,
    /// What happened to keys since the loop last drained it.
    events: KeyLog,
    /// Shared with the server's other databases: the change count and
    /// whether anything waits for `ServerState::process_key_events`.
    activity: std::rc::Rc<Activity>,
    /// Event classes recorded although no write made them (`new`,
    /// `keymiss`): only while keyspace notifications ask for them.
    pub side_events: u32,
    /// The event classes something reads from the key log (bits of
    /// `EventClass`): everything for WATCH and notifications, `expired`
    /// for the effect stream, list, sorted-set and generic events for
    /// blocked clients. An event of another class is only counted: SET
    /// copies no key into the log unless someone cares.
    pub recorded_classes: u32,
    /// A background save of this database in progress (`snapshot`): every
    /// change first preserves the entry it is about to touch.
    snapshot: Option<Box<snapshot::Snapshot>>,
    /// Tables flushed while a save still read them, freed once it ended.
    retired: Vec<snapshot::Retired>,
    /// The server is loading an AOF: nothing expires, whatever its
    /// deadline (Redis's `keyIsExpired` while `server.loading`), so that
    /// the log replays as it was written.
    pub loading: bool,
    /// CLIENT PAUSE is on: as on a replica, a read finds a key past its
    /// deadline missing but leaves it (the dataset stays as it is).
    pub expiry_paused: bool,
    /// This server is a replica: a read finds a key past its deadline
    /// missing but leaves it in place (the primary's DEL removes it);
    /// writes of its own clients (a writable replica) still delete it.
    /// Set with `set_replica`.
    pub replica: bool,
    /// On a replica, the deadlines its own clients set: the keys it
    /// expires itself (`expire_replica_keys`).
    replica_ttls: replica_ttls::ReplicaTtls,
    /// What a key's `access` bits keep (`maxmemory-policy`'s LRU or LFU).
    pub access_policy: access::AccessPolicy,
    /// The running command asked not to count its reads as accesses
    /// (CLIENT NO-TOUCH; OBJECT IDLETIME/FREQ).
    pub no_touch: bool,
    /// The time of the last lookup, unix ms: a new key's first access.
    clock_ms: i64,
    /// A xorshift state for the LFU counter's random increments.
    lfu_rng: u64,
    /// Entries whose value was handed out for changing (`value_mut`) or
    /// lost expired fields, when it is packable or a hash:
    /// `settle_changed` puts a small one back inline and notes a hash's
    /// field deadlines once the command is done (if its earliest moved
    /// from the one noted with it). Positions follow removals; a stale one
    /// only leaves a value unpacked until its next change.
    changed: Vec<(u32, Option<i64>)>,
    /// The elements each element-expiry event in the log took
    /// (`hexpired`, `sexpired`, `zexpired`), in the same order: the loop
    /// propagates them as HDEL, SREM or ZREM (`member_expiry`).
    expired_elements: std::collections::VecDeque<Vec<Vec<u8>>>,
    /// Hashes, sets and sorted sets with element deadlines, by the
    /// earliest (the active cycle's element candidates).
    element_deadlines: entry_deadlines::EntryDeadlines,
    /// What a read sees of a value whose fields or members past their
    /// deadline are kept (on a replica, or with expiry paused): a copy
    /// without them, until the next read.
    live_fields: Option<Value>,
    /// Soft deadlines (`SET ... STALE`), as graces before the hard one.
    soft: soft_deadlines::SoftDeadlines,
    /// The entry the last write looked up or made (`written_entry`).
    last_written: u32,
}

/// What a server's databases share, so that the loop reads one place
/// after every command instead of visiting each database.
#[derive(Debug, Default)]
pub struct Activity {
    /// Changes signalled in all of them since startup (Redis's
    /// `server.dirty`).
    dirty: std::cell::Cell<u64>,
    /// A database logged a key event or has a changed value to settle
    /// since the last `take_pending`.
    pending: std::cell::Cell<bool>,
}

impl Activity {
    pub fn dirty(&self) -> u64 {
        self.dirty.get()
    }

    /// Whether something waits (and from now on, nothing).
    pub fn take_pending(&self) -> bool {
        self.pending.replace(false)
    }

    fn count_change(&self) {
        self.dirty.set(self.dirty.get() + 1);
    }
}

/// Appends an event to a database's key log and says so to the server
/// (every event goes through here; apart from `Db::log` for a key that
/// lives in the database's own table).
fn log_to(
    events: &mut KeyLog,
    activity: &Activity,
    class: EventClass,
    name: &'static str,
    key: &[u8],
) {
    events.push(class, name, key);
    activity.pending.set(true);
}

/// What DEBUG OBJECT shows of a key.
pub struct DebugObject<'a> {
    pub value: ValueRef<'a>,
    pub encoding: &'static str,
    pub access: access::Access,
    /// Where its entry lives (stable while the value changes in place).
    pub address: usize,
}

impl Db {
    pub fn new(index: usize) -> Db {
        Db {
            index,
            clock_ms: crate::clock::unix_time_ms(),
            lfu_rng: 0x9e37_79b9_7f4a_7c15 ^ index as u64,
            ..Db::default()
        }
    }

    /// Records an access to the entry at `idx` (`updateLFU` / LRU clock).
    fn touch(&mut self, idx: u32, now_ms: i64) {
        self.clock_ms = now_ms;
        if self.no_touch {
            return;
        }
        let policy = self.access_policy;
        let chance = if policy.lfu {
            // xorshift64: the draw needs no quality, only speed.
            let mut x = self.lfu_rng;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.lfu_rng = x;
            (x >> 11) as f64 / (1u64 << 53) as f64
        } else {
            0.0
        };
        let entry = self.dict.entry_mut(idx);
        entry.set_access(entry.access().touched(policy, now_ms, chance));
    }

    /// The key-change signal (Redis's `signalModifiedKey` plus
    /// `notifyKeyspaceEvent`): `key` was changed by a command, as the
    /// event `name` of `class`. Counts one change; WATCH, notifications
    /// and the propagation point read it from the log.
    pub fn signal(&mut self, class: EventClass, name: &'static str, key: &[u8]) {
        self.activity.count_change();
        // Any write but a new deadline ends a soft deadline (SET STALE
        // gives it again after its own signal).
        if !self.soft.is_empty() && class.is_write() && name != "expire" {
            if let Some(idx) = self.written_entry(key) {
                self.soft.clear(idx);
            }
        }
        if class.intersects(self.recorded_classes) {
            self.log(class, name, key);
        }
    }

    /// Appends an event to the key log (`log_to`).
    fn log(&mut self, class: EventClass, name: &'static str, key: &[u8]) {
        log_to(&mut self.events, &self.activity, class, name, key);
    }

    /// Joins the server's other databases (`Activity`).
    pub fn share_activity(&mut self, activity: &std::rc::Rc<Activity>) {
        self.activity = activity.clone();
    }

    /// A change no reader is told of (Redis's bare `server.dirty++`: a
    /// consumer group's bookkeeping): it counts for propagation and saves
    /// only.
    pub fn mark_dirty(&mut self) {
        self.activity.count_change();
    }

    /// The events since the last call, handing over the log (give it back
    /// with `restore_events` to keep its buffers).
    pub fn take_events(&mut self) -> KeyLog {
        std::mem::take(&mut self.events)
    }

    pub fn restore_events(&mut self, mut log: KeyLog) {
        log.clear();
        if self.events.is_empty() {
            self.events = log;
        }
    }

    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Values a command unpacked to change wait for `settle_changed`.
    pub fn has_changed(&self) -> bool {
        !self.changed.is_empty()
    }

    pub fn len(&self) -> usize {
        self.dict.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }

    /// Bytes of the main table and the expires side themselves (MEMORY
    /// STATS `overhead.hashtable.main` / `.expires`).
    pub fn table_bytes(&self) -> (usize, usize) {
        (self.dict.table_bytes(), self.expires.table_bytes())
    }

    /// MEMORY USAGE: about how many bytes `key` takes (key, value, its
    /// entry and deadline record), the value sized from `samples`
    /// elements (0: all). A key past its deadline still counts, as Redis's
    /// `dictFind` there counts it. `None`: absent.
    pub fn memory_usage(&self, key: &[u8], samples: usize) -> Option<usize> {
        let (value, deadline) = self.peek(key)?;
        let entry = std::mem::size_of::<Entry>() + 8;
        let record = if deadline.is_some() {
            std::mem::size_of::<crate::deadlines::Volatile>()
        } else {
            0
        };
        Some(key.len() + value.memory_usage(samples) + entry + record)
    }

    pub fn expires_len(&self) -> usize {
        self.expires.len()
    }

    fn deadline(&self, idx: u32) -> Option<i64> {
        let slot = self.dict.word(idx);
        (slot != NO_EXPIRE).then(|| self.expires.get(slot).at_ms)
    }

    /// Whether the entry at `idx` has not reached its deadline at `now_ms`.
    fn is_live(&self, idx: u32, now_ms: i64) -> bool {
        self.deadline(idx)
            .is_none_or(|at_ms| at_ms > now_ms || self.loading)
    }

    /// Finds `key`, deleting it first if it expired at or before `now_ms`.
    /// The single choke point for passive expiry.
    fn lookup(&mut self, key: &[u8], now_ms: i64) -> Option<u32> {
        let idx = self.dict.find(key)?;
        match self.deadline(idx) {
            Some(at_ms) if at_ms <= now_ms && !self.loading => {
                self.delete_expired(idx, now_ms, Reclaim::Passive);
                None
            }
            _ => {
                self.touch(idx, now_ms);
                if self.loading || self.replica || self.expiry_paused {
                    return Some(idx);
                }
                self.expire_elements(idx, now_ms, usize::MAX)
            }
        }
    }

    /// Element expiry (hash fields, set and sorted-set members), the one
    /// path for passive (every lookup) and active: the elements of the
    /// value at `idx` whose deadline is at or before `now_ms` leave it,
    /// earliest first, at most `max` (the `hexpired`, `sexpired` or
    /// `zexpired` event, from which the loop propagates HDEL, SREM or
    /// ZREM), and the key with its last element (`del`). Returns where the
    /// entry is now, or `None` if it went.
    #[inline]
    fn expire_elements(&mut self, idx: u32, now_ms: i64, max: usize) -> Option<u32> {
        // Every value with element deadlines is registered: with none in
        // the database, no value needs looking at (a string's lookup).
        if self.element_deadlines.is_empty() {
            debug_assert!(self.element_deadline_at(idx).is_none());
            return Some(idx);
        }
        self.expire_due_elements_of(idx, now_ms, max)
    }

    #[inline(never)]
    fn expire_due_elements_of(&mut self, idx: u32, now_ms: i64, max: usize) -> Option<u32> {
        let due = self.element_deadline_at(idx).is_some_and(|at| at <= now_ms);
        if !due {
            return Some(idx);
        }
        let idx = self.preserve(idx);
        self.note_changed(idx);
        let slot = &mut self.dict.entry_mut(idx).slot;
        let Some(value) = slot.value_mut() else {
            return Some(idx);
        };
        let Some((class, event, _)) = member_expiry(value.as_ref()) else {
            return Some(idx);
        };
        let gone = value.remove_due_members(now_ms, max);
        let emptied = value.is_empty_aggregate();
        if gone.is_empty() {
            // Only with `max` 0: the earliest deadline is exact.
            return Some(idx);
        }
        // Not counted as a change of the running command (as a key's
        // expiry is not): the HDEL, SREM or ZREM goes out on its own.
        self.stats.expired_subkeys += gone.len() as u64;
        let key = self.dict.entry(idx).slot.key().to_vec();
        // Recorded whatever listens: the propagation reads it.
        self.log(class, event, &key);
        self.expired_elements.push_back(gone);
        if !emptied {
            return Some(idx);
        }
        self.remove_at(idx);
        if EventClass::GENERIC.intersects(self.recorded_classes) {
            self.log(EventClass::GENERIC, "del", &key);
        }
        None
    }

    /// `lookup` for a read: on a replica an expired key is missing but
    /// stays (Redis's `expireIfNeeded` on a replica).
    #[inline]
    fn lookup_read(&mut self, key: &[u8], now_ms: i64) -> Option<u32> {
        if (self.replica || self.expiry_paused) && !self.loading {
            let idx = self.dict.find(key)?;
            let live = self.is_live(idx, now_ms);
            if live {
                self.touch(idx, now_ms);
            }
            return live.then_some(idx);
        }
        self.lookup(key, now_ms)
    }

    /// `lookup` for a method about to change or remove the entry: a save
    /// in progress writes it first (`preserve`). Every mutation of an
    /// existing entry starts here (or in `remove_at`/`delete_expired`).
    fn lookup_for_change(&mut self, key: &[u8], now_ms: i64) -> Option<u32> {
        let idx = self.lookup(key, now_ms)?;
        let idx = self.preserve(idx);
        self.last_written = idx;
        Some(idx)
    }

    /// The entry of `key`, which a write just changed or made: the one
    /// it wrote if that is still the key's (a byte comparison instead of
    /// a second hash lookup, for the key-change signal's side work).
    fn written_entry(&self, key: &[u8]) -> Option<u32> {
        let idx = self.last_written;
        if (idx as usize) < self.dict.len() && crate::words::same_bytes(self.dict.key(idx), key) {
            return Some(idx);
        }
        self.dict.find(key)
    }

    /// The value of `key` for reading (`lookupKeyRead`).
    pub fn get(&mut self, key: &[u8], now_ms: i64) -> Option<ValueRef<'_>> {
        let idx = self.lookup_counted(key, now_ms)?;
        Some(self.read_value(idx, now_ms))
    }

    /// `get` with the key's soft deadline, in one lookup (GETLEASE): its
    /// hard deadline less its grace (`None` also for a key without a TTL:
    /// no soft deadline without a hard one).
    pub fn get_with_soft(
        &mut self,
        key: &[u8],
        now_ms: i64,
    ) -> Option<(ValueRef<'_>, Option<i64>)> {
        let idx = self.lookup_counted(key, now_ms)?;
        let soft = self.soft_deadline(idx);
        Some((self.read_value(idx, now_ms), soft))
    }

    /// The value at `idx` as a read sees it.
    #[inline]
    fn read_value(&mut self, idx: u32, now_ms: i64) -> ValueRef<'_> {
        self.live_fields = None;
        if self.replica || self.expiry_paused {
            // Fields and members past their deadline wait for the
            // primary's HDEL/SREM (or the end of the pause); reads do not
            // see them (as Redis 7.4's `hashTypeGetValue` answers a
            // replica's clients).
            let live = self
                .dict
                .entry(idx)
                .slot
                .value()
                .without_members_due(now_ms);
            if let Some(live) = live {
                return self.live_fields.insert(live).as_ref();
            }
        }
        self.dict.entry(idx).slot.value()
    }

    /// `lookup_read` as a read command's: a hit or a miss counted (INFO
    /// `keyspace_hits` / `keyspace_misses`), a miss notified (`keymiss`)
    /// unless `quiet` (OBJECT's lookups: Redis's `LOOKUP_NONOTIFY`).
    fn lookup_counted(&mut self, key: &[u8], now_ms: i64) -> Option<u32> {
        self.lookup_counted_quiet(key, now_ms, false)
    }

    fn lookup_counted_quiet(&mut self, key: &[u8], now_ms: i64, quiet: bool) -> Option<u32> {
        let Some(idx) = self.lookup_read(key, now_ms) else {
            self.stats.keyspace_misses += 1;
            if !quiet && EventClass::KEY_MISS.intersects(self.side_events) {
                self.log(EventClass::KEY_MISS, "keymiss", key);
            }
            return None;
        };
        self.stats.keyspace_hits += 1;
        Some(idx)
    }

    /// The value of `key` for a command about to change it
    /// (`lookupKeyWrite`): passive expiry, but no hit/miss statistics and
    /// no `keymiss` event, which belong to reads.
    pub fn get_for_write(&mut self, key: &[u8], now_ms: i64) -> Option<ValueRef<'_>> {
        let idx = self.lookup(key, now_ms)?;
        Some(self.dict.entry(idx).slot.value())
    }

    /// The values of several keys at once, for commands that read them
    /// together (SINTER, ZUNIONSTORE). Each is looked up in order as `get`
    /// does (passive expiry, hit/miss stats) and offered to `accept`; the
    /// first value refused ends the lookups, as Redis stops at the first
    /// WRONGTYPE, and its position is the `Err`. Only then are the values
    /// borrowed together (a deletion moves dict entries).
    pub fn get_many(
        &mut self,
        keys: &[&[u8]],
        now_ms: i64,
        accept: impl Fn(ValueRef<'_>) -> bool,
    ) -> Result<Vec<Option<ValueRef<'_>>>, usize> {
        for (i, key) in keys.iter().enumerate() {
            if self.get(key, now_ms).is_some_and(|v| !accept(v)) {
                return Err(i);
            }
        }
        let this = &*self;
        Ok(keys
            .iter()
            .map(|key| {
                // (On a replica an expired key is still there: skipped.)
                let idx = this.dict.find(key).filter(|&i| this.is_live(i, now_ms));
                idx.map(|i| this.dict.entry(i).slot.value())
            })
            .collect())
    }

    /// The value of `key` for changing in place (`lookupKeyWrite`), keeping
    /// its TTL: `None` if absent, `Some(None)` if it is a string (strings
    /// change through `update_str`).
    pub fn value_mut(&mut self, key: &[u8], now_ms: i64) -> Option<Option<&mut Value>> {
        let idx = self.lookup_for_change(key, now_ms)?;
        let slot = &self.dict.entry(idx).slot;
        // Hashes (a small one may become `listpackex`), and sets and
        // sorted sets with member deadlines: their earliest may move. A
        // first member deadline is noted by `track_member_deadlines`.
        let deadlines = match slot.value() {
            ValueRef::Hash(_) => true,
            v @ (ValueRef::Set(_) | ValueRef::ZSet(_)) => v.earliest_member_ttl().is_some(),
            _ => false,
        };
        if slot.may_pack() || deadlines {
            self.note_changed(idx);
        }
        Some(self.dict.entry_mut(idx).slot.value_mut())
    }

    /// The entry at `idx` is revisited after the command (`changed`).
    fn note_changed(&mut self, idx: u32) {
        if self.changed.last().map(|c| c.0) != Some(idx) {
            let before = self.element_deadline_at(idx);
            self.changed.push((idx, before));
            self.activity.pending.set(true);
        }
    }

    /// After each command: the values changed since the last call go
    /// back inline in their slots where they fit, and a hash's field
    /// deadlines are noted for the active cycle.
    #[inline]
    pub fn settle_changed(&mut self) {
        if self.changed.is_empty() {
            return;
        }
        while let Some((idx, before)) = self.changed.pop() {
            if idx < self.dict.len() as u32 {
                self.dict.entry_mut(idx).slot.pack();
                self.retrack_element_deadlines(idx, before);
            }
        }
    }

    /// Edits the string at `key` in place, keeping its TTL (`lookupKeyWrite`
    /// plus an in-place update: APPEND, SETRANGE, INCR).
    ///
    /// `edit` gets the bytes (empty if the key is absent) and whether the key
    /// existed. If it returns `Err`, nothing is stored, so it must fail before
    /// changing anything. Returns `None` if the key holds a non-string.
    /// `encoding(existed)` is the string's encoding afterwards.
    pub fn update_str<R, E>(
        &mut self,
        key: &[u8],
        now_ms: i64,
        encoding: fn(bool) -> StrEncoding,
        edit: impl FnOnce(&mut Vec<u8>, bool) -> Result<R, E>,
    ) -> Option<Result<R, E>> {
        let existed = self.lookup_for_change(key, now_ms);
        let (idx, result) = match existed {
            Some(idx) => (
                idx,
                self.dict
                    .entry_mut(idx)
                    .slot
                    .update_str(|s| edit(s, true))?,
            ),
            None => {
                let mut fresh = Vec::new();
                let result = edit(&mut fresh, false);
                if result.is_err() {
                    return Some(result);
                }
                (self.insert(Slot::new(key, Value::Str(fresh))), result)
            }
        };
        if result.is_ok() {
            self.dict
                .entry_mut(idx)
                .set_encoding(encoding(existed.is_some()));
        }
        Some(result)
    }

    /// Whether `key` is in the map at all, expired or not, without
    /// deleting anything (WATCH's bookkeeping, DEBUG DIGEST-VALUE).
    pub fn exists_raw(&self, key: &[u8]) -> bool {
        self.dict.find(key).is_some()
    }

    /// Whether `key` is present but past its deadline at `now_ms`, without
    /// deleting it (Redis's `keyIsExpired`).
    pub fn is_logically_expired(&self, key: &[u8], now_ms: i64) -> bool {
        self.dict
            .find(key)
            .is_some_and(|idx| !self.is_live(idx, now_ms))
    }

    pub fn contains(&mut self, key: &[u8], now_ms: i64) -> bool {
        self.lookup_read(key, now_ms).is_some()
    }

    /// `lookup_read` that records no access (Redis's `LOOKUP_NOTOUCH`:
    /// EXISTS, TYPE, TTL and OBJECT leave a key's idle time alone);
    /// `counted`: as a read command's lookup (see `lookup_counted`).
    fn lookup_untouched(&mut self, key: &[u8], now_ms: i64, counted: bool) -> Option<u32> {
        let no_touch = std::mem::replace(&mut self.no_touch, true);
        let idx = if counted {
            self.lookup_counted(key, now_ms)
        } else {
            self.lookup_read(key, now_ms)
        };
        self.no_touch = no_touch;
        idx
    }

    /// Whether `key` is there, as EXISTS asks (no access recorded; a hit
    /// or a miss counted).
    pub fn exists(&mut self, key: &[u8], now_ms: i64) -> bool {
        self.lookup_untouched(key, now_ms, true).is_some()
    }

    /// Whether `key` is there, as TOUCH asks: its access recorded.
    pub fn touch_key(&mut self, key: &[u8], now_ms: i64) -> bool {
        self.lookup_counted(key, now_ms).is_some()
    }

    /// TYPE's name of the key's value: a read (hits, misses, `keymiss`)
    /// that records no access.
    pub fn type_name(&mut self, key: &[u8], now_ms: i64) -> Option<&'static str> {
        let no_touch = std::mem::replace(&mut self.no_touch, true);
        let name = self.get(key, now_ms).map(|v| v.type_name());
        self.no_touch = no_touch;
        name
    }

    /// The key's deadline: `None` if the key is absent, `Some(None)` if it
    /// has no TTL.
    pub fn expire_at(&mut self, key: &[u8], now_ms: i64) -> Option<Option<i64>> {
        let idx = self.lookup_read(key, now_ms)?;
        Some(self.deadline(idx))
    }

    /// `expire_at` as TTL and friends ask (no access recorded).
    pub fn ttl_deadline(&mut self, key: &[u8], now_ms: i64) -> Option<Option<i64>> {
        let idx = self.lookup_untouched(key, now_ms, true)?;
        Some(self.deadline(idx))
    }

    /// RESTORE's IDLETIME / FREQ: sets what OBJECT IDLETIME or FREQ will
    /// report, as the policy keeps one or the other.
    pub fn restore_access(&mut self, key: &[u8], idle_s: Option<i64>, freq: Option<u8>) {
        let Some(idx) = self.dict.find(key) else {
            return;
        };
        let policy = self.access_policy;
        if let Some(access) = access::Access::restored(policy, self.clock_ms, idle_s, freq) {
            self.dict.entry_mut(idx).set_access(access);
        }
    }

    fn insert(&mut self, slot: Slot) -> u32 {
        if EventClass::NEW.intersects(self.side_events) {
            self.log(EventClass::NEW, "new", slot.key());
        }
        let mut entry = Entry { slot };
        entry.set_access(access::Access::fresh(self.access_policy, self.clock_ms));
        let idx = self.dict.insert_with_word(entry, NO_EXPIRE);
        self.last_written = idx;
        if let Some(index) = &mut self.slot_index {
            index.added(idx, self.dict.key(idx));
        }
        self.retrack_element_deadlines(idx, None);
        idx
    }

    fn apply_ttl(&mut self, idx: u32, ttl: Ttl) {
        match ttl {
            Ttl::Keep => {}
            Ttl::Clear => self.clear_deadline(idx),
            Ttl::At(at_ms) => self.set_client_deadline(idx, at_ms),
        }
    }

    /// A deadline a command gives a key. On a replica, one its own
    /// client gave (not the primary's stream, which runs with expiry
    /// frozen) is remembered: the replica expires that key itself.
    fn set_client_deadline(&mut self, idx: u32, at_ms: i64) {
        self.set_deadline(idx, at_ms);
        if self.replica && !self.loading {
            self.replica_ttls.remember(self.dict.key(idx), at_ms);
        }
    }

    /// This server became a replica or a primary. A primary expires every
    /// key itself: what a replica remembered is dropped.
    pub fn set_replica(&mut self, replica: bool) {
        self.replica = replica;
        if !replica {
            self.replica_ttls.clear();
        }
    }

    /// (Writable replica) deletes up to `max` keys whose deadline, set by
    /// a client of this replica, has come and is still theirs, through
    /// the one expired-key path (so its DEL reaches this server's AOF).
    /// Returns how many it deleted; 0 when none is due.
    pub fn expire_replica_keys(&mut self, now_ms: i64, max: usize) -> usize {
        let mut deleted = 0;
        for _ in 0..max {
            let Some((key, at_ms)) = self.replica_ttls.pop_due(now_ms) else {
                break;
            };
            if let Some(idx) = self.dict.find(&key) {
                if self.deadline(idx) == Some(at_ms) {
                    self.delete_expired(idx, now_ms, Reclaim::Active);
                    deleted += 1;
                }
            }
        }
        deleted
    }

    /// Keys whose deadline a client of this replica set (INFO
    /// `slave_expires_tracked_keys`).
    pub fn replica_ttls_tracked(&self) -> usize {
        self.replica_ttls.len()
    }

    /// Stores the string `value` at `key` (`setKey`), replacing any old
    /// value; `ttl` says what happens to an existing deadline. The hot path
    /// of SET: no allocation for small keys and values.
    ///
    /// A `Ttl::At` deadline at or before `now_ms` is stored as is; the next
    /// lookup or the active cycle removes the key (as Redis 7.0 does).
    pub fn set_str(
        &mut self,
        key: &[u8],
        value: &[u8],
        ttl: Ttl,
        encoding: StrEncoding,
        now_ms: i64,
    ) {
        let idx = match self.lookup_for_change(key, now_ms) {
            Some(idx) => {
                self.overwrite(idx, true, |slot| slot.set_str(value));
                idx
            }
            None => self.insert(Slot::new_str(key, value)),
        };
        self.dict.entry_mut(idx).set_encoding(encoding);
        self.apply_ttl(idx, ttl);
    }

    /// Adds a key read from a file at startup (nothing to replace, no
    /// events, no expiry check: the loader decides what to skip). Returns
    /// false, adding nothing, if the key is already there.
    pub fn load_key(&mut self, key: &[u8], value: NewValue<'_>, at_ms: Option<i64>) -> bool {
        if self.dict.find(key).is_some() {
            return false;
        }
        let slot = match value {
            NewValue::Str(bytes) => Slot::new_str(key, bytes),
            NewValue::Value(value) => Slot::new(key, value),
        };
        let idx = self.insert(slot);
        if let Some(at_ms) = at_ms {
            self.set_deadline(idx, at_ms);
        }
        true
    }

    /// Makes room for about `keys` keys at once (a file says how many are
    /// coming), instead of doubling the table on the way.
    pub fn reserve(&mut self, keys: usize) {
        self.dict.reserve(keys);
    }

    /// OBJECT ENCODING of `key`, `None` if absent.
    pub fn encoding(&mut self, key: &[u8], now_ms: i64) -> Option<&'static str> {
        let no_touch = std::mem::replace(&mut self.no_touch, true);
        let idx = self.lookup_counted_quiet(key, now_ms, true);
        self.no_touch = no_touch;
        Some(self.encoding_at(idx?))
    }

    fn encoding_at(&self, idx: u32) -> &'static str {
        let entry = self.dict.entry(idx);
        match (entry.slot.value(), entry.encoding()) {
            (ValueRef::Str(_), StrEncoding::Raw) => "raw",
            (ValueRef::Str(s), StrEncoding::NotInt) if s.len() <= 44 => "embstr",
            (ValueRef::Str(_), StrEncoding::NotInt) => "raw",
            (value, _) => value.encoding(),
        }
    }

    /// DEBUG OBJECT's view of `key`, expired or not (Redis looks in the
    /// dict without expiring).
    pub fn debug_object(&self, key: &[u8]) -> Option<DebugObject<'_>> {
        let idx = self.dict.find(key)?;
        let entry = self.dict.entry(idx);
        Some(DebugObject {
            value: entry.slot.value(),
            encoding: self.encoding_at(idx),
            access: entry.access(),
            address: std::ptr::from_ref(entry) as usize,
        })
    }

    /// Stores `value` at `key` like `set_str`, returning the old value.
    pub fn replace(&mut self, key: &[u8], value: Value, ttl: Ttl, now_ms: i64) -> Option<Value> {
        let (idx, old) = match self.lookup_for_change(key, now_ms) {
            Some(idx) => (
                idx,
                Some(self.overwrite(idx, false, |slot| slot.replace(value))),
            ),
            None => (self.insert(Slot::new(key, value)), None),
        };
        self.apply_ttl(idx, ttl);
        old
    }

    /// Stores `value` at `key` like `set_str` (RENAME, COPY, MOVE targets).
    pub fn set(&mut self, key: &[u8], value: Value, ttl: Ttl, now_ms: i64) {
        self.set_generic(key, value, ttl, StrEncoding::Auto, now_ms);
    }

    /// `set` with the string encoding OBJECT ENCODING reports for it
    /// (strings built by a command rather than taken from an argument).
    pub fn set_generic(
        &mut self,
        key: &[u8],
        value: Value,
        ttl: Ttl,
        encoding: StrEncoding,
        now_ms: i64,
    ) {
        let idx = match self.lookup_for_change(key, now_ms) {
            Some(idx) => {
                self.overwrite(idx, true, |slot| slot.replace(value));
                idx
            }
            None => self.insert(Slot::new(key, value)),
        };
        self.dict.entry_mut(idx).set_encoding(encoding);
        self.apply_ttl(idx, ttl);
    }

    /// Removes `key` if live, with its deadline and encoding, to be stored
    /// elsewhere with `attach` (RENAME, MOVE).
    pub fn detach(&mut self, key: &[u8], now_ms: i64) -> Option<Detached> {
        let idx = self.lookup(key, now_ms)?;
        let expire_at_ms = self.deadline(idx);
        let encoding = self.dict.entry(idx).encoding();
        Some(Detached {
            value: self.remove_at(idx).into_value(),
            expire_at_ms,
            encoding,
        })
    }

    /// A copy of `key`'s value, deadline and encoding (COPY).
    pub fn duplicate(&mut self, key: &[u8], now_ms: i64) -> Option<Detached> {
        let idx = self.lookup_read(key, now_ms)?;
        let entry = self.dict.entry(idx);
        Some(Detached {
            value: entry.slot.to_value(),
            expire_at_ms: self.deadline(idx),
            encoding: entry.encoding(),
        })
    }

    /// Stores a detached value at `key`. A value already there is deleted
    /// first, so the key is new (RENAME/COPY/MOVE's `dbDelete` + `dbAdd`:
    /// a `new` event either way).
    pub fn attach(&mut self, key: &[u8], d: Detached, now_ms: i64) {
        if let Some(idx) = self.lookup_for_change(key, now_ms) {
            self.stage_overwritten(idx);
            self.remove_at(idx);
        }
        let ttl = d.expire_at_ms.map_or(Ttl::Clear, Ttl::At);
        self.set_generic(key, d.value, ttl, d.encoding, now_ms);
    }

    /// Gives the entry at `idx` a new value through `change` (of its
    /// slot), the field-deadline registry following; `stage`: a big old
    /// value goes to the lazyfree thread first (`stage_overwritten`).
    fn overwrite<R>(&mut self, idx: u32, stage: bool, change: impl FnOnce(&mut Slot) -> R) -> R {
        let before = self.element_deadline_at(idx);
        if stage {
            self.stage_overwritten(idx);
        }
        let result = change(&mut self.dict.entry_mut(idx).slot);
        self.retrack_element_deadlines(idx, before);
        result
    }

    /// With `lazy_server_del`, moves a big value about to be overwritten
    /// to the garbage for the lazyfree thread.
    fn stage_overwritten(&mut self, idx: u32) {
        if self.lazy_server_del {
            if let Some(old) = self.dict.entry_mut(idx).slot.take_big_value() {
                self.garbage.push(old);
            }
        }
    }

    /// Big values removed since the last call, for the lazyfree thread.
    pub fn take_garbage(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.garbage)
    }

    /// Sets the deadline of an existing live key. Returns false if absent.
    pub fn set_expire(&mut self, key: &[u8], at_ms: i64, now_ms: i64) -> bool {
        match self.lookup_for_change(key, now_ms) {
            Some(idx) => {
                self.set_client_deadline(idx, at_ms);
                // A soft deadline moves with the hard one (the grace kept).
                if !self.soft.is_empty() {
                    self.soft.hard_moved(idx, at_ms, now_ms);
                }
                true
            }
            None => false,
        }
    }

    /// Removes the TTL of `key`. Returns true if there was one.
    pub fn persist(&mut self, key: &[u8], now_ms: i64) -> bool {
        match self.lookup(key, now_ms) {
            Some(idx) if self.dict.word(idx) != NO_EXPIRE => {
                let idx = self.preserve(idx);
                self.clear_deadline(idx);
                true
            }
            _ => false,
        }
    }

    fn set_deadline(&mut self, idx: u32, at_ms: i64) {
        let slot = self.dict.word(idx);
        let dict = &mut self.dict;
        let mut moved = |entry: u32, pos: u32| dict.set_word(entry, pos);
        if slot == NO_EXPIRE {
            self.expires.push(idx, at_ms, &mut moved);
        } else {
            self.expires.update(slot, at_ms, &mut moved);
        }
    }

    fn clear_deadline(&mut self, idx: u32) {
        let slot = self.dict.word(idx);
        if slot == NO_EXPIRE {
            return;
        }
        if !self.soft.is_empty() {
            self.soft.clear(idx);
        }
        self.dict.set_word(idx, NO_EXPIRE);
        let dict = &mut self.dict;
        self.expires
            .remove(slot, &mut |entry, pos| dict.set_word(entry, pos));
    }

    /// Keeps the expires side as a deadline-ordered heap (`true`) or a plain
    /// array for uniform sampling. Switching to ordered is O(n).
    pub fn set_deadline_ordered(&mut self, ordered: bool) {
        let dict = &mut self.dict;
        self.expires
            .set_ordered(ordered, &mut |entry, pos| dict.set_word(entry, pos));
    }

    pub fn is_deadline_ordered(&self) -> bool {
        self.expires.is_ordered()
    }

    /// (Deadline strategy) no key of this database is due before this time.
    pub fn earliest_deadline_ms(&self) -> Option<i64> {
        let elements = self.element_deadlines.earliest_ms().into_iter();
        let own = elements.chain(self.soft.earliest_ms()).min();
        if self.expires.is_ordered() {
            self.expires.earliest_ms().into_iter().chain(own).min()
        } else {
            own
        }
    }

    /// A key's access history without touching it (OBJECT IDLETIME /
    /// FREQ): idle ms (LRU) and the decayed counter (LFU).
    pub fn access_of(&mut self, key: &[u8], now_ms: i64) -> Option<(u64, u8)> {
        let idx = self.lookup_untouched(key, now_ms, false);
        let access = self.dict.entry(idx?).access();
        Some((
            access.idle_ms(now_ms),
            access.lfu_count(self.access_policy, now_ms),
        ))
    }

    /// Eviction's sample: `n` random keys (with a TTL only, if
    /// `volatile`), each shown to `visit` with its access history and
    /// deadline (the key is copied only if kept).
    pub fn eviction_sample(
        &self,
        rng: &mut impl Rng,
        volatile: bool,
        n: usize,
        visit: &mut impl FnMut(access::Access, Option<i64>, &[u8]),
    ) {
        for _ in 0..n {
            let idx = if volatile {
                match self.expires.random(rng) {
                    Some(v) => v.entry,
                    None => return,
                }
            } else if self.dict.is_empty() {
                return;
            } else {
                rng.gen_range(0..self.dict.len()) as u32
            };
            let entry = self.dict.entry(idx);
            visit(entry.access(), self.deadline(idx), entry.slot.key());
        }
    }

    /// The key with the nearest deadline and that deadline, exactly (the
    /// deadline strategy keeps them in order); `None` if no key has one
    /// or they are not kept in order.
    pub fn nearest_deadline(&mut self) -> Option<(i64, Vec<u8>)> {
        if !self.expires.is_ordered() {
            return None;
        }
        loop {
            let top = self.expires.top()?;
            // The top's place is a lower bound: settle a raised one first.
            if self
                .expires
                .earliest_ms()
                .is_some_and(|order| order < top.at_ms)
            {
                let dict = &mut self.dict;
                self.expires
                    .settle_top(&mut |entry, pos| dict.set_word(entry, pos));
                continue;
            }
            return Some((top.at_ms, self.dict.key(top.entry).to_vec()));
        }
    }

    /// Evicts `key` (the memory limit): removed whatever its deadline, the
    /// `evicted` event recorded (its DEL is propagated from it), counted.
    /// With `lazy`, a big value goes to the lazyfree thread. Returns
    /// false if it is not there.
    pub fn evict(&mut self, key: &[u8], lazy: bool) -> bool {
        let Some(idx) = self.dict.find(key) else {
            return false;
        };
        if EventClass::EVICTED.intersects(self.recorded_classes) {
            self.log(EventClass::EVICTED, "evicted", key);
        }
        self.activity.count_change();
        self.stats.evicted_keys += 1;
        self.remove_freeing(idx, lazy);
        true
    }

    /// Removes the entry at `idx`; with `lazy`, a big value goes to the
    /// garbage for the lazyfree thread (else it is dropped here).
    fn remove_freeing(&mut self, idx: u32, lazy: bool) {
        let mut slot = self.remove_at(idx);
        if lazy {
            self.garbage.extend(slot.take_big_value());
        }
    }

    /// Deletes `key` (DEL/UNLINK). Returns true if a live key was removed.
    /// With `lazy`, a big value goes to the garbage for the lazyfree thread.
    pub fn delete(&mut self, key: &[u8], now_ms: i64, lazy: bool) -> bool {
        match self.lookup(key, now_ms) {
            Some(idx) => {
                self.remove_freeing(idx, lazy);
                true
            }
            None => false,
        }
    }

    /// The one path by which an expired key leaves the keyspace, passive or
    /// active: counts it and records the `expired` event, from which the
    /// loop publishes the notification, touches WATCH and propagates DEL.
    fn delete_expired(&mut self, idx: u32, now_ms: i64, how: Reclaim) {
        let idx = self.preserve(idx);
        if EventClass::EXPIRED.intersects(self.recorded_classes) {
            let key = self.dict.key(idx);
            log_to(
                &mut self.events,
                &self.activity,
                EventClass::EXPIRED,
                "expired",
                key,
            );
        }
        let lag_ms = self
            .deadline(idx)
            .map_or(0, |at_ms| (now_ms - at_ms).max(0) as u64);
        self.stats.expired_keys += 1;
        if self.lazy_expire {
            if let Some(big) = self.dict.entry_mut(idx).slot.take_big_value() {
                self.garbage.push(big);
            }
        }
        match how {
            Reclaim::Passive => self.stats.lag_passive.record(lag_ms),
            Reclaim::Active => {
                self.stats.expired_keys_active += 1;
                self.stats.lag_active.record(lag_ms);
            }
        }
        self.remove_at(idx);
    }

    fn remove_at(&mut self, idx: u32) -> Slot {
        let idx = self.preserve(idx);
        self.clear_deadline(idx);
        if let Some(index) = &mut self.slot_index {
            let last = self.dict.len() as u32 - 1;
            index.removed(idx, self.dict.key(idx), last, self.dict.key(last));
        }
        let (entry, moved) = self.dict.remove_at(idx);
        if !self.element_deadlines.is_empty() {
            self.element_deadlines.clear(idx);
            if let Some(Moved { from, to }) = moved {
                self.element_deadlines.entry_moved(from, to);
            }
        }
        if !self.soft.is_idle() {
            self.soft.forget(idx);
            if let Some(Moved { from, to }) = moved {
                self.soft.entry_moved(from, to);
            }
        }
        if !self.changed.is_empty() {
            self.changed.retain(|&(i, _)| i != idx);
            if let Some(Moved { from, to }) = moved {
                self.changed
                    .iter_mut()
                    .filter(|(i, _)| *i == from)
                    .for_each(|(i, _)| *i = to);
            }
        }
        if let Some(Moved { from, to }) = moved {
            let slot = self.dict.word(to);
            if slot != NO_EXPIRE {
                self.expires.set_entry(slot, to);
            }
            self.entry_moved(from, to);
        }
        entry.slot
    }

    /// Empties the database, returning the old table whole (to be freed by
    /// the caller, possibly elsewhere): O(1) here, whatever its size.
    pub fn flush(&mut self) -> Dict<Entry> {
        self.avg_ttl_ms = 0;
        self.changed.clear();
        self.element_deadlines.clear_all();
        self.soft.clear_all();
        self.replica_ttls.clear();
        if let Some(index) = &mut self.slot_index {
            index.clear();
        }
        // A save still reading the table keeps it (and frees it after).
        if self.detach_into_snapshot() {
            return Dict::default();
        }
        self.expires.clear();
        std::mem::take(&mut self.dict)
    }

    /// A random live key (RANDOMKEY). Expired keys met on the way are deleted.
    pub fn random_key(&mut self, rng: &mut impl Rng, now_ms: i64) -> Option<Vec<u8>> {
        // A replica cannot delete what it finds expired: after this many
        // expired picks it answers one anyway, as Redis does.
        let mut replica_tries = 100;
        while !self.dict.is_empty() {
            let idx = rng.gen_range(0..self.dict.len()) as u32;
            match self.deadline(idx) {
                Some(at_ms) if at_ms <= now_ms && !self.loading => {
                    if !self.replica {
                        self.delete_expired(idx, now_ms, Reclaim::Passive);
                        continue;
                    }
                    replica_tries -= 1;
                    if replica_tries == 0 {
                        return Some(self.dict.key(idx).to_vec());
                    }
                }
                _ => return Some(self.dict.key(idx).to_vec()),
            }
        }
        None
    }

    /// Samples one uniformly random key with a TTL; deletes it if due.
    /// `None` if no key has a TTL. O(1).
    pub fn sample_volatile(&mut self, rng: &mut impl Rng, now_ms: i64) -> Option<Sample> {
        let v = self.expires.random(rng)?;
        let (entry, at_ms) = (v.entry, v.at_ms);
        if at_ms <= now_ms {
            self.delete_expired(entry, now_ms, Reclaim::Active);
            Some(Sample::Expired)
        } else {
            Some(Sample::Alive {
                ttl_ms: at_ms - now_ms,
            })
        }
    }

    /// (Deadline strategy) looks at the key due first; deletes it if due.
    /// `None` if no key has a TTL. O(log n).
    pub fn expire_first_due(&mut self, now_ms: i64) -> Option<Sample> {
        let top = self.expires.top()?;
        let (entry, at_ms) = (top.entry, top.at_ms);
        if at_ms <= now_ms {
            self.delete_expired(entry, now_ms, Reclaim::Active);
            return Some(Sample::Expired);
        }
        if self
            .expires
            .earliest_ms()
            .is_some_and(|order| order <= now_ms)
        {
            let dict = &mut self.dict;
            self.expires
                .settle_top(&mut |entry, pos| dict.set_word(entry, pos));
            return Some(Sample::Settled);
        }
        Some(Sample::Alive {
            ttl_ms: at_ms - now_ms,
        })
    }

    /// The TTL of a uniformly random key with one, in ms (for `avg_ttl`).
    pub fn random_ttl_ms(&self, rng: &mut impl Rng, now_ms: i64) -> Option<i64> {
        self.expires.random(rng).map(|v| v.at_ms - now_ms)
    }

    /// One SCAN step: calls `visit(key, value)` for live keys in the cursor's
    /// buckets and returns the next cursor. Expired keys are skipped, not
    /// deleted (deleting would disturb the bucket being walked).
    pub fn scan_step(
        &mut self,
        cursor: u64,
        now_ms: i64,
        wanted: impl Fn(&[u8]) -> bool,
        mut visit: impl FnMut(&[u8], ValueRef<'_>),
    ) -> u64 {
        // A resize under way is walked as it is (see `Dict::scan_step`).
        let this = &*self;
        let mut expired = Vec::new();
        let next = this.dict.scan_step(cursor, |idx| {
            let slot = &this.dict.entry(idx).slot;
            if this.is_live(idx, now_ms) {
                visit(slot.key(), slot.value());
            } else if wanted(slot.key()) {
                expired.push(slot.key().to_vec());
            }
        });
        // The expired keys SCAN would have answered are deleted as a
        // lookup deletes them (Redis's `expireIfNeeded` in SCAN).
        for key in expired {
            self.lookup_untouched(&key, now_ms, false);
        }
        next
    }

    /// Moves the dict's resize forward for up to `budget` (cron work).
    pub fn rehash_for(&mut self, budget: std::time::Duration) {
        self.dict.rehash_for(budget);
    }

    /// `key`'s value and deadline whether or not it has expired, without
    /// deleting or counting anything (DEBUG DIGEST-VALUE, OBJECT-like
    /// tools that must see logically expired keys).
    pub fn peek(&self, key: &[u8]) -> Option<(ValueRef<'_>, Option<i64>)> {
        let idx = self.dict.find(key)?;
        Some((self.dict.entry(idx).slot.value(), self.deadline(idx)))
    }

    /// Every key with its value and deadline, expired or not (DEBUG
    /// DIGEST, and later the RDB writer's own filtering). O(n).
    pub fn for_each_entry(&self, mut f: impl FnMut(&[u8], ValueRef<'_>, Option<i64>)) {
        for (idx, entry) in self.dict.iter() {
            f(entry.slot.key(), entry.slot.value(), self.deadline(idx));
        }
    }

    /// Live keys, for KEYS. O(n), as in Redis.
    /// Cluster mode: keeps the keys by hash slot from now on (an empty
    /// database; the server turns it on before loading any data).
    pub fn index_slots(&mut self) {
        let mut index = Box::<slot_index::SlotIndex>::default();
        for idx in 0..self.dict.len() as u32 {
            index.added(idx, self.dict.key(idx));
        }
        self.slot_index = Some(index);
    }

    /// How many keys (live or not yet reclaimed) a hash slot holds; 0
    /// outside cluster mode.
    pub fn keys_in_slot(&self, slot: u16) -> usize {
        self.slot_index.as_ref().map_or(0, |i| i.count(slot))
    }

    /// Up to `max` keys of a hash slot, expired ones not yet reclaimed
    /// included, as Redis lists them (GETKEYSINSLOT, a slot's migration).
    pub fn slot_keys(&self, slot: u16, max: usize) -> Vec<&[u8]> {
        let Some(index) = &self.slot_index else {
            return Vec::new();
        };
        index
            .entries(slot)
            .iter()
            .take(max)
            .map(|&idx| self.dict.key(idx))
            .collect()
    }

    /// Bytes the slot index holds (MEMORY STATS, the cluster's overhead).
    pub fn slot_index_bytes(&self) -> usize {
        self.slot_index.as_ref().map_or(0, |i| i.heap_bytes())
    }

    pub fn live_keys(&self, now_ms: i64) -> impl Iterator<Item = &[u8]> {
        self.dict
            .iter()
            .filter_map(move |(idx, e)| self.is_live(idx, now_ms).then_some(e.slot.key()))
    }
}

#[cfg(test)]
mod tests;
