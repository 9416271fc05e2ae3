//! Deadlines in order: a database's keys with a TTL (its expires side) and
//! a hash's fields with a TTL, each as a dense array of (entry, deadline)
//! records. A data structure of the base layer: it knows no keyspace.
//!
//! Dense, so a uniformly random key with a TTL is one random index (the
//! uniform strategy). With the deadline strategy the same array is kept as a
//! 4-ary min-heap, so the keys that are due come first: the active cycle
//! looks at the top instead of hoping to sample them.
//!
//! The heap is ordered by `order_ms`, a lower bound of the real deadline
//! `at_ms`. Raising a TTL (the common case: SET EX on a key that already has
//! one) only raises `at_ms`, O(1); the record is moved down lazily when it
//! reaches the top. Lowering a TTL lowers `order_ms` too and moves the record
//! up. So the top's `order_ms` is never later than any real deadline, and
//! "the top is not due" means "nothing is due".
//!
//! Records refer to dict entries by index, and each dict entry points back
//! at its record; every method that moves records reports each new position
//! through `moved(entry, position)` so the owner can fix the back-pointers.

use rand::Rng;

/// Children per heap node: shallower than binary, and a node's children
/// share a cache line.
const ARITY: usize = 4;

/// A heap record: a dict entry and its deadline. A record that can hold a
/// second time (`LAZY`) is ordered by a lower bound of its deadline, so a
/// raised deadline keeps its place until it reaches the top; one that
/// cannot is moved down at once.
pub trait Record: Copy {
    const LAZY: bool;
    fn new(entry: u32, at_ms: i64) -> Self;
    fn entry(&self) -> u32;
    fn set_entry(&mut self, entry: u32);
    fn at_ms(&self) -> i64;
    /// Sets the deadline, and (`LAZY`) the heap key to it.
    fn set_at_ms(&mut self, at_ms: i64);
    /// The heap key: `at_ms`, or (`LAZY`) a lower bound of it.
    fn order_ms(&self) -> i64;
    /// Raises the deadline to `at_ms` keeping the heap key, if the record
    /// can hold the difference; false (nothing changed) if not.
    fn raise_lazily(&mut self, _at_ms: i64) -> bool {
        false
    }
}

/// One key with a TTL. Packed to 16 bytes; fields are copied out, never
/// borrowed.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub struct Volatile {
    /// Index of the key's entry in the main dict.
    pub entry: u32,
    /// Absolute unix time in ms at which the key is gone.
    pub at_ms: i64,
    /// How far the heap key lies below `at_ms` (a raise kept lazily,
    /// deadline strategy only): up to 49 days; a raise beyond that
    /// moves the record at once.
    lag_ms: u32,
}

impl Record for Volatile {
    const LAZY: bool = true;
    fn new(entry: u32, at_ms: i64) -> Self {
        Volatile {
            entry,
            at_ms,
            lag_ms: 0,
        }
    }
    fn entry(&self) -> u32 {
        self.entry
    }
    fn set_entry(&mut self, entry: u32) {
        self.entry = entry;
    }
    fn at_ms(&self) -> i64 {
        self.at_ms
    }
    fn set_at_ms(&mut self, at_ms: i64) {
        self.at_ms = at_ms;
        self.lag_ms = 0;
    }
    fn order_ms(&self) -> i64 {
        self.at_ms - i64::from(self.lag_ms)
    }
    fn raise_lazily(&mut self, at_ms: i64) -> bool {
        let Ok(lag_ms) = u32::try_from(at_ms.saturating_sub(self.order_ms())) else {
            return false;
        };
        self.at_ms = at_ms;
        self.lag_ms = lag_ms;
        true
    }
}

#[derive(Clone)]
pub struct Expires<R: Record = Volatile> {
    items: Vec<R>,
    /// Kept as a min-heap on `order_ms` (the deadline strategy).
    ordered: bool,
}

impl<R: Record> Default for Expires<R> {
    fn default() -> Self {
        Expires {
            items: Vec::new(),
            ordered: false,
        }
    }
}

impl<R: Record> Expires<R> {
    /// Bytes of the records, as allocated.
    pub fn table_bytes(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<R>()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn get(&self, pos: u32) -> R {
        self.items[pos as usize]
    }

    /// Repoints the record at `pos` to a dict entry that moved.
    pub fn set_entry(&mut self, pos: u32, entry: u32) {
        self.items[pos as usize].set_entry(entry);
    }

    fn order(&self, pos: usize) -> i64 {
        self.items[pos].order_ms()
    }

    /// Adds a record for `entry`.
    pub fn push(&mut self, entry: u32, at_ms: i64, moved: &mut impl FnMut(u32, u32)) {
        self.items.push(R::new(entry, at_ms));
        let pos = self.items.len() - 1;
        if self.ordered {
            self.sift_up(pos, moved);
        } else {
            moved(entry, pos as u32);
        }
    }

    /// Changes the deadline of the record at `pos`.
    pub fn update(&mut self, pos: u32, at_ms: i64, moved: &mut impl FnMut(u32, u32)) {
        let pos = pos as usize;
        let was = self.order(pos);
        // A lazy record's later deadline keeps its place: `order_ms` stays
        // a lower bound.
        if self.ordered && at_ms >= was && self.items[pos].raise_lazily(at_ms) {
            return;
        }
        self.items[pos].set_at_ms(at_ms);
        if !self.ordered {
            return;
        }
        if at_ms < was {
            self.sift_up(pos, moved);
        } else {
            self.sift_down(pos, moved);
        }
    }

    /// Removes the record at `pos`.
    pub fn remove(&mut self, pos: u32, moved: &mut impl FnMut(u32, u32)) {
        let pos = pos as usize;
        let last = self.items.pop();
        if pos == self.items.len() {
            return;
        }
        let Some(last) = last else { return };
        self.items[pos] = last;
        if !self.ordered {
            moved(last.entry(), pos as u32);
        } else if pos > 0 && last.order_ms() < self.order((pos - 1) / ARITY) {
            self.sift_up(pos, moved);
        } else {
            self.sift_down(pos, moved);
        }
    }

    pub fn clear(&mut self) {
        self.items = Vec::new();
    }

    /// A uniformly random record, O(1).
    pub fn random(&self, rng: &mut impl Rng) -> Option<R> {
        if self.items.is_empty() {
            return None;
        }
        Some(self.items[rng.gen_range(0..self.items.len())])
    }

    pub fn is_ordered(&self) -> bool {
        self.ordered
    }

    /// Switches between a plain array and the heap (building it in O(n)).
    pub fn set_ordered(&mut self, ordered: bool, moved: &mut impl FnMut(u32, u32)) {
        if ordered == self.ordered {
            return;
        }
        self.ordered = ordered;
        if ordered {
            if R::LAZY {
                for item in &mut self.items {
                    item.set_at_ms(item.at_ms());
                }
            }
            for pos in (0..self.items.len() / ARITY + 1).rev() {
                if pos < self.items.len() {
                    self.sift_down(pos, moved);
                }
            }
        }
    }

    /// The record with the smallest `order_ms` (deadline strategy).
    pub fn top(&self) -> Option<R> {
        self.items.first().copied()
    }

    /// No key is due before this time (deadline strategy): the top's
    /// `order_ms`, a lower bound of every deadline.
    pub fn earliest_ms(&self) -> Option<i64> {
        self.items.first().map(|v| v.order_ms())
    }

    /// Moves the top record, whose deadline was raised, to its real place.
    pub fn settle_top(&mut self, moved: &mut impl FnMut(u32, u32)) {
        if !R::LAZY {
            return;
        }
        if let Some(top) = self.items.first_mut() {
            top.set_at_ms(top.at_ms());
            self.sift_down(0, moved);
        }
    }

    fn sift_up(&mut self, mut pos: usize, moved: &mut impl FnMut(u32, u32)) {
        let item = self.items[pos];
        let item_order = item.order_ms();
        while pos > 0 {
            let parent = (pos - 1) / ARITY;
            if self.order(parent) <= item_order {
                break;
            }
            self.items[pos] = self.items[parent];
            moved(self.items[pos].entry(), pos as u32);
            pos = parent;
        }
        self.items[pos] = item;
        moved(item.entry(), pos as u32);
    }

    fn sift_down(&mut self, mut pos: usize, moved: &mut impl FnMut(u32, u32)) {
        let item = self.items[pos];
        let item_order = item.order_ms();
        let len = self.items.len();
        loop {
            let first = pos * ARITY + 1;
            if first >= len {
                break;
            }
            let mut best = first;
            for child in first + 1..(first + ARITY).min(len) {
                if self.order(child) < self.order(best) {
                    best = child;
                }
            }
            if self.order(best) >= item_order {
                break;
            }
            self.items[pos] = self.items[best];
            moved(self.items[pos].entry(), pos as u32);
            pos = best;
        }
        self.items[pos] = item;
        moved(item.entry(), pos as u32);
    }

    /// Checks the heap property and that `order_ms <= at_ms` (tests).
    #[cfg(test)]
    pub fn check(&self) {
        for pos in 0..self.items.len() {
            let (order, at) = (self.order(pos), self.items[pos].at_ms());
            assert!(order <= at);
            if self.ordered && pos > 0 {
                assert!(
                    self.order((pos - 1) / ARITY) <= order,
                    "heap order at {pos}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::collections::HashMap;

    /// Drives `Expires` against a model, with back-pointers in a map, for
    /// the keyspace's lazily raised records and hash fields' eager ones.
    #[test]
    fn heap_stays_valid_under_random_operations() {
        heap_stays_valid::<Volatile>();
        heap_stays_valid::<crate::value::field_ttl::FieldDeadline>();
    }

    fn heap_stays_valid<R: Record>() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut e: Expires<R> = Expires::default();
        let mut pos_of: HashMap<u32, u32> = HashMap::new();
        e.set_ordered(true, &mut |_, _| {});
        for step in 0..20_000u32 {
            let mut moved = |entry: u32, pos: u32| {
                pos_of.insert(entry, pos);
            };
            match rng.gen_range(0..4) {
                0 | 1 => e.push(step, rng.gen_range(0..1_000_000), &mut moved),
                2 if !e.is_empty() => {
                    let pos = rng.gen_range(0..e.len()) as u32;
                    // Now and then a raise too far to keep lazily
                    // (over 2^32 ms): the record moves at once.
                    let at = if rng.gen_range(0..10) == 0 {
                        rng.gen_range(5_000_000_000..10_000_000_000)
                    } else {
                        rng.gen_range(0..1_000_000)
                    };
                    e.update(pos, at, &mut moved);
                }
                _ if !e.is_empty() => {
                    let pos = rng.gen_range(0..e.len()) as u32;
                    let gone = e.get(pos).entry();
                    e.remove(pos, &mut moved);
                    pos_of.remove(&gone);
                }
                _ => {}
            }
            if step % 1000 == 0 {
                e.check();
                for (&entry, &pos) in &pos_of {
                    assert_eq!(e.get(pos).entry(), entry);
                }
            }
        }
        // Draining from the top yields real deadlines in order.
        let mut last = i64::MIN;
        while let Some(top) = e.top() {
            if top.order_ms() < top.at_ms() {
                e.settle_top(&mut |_, _| {});
                continue;
            }
            assert!(top.at_ms() >= last);
            last = top.at_ms();
            e.remove(0, &mut |_, _| {});
        }
    }

    #[test]
    fn a_raise_past_the_lag_a_record_holds_moves_it_at_once() {
        let mut e: Expires = Expires::default();
        e.set_ordered(true, &mut |_, _| {});
        for i in 0..10u32 {
            e.push(i, 1_000 + i64::from(i), &mut |_, _| {});
        }
        // Within 2^32 ms: kept in place, ordered by its old deadline.
        e.update(0, 1_000 + (1 << 31), &mut |_, _| {});
        assert_eq!({ e.top().unwrap().entry }, 0);
        assert_eq!(e.earliest_ms(), Some(1_000));
        // Beyond: moved down now, the next deadline on top.
        e.update(0, 1_000 + (1 << 33), &mut |_, _| {});
        assert_eq!({ e.top().unwrap().entry }, 1);
        assert_eq!(e.earliest_ms(), Some(1_001));
        e.check();
    }

    #[test]
    fn switching_to_ordered_builds_the_heap() {
        let mut e: Expires = Expires::default();
        for i in 0..1000u32 {
            e.push(i, i64::from((i * 7919) % 1000), &mut |_, _| {});
        }
        e.set_ordered(true, &mut |_, _| {});
        e.check();
        assert_eq!({ e.top().unwrap().at_ms }, 0);
    }
}
