//! The deadlines a key has beside its TTL, as the database keeps them:
//! its elements' (hash fields, set and sorted-set members, issues 21 and
//! 40: which event and deletion command each type's element expiry
//! uses, and the registry of values with element deadlines, the active
//! cycle's candidates) and its soft deadline (`SET ... STALE`, issue 42,
//! over `soft_deadlines`).

use super::{Db, EventClass};
use crate::value::ValueRef;

/// Element expiry of one type: the event a field's or member's expiry
/// signals, in its type's class, and the command that propagates the
/// deletion.
type MemberExpiry = (EventClass, &'static str, &'static [u8]);

/// Redis 7.4's hash fields; sets (Redis 8.12 documents no event name)
/// and sorted sets (lapse's own) by analogy.
const HASH_EXPIRY: MemberExpiry = (EventClass::HASH, "hexpired", b"HDEL");
const SET_EXPIRY: MemberExpiry = (EventClass::SET, "sexpired", b"SREM");
const ZSET_EXPIRY: MemberExpiry = (EventClass::ZSET, "zexpired", b"ZREM");

/// The element expiry of a value's type, if it has one.
pub fn member_expiry(value: ValueRef) -> Option<MemberExpiry> {
    match value {
        ValueRef::Hash(_) => Some(HASH_EXPIRY),
        ValueRef::Set(_) => Some(SET_EXPIRY),
        ValueRef::ZSet(_) => Some(ZSET_EXPIRY),
        _ => None,
    }
}

/// The deletion command of an element-expiry event.
pub fn member_expiry_deletion(class: EventClass, event: &str) -> Option<&'static [u8]> {
    [HASH_EXPIRY, SET_EXPIRY, ZSET_EXPIRY]
        .into_iter()
        .find(|(c, e, _)| *c == class && *e == event)
        .map(|(_, _, deletion)| deletion)
}

impl Db {
    /// The earliest element deadline of the value at `idx` (O(1): a
    /// packed value's preamble, a table's heap top, in memory the command
    /// reads anyway).
    pub(super) fn element_deadline_at(&self, idx: u32) -> Option<i64> {
        self.dict.entry(idx).slot.earliest_member_ttl()
    }

    /// Notes whether the value at `idx` has element deadlines (a hash's
    /// fields, a set's or sorted set's members), and the earliest (after
    /// any change of its value).
    pub(super) fn track_element_deadlines(&mut self, idx: u32) {
        match self.element_deadline_at(idx) {
            Some(at_ms) => self.element_deadlines.set(idx, at_ms),
            None => self.element_deadlines.clear(idx),
        }
    }

    /// Notes the element deadlines of the value at `key` for the active
    /// cycle, after a command gave some (SEXPIRE and its kind: a set or
    /// sorted set without any is not followed by `value_mut`).
    pub fn track_member_deadlines(&mut self, key: &[u8]) {
        if let Some(idx) = self.dict.find(key) {
            self.track_element_deadlines(idx);
        }
    }

    /// `track_element_deadlines` after a change that found the earliest
    /// element deadline at `before`: nothing to do if it is still there
    /// (the registry's record holds), the common case of a write.
    pub(super) fn retrack_element_deadlines(&mut self, idx: u32, before: Option<i64>) {
        if self.element_deadline_at(idx) != before {
            self.track_element_deadlines(idx);
        }
    }

    /// Active element expiry: the due elements of the values due first,
    /// in deadline order, until `max_elements` went or nothing more is
    /// due; how many went.
    pub fn expire_due_elements(&mut self, now_ms: i64, max_elements: u64) -> u64 {
        let before = self.stats.expired_subkeys;
        // Each visit settles or empties its record, so visits are bounded
        // by elements removed plus records settled.
        for _ in 0..max_elements.saturating_mul(2) {
            let done = self.stats.expired_subkeys - before;
            let Some((idx, at_ms)) = self.element_deadlines.top() else {
                break;
            };
            if at_ms > now_ms || done >= max_elements {
                break;
            }
            let max = usize::try_from(max_elements - done).unwrap_or(usize::MAX);
            // A key gone with its last element lost its record in
            // `remove_at`; a stale record (the earliest was later than it
            // said) settles here.
            if let Some(idx) = self.expire_elements(idx, now_ms, max) {
                self.track_element_deadlines(idx);
            }
        }
        self.stats.expired_subkeys - before
    }

    /// Keys with element deadlines (INFO keyspace `subexpiry`).
    pub fn keys_with_element_ttls(&self) -> usize {
        self.element_deadlines.len()
    }

    /// The elements the oldest element-expiry event in the log took.
    pub fn take_expired_elements(&mut self) -> Vec<Vec<u8>> {
        self.expired_elements.pop_front().unwrap_or_default()
    }

    /// Gives `key` a soft deadline at `soft_ms`, before its hard one (SET
    /// STALE after storing the key with its hard deadline, a file or the
    /// primary's stream). A key without a hard deadline gets none.
    pub fn set_soft_deadline(&mut self, key: &[u8], soft_ms: i64) {
        if let Some(idx) = self.written_entry(key) {
            if let Some(hard_ms) = self.deadline(idx) {
                self.soft.set(idx, soft_ms, hard_ms, self.dict.len());
            }
        }
    }

    /// Whether the `stale` event has readers (`notify-keyspace-events`
    /// with `x`): only then are soft deadlines kept in order for it.
    pub fn set_stale_events(&mut self, on: bool) {
        if self.soft.keeps_order() == on {
            return;
        }
        let now_ms = crate::clock::unix_time_ms();
        let mut soft = std::mem::take(&mut self.soft);
        soft.keep_order(on, now_ms, |idx| self.deadline(idx));
        self.soft = soft;
    }

    /// The key at `idx`'s soft deadline, if it has one.
    pub(super) fn soft_deadline(&self, idx: u32) -> Option<i64> {
        let grace = self.soft.grace(idx)?;
        Some(self.deadline(idx)?.saturating_sub(grace))
    }

    /// Signals `stale` (class `x`) for the keys whose soft deadline came
    /// by `now_ms`, at most `max` of them, the earliest first: the active
    /// cycle's, so the event comes on time as `expired` does. Nothing
    /// changes, nothing is propagated. Returns how many.
    pub fn signal_stale(&mut self, now_ms: i64, max: u64) -> u64 {
        let mut signalled = 0;
        while signalled < max {
            let Some(idx) = self.soft.pop_reached(now_ms) else {
                break;
            };
            // A key past its hard deadline too is about to expire instead.
            if self.is_live(idx, now_ms) {
                signalled += 1;
                if EventClass::EXPIRED.intersects(self.recorded_classes) {
                    let key = self.dict.key(idx);
                    super::log_to(
                        &mut self.events,
                        &self.activity,
                        EventClass::EXPIRED,
                        "stale",
                        key,
                    );
                }
            }
        }
        signalled
    }
}
