//! `FieldTtls`: the deadlines of a hash's fields that have one (issue 21,
//! hash-field expiry: the storage its commands will use).
//!
//! A hash table keeps its entries densely at indices `0..len` (`Dict`);
//! the deadlines sit beside it, in the same structure the keyspace keeps
//! its keys' deadlines in (`db::expires::Expires`, as a min-heap: the
//! field due first is on top, so expiring fields in deadline order looks
//! at the top only), and each entry knows where its record is (`pos`).
//! A hash with no field TTL has no `FieldTtls` at all.
//!
//! The owner reports every change of its table: `entry_added` after an
//! insert (appended at the end), `entry_removed` after a removal (which
//! moves the last entry into the hole, as `Dict::remove_at` reports).

use crate::db::expires::Expires;
use crate::dict::Moved;

/// No record for this entry.
const NONE: u32 = u32::MAX;

#[derive(Clone)]
pub struct FieldTtls {
    heap: Expires,
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

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The deadline of `entry` (unix ms), if it has one.
    pub fn get(&self, entry: u32) -> Option<i64> {
        match self.pos.get(entry as usize) {
            Some(&at) if at != NONE => Some(self.heap.get(at).at_ms),
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

    /// No field is due before this time (a lower bound of every
    /// deadline: a raised one may not have moved down yet).
    pub fn earliest_bound(&self) -> Option<i64> {
        self.heap.earliest_ms()
    }

    /// The field due first and its deadline.
    pub fn earliest(&mut self) -> Option<(u32, i64)> {
        loop {
            let top = self.heap.top()?;
            // A raised deadline keeps its place until it reaches the top.
            if self.heap.earliest_ms() == Some(top.at_ms) {
                return Some((top.entry, top.at_ms));
            }
            let pos = &mut self.pos;
            self.heap
                .settle_top(&mut |entry, to| pos[entry as usize] = to);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dict::Dict;
    use crate::value::{Elem, Pair};
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

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
        assert!(ttls.is_empty());
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
