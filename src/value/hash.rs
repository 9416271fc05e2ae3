//! `Hash`: a hash's two representations behind one interface. Small
//! hashes are packed (`value::packed`, Redis's `listpack`: fields and
//! values alternating, in insertion order); a hash that passes the limits
//! (`hash-max-listpack-entries`, `hash-max-listpack-value`) becomes a
//! `Dict` of pairs (`hashtable`) once, and stays one, as in Redis.
//!
//! Commands see elements as `Item`s (a packed element may be stored as an
//! integer or front coded; a table's are plain bytes).
//!
//! Fields may have deadlines (Redis 7.4's hash-field expiry). A packed
//! hash with any is flagged (`listpackex`) and keeps its fields in Redis
//! 7.4's order: the fields with a deadline first, by deadline, then those
//! without; a field given a deadline moves before those with the same or
//! a later one, one losing it goes last, a new field goes last (checked
//! against redis-server 7.4.1). Its deadlines are the block's preamble
//! (`Deadlines`), apart from the rows, which stay field and value as in a
//! plain hash: reading a field costs what it costs in a plain hash, the
//! earliest deadline is the preamble's first, and a write that does not
//! move a field with a deadline copies the preamble as it is. A table
//! keeps them in a `FieldTtls` beside it. A hash that never had a field
//! deadline costs nothing for them.

use super::elem::{Elem, Pair};
use super::field_ttl::TtlDict;
use super::packed::{by_index, read_varint, write_varint, Builder, Item, Items, Packed, PackedRef};
use std::collections::HashMap;

use crate::dict::Dict;

/// When a packed aggregate becomes a table: more elements than
/// `entries`, or an element longer than `value` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackLimits {
    pub entries: usize,
    pub value: usize,
}

impl PackLimits {
    /// Redis's defaults for hashes (`hash-max-listpack-*`).
    pub const HASH: PackLimits = PackLimits {
        entries: 512,
        value: 64,
    };
}

#[derive(Clone)]
pub enum Hash {
    /// Field and value pairs; flagged: deadlines in the preamble.
    Packed(Packed),
    Table(Box<HashTable>),
}

/// A big hash: its pairs, and its fields' deadlines once any has one.
/// Reads see the pairs through `Deref`; changes go through `Hash`, which
/// keeps the two in step.
pub type HashTable = TtlDict<Pair>;

impl TtlDict<Pair> {
    /// Appends a new field with its deadline (building a table).
    fn add(&mut self, field: &[u8], value: &[u8], at_ms: Option<i64>) {
        let i = self.insert(field, value);
        if at_ms.is_some() && self.has_ttls() {
            self.set_ttl(i, at_ms);
        }
    }

    fn insert(&mut self, field: &[u8], value: &[u8]) -> u32 {
        self.insert_new(Pair {
            field: Elem::new(field),
            value: Elem::new(value),
        })
    }

    /// Sets `field` to `value`; true if it is new.
    fn set(&mut self, field: &[u8], value: &[u8], on_set: OnSet) -> bool {
        match self.find(field) {
            Some(i) => {
                self.entry_mut(i).value = Elem::new(value);
                if on_set == OnSet::ClearTtl {
                    self.set_ttl(i, None);
                }
                false
            }
            None => {
                self.insert(field, value);
                true
            }
        }
    }
}

/// What setting a field that has a deadline does to it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OnSet {
    ClearTtl,
    KeepTtl,
}

impl Default for Hash {
    fn default() -> Hash {
        Hash::Packed(Packed::default())
    }
}

/// A hash borrowed for reading: from a `Hash`, or a small packed one
/// from where the keyspace keeps it inline.
#[derive(Clone, Copy)]
pub enum HashRef<'a> {
    Packed(PackedRef<'a>),
    Table(&'a HashTable),
}

impl<'a> HashRef<'a> {
    pub const EMPTY: HashRef<'static> = HashRef::Packed(PackedRef::EMPTY);

    pub fn len(self) -> usize {
        match self {
            HashRef::Packed(p) => p.len() / 2,
            HashRef::Table(d) => d.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING's name for it.
    pub fn encoding(self) -> &'static str {
        match self {
            HashRef::Packed(p) if p.flag() => "listpackex",
            HashRef::Packed(_) => "listpack",
            HashRef::Table(_) => "hashtable",
        }
    }

    /// The value of `field`.
    pub fn get(self, field: &[u8]) -> Option<Item<'a>> {
        match self {
            HashRef::Packed(p) => p.items(2).find_row(field),
            HashRef::Table(d) => d
                .find(field)
                .map(|i| Item::bytes(d.entry(i).value.as_bytes())),
        }
    }

    pub fn contains(self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Field and value pairs, in the representation's order.
    pub fn iter(self) -> HashIter<'a> {
        self.iter_from(0)
    }

    /// The pairs from the `from`th on, in `iter`'s order (O(1) to start
    /// for a table: a big hash is written in pieces that way).
    pub fn iter_from(self, from: usize) -> HashIter<'a> {
        match self {
            HashRef::Packed(p) => {
                let mut items = p.items(2);
                for _ in 0..from.saturating_mul(2) {
                    items.pass();
                }
                HashIter::Packed(items)
            }
            HashRef::Table(d) => HashIter::Table(d, u32::try_from(from).unwrap_or(u32::MAX)),
        }
    }

    /// Pairs by index, for random picks (see `packed::by_index`).
    pub fn by_index(self) -> impl Fn(u32) -> Option<(Item<'a>, Item<'a>)> + 'a {
        let packed = matches!(self, HashRef::Packed(_)).then(|| self.iter());
        by_index(packed, move |i| match self {
            HashRef::Table(d) => (i < d.len() as u32).then(|| {
                let pair = d.entry(i);
                (
                    Item::bytes(pair.field.as_bytes()),
                    Item::bytes(pair.value.as_bytes()),
                )
            }),
            HashRef::Packed(_) => None,
        })
    }

    /// An owned copy.
    pub fn to_hash(self) -> Hash {
        match self {
            HashRef::Packed(p) => Hash::Packed(p.to_packed()),
            HashRef::Table(d) => Hash::Table(Box::new(d.clone())),
        }
    }

    /// (field, value, deadline) from the `from`th field on, in `iter`'s
    /// order.
    pub fn iter_with_ttls_from(
        self,
        from: usize,
    ) -> impl Iterator<Item = (Item<'a>, Item<'a>, Option<i64>)> {
        let mut index = from;
        let mut pairs = self.iter_from(from);
        // A packed hash's deadlines are its first fields', in order.
        let mut deadlines = match self {
            HashRef::Packed(p) => Deadlines::of(p),
            HashRef::Table(_) => Deadlines::of(PackedRef::EMPTY),
        };
        for _ in 0..from {
            deadlines.next();
        }
        std::iter::from_fn(move || {
            let (f, v) = pairs.next()?;
            let at = match self {
                HashRef::Table(d) => d.ttl_of(index as u32),
                HashRef::Packed(_) => deadlines.next(),
            };
            index += 1;
            Some((f, v, at))
        })
    }

    /// Whether any field has (or had) a deadline.
    pub fn has_field_ttls(self) -> bool {
        match self {
            HashRef::Packed(p) => p.flag(),
            HashRef::Table(d) => d.has_ttls(),
        }
    }

    /// The deadline of `field` (unix ms): `None` without the field,
    /// `Some(None)` if it has none.
    pub fn field_ttl(self, field: &[u8]) -> Option<Option<i64>> {
        match self {
            HashRef::Packed(p) if p.flag() => self
                .iter_with_ttls_from(0)
                .find(|(f, _, _)| f.eq_bytes(field))
                .map(|(_, _, at)| at),
            HashRef::Packed(_) => self.contains(field).then_some(None),
            HashRef::Table(d) => d.find(field).map(|i| d.ttl_of(i)),
        }
    }

    /// Fields with a deadline.
    pub fn field_ttl_count(self) -> usize {
        match self {
            HashRef::Packed(p) => Deadlines::of(p).left,
            HashRef::Table(d) => d.ttl_count(),
        }
    }

    /// A copy without the fields whose deadline is at or before `now_ms`,
    /// in the same order.
    pub fn without_fields_due(self, now_ms: i64) -> Hash {
        let live: Vec<Triple> = self
            .iter_with_ttls_from(0)
            .filter(|(_, _, at)| at.is_none_or(|at| at > now_ms))
            .map(|(f, v, at)| (f.to_vec(), v.to_vec(), at))
            .collect();
        Hash::from_triples(live, true, PackLimits::HASH)
    }

    /// The earliest field deadline (`None`: no field has one).
    pub fn earliest_field_ttl(self) -> Option<i64> {
        match self {
            // The first field has the earliest deadline, if any has one:
            // the preamble's first (asked on every lookup).
            HashRef::Packed(p) => Deadlines::of(p).next(),
            HashRef::Table(d) => d.earliest().map(|(_, at)| at),
        }
    }
}

/// An empty block like `p` (flagged or not; the deadlines of a flagged
/// one kept) with room for `bytes`.
fn empty_like(p: PackedRef<'_>, bytes: usize) -> Builder {
    if p.flag() {
        Builder::with_preamble(2, p.preamble(), bytes).flagged(true)
    } else {
        Builder::with_capacity(2, bytes)
    }
}

/// A flagged block's deadlines, its preamble: how many of its first
/// fields have one, then each one's distance from the one before (the
/// first's from zero), LEB128 each. The fields with a deadline come
/// first, by deadline (Redis 7.4's order), so distances are small: a
/// byte for deadlines set together. Reads them in the rows' order.
struct Deadlines<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Deadlines not read yet.
    left: usize,
    last: u64,
}

impl<'a> Deadlines<'a> {
    /// `p`'s (none for a block that is not flagged).
    fn of(p: PackedRef<'a>) -> Deadlines<'a> {
        let (bytes, mut pos) = (if p.flag() { p.preamble() } else { &[] }, 0);
        let left = read_varint(bytes, &mut pos).map_or(0, |n| usize::try_from(n).unwrap_or(0));
        Deadlines {
            bytes,
            pos,
            left,
            last: 0,
        }
    }

    /// The preamble of these deadlines, in order.
    fn encode(deadlines: &[i64]) -> Vec<u8> {
        let mut out = Vec::with_capacity(deadlines.len() + 8);
        write_varint(&mut out, deadlines.len() as u64);
        let mut last = 0u64;
        for &at in deadlines {
            // As unsigned, wrapping: any i64 reads back.
            write_varint(&mut out, (at as u64).wrapping_sub(last));
            last = at as u64;
        }
        out
    }
}

impl Iterator for Deadlines<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if self.left == 0 {
            return None;
        }
        let distance = read_varint(self.bytes, &mut self.pos)?;
        self.left -= 1;
        self.last = self.last.wrapping_add(distance);
        Some(self.last as i64)
    }
}

/// One field of a flagged block, owned, for a rebuild.
pub type Triple = (Vec<u8>, Vec<u8>, Option<i64>);

/// A flagged block of `triples`, in the order given, but for the fields
/// with a deadline first, by deadline, as the block keeps them (a file
/// may hold them otherwise; the order among equals is kept).
fn build_triples(mut triples: Vec<Triple>) -> Packed {
    triples.sort_by_key(|(_, _, at)| (at.is_none(), at.unwrap_or(0)));
    let deadlines: Vec<i64> = triples.iter().map_while(|(_, _, at)| *at).collect();
    let bytes = triples.iter().map(|(f, v, _)| f.len() + v.len() + 2).sum();
    let mut b = Builder::with_preamble(2, &Deadlines::encode(&deadlines), bytes).flagged(true);
    for (f, v, _) in &triples {
        b.push_bytes(f);
        b.push_bytes(v);
    }
    b.finish()
}

fn owned_triples(p: PackedRef<'_>) -> Vec<Triple> {
    HashRef::Packed(p)
        .iter_with_ttls_from(0)
        .map(|(f, v, at)| (f.to_vec(), v.to_vec(), at))
        .collect()
}

impl Hash {
    /// The hash for reading.
    pub fn view(&self) -> HashRef<'_> {
        match self {
            Hash::Packed(p) => HashRef::Packed(p.view()),
            Hash::Table(d) => HashRef::Table(d),
        }
    }

    pub fn len(&self) -> usize {
        self.view().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets each pair in turn, as that many HSETs would; how many fields
    /// were new. Becomes a table first if any field or value is longer
    /// than the limit, and after if it has more fields than the limit.
    pub fn set_pairs(&mut self, pairs: &[(&[u8], &[u8])], limits: PackLimits) -> usize {
        self.set_pairs_with(pairs, OnSet::ClearTtl, limits)
    }

    /// `set_pairs`, a field keeping its deadline or losing it as `on_set`
    /// says (HSET loses it; HINCRBY and HSETEX KEEPTTL keep it).
    pub fn set_pairs_with(
        &mut self,
        pairs: &[(&[u8], &[u8])],
        on_set: OnSet,
        limits: PackLimits,
    ) -> usize {
        if pairs
            .iter()
            .any(|(f, v)| f.len() > limits.value || v.len() > limits.value)
        {
            self.convert();
        }
        let added = match self {
            Hash::Packed(p) => set_packed(p, pairs, on_set),
            Hash::Table(d) => pairs.iter().filter(|(f, v)| d.set(f, v, on_set)).count(),
        };
        if self.len() > limits.entries {
            self.convert();
        }
        added
    }

    /// Sets one field; true if it is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: PackLimits) -> bool {
        self.set_pairs(&[(field, value)], limits) == 1
    }

    /// Removes these fields; how many were there.
    pub fn remove<'f>(&mut self, fields: impl IntoIterator<Item = &'f [u8]>) -> usize {
        match self {
            Hash::Packed(p) if p.flag() => {
                let fields: Vec<&[u8]> = fields.into_iter().collect();
                let mut kept = owned_triples(p.view());
                let before = kept.len();
                kept.retain(|(f, _, _)| !fields.contains(&f.as_slice()));
                let removed = before - kept.len();
                if removed > 0 {
                    *p = build_triples(kept);
                }
                removed
            }
            Hash::Packed(p) => {
                let fields: Vec<&[u8]> = fields.into_iter().collect();
                let mut removed = 0;
                let mut b = Builder::new(2);
                let mut items = p.items(2);
                while let (Some(f), Some(v)) = (items.next(), items.next()) {
                    if fields.iter().any(|x| f.eq_bytes(x)) {
                        removed += 1;
                    } else {
                        b.push(f);
                        b.push(v);
                    }
                }
                if removed > 0 {
                    *p = b.finish();
                }
                removed
            }
            Hash::Table(d) => fields
                .into_iter()
                .filter(|f| d.find(f).map(|i| d.remove_at(i)).is_some())
                .count(),
        }
    }

    /// Makes it a table (a no-op if it is one), deadlines and all.
    fn convert(&mut self) {
        if let Hash::Packed(p) = self {
            let view = p.view();
            let mut t = HashTable::new(view.flag());
            for (f, v, at) in HashRef::Packed(view).iter_with_ttls_from(0) {
                f.with_bytes(|f| v.with_bytes(|v| t.add(f, v, at)));
            }
            *self = Hash::Table(Box::new(t));
        }
    }

    /// Makes a packed hash `listpackex` (flagged, no deadline yet), as
    /// Redis 7.4 does to a listpack hash before any field-deadline command
    /// looks at its fields (`hashTypeSetExInit`): whether one is set or
    /// not, the hash reports `listpackex` after it. A table stays one.
    pub fn allow_field_ttls(&mut self) {
        if let Hash::Packed(p) = self {
            if !p.flag() {
                *p = build_triples(owned_triples(p.view()));
            }
        }
    }

    /// Sets (`Some`) or clears the deadline of `field`; false if there is
    /// no such field. A packed hash becomes a triple block on its first
    /// deadline (which `limits` may make a table right away: a block of
    /// triples is bigger).
    pub fn set_field_ttl(&mut self, field: &[u8], at_ms: Option<i64>, limits: PackLimits) -> bool {
        match self {
            Hash::Packed(p) => {
                let view = p.view();
                if !view.flag() && at_ms.is_none() {
                    return HashRef::Packed(view).contains(field);
                }
                let mut all = if view.flag() {
                    owned_triples(view)
                } else {
                    HashRef::Packed(view)
                        .iter()
                        .map(|(f, v)| (f.to_vec(), v.to_vec(), None))
                        .collect()
                };
                let Some(at) = all.iter().position(|(f, _, _)| f == field) else {
                    return false;
                };
                if all[at].2.is_some() || at_ms.is_some() {
                    // Redis 7.4's listpackex order: the fields with a
                    // deadline first, by deadline (one newly given a
                    // deadline goes before those with the same), then the
                    // others; a field losing its deadline goes last.
                    let mut t = all.remove(at);
                    t.2 = at_ms;
                    let to = match at_ms {
                        Some(new) => all
                            .iter()
                            .position(|(_, _, d)| d.is_none_or(|d| d >= new))
                            .unwrap_or(all.len()),
                        None => all.len(),
                    };
                    all.insert(to, t);
                }
                *p = build_triples(all);
                if self.len() > limits.entries {
                    self.convert();
                }
                true
            }
            Hash::Table(d) => {
                let Some(i) = d.find(field) else {
                    return false;
                };
                d.set_ttl(i, at_ms);
                true
            }
        }
    }

    /// A hash of `triples` (field, value, deadline), each field once, as
    /// a loader builds it: packed if `limits` allow (as triples if any
    /// has a deadline, or `as_triples` says the file kept them so), else
    /// a table.
    pub fn from_triples(triples: Vec<Triple>, as_triples: bool, limits: PackLimits) -> Hash {
        let with_ttl = as_triples || triples.iter().any(|(_, _, at)| at.is_some());
        let fits = triples.len() <= limits.entries
            && triples
                .iter()
                .all(|(f, v, _)| f.len() <= limits.value && v.len() <= limits.value);
        if fits {
            if with_ttl {
                return Hash::Packed(build_triples(triples));
            }
            let mut h = Hash::default();
            let pairs: Vec<(&[u8], &[u8])> = triples
                .iter()
                .map(|(f, v, _)| (f.as_slice(), v.as_slice()))
                .collect();
            h.set_pairs(&pairs, limits);
            return h;
        }
        let mut t = HashTable::new(with_ttl);
        for (f, v, at) in &triples {
            if t.find(f).is_none() {
                t.add(f, v, *at);
            }
        }
        Hash::Table(Box::new(t))
    }

    /// Removes the fields whose deadline is at or before `now_ms`,
    /// earliest first, at most `max` of them; their names.
    pub fn remove_due(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
        let mut gone = Vec::new();
        match self {
            Hash::Packed(p) if p.flag() => {
                let mut kept = owned_triples(p.view());
                // The fields with a deadline come first, by deadline.
                let due = kept
                    .iter()
                    .take_while(|(_, _, at)| at.is_some_and(|at| at <= now_ms))
                    .count()
                    .min(max);
                if due > 0 {
                    gone = kept.drain(..due).map(|(f, _, _)| f).collect();
                    *p = build_triples(kept);
                }
            }
            Hash::Packed(_) => {}
            Hash::Table(d) => gone = d.remove_due(now_ms, max),
        }
        gone
    }
}

/// The rows of `p` before the first whose field `touched` picks, copied
/// as they are into a builder with room for the block and `extra` bytes
/// more, and the items from that row on (from the start, with an empty
/// builder, if the block cannot be continued).
fn untouched_prefix<'a>(
    p: PackedRef<'a>,
    extra: usize,
    touched: impl Fn(Item<'_>) -> bool,
) -> (Builder, Items<'a>) {
    let mut row = p.items(2);
    row.skip_rows_until(touched);
    match Builder::continuing(&row, extra) {
        Some(b) => (b.flagged(p.flag()), row),
        None => (empty_like(p, p.bytes().len() + extra), p.items(2)),
    }
}

/// `set_pairs` on a packed hash: one rebuild for all the pairs, from the
/// first row they touch; values replaced in place, new fields last. A
/// field that loses its deadline (`OnSet::ClearTtl`) goes last, as in
/// Redis 7.4: then the fields are sorted anew (`set_moving`).
fn set_packed(p: &mut Packed, pairs: &[(&[u8], &[u8])], on_set: OnSet) -> usize {
    // Each field once, in order of first appearance, with its last value
    // and whether the hash has it already.
    let mut latest: Vec<(&[u8], &[u8], bool)> = Vec::with_capacity(pairs.len());
    let mut index: HashMap<&[u8], usize, foldhash::fast::RandomState> = HashMap::default();
    let many = pairs.len() > FEW_FIELDS;
    let position = |latest: &[(&[u8], &[u8], bool)], index: &HashMap<_, usize, _>, field: &[u8]| {
        if many {
            index.get(field).copied()
        } else {
            latest.iter().position(|(f, _, _)| *f == field)
        }
    };
    for &(field, value) in pairs {
        match position(&latest, &index, field) {
            Some(i) => latest[i].1 = value,
            None => {
                if many {
                    index.insert(field, latest.len());
                }
                latest.push((field, value, false));
            }
        }
    }
    let new_bytes: usize = pairs.iter().map(|(f, v)| f.len() + v.len() + 2).sum();
    let (mut b, mut items) = untouched_prefix(p.view(), new_bytes, |f| {
        f.with_bytes(|f| position(&latest, &index, f)).is_some()
    });
    // The fields with a deadline are the first rows: none is touched if
    // the first row touched is after them.
    let first_touched = (p.len() - items.remaining()) / 2;
    if on_set == OnSet::ClearTtl && first_touched < Deadlines::of(p.view()).left {
        return set_moving(p, &latest);
    }
    while let (Some(f), Some(v)) = (items.next(), items.next()) {
        b.push(f);
        match f.with_bytes(|f| position(&latest, &index, f)) {
            Some(i) => {
                latest[i].2 = true;
                b.push_bytes(latest[i].1);
            }
            None => b.push(v),
        }
    }
    let mut added = 0;
    for &(field, value, present) in &latest {
        if !present {
            added += 1;
            b.push_bytes(field);
            b.push_bytes(value);
        }
    }
    *p = b.finish();
    added
}

/// `set_packed` where a field loses its deadline: it goes last (with the
/// new fields, in the order given), the others' values are replaced in
/// place.
fn set_moving(p: &mut Packed, latest: &[(&[u8], &[u8], bool)]) -> usize {
    let mut all = owned_triples(p.view());
    let mut added = 0;
    for &(field, value, _) in latest {
        match all.iter().position(|(f, _, _)| f == field) {
            Some(i) if all[i].2.is_some() => {
                let (f, _, _) = all.remove(i);
                all.push((f, value.to_vec(), None));
            }
            Some(i) => all[i].1 = value.to_vec(),
            None => {
                added += 1;
                all.push((field.to_vec(), value.to_vec(), None));
            }
        }
    }
    *p = build_triples(all);
    added
}

/// Up to this many fields in one HSET are matched by comparing; more, by
/// hashing.
const FEW_FIELDS: usize = 8;

/// A hash's pairs (see `HashRef::iter`).
pub enum HashIter<'a> {
    /// The block's rows.
    Packed(Items<'a>),
    /// The table and the next entry index.
    Table(&'a Dict<Pair>, u32),
}

impl<'a> Iterator for HashIter<'a> {
    type Item = (Item<'a>, Item<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            HashIter::Packed(items) => Some((items.next()?, items.next()?)),
            HashIter::Table(d, next) => {
                let p = (*next < d.len() as u32).then(|| d.entry(*next))?;
                *next += 1;
                Some((
                    Item::bytes(p.field.as_bytes()),
                    Item::bytes(p.value.as_bytes()),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: PackLimits = PackLimits {
        entries: 4,
        value: 8,
    };

    /// A flagged block's deadlines read back as written: none, equal,
    /// far apart, at the edges of i64.
    #[test]
    fn deadlines_read_back_as_written() {
        for deadlines in [
            vec![],
            vec![1_700_000_000_000],
            vec![5, 5, 5, 6, 1 << 47],
            vec![i64::MIN, -1, 0, i64::MAX],
        ] {
            let triples: Vec<Triple> = deadlines
                .iter()
                .enumerate()
                .map(|(i, &at)| (format!("f{i}").into_bytes(), b"v".to_vec(), Some(at)))
                .chain(std::iter::once((b"plain".to_vec(), b"v".to_vec(), None)))
                .collect();
            let block = build_triples(triples.clone());
            let view = block.view();
            assert_eq!(Deadlines::of(view).collect::<Vec<_>>(), deadlines);
            assert_eq!(owned_triples(view), triples);
            let h = HashRef::Packed(view);
            assert_eq!(h.field_ttl_count(), deadlines.len());
            assert_eq!(h.earliest_field_ttl(), deadlines.first().copied());
            assert_eq!(h.field_ttl(b"plain"), Some(None));
            assert_eq!(h.get(b"plain").map(|v| v.to_vec()), Some(b"v".to_vec()));
        }
    }

    fn contents(h: &Hash) -> Vec<(Vec<u8>, Vec<u8>)> {
        h.view()
            .iter()
            .map(|(f, v)| (f.to_vec(), v.to_vec()))
            .collect()
    }

    #[test]
    fn packed_hash_sets_replaces_and_removes_in_order() {
        let mut h = Hash::default();
        assert_eq!(
            h.set_pairs(&[(b"a", b"1"), (b"b", b"x"), (b"a", b"2")], SMALL),
            2
        );
        assert_eq!(h.view().encoding(), "listpack");
        assert_eq!(
            contents(&h),
            vec![
                (b"a".to_vec(), b"2".to_vec()),
                (b"b".to_vec(), b"x".to_vec())
            ]
        );
        assert!(!h.set(b"b", b"y", SMALL));
        assert_eq!(h.view().get(b"b").map(|v| v.to_vec()), Some(b"y".to_vec()));
        assert!(h.view().get(b"c").is_none());
        assert_eq!(h.remove([&b"a"[..], b"zz", b"a"]), 1);
        assert_eq!(h.len(), 1);
        assert_eq!(h.remove([&b"b"[..]]), 1);
        assert!(h.is_empty());
    }

    /// Sets keep only the rows before the first field they touch as
    /// they were: the block is byte for byte what encoding its fields
    /// anew gives (front-coded values across the copied rows included),
    /// and holds what a model says, with deadlines (stored from the
    /// first one) and without; the earliest is the first field's.
    #[test]
    fn a_set_copies_the_untouched_rows_exactly() {
        use rand::{Rng, SeedableRng};
        let limits = PackLimits {
            entries: 1000,
            value: 64,
        };
        let mut rng = rand::rngs::SmallRng::seed_from_u64(23);
        for with_ttls in [false, true] {
            let mut h = Hash::default();
            let mut model = std::collections::BTreeMap::new();
            for step in 0..3000 {
                let n = rng.gen_range(1..4);
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
                    .map(|_| {
                        let f = format!("field:{}", rng.gen_range(0..40)).into_bytes();
                        let v = format!("value:{}", rng.gen_range(0..1000)).into_bytes();
                        (f, v)
                    })
                    .collect();
                let borrowed: Vec<(&[u8], &[u8])> =
                    pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
                let on_set = if rng.gen_bool(0.5) {
                    OnSet::KeepTtl
                } else {
                    OnSet::ClearTtl
                };
                h.set_pairs_with(&borrowed, on_set, limits);
                for (f, v) in &pairs {
                    let kept = match on_set {
                        OnSet::KeepTtl => model.get(f).and_then(|(_, at)| *at),
                        OnSet::ClearTtl => None,
                    };
                    model.insert(f.clone(), (v.clone(), kept));
                }
                if with_ttls && step % 5 == 0 {
                    // Deadlines close together and far apart, in no order.
                    let at = 1_700_000_000_000 + rng.gen_range(0..3) * rng.gen_range(0..100_000);
                    let f = &pairs[0].0;
                    h.set_field_ttl(f, Some(at), limits);
                    model.get_mut(f).expect("set").1 = Some(at);
                }
                if step % 7 == 0 {
                    let f = format!("field:{}", rng.gen_range(0..40)).into_bytes();
                    h.remove([&f[..]]);
                    model.remove(&f);
                }
                let Hash::Packed(p) = &h else {
                    panic!("packed")
                };
                let mut b = empty_like(p.view(), 0);
                p.view().items(2).for_each(|i| b.push(i));
                let fresh = b.finish();
                assert_eq!(p.view().bytes(), fresh.view().bytes(), "step {step}");
                let mut got: Vec<Triple> = h
                    .view()
                    .iter_with_ttls_from(0)
                    .map(|(f, v, at)| (f.to_vec(), v.to_vec(), at))
                    .collect();
                got.sort();
                let want: Vec<Triple> = model
                    .iter()
                    .map(|(f, (v, at))| (f.clone(), v.clone(), *at))
                    .collect();
                assert_eq!(got, want, "step {step}");
                let earliest = want.iter().filter_map(|t| t.2).min();
                assert_eq!(h.view().earliest_field_ttl(), earliest, "step {step}");
            }
        }
    }

    /// A file may list a small hash's fields in any order: the block
    /// keeps the ones with a deadline first, by deadline, so the earliest
    /// is the first field's and every deadline reads back.
    #[test]
    fn fields_from_a_file_are_ordered_by_deadline() {
        let t = |f: &str, at: Option<i64>| (f.as_bytes().to_vec(), b"v".to_vec(), at);
        let h = Hash::from_triples(
            vec![
                t("a", None),
                t("b", Some(5_000)),
                t("c", Some(30)),
                t("d", None),
                t("e", Some(30)),
            ],
            true,
            PackLimits::HASH,
        );
        let order: Vec<(Vec<u8>, Option<i64>)> = h
            .view()
            .iter_with_ttls_from(0)
            .map(|(f, _, at)| (f.to_vec(), at))
            .collect();
        let want = [
            ("c", Some(30)),
            ("e", Some(30)),
            ("b", Some(5_000)),
            ("a", None),
            ("d", None),
        ];
        let want: Vec<(Vec<u8>, Option<i64>)> = want
            .iter()
            .map(|(f, at)| (f.as_bytes().to_vec(), *at))
            .collect();
        assert_eq!(order, want);
        assert_eq!(h.view().earliest_field_ttl(), Some(30));
    }

    #[test]
    fn limits_convert_once_and_for_good() {
        // Entries: the fifth field converts.
        let mut h = Hash::default();
        for i in 0..4 {
            h.set(format!("f{i}").as_bytes(), b"v", SMALL);
        }
        assert_eq!(h.view().encoding(), "listpack");
        h.set(b"f4", b"v", SMALL);
        assert_eq!(h.view().encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        h.remove([&b"f4"[..], b"f3", b"f2"]);
        assert_eq!(h.view().encoding(), "hashtable");
        // Length: a value one byte over the limit converts; at it does not.
        let mut h = Hash::default();
        h.set(b"f", &[b'x'; 8], SMALL);
        assert_eq!(h.view().encoding(), "listpack");
        h.set(b"g", &[b'x'; 9], SMALL);
        assert_eq!(h.view().encoding(), "hashtable");
        assert_eq!(h.view().get(b"f").map(|v| v.to_vec()), Some(vec![b'x'; 8]));
        // A long field converts too, before it is stored.
        let mut h = Hash::default();
        h.set(&[b'k'; 9], b"v", SMALL);
        assert_eq!(h.view().encoding(), "hashtable");
    }

    #[test]
    fn binary_and_integer_like_fields_keep_their_bytes() {
        let mut h = Hash::default();
        let fields: [&[u8]; 6] = [
            b"1",
            b"01",
            b"-1",
            b"\x00\xff",
            b"",
            b"18446744073709551616",
        ];
        for f in fields {
            h.set(f, f, PackLimits::HASH);
        }
        assert_eq!(h.len(), fields.len());
        for f in fields {
            assert_eq!(h.view().get(f).map(|v| v.to_vec()), Some(f.to_vec()));
        }
        let packed = contents(&h);
        h.convert();
        assert_eq!(contents(&h), packed);
    }

    fn ttls(h: &Hash) -> Vec<(Vec<u8>, Option<i64>)> {
        h.view()
            .iter()
            .map(|(f, _)| {
                let f = f.to_vec();
                let at = h.view().field_ttl(&f).flatten();
                (f, at)
            })
            .collect()
    }

    #[test]
    fn a_packed_hash_with_field_deadlines_keeps_listpackex_order() {
        let mut h = Hash::default();
        h.set_pairs(
            &[(b"a", b"1"), (b"b", b"2"), (b"c", b"3"), (b"d", b"4")],
            SMALL,
        );
        assert!(!h.view().has_field_ttls());
        assert!(h.set_field_ttl(b"a", Some(300), SMALL));
        assert!(h.set_field_ttl(b"c", Some(100), SMALL));
        assert!(!h.set_field_ttl(b"zz", Some(100), SMALL));
        assert_eq!(h.view().encoding(), "listpackex");
        // Deadlines first, by deadline; then the others as they were.
        assert_eq!(
            ttls(&h),
            vec![
                (b"c".to_vec(), Some(100)),
                (b"a".to_vec(), Some(300)),
                (b"b".to_vec(), None),
                (b"d".to_vec(), None),
            ]
        );
        assert_eq!(h.view().earliest_field_ttl(), Some(100));
        assert_eq!(h.view().field_ttl_count(), 2);
        assert_eq!(h.view().field_ttl(b"nope"), None);
        assert_eq!(h.view().get(b"a").map(|v| v.to_vec()), Some(b"1".to_vec()));
        // Setting a value clears its deadline: the field goes last, as
        // new ones do; a value without one is replaced in place; all in
        // one rebuild.
        assert_eq!(
            h.set_pairs(
                &[(b"d", b"D"), (b"a", b"new"), (b"e", b"5"), (b"d", b"DD")],
                PackLimits::HASH
            ),
            1
        );
        assert_eq!(h.view().field_ttl(b"a"), Some(None));
        assert_eq!(
            ttls(&h),
            vec![
                (b"c".to_vec(), Some(100)),
                (b"b".to_vec(), None),
                (b"d".to_vec(), None),
                (b"a".to_vec(), None),
                (b"e".to_vec(), None),
            ]
        );
        assert_eq!(h.view().get(b"d").map(|v| v.to_vec()), Some(b"DD".to_vec()));
        assert_eq!(h.view().len(), 5);
        // Due fields go earliest first, up to the limit asked for.
        h.set_field_ttl(b"e", Some(200), PackLimits::HASH);
        assert_eq!(h.remove_due(250, 1), vec![b"c".to_vec()]);
        assert_eq!(h.remove_due(250, 10), vec![b"e".to_vec()]);
        assert!(h.remove_due(250, 10).is_empty());
        assert_eq!(h.view().earliest_field_ttl(), None);
        assert_eq!(h.remove([&b"b"[..], b"x"]), 1);
        assert_eq!(h.view().len(), 2);
        assert_eq!(h.view().encoding(), "listpackex", "stays listpackex");
    }

    #[test]
    fn field_deadlines_survive_conversion_and_table_changes() {
        let mut h = Hash::default();
        for i in 0..4 {
            h.set(format!("f{i}").as_bytes(), b"v", SMALL);
        }
        h.set_field_ttl(b"f1", Some(10), SMALL);
        h.set_field_ttl(b"f3", Some(30), SMALL);
        // A fifth field makes it a table; the deadlines come along.
        h.set(b"f4", b"v", SMALL);
        assert_eq!(h.view().encoding(), "hashtable");
        assert_eq!(h.view().field_ttl(b"f1"), Some(Some(10)));
        assert_eq!(h.view().field_ttl(b"f3"), Some(Some(30)));
        assert_eq!(h.view().field_ttl(b"f4"), Some(None));
        assert_eq!(h.view().field_ttl_count(), 2);
        // Removals move entries; deadlines follow their fields.
        h.remove([&b"f0"[..]]);
        assert_eq!(h.view().field_ttl(b"f3"), Some(Some(30)));
        assert_eq!(h.view().field_ttl(b"f4"), Some(None));
        h.set(b"f3", b"again", SMALL);
        assert_eq!(h.view().field_ttl(b"f3"), Some(None));
        h.set_field_ttl(b"f4", Some(5), SMALL);
        h.set_field_ttl(b"f1", None, SMALL);
        assert_eq!(h.view().earliest_field_ttl(), Some(5));
        assert_eq!(h.remove_due(100, 10), vec![b"f4".to_vec()]);
        assert_eq!(h.view().len(), 3);
        assert!(h.view().has_field_ttls());
        assert_eq!(h.view().field_ttl_count(), 0);
        // A table without deadlines has none to keep.
        let mut plain = Hash::default();
        for i in 0..5 {
            plain.set(format!("f{i}").as_bytes(), b"v", SMALL);
        }
        assert!(!plain.view().has_field_ttls());
        assert!(plain.set_field_ttl(b"f0", None, SMALL));
        assert!(!plain.view().has_field_ttls());
    }
}
