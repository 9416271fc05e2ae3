//! `Hash`: a hash's two representations behind one interface. Small
//! hashes are packed (`value::packed`, Redis's `listpack`: fields and
//! values alternating, in insertion order); a hash that passes the limits
//! (`hash-max-listpack-entries`, `hash-max-listpack-value`) becomes a
//! `Dict` of pairs (`hashtable`) once, and stays one, as in Redis.
//!
//! Commands see elements as `Item`s (a packed element may be stored as an
//! integer or front coded; a table's are plain bytes).

use super::packed::{by_index, Builder, Item, Items, Packed, PackedRef};
use super::{Elem, Pair};
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
    Packed(Packed),
    Table(Box<Dict<Pair>>),
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
    Table(&'a Dict<Pair>),
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
            HashRef::Packed(_) => "listpack",
            HashRef::Table(_) => "hashtable",
        }
    }

    /// The value of `field`.
    pub fn get(self, field: &[u8]) -> Option<Item<'a>> {
        match self {
            HashRef::Packed(_) => self.iter().find(|(f, _)| f.eq_bytes(field)).map(|(_, v)| v),
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
                    items.next();
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
        if pairs
            .iter()
            .any(|(f, v)| f.len() > limits.value || v.len() > limits.value)
        {
            self.convert();
        }
        let added = match self {
            Hash::Packed(p) => set_packed(p, pairs),
            Hash::Table(d) => pairs.iter().filter(|(f, v)| set_in_table(d, f, v)).count(),
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

    /// Makes it a table (a no-op if it is one).
    fn convert(&mut self) {
        if let Hash::Packed(p) = self {
            let mut d = Dict::default();
            let mut items = p.items(2);
            while let (Some(f), Some(v)) = (items.next(), items.next()) {
                d.insert_new(Pair {
                    field: f.with_bytes(Elem::new),
                    value: v.with_bytes(Elem::new),
                });
            }
            *self = Hash::Table(Box::new(d));
        }
    }
}

/// `set_pairs` on a packed hash: one rebuild for all the pairs.
fn set_packed(p: &mut Packed, pairs: &[(&[u8], &[u8])]) -> usize {
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
    let mut b = Builder::with_capacity(2, p.allocated() + new_bytes);
    let mut items = p.items(2);
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

/// Up to this many fields in one HSET are matched by comparing; more, by
/// hashing.
const FEW_FIELDS: usize = 8;

fn set_in_table(d: &mut Dict<Pair>, field: &[u8], value: &[u8]) -> bool {
    match d.find(field) {
        Some(i) => {
            d.entry_mut(i).value = Elem::new(value);
            false
        }
        None => {
            d.insert_new(Pair {
                field: Elem::new(field),
                value: Elem::new(value),
            });
            true
        }
    }
}

/// A hash's pairs (see `HashRef::iter`).
pub enum HashIter<'a> {
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
}
