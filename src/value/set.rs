//! `Set`: a set's three representations behind one interface, with Redis
//! 7.2's rules for moving between them (7.2 rather than 7.0: small sets
//! of strings are packed too; see the README).
//!
//! - an intset: only integers, ascending, at most `set-max-intset-entries`
//!   of them;
//! - a listpack: in insertion order, at most `set-max-listpack-entries`
//!   members of at most `set-max-listpack-value` bytes;
//! - a hashtable: a `Dict` of members, for good.
//!
//! Both packed forms are `value::packed` blocks of one column, an intset's
//! flagged (so that `Value` stays 24 bytes: two variants, not three).
//!
//! Member expiry (Redis 8.12's SEXPIRE family): a packed set keeps its
//! members' deadlines in its block's preamble (`value::packed_ttl`: a
//! byte or a few a member), so it stays an intset or a listpack within
//! the same limits; a table keeps them beside its dict in a `FieldTtls`
//! (the structure hash fields use: 14 bytes a member with a deadline, 4
//! for one without in such a set). A set with none pays nothing.

use super::elem::Elem;
use super::field_ttl::TtlDict;
use super::packed::{by_index, canonical_int, Builder, Item, Items, Packed, PackedRef};
use super::packed_ttl::{self, Kept};
use crate::dict::Dict;

/// A set as a table: its members, and their deadlines once any has one.
pub type SetTable = TtlDict<Elem>;

/// When a set changes representation (Redis's `set-max-*` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetLimits {
    pub intset_entries: usize,
    pub listpack_entries: usize,
    pub listpack_value: usize,
}

impl SetLimits {
    /// Redis's defaults.
    pub const DEFAULT: SetLimits = SetLimits {
        intset_entries: 512,
        listpack_entries: 128,
        listpack_value: 64,
    };

    /// Redis caps an intset at 2^30 members whatever the setting says.
    fn intset_max(&self) -> usize {
        self.intset_entries.min(1 << 30)
    }
}

#[derive(Clone)]
pub enum Set {
    /// An intset when the block is flagged, else a listpack.
    Packed(Packed),
    Table(Box<SetTable>),
}

impl Default for Set {
    /// An empty intset.
    fn default() -> Set {
        Set::Packed(ints(&[]))
    }
}

/// An intset block of `sorted` integers.
fn ints(sorted: &[i64]) -> Packed {
    let mut b = Builder::new(1).flagged(true);
    sorted.iter().for_each(|&n| b.push(Item::Int(n)));
    b.finish()
}

/// A set borrowed for reading: from a `Set`, or a small packed one from
/// where the keyspace keeps it inline.
#[derive(Clone, Copy)]
pub enum SetRef<'a> {
    /// An intset when the block is flagged, else a listpack.
    Packed(PackedRef<'a>),
    Table(&'a SetTable),
}

impl<'a> SetRef<'a> {
    pub const EMPTY: SetRef<'static> = SetRef::Packed(PackedRef::EMPTY);

    pub fn len(self) -> usize {
        match self {
            SetRef::Packed(p) => p.len(),
            SetRef::Table(d) => d.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Integers only, ascending (Redis's `intset`).
    pub fn is_intset(self) -> bool {
        matches!(self, SetRef::Packed(p) if p.flag())
    }

    /// OBJECT ENCODING's name for it (a listpack with member deadlines
    /// is `listpackex`, as a hash with field deadlines is).
    pub fn encoding(self) -> &'static str {
        match self {
            SetRef::Packed(p) if p.flag() => "intset",
            SetRef::Packed(p) if p.has_preamble() => "listpackex",
            SetRef::Packed(_) => "listpack",
            SetRef::Table(_) => "hashtable",
        }
    }

    pub fn contains(self, member: &[u8]) -> bool {
        match self {
            SetRef::Packed(p) if p.flag() => canonical_int(member)
                .is_some_and(|n| p.items(1).any(|i| matches!(i, Item::Int(m) if m == n))),
            SetRef::Packed(p) => p.items(1).any(|i| i.eq_bytes(member)),
            SetRef::Table(d) => d.find(member).is_some(),
        }
    }

    /// The members, in the representation's order (ascending in an intset).
    pub fn iter(self) -> SetIter<'a> {
        self.iter_from(0)
    }

    /// The members from the `from`th on, in `iter`'s order (O(1) to start
    /// for a table: a big set is written in pieces that way).
    pub fn iter_from(self, from: usize) -> SetIter<'a> {
        match self {
            SetRef::Packed(p) => {
                let mut items = p.items(1);
                for _ in 0..from {
                    items.next();
                }
                SetIter::Packed(items)
            }
            SetRef::Table(d) => SetIter::Table(d, u32::try_from(from).unwrap_or(u32::MAX)),
        }
    }

    /// Members by index, for random picks (see `packed::by_index`).
    pub fn by_index(self) -> impl Fn(u32) -> Option<Item<'a>> + 'a {
        let packed = matches!(self, SetRef::Packed(_)).then(|| self.iter());
        by_index(packed, move |i| match self {
            SetRef::Table(d) => (i < d.len() as u32).then(|| Item::bytes(d.entry(i).as_bytes())),
            SetRef::Packed(_) => None,
        })
    }

    /// An owned copy (member deadlines included).
    pub fn to_set(self) -> Set {
        match self {
            SetRef::Packed(p) => Set::Packed(p.to_packed()),
            SetRef::Table(d) => Set::Table(Box::new(d.clone())),
        }
    }

    /// `member`'s deadline: `None` if it is not a member, `Some(None)` if
    /// it has none.
    pub fn member_ttl(self, member: &[u8]) -> Option<Option<i64>> {
        match self {
            SetRef::Table(d) => d.find(member).map(|i| d.ttl_of(i)),
            SetRef::Packed(p) if p.has_preamble() => packed_ttl::member_ttl(p, 1, member),
            packed => packed.contains(member).then_some(None),
        }
    }

    /// The earliest member deadline (O(1): the heap's top, the
    /// preamble's first).
    pub fn earliest_member_ttl(self) -> Option<i64> {
        match self {
            SetRef::Table(d) => d.earliest().map(|(_, at)| at),
            SetRef::Packed(p) => packed_ttl::earliest(p),
        }
    }

    /// Members with a deadline.
    pub fn member_ttl_count(self) -> usize {
        match self {
            SetRef::Table(d) => d.ttl_count(),
            SetRef::Packed(p) => packed_ttl::count(p),
        }
    }

    /// The members with their deadlines, from the `from`th on in `iter`'s
    /// order (files and the AOF rewrite).
    pub fn iter_with_ttls_from(
        self,
        from: usize,
    ) -> impl Iterator<Item = (Item<'a>, Option<i64>)> + 'a {
        let (table, packed) = match self {
            SetRef::Table(d) => (Some(d), Vec::new()),
            SetRef::Packed(p) => (None, packed_ttl::all(p)),
        };
        self.iter_from(from).enumerate().map(move |(i, m)| {
            let at = match table {
                Some(d) => d.ttl_of((i + from) as u32),
                None => packed.get(i + from).copied().flatten(),
            };
            (m, at)
        })
    }

    /// A copy without the members due at `now_ms` (what a replica's
    /// clients see before the primary's SREM comes).
    pub fn without_members_due(self, now_ms: i64) -> Set {
        let mut live = SetTable::new(true);
        for (m, at) in self.iter_with_ttls_from(0) {
            if at.is_some_and(|at| at <= now_ms) {
                continue;
            }
            let i = live.insert_new(m.with_bytes(Elem::new));
            live.set_ttl(i, at);
        }
        Set::Table(Box::new(live))
    }
}

impl Set {
    /// An empty set fit for `first` and about `size_hint` members
    /// (Redis's `setTypeCreate`).
    pub fn create(first: &[u8], size_hint: usize, limits: SetLimits) -> Set {
        if canonical_int(first).is_some() && size_hint <= limits.intset_max() {
            Set::default()
        } else if size_hint <= limits.listpack_entries {
            Set::Packed(Packed::default())
        } else {
            Set::Table(Box::default())
        }
    }

    /// Becomes a table now if `size_hint` members could not stay packed
    /// (Redis's `setTypeMaybeConvert`, before adding that many).
    pub fn make_room(&mut self, size_hint: usize, limits: SetLimits) {
        let too_many = match self {
            Set::Packed(p) if p.flag() => size_hint > limits.intset_entries,
            Set::Packed(_) => size_hint > limits.listpack_entries,
            Set::Table(_) => false,
        };
        if too_many {
            self.make_table();
        }
    }

    /// The set for reading.
    pub fn view(&self) -> SetRef<'_> {
        match self {
            Set::Packed(p) => SetRef::Packed(p.view()),
            Set::Table(d) => SetRef::Table(d),
        }
    }

    pub fn len(&self) -> usize {
        self.view().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Integers only, ascending (Redis's `intset`).
    pub fn is_intset(&self) -> bool {
        self.view().is_intset()
    }

    /// Adds `member`; true if it was new (Redis 7.2's `setTypeAdd`,
    /// changing representation as it does).
    pub fn add(&mut self, member: &[u8], limits: SetLimits) -> bool {
        if self.has_packed_deadlines() {
            return !self.view().contains(member)
                && packed_ttl::keeping_deadlines(self, |s| s.add_row(member, limits));
        }
        self.add_row(member, limits)
    }

    /// Whether it is packed with member deadlines in its preamble.
    fn has_packed_deadlines(&self) -> bool {
        matches!(self, Set::Packed(p) if p.view().has_preamble())
    }

    /// Gives the members in `kept` their deadline there (a member not in
    /// the set is skipped), all at once.
    pub fn put_member_ttls(&mut self, kept: &Kept) {
        packed_ttl::put_deadlines(self, kept);
    }

    /// `add` of a set whose rows carry no deadlines.
    fn add_row(&mut self, member: &[u8], limits: SetLimits) -> bool {
        match self {
            Set::Packed(p) if p.flag() => match canonical_int(member) {
                Some(n) => {
                    let Some(ints) = insert_sorted(p, n) else {
                        return false;
                    };
                    *p = ints;
                    if p.len() > limits.intset_max() {
                        self.make_table();
                    }
                    true
                }
                None => {
                    // Every member as text within the value limit: the
                    // widest integers are the smallest and the largest.
                    let width = |i: Option<Item>| i.map_or(0, |i| i.len());
                    let widest = width(p.items(1).next()).max(width(p.items(1).last()));
                    if p.len() < limits.listpack_entries
                        && member.len() <= limits.listpack_value
                        && widest <= limits.listpack_value
                    {
                        *self = Set::Packed(appended(p, member));
                    } else {
                        self.make_table();
                        self.add_row(member, limits);
                    }
                    true
                }
            },
            Set::Packed(p) => {
                if p.items(1).any(|i| i.eq_bytes(member)) {
                    return false;
                }
                if p.len() < limits.listpack_entries && member.len() <= limits.listpack_value {
                    *p = appended(p, member);
                } else {
                    self.make_table();
                    self.add_row(member, limits);
                }
                true
            }
            Set::Table(d) => {
                if d.find(member).is_some() {
                    return false;
                }
                d.insert_new(Elem::new(member));
                true
            }
        }
    }

    /// Removes `member`; true if it was there. The representation stays.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        if self.has_packed_deadlines() {
            return self.view().contains(member)
                && packed_ttl::keeping_deadlines(self, |s| s.remove(member));
        }
        match self {
            Set::Packed(p) => {
                let Some(at) = p.items(1).position(|i| i.eq_bytes(member)) else {
                    return false;
                };
                let mut b = Builder::new(1).flagged(p.flag());
                for (i, item) in p.items(1).enumerate() {
                    if i != at {
                        b.push(item);
                    }
                }
                *p = b.finish();
                true
            }
            Set::Table(d) => d.find(member).map(|i| d.remove_at(i)).is_some(),
        }
    }

    /// Makes it a table (a no-op if it is one).
    fn make_table(&mut self) {
        if let Set::Packed(p) = self {
            let mut d = SetTable::default();
            let deadlines = packed_ttl::all(p.view());
            for (row, item) in p.items(1).enumerate() {
                let i = d.insert_new(item.with_bytes(Elem::new));
                d.set_ttl(i, deadlines.get(row).copied().flatten());
            }
            *self = Set::Table(Box::new(d));
        }
    }

    /// Sets (`Some`) or removes `member`'s deadline; false if it is not a
    /// member. The representation stays.
    pub fn set_member_ttl(&mut self, member: &[u8], at_ms: Option<i64>) -> bool {
        match self {
            Set::Packed(p) => packed_ttl::set_member_ttl(p, 1, member, at_ms),
            Set::Table(d) => {
                let Some(i) = d.find(member) else {
                    return false;
                };
                d.set_ttl(i, at_ms);
                true
            }
        }
    }

    /// Removes the members whose deadline is at or before `now_ms`,
    /// earliest first, at most `max`; the members removed.
    pub fn remove_due(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
        match self {
            Set::Table(d) => d.remove_due(now_ms, max),
            Set::Packed(p) => packed_ttl::remove_due(p, 1, now_ms, max),
        }
    }

    /// Becomes an intset if every member is an integer and they fit
    /// (Redis's `maybeConvertToIntset`, for SINTERSTORE's result).
    pub fn ints_if_fit(&mut self, limits: SetLimits) {
        if self.is_intset()
            || self.len() > limits.intset_max()
            || self.view().member_ttl_count() > 0
        {
            return;
        }
        let mut values = Vec::with_capacity(self.len());
        for item in self.view().iter() {
            match item {
                Item::Int(n) => values.push(n),
                other => match other.with_bytes(canonical_int) {
                    Some(n) => values.push(n),
                    None => return,
                },
            }
        }
        values.sort_unstable();
        *self = Set::Packed(ints(&values));
    }
}

impl packed_ttl::PackedOrTable for Set {
    const STRIDE: usize = 1;
    fn packed_mut(&mut self) -> Option<&mut Packed> {
        match self {
            Set::Packed(p) => Some(p),
            Set::Table(_) => None,
        }
    }
    fn set_table_ttl(&mut self, member: &[u8], at_ms: i64) {
        if let Set::Table(d) = self {
            if let Some(i) = d.find(member) {
                d.set_ttl(i, Some(at_ms));
            }
        }
    }
}

/// `p` (ascending integers) with `n` in its place; `None` if it is there.
fn insert_sorted(p: &Packed, n: i64) -> Option<Packed> {
    // Where it goes, found before anything is built (usually it is there).
    let mut at = 0;
    for item in p.items(1) {
        match item {
            Item::Int(m) if m == n => return None,
            Item::Int(m) if m > n => break,
            _ => at += 1,
        }
    }
    let mut b = Builder::with_capacity(1, p.allocated() + 9).flagged(true);
    for (i, item) in p.items(1).enumerate() {
        if i == at {
            b.push(Item::Int(n));
        }
        b.push(item);
    }
    if at == p.len() {
        b.push(Item::Int(n));
    }
    Some(b.finish())
}

/// `p` with `member` appended, as a listpack.
fn appended(p: &Packed, member: &[u8]) -> Packed {
    Packed::from_items(1, p.items(1).chain([Item::bytes(member)]))
}

/// An empty listpack set.
pub fn empty_listpack() -> Set {
    Set::Packed(Packed::default())
}

/// A set's members (see `SetRef::iter`).
pub enum SetIter<'a> {
    Packed(Items<'a>),
    /// The table and the next entry index.
    Table(&'a Dict<Elem>, u32),
}

impl<'a> Iterator for SetIter<'a> {
    type Item = Item<'a>;

    fn next(&mut self) -> Option<Item<'a>> {
        match self {
            SetIter::Packed(items) => items.next(),
            SetIter::Table(d, next) => {
                let m = (*next < d.len() as u32).then(|| d.entry(*next))?;
                *next += 1;
                Some(Item::bytes(m.as_bytes()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: SetLimits = SetLimits {
        intset_entries: 4,
        listpack_entries: 3,
        listpack_value: 5,
    };

    fn members(s: &Set) -> Vec<String> {
        s.view()
            .iter()
            .map(|i| String::from_utf8(i.to_vec()).unwrap_or_default())
            .collect()
    }

    #[test]
    fn integers_stay_sorted_in_an_intset_until_the_limit() {
        let mut s = Set::create(b"5", 1, SMALL);
        for m in ["5", "-3", "10", "0", "5"] {
            s.add(m.as_bytes(), SMALL);
        }
        assert_eq!(
            (s.view().encoding(), members(&s)),
            (
                "intset",
                vec!["-3".into(), "0".into(), "5".into(), "10".into()]
            )
        );
        assert!(s.view().contains(b"10") && !s.view().contains(b"010") && !s.view().contains(b"x"));
        s.add(b"11", SMALL);
        assert_eq!(s.view().encoding(), "hashtable");
        assert_eq!(s.len(), 5);
    }

    #[test]
    fn a_string_turns_an_intset_into_a_listpack_in_its_order() {
        let mut s = Set::create(b"2", 1, SMALL);
        s.add(b"2", SMALL);
        s.add(b"1", SMALL);
        assert!(s.add(b"ab", SMALL));
        assert_eq!(
            (s.view().encoding(), members(&s)),
            ("listpack", vec!["1".into(), "2".into(), "ab".into()])
        );
        // Full listpack: the next member converts.
        assert!(!s.add(b"ab", SMALL));
        s.add(b"cd", SMALL);
        assert_eq!(s.view().encoding(), "hashtable");
        // An intset whose widest integer is past the value limit, or that
        // is already as long as a listpack may be, goes to a table.
        let mut wide = Set::create(b"123456", 1, SMALL);
        wide.add(b"123456", SMALL);
        wide.add(b"x", SMALL);
        assert_eq!(wide.view().encoding(), "hashtable");
    }

    #[test]
    fn strings_are_packed_in_insertion_order_and_removal_keeps_the_form() {
        let mut s = Set::create(b"b", 2, SMALL);
        for m in ["b", "a", "007"] {
            s.add(m.as_bytes(), SMALL);
        }
        assert_eq!(
            (s.view().encoding(), members(&s)),
            ("listpack", vec!["b".into(), "a".into(), "007".into()])
        );
        assert!(s.remove(b"a") && !s.remove(b"a"));
        assert_eq!(members(&s), vec!["b", "007"]);
        // Too long a member converts.
        s.add(b"sixchr", SMALL);
        assert_eq!(s.view().encoding(), "hashtable");
        assert!(s.remove(b"b") && s.view().contains(b"007"));
        assert_eq!(s.view().encoding(), "hashtable");
        // The size hint decides the first form.
        let roomy = SetLimits {
            listpack_entries: 8,
            ..SMALL
        };
        assert_eq!(Set::create(b"1", 5, roomy).view().encoding(), "listpack");
        assert_eq!(Set::create(b"1", 4, roomy).view().encoding(), "intset");
        assert_eq!(Set::create(b"x", 4, SMALL).view().encoding(), "hashtable");
    }

    #[test]
    fn ints_if_fit_sorts_integer_members() {
        let mut s = Set::create(b"x", 3, SMALL);
        for m in ["3", "-1", "2"] {
            s.add(m.as_bytes(), SMALL);
        }
        assert_eq!(s.view().encoding(), "listpack");
        s.ints_if_fit(SMALL);
        assert_eq!(
            (s.view().encoding(), members(&s)),
            ("intset", vec!["-1".into(), "2".into(), "3".into()])
        );
    }
}
