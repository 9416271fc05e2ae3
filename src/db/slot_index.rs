//! Cluster mode's keys by hash slot, so that COUNTKEYSINSLOT,
//! GETKEYSINSLOT and a slot's migration do not scan the keyspace: each
//! slot's entries (their places in the table), and each entry's place in
//! its slot's list. 8 bytes a key (Redis 7.0 spends 16, two pointers in
//! every entry), nothing outside cluster mode.

use crate::cluster::slot::{key_slot, SLOTS};

pub struct SlotIndex {
    /// The table places of each slot's entries, in no order.
    by_slot: Vec<Vec<u32>>,
    /// For the entry at each table place: where it is in its slot's list.
    place_in_slot: Vec<u32>,
}

impl Default for SlotIndex {
    fn default() -> Self {
        SlotIndex {
            by_slot: vec![Vec::new(); SLOTS],
            place_in_slot: Vec::new(),
        }
    }
}

impl SlotIndex {
    /// An entry was added at table place `idx` (always the end).
    pub fn added(&mut self, idx: u32, key: &[u8]) {
        let list = &mut self.by_slot[usize::from(key_slot(key))];
        debug_assert_eq!(idx as usize, self.place_in_slot.len());
        self.place_in_slot.push(list.len() as u32);
        list.push(idx);
    }

    /// The entry at `idx` (with `key`) goes; the table then moves its last
    /// entry (`last`, with `last_key`) into `idx`, unless `idx` was last.
    pub fn removed(&mut self, idx: u32, key: &[u8], last: u32, last_key: &[u8]) {
        let slot = usize::from(key_slot(key));
        let place = self.place_in_slot[idx as usize] as usize;
        let list = &mut self.by_slot[slot];
        list.swap_remove(place);
        if let Some(&filler) = list.get(place) {
            self.place_in_slot[filler as usize] = place as u32;
        }
        if last != idx {
            let last_slot = usize::from(key_slot(last_key));
            let last_place = self.place_in_slot[last as usize];
            self.by_slot[last_slot][last_place as usize] = idx;
        }
        self.place_in_slot.swap_remove(idx as usize);
    }

    /// The entries at `a` and `b` traded places.
    pub fn swapped(&mut self, a: u32, a_key: &[u8], b: u32, b_key: &[u8]) {
        let (pa, pb) = (
            self.place_in_slot[a as usize],
            self.place_in_slot[b as usize],
        );
        self.by_slot[usize::from(key_slot(a_key))][pa as usize] = b;
        self.by_slot[usize::from(key_slot(b_key))][pb as usize] = a;
        self.place_in_slot.swap(a as usize, b as usize);
    }

    pub fn clear(&mut self) {
        for list in &mut self.by_slot {
            *list = Vec::new();
        }
        self.place_in_slot = Vec::new();
    }

    pub fn count(&self, slot: u16) -> usize {
        self.by_slot[usize::from(slot)].len()
    }

    /// The table places of a slot's entries.
    pub fn entries(&self, slot: u16) -> &[u32] {
        &self.by_slot[usize::from(slot)]
    }

    /// Bytes held beyond the struct.
    pub fn heap_bytes(&self) -> usize {
        self.place_in_slot.capacity() * 4
            + self.by_slot.iter().map(|l| l.capacity() * 4).sum::<usize>()
            + self.by_slot.capacity() * std::mem::size_of::<Vec<u32>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mirrors a dense table's moves and checks every slot's list.
    #[test]
    fn follows_adds_removes_and_swaps() {
        let mut index = SlotIndex::default();
        let mut table: Vec<Vec<u8>> = Vec::new();
        let check = |index: &SlotIndex, table: &Vec<Vec<u8>>| {
            for (idx, key) in table.iter().enumerate() {
                let slot = key_slot(key);
                assert!(index.entries(slot).contains(&(idx as u32)));
            }
            let total: usize = (0..SLOTS as u16).map(|s| index.count(s)).sum();
            assert_eq!(total, table.len());
        };
        for i in 0..300 {
            let key = format!("{{t{}}}k{i}", i % 7).into_bytes();
            index.added(table.len() as u32, &key);
            table.push(key);
        }
        check(&index, &table);
        for remove in [0usize, 5, 299 - 2, 17, 100] {
            let last = table.len() - 1;
            let key = table[remove].clone();
            let last_key = table[last].clone();
            index.removed(remove as u32, &key, last as u32, &last_key);
            table.swap_remove(remove);
            check(&index, &table);
        }
        let (a, b) = (3usize, 200usize);
        let (ka, kb) = (table[a].clone(), table[b].clone());
        index.swapped(a as u32, &ka, b as u32, &kb);
        table.swap(a, b);
        check(&index, &table);
        index.clear();
        assert_eq!(index.count(key_slot(b"{t1}k1")), 0);
    }
}
