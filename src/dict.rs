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
//! Resizing is incremental, as in Redis: a new bucket array is allocated and
//! the old one's chains move over a few buckets per operation (and for up to
//! a millisecond per cron tick), so no single command pays for re-linking
//! millions of entries. While it lasts, an entry's chain is in the old array
//! if its old bucket has not been moved yet, else in the new one: a function
//! of the hash alone, so every lookup walks exactly one chain.
//!
//! The entry type carries its own key (`DictEntry`), so a key's bytes are
//! stored once, wherever the entry keeps them (inline for small keys).

use std::hash::BuildHasher;

/// No entry. Links (bucket heads and `next`) are stored bitwise inverted,
/// so that NIL is stored as 0 and a new bucket array is zeroed memory:
/// the allocator takes it from the OS, whose pages arrive zeroed on first
/// touch, instead of the loop filling millions of buckets at a resize
/// (measured: a 9 ms memset at 4M keys).
const NIL: u32 = u32::MAX;
/// NIL as stored in a link: 0.
const NO_LINK: u32 = !NIL;
/// Smallest bucket array, as Redis's `DICT_HT_INITIAL_SIZE`.
const MIN_BUCKETS: usize = 4;

/// Entries the storage grows by when full: it doubles while small; from
/// `STEPPED_GROWTH_FROM` entries on, by a quarter of the power of two at
/// or below its size, so its capacities are 1, 1.25, 1.5, 1.75 times a
/// power of two. Every power of two is still a capacity (a table of 2^n
/// keys wastes nothing), but a table crossing one grows by 25% at most,
/// not 100%: with 48-byte entries a doubling of a 262,144-key table
/// would count 12.6 MB at once against `maxmemory` (and evict as much;
/// at a 4.5 MB limit, a 16,384-key table's doubling took a fifth of it).
/// Big allocations grow by remapping pages, not copying them; small ones
/// are copied, a few KB at a time.
fn storage_growth(len: usize) -> usize {
    const STEPPED_GROWTH_FROM: usize = 1 << 10;
    if len < STEPPED_GROWTH_FROM {
        return len.max(4);
    }
    let power = 1usize << (usize::BITS - 1 - len.leading_zeros());
    power / 4
}
/// Old buckets moved per insert or removal while rehashing.
const REHASH_STEP_BUCKETS: usize = 4;

/// What a dict stores: anything that can show its key.
pub trait DictEntry {
    fn key(&self) -> &[u8];
    /// Whether each node keeps its key's hash (`true`: a resize moves
    /// entries without hashing keys, and a lookup skips most key
    /// compares) or lends that word to the owner (`word`, `set_word`):
    /// the keyspace keeps its deadline position there, as its keys sit in
    /// the node and compare as fast as a hash.
    const KEEPS_HASH: bool = true;
}

/// The default hasher: fast and seeded per process (not SipHash: keys are
/// short and lookups are the hot path; the random seed keeps collision
/// attacks impractical).
pub type DefaultHasher = foldhash::fast::RandomState;

#[derive(Clone)]
struct Node<E> {
    /// With `E::KEEPS_HASH`, the low 32 bits of the key's hash: bucket
    /// index (tables stay below 2^32 buckets), rehash without rehashing
    /// keys, and most key compares skipped. Otherwise the owner's.
    word: u32,
    /// Next entry in the same bucket chain, or `NIL` (stored inverted:
    /// read it through `next()`).
    next: u32,
    entry: E,
}

impl<E> Node<E> {
    fn next(&self) -> u32 {
        !self.next
    }
}

/// An entry moved by `remove_at`: it now lives at `to` (it was at `from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    pub from: u32,
    pub to: u32,
}

#[derive(Clone)]
pub struct Dict<E, S = DefaultHasher> {
    /// Dense entry storage: indices `0..len` are all live.
    nodes: Vec<Node<E>>,
    /// Head entry index of each chain, or `NIL` (stored inverted); length
    /// is a power of two.
    buckets: Vec<u32>,
    /// While rehashing: the previous bucket array (empty otherwise).
    old: Vec<u32>,
    /// While rehashing: old buckets below this index have been moved.
    rehash_idx: usize,
    hasher: S,
}

/// Which bucket array a chain is in.
#[derive(Clone, Copy)]
enum Table {
    Old,
    New,
}

impl<E: DictEntry> Default for Dict<E> {
    fn default() -> Self {
        Self::with_hasher(Default::default())
    }
}

impl<E: DictEntry, S: BuildHasher> Dict<E, S> {
    pub fn with_hasher(hasher: S) -> Self {
        Self {
            nodes: Vec::new(),
            buckets: vec![NO_LINK; MIN_BUCKETS],
            old: Vec::new(),
            rehash_idx: 0,
            hasher,
        }
    }

    fn rehashing(&self) -> bool {
        !self.old.is_empty()
    }

    /// The bucket array and index holding the chain for `hash`.
    fn chain_of(&self, hash: u32) -> (Table, usize) {
        if self.rehashing() {
            let old_bucket = (u64::from(hash) & (self.old.len() as u64 - 1)) as usize;
            if old_bucket >= self.rehash_idx {
                return (Table::Old, old_bucket);
            }
        }
        (Table::New, self.bucket_of(hash))
    }

    /// The stored (inverted) head link of a chain.
    fn head_mut(&mut self, (table, bucket): (Table, usize)) -> &mut u32 {
        match table {
            Table::Old => &mut self.old[bucket],
            Table::New => &mut self.buckets[bucket],
        }
    }

    fn head(&self, (table, bucket): (Table, usize)) -> u32 {
        match table {
            Table::Old => !self.old[bucket],
            Table::New => !self.buckets[bucket],
        }
    }

    /// Starts moving to a bucket array of `buckets` (finishing any move
    /// still under way first).
    fn start_rehash(&mut self, buckets: usize) {
        self.finish_rehash();
        self.old = std::mem::replace(&mut self.buckets, vec![NO_LINK; buckets]);
        self.rehash_idx = 0;
    }

    /// Moves up to `steps` non-empty old buckets (and at most ten times as
    /// many empty ones) to the new array. Returns true when done.
    fn rehash_step(&mut self, steps: usize) -> bool {
        let mut empty_visits = steps * 10;
        let mut moved = 0;
        while self.rehashing() && moved < steps {
            let bucket = self.rehash_idx;
            let mut idx = !self.old[bucket];
            if idx == NIL {
                empty_visits -= 1;
                if empty_visits == 0 {
                    break;
                }
            }
            while idx != NIL {
                let (next, target) = (
                    self.nodes[idx as usize].next(),
                    self.bucket_of(self.hash_at(idx)),
                );
                self.nodes[idx as usize].next = self.buckets[target];
                self.buckets[target] = !idx;
                idx = next;
            }
            self.old[bucket] = NO_LINK;
            self.rehash_idx += 1;
            moved += 1;
            if self.rehash_idx == self.old.len() {
                self.old = Vec::new();
                self.rehash_idx = 0;
            }
        }
        !self.rehashing()
    }

    /// Completes a move under way (before another starts).
    fn finish_rehash(&mut self) {
        while !self.rehash_step(1024) {}
    }

    /// Moves buckets for up to `budget` (the cron's share of the work).
    pub fn rehash_for(&mut self, budget: std::time::Duration) {
        let started = std::time::Instant::now();
        while self.rehashing() && started.elapsed() < budget {
            self.rehash_step(100);
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Makes room for `entries` in all: a bucket array as large as
    /// inserting them one by one would end with (the entry storage still
    /// grows as they come: a size hint from a file is not trusted with
    /// 48 bytes per claimed entry).
    pub fn reserve(&mut self, entries: usize) {
        let buckets = entries.checked_next_power_of_two().unwrap_or(entries);
        if buckets > self.buckets.len() {
            self.start_rehash(buckets);
            if self.old.iter().all(|&head| head == NO_LINK) {
                // Nothing to move: skip the walk over the old array.
                self.old = Vec::new();
                self.rehash_idx = 0;
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn mask(&self) -> u64 {
        self.buckets.len() as u64 - 1
    }

    fn bucket_of(&self, hash: u32) -> usize {
        (u64::from(hash) & self.mask()) as usize
    }

    /// The key's bytes alone (no length prefix, as `Hash for [u8]` would
    /// write: one chain per key is all a hash must give).
    fn hash(&self, key: &[u8]) -> u32 {
        use std::hash::Hasher;
        let mut h = self.hasher.build_hasher();
        h.write(key);
        h.finish() as u32
    }

    /// The hash of the key at `idx`: kept, or computed again.
    fn hash_at(&self, idx: u32) -> u32 {
        let node = &self.nodes[idx as usize];
        if E::KEEPS_HASH {
            node.word
        } else {
            self.hash(node.entry.key())
        }
    }

    /// Index of `key`, if present.
    pub fn find(&self, key: &[u8]) -> Option<u32> {
        let hash = self.hash(key);
        let mut idx = self.head(self.chain_of(hash));
        while idx != NIL {
            let node = &self.nodes[idx as usize];
            if (!E::KEEPS_HASH || node.word == hash)
                && crate::words::same_bytes(node.entry.key(), key)
            {
                return Some(idx);
            }
            idx = node.next();
        }
        None
    }

    /// The owner's word of the entry at `idx` (only for entries that do
    /// not keep their hash).
    pub fn word(&self, idx: u32) -> u32 {
        debug_assert!(!E::KEEPS_HASH);
        self.nodes[idx as usize].word
    }

    pub fn set_word(&mut self, idx: u32, word: u32) {
        debug_assert!(!E::KEEPS_HASH);
        self.nodes[idx as usize].word = word;
    }

    /// Bytes of the table itself (entry storage and bucket arrays, as
    /// allocated), not what its entries point to: MEMORY STATS' and INFO's
    /// overhead.
    pub fn table_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node<E>>()
            + (self.buckets.capacity() + self.old.capacity()) * std::mem::size_of::<u32>()
    }

    /// Adds `entry`, whose key must not be present; returns its index.
    /// The entry storage grows as `storage_growth` says.
    pub fn insert_new(&mut self, entry: E) -> u32 {
        self.insert_with_word(entry, 0)
    }

    /// `insert_new` with the owner's `word` (entries that do not keep
    /// their hash).
    pub fn insert_with_word(&mut self, entry: E, word: u32) -> u32 {
        debug_assert!(self.find(entry.key()).is_none());
        self.rehash_step(REHASH_STEP_BUCKETS);
        if self.nodes.len() >= self.buckets.len() {
            self.start_rehash(self.buckets.len() * 2);
        }
        let hash = self.hash(entry.key());
        let chain = self.chain_of(hash);
        let idx = self.nodes.len() as u32;
        if self.nodes.len() == self.nodes.capacity() {
            self.nodes.reserve_exact(storage_growth(self.nodes.len()));
        }
        self.nodes.push(Node {
            word: if E::KEEPS_HASH { hash } else { word },
            next: !self.head(chain),
            entry,
        });
        *self.head_mut(chain) = !idx;
        idx
    }

    pub fn key(&self, idx: u32) -> &[u8] {
        self.nodes[idx as usize].entry.key()
    }

    pub fn entry(&self, idx: u32) -> &E {
        &self.nodes[idx as usize].entry
    }

    /// The entry at `idx`, to change anything but its key.
    pub fn entry_mut(&mut self, idx: u32) -> &mut E {
        &mut self.nodes[idx as usize].entry
    }

    /// Removes the entry at `idx`, returning it and the entry that was moved
    /// into `idx` to keep storage dense (if any).
    pub fn remove_at(&mut self, idx: u32) -> (E, Option<Moved>) {
        self.rehash_step(REHASH_STEP_BUCKETS);
        self.unlink(idx);
        let last = (self.nodes.len() - 1) as u32;
        let moved = if idx != last {
            // Repoint whatever links to `last` (a bucket head or a chain
            // predecessor) before `swap_remove` moves it to `idx`.
            *self.link_to(last) = !idx;
            Some(Moved {
                from: last,
                to: idx,
            })
        } else {
            None
        };
        let node = self.nodes.swap_remove(idx as usize);
        if self.nodes.len() * 8 < self.buckets.len()
            && self.buckets.len() > MIN_BUCKETS
            && !self.rehashing()
        {
            self.start_rehash((self.nodes.len().next_power_of_two() * 2).max(MIN_BUCKETS));
            // Give back the entry storage too once it is mostly unused.
            if self.nodes.len() * 4 < self.nodes.capacity() {
                self.nodes.shrink_to(self.nodes.len() * 2);
            }
        }
        (node.entry, moved)
    }

    /// Exchanges the positions of the entries at `a` and `b` (a save in
    /// progress keeps the entries it has written above a boundary; see
    /// `Db`'s snapshot). Both are relinked at the heads of their chains:
    /// order within a chain means nothing, to lookups or to SCAN.
    pub fn swap(&mut self, a: u32, b: u32) {
        if a == b {
            return;
        }
        self.unlink(a);
        self.unlink(b);
        self.nodes.swap(a as usize, b as usize);
        for idx in [a, b] {
            let chain = self.chain_of(self.hash_at(idx));
            self.nodes[idx as usize].next = *self.head_mut(chain);
            *self.head_mut(chain) = !idx;
        }
    }

    /// Takes `idx` out of its chain.
    fn unlink(&mut self, idx: u32) {
        let next = self.nodes[idx as usize].next;
        *self.link_to(idx) = next;
    }

    /// The link (bucket head or predecessor's `next`, stored inverted) that
    /// points at `idx`.
    fn link_to(&mut self, idx: u32) -> &mut u32 {
        let chain = self.chain_of(self.hash_at(idx));
        if self.head(chain) == idx {
            return self.head_mut(chain);
        }
        let mut cur = self.head(chain);
        // Every live entry is on its bucket's chain, so the walk ends at it.
        while self.nodes[cur as usize].next() != idx {
            cur = self.nodes[cur as usize].next();
        }
        &mut self.nodes[cur as usize].next
    }

    /// Empties the dict a slice at a time, for the lazy-free thread: entries
    /// are dropped `CLEAR_SLICE_ENTRIES` at a time with `tick()` after each
    /// slice (the caller pauses there), then each storage buffer is offered
    /// to `release(start, bytes)` (which may return its pages to the OS; the
    /// bytes are not read again) before it is freed.
    pub fn clear_paced(&mut self, tick: &mut dyn FnMut(), release: &mut dyn FnMut(*mut u8, usize)) {
        const CLEAR_SLICE_ENTRIES: usize = 1024;
        while !self.nodes.is_empty() {
            let keep = self.nodes.len().saturating_sub(CLEAR_SLICE_ENTRIES);
            self.nodes.truncate(keep);
            tick();
        }
        release(
            self.nodes.as_mut_ptr().cast(),
            self.nodes.capacity() * std::mem::size_of::<Node<E>>(),
        );
        for table in [&mut self.buckets, &mut self.old] {
            release(table.as_mut_ptr().cast(), table.capacity() * 4);
        }
        self.take_all();
    }

    /// Empties the dict, returning the old entries (for freeing elsewhere).
    pub fn take_all(&mut self) -> Vec<E> {
        let nodes = std::mem::take(&mut self.nodes);
        self.buckets = vec![NO_LINK; MIN_BUCKETS];
        self.old = Vec::new();
        self.rehash_idx = 0;
        nodes.into_iter().map(|n| n.entry).collect()
    }

    /// Visits the entries of the buckets named by `cursor` and returns the
    /// next cursor (0 when the iteration is complete).
    ///
    /// Redis's reverse-binary cursor: incrementing the reversed bits means a
    /// bucket visited before a resize maps to buckets also visited afterwards,
    /// so entries present throughout are returned at least once. While a
    /// resize is under way both bucket arrays are walked as Redis's
    /// `dictScan` walks them: the cursor's bucket in the smaller one, then
    /// every bucket of the larger one it expands to; a bucket already moved
    /// is simply empty. SCAN never has to finish a resize first.
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(u32)) -> u64 {
        // Given a stored (inverted) head link.
        let mut visit_chain = |head: u32| {
            let mut idx = !head;
            while idx != NIL {
                visit(idx);
                idx = self.nodes[idx as usize].next();
            }
        };
        if !self.rehashing() {
            let mask = self.mask();
            visit_chain(self.buckets[(cursor & mask) as usize]);
            return next_cursor(cursor, mask);
        }
        let (small, large) = if self.old.len() <= self.buckets.len() {
            (&self.old, &self.buckets)
        } else {
            (&self.buckets, &self.old)
        };
        let (m0, m1) = (small.len() as u64 - 1, large.len() as u64 - 1);
        let mut v = cursor;
        visit_chain(small[(v & m0) as usize]);
        loop {
            visit_chain(large[(v & m1) as usize]);
            // The reversed cursor incremented within the larger mask: the
            // next expansion, until the carry reaches the smaller mask's
            // bits, which makes `v` the smaller array's next cursor.
            v = next_cursor(v, m1);
            if v & (m0 ^ m1) == 0 {
                return v;
            }
        }
    }

    /// Iterates over all entries with their indices.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &E)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (i as u32, &n.entry))
    }
}

/// The cursor after `cursor` for a bucket array of `mask + 1` buckets:
/// its reversed bits incremented.
fn next_cursor(cursor: u64, mask: u64) -> u64 {
    let mut v = cursor | !mask;
    v = v.reverse_bits();
    v = v.wrapping_add(1);
    v.reverse_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::{HashMap, HashSet};

    /// A test entry: the key is the decimal form of the number.
    struct Num(u64, Vec<u8>);

    impl Num {
        fn new(n: u64) -> Self {
            Num(n, n.to_string().into_bytes())
        }
    }

    impl DictEntry for Num {
        fn key(&self) -> &[u8] {
            &self.1
        }
    }

    /// Removes up to `max` keys that are not in `stable`.
    fn remove_unstable(d: &mut Dict<Num>, stable: &HashSet<Vec<u8>>, max: usize) {
        let doomed: Vec<Vec<u8>> = d
            .iter()
            .map(|(_, e)| e.key().to_vec())
            .filter(|k| !stable.contains(k))
            .take(max)
            .collect();
        for k in doomed {
            let idx = d.find(&k).unwrap();
            d.remove_at(idx);
        }
    }

    fn check_consistent<E: TestEntry>(d: &Dict<E>) {
        for (i, e) in d.iter() {
            assert_eq!(d.find(e.key()), Some(i));
            assert_eq!(
                e.number(),
                std::str::from_utf8(e.key())
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            );
        }
    }

    /// A test entry that lends its node's word to the owner (as the
    /// keyspace does): the owner keeps the number there.
    struct Unhashed(Num);

    impl DictEntry for Unhashed {
        fn key(&self) -> &[u8] {
            self.0.key()
        }
        const KEEPS_HASH: bool = false;
    }

    trait TestEntry: DictEntry + Sized {
        fn make(n: u64) -> Self;
        fn number(&self) -> u64;
    }

    impl TestEntry for Num {
        fn make(n: u64) -> Self {
            Num::new(n)
        }
        fn number(&self) -> u64 {
            self.0
        }
    }

    impl TestEntry for Unhashed {
        fn make(n: u64) -> Self {
            Unhashed(Num::new(n))
        }
        fn number(&self) -> u64 {
            self.0 .0
        }
    }

    #[test]
    fn insert_find_remove_against_model() {
        against_model::<Num>();
        against_model::<Unhashed>();
    }

    fn against_model<E: TestEntry>() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let mut d: Dict<E> = Dict::default();
        let mut model = HashMap::new();
        for step in 0..20_000 {
            let n: u64 = rng.gen_range(0..2_000);
            let key = n.to_string();
            match (d.find(key.as_bytes()), rng.gen_bool(0.55)) {
                (None, true) => {
                    d.insert_with_word(E::make(n), n as u32);
                    model.insert(n, ());
                }
                (Some(idx), false) => {
                    let (e, moved) = d.remove_at(idx);
                    assert_eq!(e.key(), key.as_bytes());
                    assert_eq!(e.number(), n);
                    if let Some(m) = moved {
                        assert_eq!(m.to, idx);
                        assert_eq!(m.from as usize, d.len());
                    }
                    model.remove(&n);
                }
                (Some(idx), true) if rng.gen_bool(0.1) && d.len() > 1 => {
                    let other = rng.gen_range(0..d.len()) as u32;
                    d.swap(idx, other);
                }
                _ => {}
            }
            assert_eq!(d.len(), model.len());
            if step % 1000 == 0 {
                check_consistent(&d);
            }
        }
        check_consistent(&d);
        if !E::KEEPS_HASH {
            // The owner's word moved with its entry through every removal
            // and swap.
            for (idx, e) in d.iter() {
                assert_eq!(u64::from(d.word(idx)), e.number());
            }
        }
    }

    #[test]
    fn reserve_sizes_once_and_keeps_entries_findable() {
        let mut d: Dict<Num> = Dict::default();
        for n in 0..10u64 {
            d.insert_new(Num::new(n));
        }
        d.reserve(100_000);
        assert_eq!(d.buckets.len(), 131_072);
        check_consistent(&d);
        for n in 10..100_000u64 {
            d.insert_new(Num::new(n));
        }
        assert_eq!(d.buckets.len(), 131_072, "no doubling after the reserve");
        check_consistent(&d);
    }

    #[test]
    fn swapped_entries_stay_findable_mid_resize() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut d: Dict<Num> = Dict::default();
        for n in 0..5_000u64 {
            d.insert_new(Num::new(n));
            if n % 7 == 0 {
                let (a, b) = (rng.gen_range(0..d.len()), rng.gen_range(0..d.len()));
                let (ka, kb) = (d.key(a as u32).to_vec(), d.key(b as u32).to_vec());
                d.swap(a as u32, b as u32);
                assert_eq!((d.key(a as u32), d.key(b as u32)), (&kb[..], &ka[..]));
            }
        }
        check_consistent(&d);
        assert_eq!(d.len(), 5_000);
    }

    #[test]
    fn resizes_are_incremental() {
        let mut d: Dict<Num> = Dict::default();
        // The last doubling (to 131,072 buckets) starts at 65,536 entries and
        // moves 4 old buckets per insert: at 70,000 it is still under way.
        for n in 0..70_000u64 {
            d.insert_new(Num::new(n));
            if n % 997 == 0 {
                // Mid-resize, every key is still found.
                assert!(d.find(b"0").is_some() && d.find(n.to_string().as_bytes()).is_some());
            }
        }
        assert!(d.rehashing(), "a resize is expected to be under way");
        let (removed, _) = d.remove_at(d.find(b"5").unwrap());
        assert_eq!(removed.0, 5);
        d.rehash_for(std::time::Duration::from_secs(1));
        assert!(!d.rehashing());
        check_consistent(&d);
        assert_eq!(d.len(), 69_999);
    }

    #[test]
    fn scan_returns_every_stable_key_across_resizes() {
        let mut d: Dict<Num> = Dict::default();
        for n in 0..1000u64 {
            d.insert_new(Num::new(n));
        }
        let stable: HashSet<Vec<u8>> = (0..500u64).map(|n| n.to_string().into_bytes()).collect();
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut round = 0u64;
        loop {
            d.finish_rehash();
            for _ in 0..3 {
                cursor = d.scan_step(cursor, |i| {
                    seen.insert(d.key(i).to_vec());
                });
            }
            // Grow and shrink the table mid-iteration, touching only unstable keys.
            round += 1;
            if round.is_multiple_of(2) {
                for n in 0..3000u64 {
                    d.insert_new(Num::new(10_000 + round * 10_000 + n));
                }
            } else {
                remove_unstable(&mut d, &stable, usize::MAX);
            }
            if cursor == 0 {
                break;
            }
        }
        assert!(stable.is_subset(&seen));
    }

    #[test]
    fn scan_during_a_resize_returns_every_stable_key() {
        for seed in 0..8u64 {
            let mut d: Dict<Num> = Dict::default();
            for n in 0..2000u64 {
                d.insert_new(Num::new(n));
            }
            let stable: HashSet<Vec<u8>> =
                (0..1000u64).map(|n| n.to_string().into_bytes()).collect();
            let mut seen = HashSet::new();
            let (mut cursor, mut round, mut scanned_mid_resize) = (0, seed, false);
            loop {
                scanned_mid_resize |= d.rehashing();
                cursor = d.scan_step(cursor, |i| {
                    seen.insert(d.key(i).to_vec());
                });
                // Grow or shrink a little each step, so resizes start and
                // stay under way (each insert or removal moves only a few
                // buckets) while the scan goes on.
                round += 1;
                if round % 7 < 4 {
                    for n in 0..400u64 {
                        d.insert_new(Num::new(1_000_000 * (round + 1) + n));
                    }
                } else {
                    remove_unstable(&mut d, &stable, 900);
                }
                if cursor == 0 {
                    break;
                }
            }
            assert!(
                scanned_mid_resize,
                "seed {seed}: never scanned during a resize"
            );
            assert!(stable.is_subset(&seen), "seed {seed}");
        }
    }

    #[test]
    fn clear_paced_empties_and_offers_every_buffer() {
        let mut d: Dict<Num> = Dict::default();
        for i in 0..10_000 {
            d.insert_new(Num::new(i));
        }
        let (mut ticks, mut released) = (0, 0);
        d.clear_paced(&mut || ticks += 1, &mut |_, bytes| released += bytes);
        assert!(d.is_empty() && ticks >= 10);
        assert!(released >= 10_000 * std::mem::size_of::<Num>());
        d.insert_new(Num::new(7));
        assert_eq!(d.find(Num::new(7).key()), Some(0));
    }
}
