//! A point-in-time save of one database without a fork: the keyspace's
//! half of `persistence::save`'s background save.
//!
//! The dict keeps its entries densely in positions `0..len`. When a save
//! starts, every entry is below the boundary `unsaved` (= len); the saver
//! writes the entry at `unsaved - 1` and lowers the boundary, a slice at a
//! time. Everything at or above the boundary has been written (or did not
//! exist when the save started), and stays there:
//! - a new key is appended at `len`, above the boundary: not in this save;
//! - before anything changes or removes an entry below the boundary, it is
//!   written as it is and swapped to `unsaved - 1`, and the boundary
//!   lowered (`preserve`): the save keeps the value of the moment it began;
//! - a removal swaps the last entry into the hole; since the removed entry
//!   was preserved first, both are above the boundary.
//!
//! So each key present at the start is written exactly once, with its
//! value at the start, whatever the loop does meanwhile. What a save holds
//! beyond the dataset is the output not yet taken (`out`) — written keys
//! the saver has not reached in its database order — not a copy of
//! memory pages. The cost of a change during a save is writing one value.
//!
//! Keys whose deadline had passed when the save started are not written.
//!
//! **Big values** (`crate::persistence::rdb::is_big`: thousands of elements, a megabyte of
//! string) are written by the saver in pieces, a few thousand elements
//! per step, so that no step holds the loop for the whole value. The
//! entry is taken above the boundary when its first piece is written and
//! stays unchanged until its last: a change to it first writes the rest
//! (`preserve`), and if a removal moves it, its position follows. Entries
//! preserved meanwhile wait in `held`, after the big value in the output.

use std::sync::Arc;

use crate::value::ValueRef;

use super::{Db, Entry, NO_EXPIRE};
use crate::deadlines::Expires;
use crate::dict::Dict;

/// How a save writes each key: a file format's encoder (RDB entries,
/// `crate::persistence::rdb::RdbEntries`; or the commands that build the key, the AOF
/// rewrite's `crate::persistence::aof_commands::CommandEntries`). The keyspace knows no file format.
pub trait EntryFormat: Send + Sync {
    /// Whether the value is written in pieces, a step's budget at a time.
    fn is_big(&self, value: ValueRef<'_>) -> bool;
    /// A whole entry: the key, its value and its deadline (by default a
    /// big value written in a single piece).
    fn write_entry(&self, out: &mut Vec<u8>, key: &[u8], value: ValueRef<'_>, at_ms: Option<i64>) {
        self.write_big_head(out, key, value, at_ms);
        self.write_big_piece(out, key, value, 0, usize::MAX, at_ms);
    }
    /// What precedes a big value's pieces.
    fn write_big_head(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: ValueRef<'_>,
        at_ms: Option<i64>,
    );
    /// `units` elements (or KB of a string) from `at`; where the next piece
    /// starts, `None` once the value is complete.
    fn write_big_piece(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: ValueRef<'_>,
        at: usize,
        units: usize,
        at_ms: Option<i64>,
    ) -> Option<usize>;
    /// After a key's entry, complete: its soft deadline (issue 42).
    fn write_soft_deadline(&self, out: &mut Vec<u8>, key: &[u8], soft_ms: i64);
}

/// A save in progress over one database.
pub struct Snapshot {
    /// Entries at dict positions below this have not been written.
    unsaved: u32,
    /// Keys with a deadline at or before this (the save's start, unix ms)
    /// are left out.
    cutoff_ms: i64,
    format: Arc<dyn EntryFormat>,
    /// Written entries the saver has not taken yet.
    out: Vec<u8>,
    /// A big value being written in pieces.
    partial: Option<Partial>,
    /// Entries preserved while a big value is being written: they follow
    /// it in the output.
    held: Vec<u8>,
    /// The database number the save began in (SWAPDB moves a save along
    /// with its data).
    origin: usize,
    /// The table (and deadlines) FLUSHDB took from the database while the
    /// save had entries left: nothing can change it any more, so the save
    /// goes on from it at its own pace, and it is freed when the save ends.
    detached: Option<Box<Retired>>,
}

/// A table a flush took from a database during its save.
pub type Retired = (Dict<Entry>, Expires);

/// A big value the saver is writing in pieces.
struct Partial {
    /// The entry's dict position.
    idx: u32,
    /// Where the next piece starts (`crate::persistence::rdb::write_big_piece`).
    next: usize,
    at_ms: Option<i64>,
    soft_ms: Option<i64>,
}

/// Elements (or KB of a string) of a big value written per key of a
/// step's budget.
const PIECE_UNITS_PER_KEY: usize = 32;

impl Db {
    /// Starts a save of this database as it is now (see the module doc).
    /// A save already under way is replaced.
    pub fn begin_snapshot(&mut self, cutoff_ms: i64, format: Arc<dyn EntryFormat>) {
        self.snapshot = Some(Box::new(Snapshot {
            unsaved: self.dict.len() as u32,
            cutoff_ms,
            format,
            out: Vec::new(),
            partial: None,
            held: Vec::new(),
            origin: self.index,
            detached: None,
        }));
    }

    /// Writes up to `max_keys` of the entries not written yet; returns how
    /// many remain (0: the save of this database is complete).
    pub fn snapshot_step(&mut self, max_keys: usize) -> usize {
        for _ in 0..max_keys {
            if self.continue_partial(PIECE_UNITS_PER_KEY) {
                continue;
            }
            let Some(s) = self.snapshot.as_deref() else {
                break;
            };
            if s.unsaved == 0 {
                break;
            }
            self.write_unsaved(s.unsaved - 1, true);
        }
        self.snapshot_remaining()
    }

    /// Entries this save has still to write (a big value being written
    /// counts until its last piece).
    pub fn snapshot_remaining(&self) -> usize {
        self.snapshot
            .as_deref()
            .map_or(0, |s| s.unsaved as usize + usize::from(s.partial.is_some()))
    }

    /// Writes the next piece of the big value being written, if there is
    /// one (`units` elements or KB of it); false if there is none.
    fn continue_partial(&mut self, units: usize) -> bool {
        let Some(s) = self.snapshot.as_deref_mut() else {
            return false;
        };
        let Some(p) = s.partial.as_mut() else {
            return false;
        };
        let dict = s.detached.as_deref().map_or(&self.dict, |d| &d.0);
        let slot = &dict.entry(p.idx).slot;
        let (key, value) = (slot.key(), slot.value());
        let next = s
            .format
            .write_big_piece(&mut s.out, key, value, p.next, units, p.at_ms);
        match next {
            Some(next) => p.next = next,
            None => {
                if let Some(soft_ms) = p.soft_ms {
                    s.format.write_soft_deadline(&mut s.out, key, soft_ms);
                }
                s.partial = None;
                s.out.append(&mut s.held);
            }
        }
        true
    }

    /// After a removal moved the entry at `from` to `to`: a big value
    /// being written follows it.
    pub(super) fn entry_moved(&mut self, from: u32, to: u32) {
        let Some(s) = self.snapshot.as_deref_mut() else {
            return;
        };
        // (A detached table does not move.)
        if let (Some(p), None) = (s.partial.as_mut(), &s.detached) {
            if p.idx == from {
                p.idx = to;
            }
        }
    }

    /// Appends the bytes written so far to `to`.
    pub fn take_snapshot_output(&mut self, to: &mut Vec<u8>) {
        if let Some(s) = self.snapshot.as_deref_mut() {
            if to.is_empty() {
                std::mem::swap(to, &mut s.out);
            } else {
                to.append(&mut s.out);
            }
        }
    }

    /// Ends the save (done or abandoned), dropping what it held; a table
    /// it took from a flush goes to `retired`, to be freed off the loop.
    pub fn end_snapshot(&mut self) {
        if let Some(detached) = self.snapshot.take().and_then(|s| s.detached) {
            self.retired.push(*detached);
        }
    }

    /// The database number the save in progress began in.
    pub fn snapshot_origin(&self) -> Option<usize> {
        self.snapshot.as_deref().map(|s| s.origin)
    }

    /// FLUSHDB's part: if the save in progress still has entries of this
    /// database to write, it takes the whole table and its deadlines (the
    /// database is left empty) and goes on from them; returns whether it
    /// did.
    pub(super) fn detach_into_snapshot(&mut self) -> bool {
        let Some(s) = self.snapshot.as_deref_mut() else {
            return false;
        };
        if s.detached.is_some() || (s.unsaved == 0 && s.partial.is_none()) {
            return false;
        }
        let dict = std::mem::take(&mut self.dict);
        let expires = std::mem::take(&mut self.expires);
        s.detached = Some(Box::new((dict, expires)));
        true
    }

    /// Tables flushed during saves, now free to go (the loop hands them to
    /// the lazyfree thread).
    pub fn take_retired(&mut self) -> Vec<Retired> {
        std::mem::take(&mut self.retired)
    }

    /// Before the entry at `idx` changes or goes: if the save in progress
    /// has not written it, writes it as it is now. Returns where the entry
    /// is afterwards (it moves above the boundary); every mutation path
    /// calls this first and uses the returned position.
    pub(super) fn preserve(&mut self, idx: u32) -> u32 {
        let Some(s) = self.snapshot.as_deref() else {
            return idx;
        };
        if s.detached.is_some() {
            // The save reads a table the database no longer has.
            return idx;
        }
        if s.partial.as_ref().is_some_and(|p| p.idx == idx) {
            // The big value being written is about to change: the rest of
            // it first.
            while self.continue_partial(usize::MAX) {}
            return idx;
        }
        if idx < s.unsaved {
            return self.write_unsaved(idx, false);
        }
        idx
    }

    /// Writes the unsaved entry at `idx` (the saver, `by_saver`, writes a
    /// big value's first piece only), moves it to the top of the unsaved
    /// range and lowers the boundary below it; returns its new position.
    fn write_unsaved(&mut self, idx: u32, by_saver: bool) -> u32 {
        let live_soft_ms = self.soft_deadline(idx);
        let Some(snapshot) = self.snapshot.as_deref_mut() else {
            return idx;
        };
        let Snapshot {
            unsaved,
            cutoff_ms,
            format,
            out,
            partial,
            held,
            detached,
            ..
        } = snapshot;
        // (A flushed table kept for the save has no soft deadlines left.)
        let (dict, expires, soft_ms) = match detached.as_deref() {
            Some((dict, expires)) => (dict, expires, None),
            None => (&self.dict, &self.expires, live_soft_ms),
        };
        let entry = dict.entry(idx);
        let expire_slot = dict.word(idx);
        let at_ms = (expire_slot != NO_EXPIRE).then(|| expires.get(expire_slot).at_ms);
        let mut big = false;
        if at_ms.is_none_or(|at| at > *cutoff_ms) {
            let (key, value) = (entry.slot.key(), entry.slot.value());
            big = by_saver && partial.is_none() && format.is_big(value);
            // While a big value is being written, others wait behind it.
            let out = if partial.is_some() { held } else { out };
            if big {
                format.write_big_head(out, key, value, at_ms);
            } else {
                format.write_entry(out, key, value, at_ms);
                if let Some(soft_ms) = soft_ms {
                    format.write_soft_deadline(out, key, soft_ms);
                }
            }
        }
        *unsaved -= 1;
        let top = *unsaved;
        if big {
            *partial = Some(Partial {
                idx: top,
                next: 0,
                at_ms,
                soft_ms,
            });
        }
        // Only the saver reaches a detached table, always at the top.
        if idx != top && detached.is_none() {
            if let Some(index) = &mut self.slot_index {
                index.swapped(idx, self.dict.key(idx), top, self.dict.key(top));
            }
            self.dict.swap(idx, top);
            self.element_deadlines.entries_swapped(idx, top);
            self.soft.entries_swapped(idx, top);
            for moved in [idx, top] {
                let slot = self.dict.word(moved);
                if slot != NO_EXPIRE {
                    self.expires.set_entry(slot, moved);
                }
            }
        }
        top
    }
}

#[cfg(test)]
mod tests {
    use super::super::Ttl;
    use super::*;
    use crate::value::Value;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    use crate::persistence::rdb::SaveOptions;

    fn rdb_entries() -> Arc<dyn EntryFormat> {
        formats()[0].1.clone()
    }

    /// The formats a test saves in: RDB entries (true) or commands.
    fn formats() -> [(bool, Arc<dyn EntryFormat>); 2] {
        let options = SaveOptions {
            compress: false,
            checksum: false,
        };
        [
            (true, Arc::new(crate::persistence::rdb::RdbEntries(options))),
            (
                false,
                Arc::new(crate::persistence::aof_commands::CommandEntries),
            ),
        ]
    }

    fn string(db: &Db, key: &[u8]) -> Option<(Vec<u8>, Option<i64>)> {
        match db.peek(key)? {
            (crate::value::ValueRef::Str(s), at) => Some((s.to_vec(), at)),
            _ => None,
        }
    }

    /// The keys of `db` as a save cut at `cutoff_ms` must hold them.
    fn model(db: &Db, cutoff_ms: i64) -> BTreeMap<Vec<u8>, (Vec<u8>, Option<i64>)> {
        let mut keys = BTreeMap::new();
        db.for_each_entry(|key, _, at| {
            if at.is_none_or(|at| at > cutoff_ms) {
                keys.insert(key.to_vec(), string(db, key).unwrap());
            }
        });
        keys
    }

    /// What a save wrote: its keys, each once.
    fn written(out: &[u8]) -> BTreeMap<Vec<u8>, (Vec<u8>, Option<i64>)> {
        let mut file = Vec::new();
        crate::persistence::rdb::write_header(&mut file, 0, 0, false);
        crate::persistence::rdb::write_db_start(&mut file, 0, 0, 0);
        file.extend_from_slice(out);
        file.push(crate::persistence::rdb::OPCODE_EOF);
        file.extend_from_slice(&[0; 8]);
        let limits = crate::persistence::rdb_load::Limits {
            hash: crate::value::PackLimits::HASH,
            set: crate::value::SetLimits::DEFAULT,
            list: crate::value::ListLimits::DEFAULT,
            zset: crate::value::ZLimits::DEFAULT,
        };
        let loaded = crate::persistence::rdb_load::load(&file, limits).unwrap();
        let mut keys = BTreeMap::new();
        for (key, value, at) in loaded.dbs.into_iter().flat_map(|(_, keys)| keys) {
            let Value::Str(s) = value else {
                panic!("only strings are stored here")
            };
            assert!(keys.insert(key, (s, at)).is_none(), "a key written twice");
        }
        keys
    }

    #[test]
    fn a_save_holds_the_data_of_its_start_whatever_changes_meanwhile() {
        for seed in 0..20 {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            let mut db = Db::new(0);
            let key = |n: u32| format!("key:{n}").into_bytes();
            for n in 0..500 {
                // Some keys are past their deadline at the cut (100), some
                // pass it while the save runs (the loop's clock is 200).
                let ttl = match n % 5 {
                    0 => Ttl::At(50),
                    1 => Ttl::At(150),
                    2 => Ttl::At(10_000),
                    _ => Ttl::Clear,
                };
                db.set(&key(n), Value::Str(n.to_string().into_bytes()), ttl, 0);
            }
            let expected = model(&db, 100);
            db.begin_snapshot(100, rdb_entries());
            let mut out = Vec::new();
            let now = 200;
            while db.snapshot_remaining() > 0 {
                let k = key(rng.gen_range(0..700));
                match rng.gen_range(0..8) {
                    0 => {
                        db.snapshot_step(rng.gen_range(0..10));
                    }
                    1 => db.set_str(&k, b"new", Ttl::Keep, Default::default(), now),
                    2 => {
                        db.delete(&k, now, rng.gen_bool(0.5));
                    }
                    3 => {
                        db.set_expire(&k, 300, now);
                    }
                    4 => {
                        db.persist(&k, now);
                    }
                    5 => {
                        db.sample_volatile(&mut rng, now);
                    }
                    6 => {
                        db.update_str(
                            &k,
                            now,
                            |_| Default::default(),
                            |s, _| {
                                s.push(b'+');
                                Ok::<(), ()>(())
                            },
                        );
                    }
                    _ => db.take_snapshot_output(&mut out),
                }
            }
            db.take_snapshot_output(&mut out);
            assert_eq!(written(&out), expected, "seed {seed}");
            super::super::tests::check_invariants(&db);
        }
    }

    #[test]
    fn a_flush_hands_the_table_to_the_save() {
        let mut db = Db::new(0);
        for n in 0..100u32 {
            db.set(
                n.to_string().as_bytes(),
                Value::Str(b"v".to_vec()),
                Ttl::Clear,
                0,
            );
        }
        let expected = model(&db, 0);
        db.begin_snapshot(0, rdb_entries());
        db.snapshot_step(10);
        assert!(db.flush().is_empty(), "the save keeps the table");
        assert_eq!(db.len(), 0);
        assert_eq!(db.snapshot_remaining(), 90);
        // The emptied database goes on without touching the save.
        for n in 0..50u32 {
            db.set(
                n.to_string().as_bytes(),
                Value::Str(b"new".to_vec()),
                Ttl::Clear,
                0,
            );
        }
        db.delete(b"3", 0, false);
        assert!(db.flush().len() == 49, "a second flush is an ordinary one");
        let mut out = Vec::new();
        while db.snapshot_step(7) > 0 {
            db.set(b"x", Value::Str(b"y".to_vec()), Ttl::Clear, 0);
        }
        db.take_snapshot_output(&mut out);
        assert_eq!(written(&out), expected);
        db.end_snapshot();
        let retired = db.take_retired();
        assert_eq!(retired.len(), 1);
        assert_eq!(retired[0].0.len(), 100);
    }

    /// Big values written in pieces while everything changes around them
    /// (other keys deleted, which can move the big entry; the big keys
    /// themselves replaced or deleted mid-value): the output, in both
    /// formats, holds the data of the start.
    #[test]
    fn big_values_written_in_pieces_hold_the_data_of_the_start() {
        use crate::value::{Hash, List, Set, ZSet};
        let big = |kind: u32| -> Value {
            let n = crate::persistence::rdb::BIG_VALUE_ELEMENTS + 1000;
            let limits = crate::value::SetLimits::DEFAULT;
            match kind {
                0 => {
                    let mut l = List::default();
                    for i in 0..n {
                        l.push(
                            crate::value::list::End::Right,
                            format!("e{i}").as_bytes(),
                            crate::value::ListLimits::DEFAULT,
                        );
                    }
                    Value::List(l)
                }
                1 => {
                    let mut s = Set::default();
                    for i in 0..n {
                        s.add(format!("m{i}").as_bytes(), limits);
                    }
                    Value::Set(s)
                }
                2 => {
                    let mut h = Hash::default();
                    for i in 0..n {
                        h.set(
                            format!("f{i}").as_bytes(),
                            format!("v{i}").as_bytes(),
                            crate::value::PackLimits::HASH,
                        );
                    }
                    Value::Hash(h)
                }
                3 => {
                    let mut z = ZSet::default();
                    for i in 0..n {
                        z.insert(
                            format!("z{i}").as_bytes(),
                            i as f64 / 3.0,
                            crate::value::ZLimits::DEFAULT,
                        );
                    }
                    Value::ZSet(z)
                }
                _ => Value::Str(vec![
                    b'x';
                    crate::persistence::rdb::BIG_STRING_BYTES * 2 + 7
                ]),
            }
        };
        for (rdb, format) in formats() {
            for seed in 0..6 {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
                let mut db = Db::new(0);
                let key = |n: u32| format!("key:{n}").into_bytes();
                for n in 0..300 {
                    let value = if n % 50 == 7 {
                        big(n / 50 % 5)
                    } else {
                        Value::Str(n.to_string().into_bytes())
                    };
                    let ttl = if n % 3 == 0 {
                        Ttl::At(10_000)
                    } else {
                        Ttl::Clear
                    };
                    db.set(&key(n), value, ttl, 0);
                }
                let expected =
                    crate::digest::hex(&crate::digest::dataset_digest(std::slice::from_ref(&db)));
                db.begin_snapshot(100, format.clone());
                let mut out = Vec::new();
                while db.snapshot_remaining() > 0 {
                    let k = key(rng.gen_range(0..300));
                    match rng.gen_range(0..60) {
                        // Now and then the whole database goes (FLUSHDB):
                        // the save goes on from the table it took.
                        59 => drop(db.flush()),
                        10..=29 => {
                            db.snapshot_step(rng.gen_range(1..4));
                        }
                        30..=39 => {
                            db.delete(&k, 200, false);
                        }
                        40..=49 => db.set_str(&k, b"new", Ttl::Keep, Default::default(), 200),
                        50..=54 => db.set(&k, big(rng.gen_range(0..5)), Ttl::Clear, 200),
                        _ => db.take_snapshot_output(&mut out),
                    }
                }
                db.take_snapshot_output(&mut out);
                let mut loaded = Db::new(0);
                match rdb {
                    true => {
                        let mut file = Vec::new();
                        crate::persistence::rdb::write_header(&mut file, 0, 0, false);
                        crate::persistence::rdb::write_db_start(&mut file, 0, 300, 100);
                        file.extend_from_slice(&out);
                        file.push(crate::persistence::rdb::OPCODE_EOF);
                        file.extend_from_slice(&[0; 8]);
                        let limits = crate::config::Config::default().load_limits();
                        let parsed = crate::persistence::rdb_load::load(&file, limits).unwrap();
                        for (_, keys) in parsed.dbs {
                            for (k, v, at) in keys {
                                assert!(loaded.load_key(&k, super::super::NewValue::Value(v), at));
                            }
                        }
                    }
                    false => {
                        let mut h = crate::harness::Harness::new();
                        h.now_ms = 0;
                        assert_eq!(h.replay(&out), Vec::<String>::new());
                        loaded = std::mem::take(&mut h.server.dbs[0]);
                    }
                }
                let got = crate::digest::hex(&crate::digest::dataset_digest(std::slice::from_ref(
                    &loaded,
                )));
                assert_eq!(got, expected, "seed {seed} rdb {rdb}");
                super::super::tests::check_invariants(&db);
            }
        }
    }
}
