//! `Dict`: the hash table under each database's keyspace.
//!
//! Why not `std::collections::HashMap`: the keyspace needs two things a std
//! map cannot give.
//! - **O(1) uniform random choice** (RANDOMKEY now, and through the expires
//!   side, the active expire cycle's sampling). Entries live densely in one
//!   `Vec`, so a random index is a random entry.
//! - **A stateless SCAN cursor** that returns every key present for the whole
//!   iteration, even across resizes. Chains hang off a power-of-two bucket
//!   array and SCAN walks buckets in Redis's reverse-binary order.
//!
//! Removal swaps the last entry into the hole, so an entry's index is stable
//! only until the next removal; `remove_at` reports the move so the owner
//! (the `Db`) can fix anything that refers to entries by index.
//!
//! Rehashing is done in one step (O(n) re-linking of `u32` indices, no key
//! rehashing since each entry keeps its hash); Redis rehashes incrementally.

use std::hash::BuildHasher;

const NIL: u32 = u32::MAX;
/// Smallest bucket array, as Redis's `DICT_HT_INITIAL_SIZE`.
const MIN_BUCKETS: usize = 4;

struct Node<V> {
    key: Box<[u8]>,
    /// Full hash of `key`: saves rehashing on resize and most key compares.
    hash: u64,
    /// Next entry in the same bucket chain, or `NIL`.
    next: u32,
    value: V,
}

/// An entry moved by `remove_at`: it now lives at `to` (it was at `from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    pub from: u32,
    pub to: u32,
}

pub struct Dict<V, S = std::collections::hash_map::RandomState> {
    /// Dense entry storage: indices `0..len` are all live.
    nodes: Vec<Node<V>>,
    /// Head entry index of each chain, or `NIL`; length is a power of two.
    buckets: Vec<u32>,
    hasher: S,
}

impl<V> Default for Dict<V> {
    fn default() -> Self {
        Self::with_hasher(Default::default())
    }
}

impl<V, S: BuildHasher> Dict<V, S> {
    pub fn with_hasher(hasher: S) -> Self {
        Self {
            nodes: Vec::new(),
            buckets: vec![NIL; MIN_BUCKETS],
            hasher,
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn mask(&self) -> u64 {
        self.buckets.len() as u64 - 1
    }

    fn bucket_of(&self, hash: u64) -> usize {
        (hash & self.mask()) as usize
    }

    /// Index of `key`, if present.
    pub fn find(&self, key: &[u8]) -> Option<u32> {
        let hash = self.hasher.hash_one(key);
        let mut idx = self.buckets[self.bucket_of(hash)];
        while idx != NIL {
            let node = &self.nodes[idx as usize];
            if node.hash == hash && *node.key == *key {
                return Some(idx);
            }
            idx = node.next;
        }
        None
    }

    /// Adds `key`, which must not be present; returns its index.
    pub fn insert_new(&mut self, key: &[u8], value: V) -> u32 {
        debug_assert!(self.find(key).is_none());
        if self.nodes.len() >= self.buckets.len() {
            self.resize(self.buckets.len() * 2);
        }
        let hash = self.hasher.hash_one(key);
        let bucket = self.bucket_of(hash);
        let idx = self.nodes.len() as u32;
        self.nodes.push(Node {
            key: key.into(),
            hash,
            next: self.buckets[bucket],
            value,
        });
        self.buckets[bucket] = idx;
        idx
    }

    pub fn key(&self, idx: u32) -> &[u8] {
        &self.nodes[idx as usize].key
    }

    pub fn value(&self, idx: u32) -> &V {
        &self.nodes[idx as usize].value
    }

    pub fn value_mut(&mut self, idx: u32) -> &mut V {
        &mut self.nodes[idx as usize].value
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.nodes.iter_mut().map(|n| &mut n.value)
    }

    /// Removes the entry at `idx`, returning its key and value, and the entry
    /// that was moved into `idx` to keep storage dense (if any).
    pub fn remove_at(&mut self, idx: u32) -> (Box<[u8]>, V, Option<Moved>) {
        self.unlink(idx);
        let last = (self.nodes.len() - 1) as u32;
        let moved = if idx != last {
            // Repoint whatever links to `last` (a bucket head or a chain
            // predecessor) before `swap_remove` moves it to `idx`.
            *self.link_to(last) = idx;
            Some(Moved {
                from: last,
                to: idx,
            })
        } else {
            None
        };
        let node = self.nodes.swap_remove(idx as usize);
        if self.nodes.len() * 8 < self.buckets.len() && self.buckets.len() > MIN_BUCKETS {
            self.resize((self.nodes.len().next_power_of_two() * 2).max(MIN_BUCKETS));
        }
        (node.key, node.value, moved)
    }

    /// Takes `idx` out of its chain.
    fn unlink(&mut self, idx: u32) {
        let next = self.nodes[idx as usize].next;
        *self.link_to(idx) = next;
    }

    /// The link (bucket head or predecessor's `next`) that points at `idx`.
    fn link_to(&mut self, idx: u32) -> &mut u32 {
        let bucket = self.bucket_of(self.nodes[idx as usize].hash);
        if self.buckets[bucket] == idx {
            return &mut self.buckets[bucket];
        }
        let mut cur = self.buckets[bucket];
        // Every live entry is on its bucket's chain, so the walk ends at it.
        while self.nodes[cur as usize].next != idx {
            cur = self.nodes[cur as usize].next;
        }
        &mut self.nodes[cur as usize].next
    }

    fn resize(&mut self, buckets: usize) {
        self.buckets.clear();
        self.buckets.resize(buckets, NIL);
        let mask = buckets as u64 - 1;
        for (i, node) in self.nodes.iter_mut().enumerate() {
            let bucket = (node.hash & mask) as usize;
            node.next = self.buckets[bucket];
            self.buckets[bucket] = i as u32;
        }
    }

    /// Empties the dict, returning the old entries' values (for freeing elsewhere).
    pub fn take_all(&mut self) -> Vec<V> {
        let nodes = std::mem::take(&mut self.nodes);
        self.buckets = vec![NIL; MIN_BUCKETS];
        nodes.into_iter().map(|n| n.value).collect()
    }

    /// Visits the entries of the buckets named by `cursor` and returns the
    /// next cursor (0 when the iteration is complete).
    ///
    /// Redis's reverse-binary cursor: incrementing the reversed bits means a
    /// bucket visited before a resize maps to buckets also visited afterwards,
    /// so entries present throughout are returned at least once.
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(u32)) -> u64 {
        let mask = self.mask();
        let mut idx = self.buckets[(cursor & mask) as usize];
        while idx != NIL {
            visit(idx);
            idx = self.nodes[idx as usize].next;
        }
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// Iterates over all entries as (index, key, value).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8], &V)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (i as u32, &*n.key, &n.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn check_consistent(d: &Dict<u64>) {
        for (i, k, v) in d.iter() {
            assert_eq!(d.find(k), Some(i));
            assert_eq!(*v, std::str::from_utf8(k).unwrap().parse::<u64>().unwrap());
        }
    }

    #[test]
    fn insert_find_remove_against_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let mut d: Dict<u64> = Dict::default();
        let mut model = HashMap::new();
        for step in 0..20_000 {
            let n: u64 = rng.gen_range(0..2_000);
            let key = n.to_string();
            match (d.find(key.as_bytes()), rng.gen_bool(0.55)) {
                (None, true) => {
                    d.insert_new(key.as_bytes(), n);
                    model.insert(n, ());
                }
                (Some(idx), false) => {
                    let (k, v, moved) = d.remove_at(idx);
                    assert_eq!(&*k, key.as_bytes());
                    assert_eq!(v, n);
                    if let Some(m) = moved {
                        assert_eq!(m.to, idx);
                        assert_eq!(m.from as usize, d.len());
                    }
                    model.remove(&n);
                }
                _ => {}
            }
            assert_eq!(d.len(), model.len());
            if step % 1000 == 0 {
                check_consistent(&d);
            }
        }
        check_consistent(&d);
    }

    #[test]
    fn scan_returns_every_stable_key_across_resizes() {
        let mut d: Dict<u64> = Dict::default();
        for n in 0..1000u64 {
            d.insert_new(n.to_string().as_bytes(), n);
        }
        let stable: HashSet<Vec<u8>> = (0..500u64).map(|n| n.to_string().into_bytes()).collect();
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut round = 0u64;
        loop {
            for _ in 0..3 {
                cursor = d.scan_step(cursor, |i| {
                    seen.insert(d.key(i).to_vec());
                });
            }
            // Grow and shrink the table mid-iteration, touching only unstable keys.
            round += 1;
            if round.is_multiple_of(2) {
                for n in 0..3000u64 {
                    let k = (10_000 + round * 10_000 + n).to_string();
                    d.insert_new(k.as_bytes(), 0);
                }
            } else {
                let doomed: Vec<Vec<u8>> = d
                    .iter()
                    .map(|(_, k, _)| k.to_vec())
                    .filter(|k| !stable.contains(k))
                    .collect();
                for k in doomed {
                    let idx = d.find(&k).unwrap();
                    d.remove_at(idx);
                }
            }
            if cursor == 0 {
                break;
            }
        }
        assert!(stable.is_subset(&seen));
    }
}
