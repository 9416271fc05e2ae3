//! `FieldTtls`: the deadlines of a hash's fields that have one (issue 21,
//! hash-field expiry: the storage its commands will use).
//!
//! A hash table keeps its entries densely at indices `0..len` (`Dict`);
//! the deadlines sit beside it, in the same structure the keyspace keeps
//! its keys' deadlines in (`deadlines::Expires`, as a min-heap: the
//! field due first is on top, so expiring fields in deadline order looks
//! at the top only), and each entry knows where its record is (`pos`).
//! A hash with no field TTL has no `FieldTtls` at all.
//!
//! A field's record is 10 bytes (`FieldDeadline`: a field deadline fits
//! in 48 bits, Redis's own limit), plus 4 for its position: 14 bytes per
//! field with a TTL, and the heap's spare capacity.
//!
//! The owner reports every change of its table: `entry_added` after an
//! insert (appended at the end), `entry_removed` after a removal (which
//! moves the last entry into the hole, as `Dict::remove_at` reports).

use crate::deadlines::{Expires, Record};
use crate::dict::Moved;

/// Latest field deadline a hash field may have, as a file holds it (Redis's `EB_EXPIRE_TIME_MAX`).
pub const FIELD_TTL_MAX_MS: i64 = (1 << 48) - 1;

/// A field's record in the heap: its entry and a 48-bit deadline, moved
/// down at once when raised (no room for a second time).
#[derive(Clone, Copy)]
#[repr(C, packed(2))]
pub struct FieldDeadline {
    entry: u32,
    at_low: u32,
    at_high: u16,
}

impl Record for FieldDeadline {
    const LAZY: bool = false;
    fn new(entry: u32, at_ms: i64) -> Self {
        let mut record = FieldDeadline {
            entry,
            at_low: 0,
            at_high: 0,
        };
        record.set_at_ms(at_ms);
        record
    }
    fn entry(&self) -> u32 {
        self.entry
    }
    fn set_entry(&mut self, entry: u32) {
        self.entry = entry;
    }
    fn at_ms(&self) -> i64 {
        i64::from(self.at_high) << 32 | i64::from(self.at_low)
    }
    /// Deadlines are checked against `FIELD_TTL_MAX_MS` (48 bits) where
    /// they come in (commands, files); this only keeps the record sound.
    fn set_at_ms(&mut self, at_ms: i64) {
        let at = at_ms.clamp(0, FIELD_TTL_MAX_MS);
        self.at_low = at as u32;
        self.at_high = (at >> 32) as u16;
    }
    fn order_ms(&self) -> i64 {
        self.at_ms()
    }
}

/// No record for this entry.
const NONE: u32 = u32::MAX;

#[derive(Clone)]
pub struct FieldTtls {
    heap: Expires<FieldDeadline>,
    /// Per table entry: its record's position in `heap`, or `NONE`.
    pos: Vec<u32>,
}

impl FieldTtls {
    /// Deadlines for a table of `entries` entries, none set yet.
    pub fn new(entries: usize) -> FieldTtls {
        let mut heap = Expires::default();
        heap.set_ordered(true, &mut |_, _| {});
        FieldTtls {
            heap,
            pos: vec![NONE; entries],
        }
    }

    /// Fields with a deadline.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// The deadline of `entry` (unix ms), if it has one.
    pub fn get(&self, entry: u32) -> Option<i64> {
        match self.pos.get(entry as usize) {
            Some(&at) if at != NONE => Some(self.heap.get(at).at_ms()),
            _ => None,
        }
    }

    /// Sets (or changes) the deadline of `entry`.
    pub fn set(&mut self, entry: u32, at_ms: i64) {
        let Some(&at) = self.pos.get(entry as usize) else {
            return;
        };
        let pos = &mut self.pos;
        let mut moved = |entry: u32, to: u32| pos[entry as usize] = to;
        if at == NONE {
            self.heap.push(entry, at_ms, &mut moved);
        } else {
            self.heap.update(at, at_ms, &mut moved);
        }
    }

    /// Removes the deadline of `entry`; whether it had one.
    pub fn clear(&mut self, entry: u32) -> bool {
        let Some(at) = self.pos.get_mut(entry as usize) else {
            return false;
        };
        if *at == NONE {
            return false;
        }
        let record = std::mem::replace(at, NONE);
        let pos = &mut self.pos;
        self.heap
            .remove(record, &mut |entry, to| pos[entry as usize] = to);
        true
    }

    /// The field due first and its deadline.
    pub fn earliest(&self) -> Option<(u32, i64)> {
        let top = self.heap.top()?;
        Some((top.entry(), top.at_ms()))
    }

    /// The table appended an entry.
    pub fn entry_added(&mut self) {
        self.pos.push(NONE);
    }

    /// The table removed entry `removed`, moving another into its place
    /// (`moved`, as `Dict::remove_at` reported it).
    pub fn entry_removed(&mut self, removed: u32, moved: Option<Moved>) {
        self.clear(removed);
        if let Some(Moved { from, to }) = moved {
            let at = self.pos[from as usize];
            self.pos[to as usize] = at;
            if at != NONE {
                self.heap.set_entry(at, to);
            }
        }
        self.pos.pop();
    }
}

/// A table whose entries may carry deadlines: a hash's fields, a set's or
/// a sorted set's members. The dict and its `FieldTtls` change together
/// here, so no owner can move an entry without its deadline.
#[derive(Clone)]
pub struct TtlDict<E> {
    dict: crate::dict::Dict<E>,
    /// `None` until deadlines are allowed or one is set.
    ttls: Option<Box<FieldTtls>>,
}

impl<E: crate::dict::DictEntry> Default for TtlDict<E> {
    fn default() -> Self {
        TtlDict::new(false)
    }
}

impl<E> std::ops::Deref for TtlDict<E> {
    type Target = crate::dict::Dict<E>;

    fn deref(&self) -> &crate::dict::Dict<E> {
        &self.dict
    }
}

impl<E: crate::dict::DictEntry> TtlDict<E> {
    /// An empty table, ready for deadlines if `with_ttls`.
    pub fn new(with_ttls: bool) -> TtlDict<E> {
        TtlDict {
            dict: crate::dict::Dict::default(),
            ttls: with_ttls.then(|| Box::new(FieldTtls::new(0))),
        }
    }

    /// Appends an entry (without a deadline); its index.
    pub fn insert_new(&mut self, entry: E) -> u32 {
        let i = self.dict.insert_new(entry);
        if let Some(t) = &mut self.ttls {
            t.entry_added();
        }
        i
    }

    /// Removes entry `i` with its deadline (the last entry moves into its
    /// place, as `Dict::remove_at` reports).
    pub fn remove_at(&mut self, i: u32) -> (E, Option<Moved>) {
        let (entry, moved) = self.dict.remove_at(i);
        if let Some(t) = &mut self.ttls {
            t.entry_removed(i, moved);
        }
        (entry, moved)
    }

    /// Entry `i` to change in place (its index, so its deadline, stays).
    pub fn entry_mut(&mut self, i: u32) -> &mut E {
        self.dict.entry_mut(i)
    }

    /// The deadline of entry `i`, if it has one.
    pub fn ttl_of(&self, i: u32) -> Option<i64> {
        self.ttls.as_ref().and_then(|t| t.get(i))
    }

    /// Sets (`Some`) or removes entry `i`'s deadline.
    pub fn set_ttl(&mut self, i: u32, at_ms: Option<i64>) {
        match (at_ms, &mut self.ttls) {
            (Some(at), ttls) => ttls
                .get_or_insert_with(|| Box::new(FieldTtls::new(self.dict.len())))
                .set(i, at),
            (None, Some(t)) => {
                t.clear(i);
            }
            (None, None) => {}
        }
    }

    /// Makes room for deadlines before any is set (a hash read as
    /// `listpackex` stays one).
    pub fn allow_ttls(&mut self) {
        if self.ttls.is_none() {
            self.ttls = Some(Box::new(FieldTtls::new(self.dict.len())));
        }
    }

    /// Whether deadlines are allowed (see `allow_ttls`).
    pub fn has_ttls(&self) -> bool {
        self.ttls.is_some()
    }

    /// Entries with a deadline.
    pub fn ttl_count(&self) -> usize {
        self.ttls.as_ref().map_or(0, |t| t.len())
    }

    /// The entry due first and its deadline.
    pub fn earliest(&self) -> Option<(u32, i64)> {
        self.ttls.as_ref().and_then(|t| t.earliest())
    }

    /// Removes the entries whose deadline is at or before `now_ms`,
    /// earliest first, at most `max`; their keys.
    pub fn remove_due(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
        let mut gone = Vec::new();
        while gone.len() < max {
            match self.earliest() {
                Some((i, at)) if at <= now_ms => {
                    gone.push(self.dict.key(i).to_vec());
                    self.remove_at(i);
                }
                _ => break,
            }
        }
        gone
    }

    /// Empties it a slice at a time (the lazy-free thread).
    pub fn clear_paced(&mut self, tick: &mut dyn FnMut(), release: &mut dyn FnMut(*mut u8, usize)) {
        self.ttls = None;
        self.dict.clear_paced(tick, release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dict::Dict;
    use crate::value::elem::{Elem, Pair};
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    #[test]
    fn a_record_keeps_every_48_bit_deadline() {
        for at in [
            0,
            1,
            (1 << 32) - 1,
            1 << 32,
            1_795_000_000_000,
            FIELD_TTL_MAX_MS,
        ] {
            let mut r = FieldDeadline::new(7, at);
            assert_eq!((r.entry(), r.at_ms()), (7, at));
            r.set_at_ms(at / 2);
            assert_eq!(r.at_ms(), at / 2);
        }
    }

    /// A table and its deadlines driven together, against a model of
    /// field -> deadline.
    #[test]
    fn deadlines_follow_their_fields_through_inserts_and_removals() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(21);
        let mut table: Dict<Pair> = Dict::default();
        let mut ttls = FieldTtls::new(0);
        let mut model: HashMap<Vec<u8>, Option<i64>> = HashMap::new();
        for step in 0..30_000u32 {
            let field = format!("f{}", rng.gen_range(0..500)).into_bytes();
            match rng.gen_range(0..5) {
                0 | 1 => {
                    if table.find(&field).is_none() {
                        table.insert_new(Pair {
                            field: Elem::new(&field),
                            value: Elem::new(b"v"),
                        });
                        ttls.entry_added();
                        model.insert(field.clone(), None);
                    }
                    let i = table.find(&field).expect("present");
                    let at = rng.gen_range(0..1_000_000);
                    ttls.set(i, at);
                    model.insert(field, Some(at));
                }
                2 => {
                    if let Some(i) = table.find(&field) {
                        let had = model.insert(field, None).flatten().is_some();
                        assert_eq!(ttls.clear(i), had);
                    }
                }
                3 => {
                    if let Some(i) = table.find(&field) {
                        let (_, moved) = table.remove_at(i);
                        ttls.entry_removed(i, moved);
                        model.remove(&field);
                    }
                }
                _ => {
                    // The earliest deadline is the model's smallest.
                    let want = model.values().flatten().min().copied();
                    let got = ttls.earliest().map(|(i, at)| {
                        let f = table.entry(i).field.as_bytes().to_vec();
                        assert_eq!(model[&f], Some(at), "step {step}");
                        at
                    });
                    assert_eq!(got, want, "step {step}");
                }
            }
            if step % 1000 == 0 {
                for (f, at) in &model {
                    let i = table.find(f).expect("present");
                    assert_eq!(ttls.get(i), *at, "step {step}");
                }
                assert_eq!(ttls.len(), model.values().flatten().count());
            }
        }
        // Expiring from the top gives the deadlines in order.
        let mut last = i64::MIN;
        while let Some((i, at)) = ttls.earliest() {
            assert!(at >= last);
            last = at;
            let (_, moved) = table.remove_at(i);
            ttls.entry_removed(i, moved);
        }
        assert_eq!(ttls.len(), 0);
        // What is left is the fields that never had a deadline set, or had
        // it cleared.
        let left: Vec<&[u8]> = (0..table.len() as u32)
            .map(|i| table.entry(i).field.as_bytes())
            .collect();
        assert!(left.iter().all(|f| model[*f].is_none()));
        assert_eq!(left.len(), model.values().filter(|at| at.is_none()).count());
    }

    #[test]
    fn a_raised_deadline_is_not_reported_early() {
        let mut ttls = FieldTtls::new(3);
        ttls.set(0, 100);
        ttls.set(1, 200);
        ttls.set(2, 300);
        ttls.set(0, 1_000);
        assert_eq!(ttls.earliest(), Some((1, 200)));
        assert!(ttls.clear(1));
        assert!(!ttls.clear(1));
        assert_eq!(ttls.earliest(), Some((2, 300)));
        ttls.set(2, 50);
        assert_eq!(ttls.earliest(), Some((2, 50)));
        assert_eq!(ttls.get(0), Some(1_000));
        assert_eq!(ttls.get(1), None);
        assert_eq!(ttls.get(7), None);
    }
}
