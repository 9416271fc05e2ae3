//! `ZSet`: a sorted set's two representations behind one interface, with
//! Redis 7.0's rules for moving between them. Small sorted sets are packed
//! (`value::packed`, Redis's `listpack`: member and score alternating, in
//! (score, member) order); one that passes `zset-max-listpack-entries` or
//! `zset-max-listpack-value` becomes a `ZTree` (`skiplist`) for good.
//!
//! A packed score is an integer element when it is one (within 2^53, as
//! Redis's listpack stores whole scores), else a double.
//!
//! Member deadlines (lapse's ZEXPIRE family): a packed sorted set keeps
//! them in its block's preamble (`value::packed_ttl`), so it stays a
//! listpack within the same limits; a tree keeps them beside its dict.

use std::cmp::Ordering;

use super::packed::{by_index, Builder, Item, Items, Packed, PackedRef};
use super::packed_ttl::{self, Kept};
use super::ztree::{TreeIter, ZTree};

/// When a packed sorted set becomes a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZLimits {
    pub entries: usize,
    pub value: usize,
}

impl ZLimits {
    /// Redis's defaults (`zset-max-listpack-*`).
    pub const DEFAULT: ZLimits = ZLimits {
        entries: 128,
        value: 64,
    };
}

/// One member with its score, as read from either representation.
#[derive(Clone, Copy, Debug)]
pub struct ZEntry<'a> {
    pub member: Item<'a>,
    pub score: f64,
}

impl ZEntry<'_> {
    /// This entry's place relative to (`score`, `member`).
    pub fn cmp_to(&self, score: f64, member: &[u8]) -> Ordering {
        self.score
            .total_cmp(&score)
            .then_with(|| self.member.with_bytes(|m| m.cmp(member)))
    }
}

#[derive(Clone)]
pub enum ZSet {
    Packed(Packed),
    Tree(Box<ZTree>),
}

impl Default for ZSet {
    fn default() -> ZSet {
        ZSet::Packed(Packed::default())
    }
}

impl std::fmt::Debug for ZSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.view().fmt(f)
    }
}

/// A score as a packed element: an integer when it is one exactly.
fn score_item(score: f64) -> Item<'static> {
    const EXACT: f64 = (1u64 << 53) as f64;
    if score.fract() == 0.0 && score.abs() <= EXACT && !(score == 0.0 && score.is_sign_negative()) {
        Item::Int(score as i64)
    } else {
        Item::Double(score)
    }
}

fn item_score(item: Item<'_>) -> f64 {
    match item {
        Item::Int(n) => n as f64,
        Item::Double(d) => d,
        Item::Str(..) => item.with_bytes(|b| crate::float::parse_f64_lenient(b).unwrap_or(0.0)),
    }
}

/// A sorted set borrowed for reading: from a `ZSet`, or a small packed
/// one from where the keyspace keeps it inline.
#[derive(Clone, Copy)]
pub enum ZSetRef<'a> {
    Packed(PackedRef<'a>),
    Tree(&'a ZTree),
}

impl<'a> ZSetRef<'a> {
    pub const EMPTY: ZSetRef<'static> = ZSetRef::Packed(PackedRef::EMPTY);

    pub fn len(self) -> usize {
        match self {
            ZSetRef::Packed(p) => p.len() / 2,
            ZSetRef::Tree(t) => t.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// OBJECT ENCODING's name for it.
    pub fn encoding(self) -> &'static str {
        match self {
            ZSetRef::Packed(p) if p.has_preamble() => "listpackex",
            ZSetRef::Packed(_) => "listpack",
            ZSetRef::Tree(_) => "skiplist",
        }
    }

    pub fn score(self, member: &[u8]) -> Option<f64> {
        match self {
            // Only the match's score is decoded.
            ZSetRef::Packed(p) => {
                let mut items = p.items(2);
                while let (Some(m), Some(s)) = (items.next(), items.next()) {
                    if m.eq_bytes(member) {
                        return Some(item_score(s));
                    }
                }
                None
            }
            ZSetRef::Tree(t) => t.score(member),
        }
    }

    /// Rank (0-based, ascending) of `member`.
    pub fn rank(self, member: &[u8]) -> Option<usize> {
        match self {
            ZSetRef::Packed(_) => self
                .iter_from(0, false)
                .position(|e| e.member.eq_bytes(member)),
            ZSetRef::Tree(t) => t.rank(member),
        }
    }

    /// How many members come before a bound, given as `before(entry)`:
    /// true for every entry strictly before it (a prefix of the order).
    pub fn count_before(self, before: impl Fn(ZEntry<'_>) -> bool) -> usize {
        match self {
            ZSetRef::Packed(_) => self.iter_from(0, false).take_while(|e| before(*e)).count(),
            ZSetRef::Tree(t) => t.count_before(|n| {
                before(ZEntry {
                    member: Item::bytes(n.member.as_bytes()),
                    score: n.score,
                })
            }),
        }
    }

    /// The members from position `start` on, ascending, or descending
    /// when `rev` (then position 0 is the last member).
    pub fn iter_from(self, start: usize, rev: bool) -> ZIter<'a> {
        match self {
            ZSetRef::Packed(p) if rev => {
                // A block reads forwards only: read it, then walk back.
                let mut all: Vec<ZEntry> = entries(p.items(2)).collect();
                all.truncate(all.len().saturating_sub(start));
                ZIter::Back(all)
            }
            ZSetRef::Packed(p) => {
                let mut forward = entries(p.items(2));
                for _ in 0..start {
                    forward.next();
                }
                ZIter::Forward(forward)
            }
            ZSetRef::Tree(t) => ZIter::Tree(t.iter_from(start, rev)),
        }
    }

    /// Members by index, for random picks (see `packed::by_index`).
    pub fn by_index(self) -> impl Fn(u32) -> Option<ZEntry<'a>> + 'a {
        let packed = matches!(self, ZSetRef::Packed(_)).then(|| self.iter_from(0, false));
        by_index(packed, move |i| match self {
            ZSetRef::Tree(t) => (i < t.len() as u32).then(|| {
                let n = t.node_at(i);
                ZEntry {
                    member: Item::bytes(n.member.as_bytes()),
                    score: n.score,
                }
            }),
            ZSetRef::Packed(_) => None,
        })
    }

    /// An owned copy (member deadlines included).
    pub fn to_zset(self) -> ZSet {
        match self {
            ZSetRef::Packed(p) => ZSet::Packed(p.to_packed()),
            ZSetRef::Tree(t) => ZSet::Tree(Box::new(t.clone())),
        }
    }

    /// `member`'s deadline: `None` if it is not a member, `Some(None)` if
    /// it has none.
    pub fn member_ttl(self, member: &[u8]) -> Option<Option<i64>> {
        match self {
            ZSetRef::Tree(t) => t.member_ttl(member),
            ZSetRef::Packed(p) if p.has_preamble() => packed_ttl::member_ttl(p, 2, member),
            packed => packed.score(member).map(|_| None),
        }
    }

    /// The earliest member deadline (O(1)).
    pub fn earliest_member_ttl(self) -> Option<i64> {
        match self {
            ZSetRef::Tree(t) => t.earliest_member_ttl(),
            ZSetRef::Packed(p) => packed_ttl::earliest(p),
        }
    }

    /// Members with a deadline.
    pub fn member_ttl_count(self) -> usize {
        match self {
            ZSetRef::Tree(t) => t.member_ttl_count(),
            ZSetRef::Packed(p) => packed_ttl::count(p),
        }
    }

    /// The entries from the `start`th in `iter_from`'s order, each with
    /// its deadline (files and the AOF rewrite).
    pub fn iter_with_ttls_from(
        self,
        start: usize,
        rev: bool,
    ) -> impl Iterator<Item = (ZEntry<'a>, Option<i64>)> + 'a {
        let (packed, len) = match self {
            ZSetRef::Packed(p) => (packed_ttl::all(p), p.len() / 2),
            ZSetRef::Tree(_) => (Vec::new(), 0),
        };
        self.iter_from(start, rev).enumerate().map(move |(i, e)| {
            let ttl = match self {
                ZSetRef::Tree(t) if t.member_ttl_count() > 0 => {
                    e.member.with_bytes(|m| t.member_ttl(m)).flatten()
                }
                ZSetRef::Tree(_) => None,
                ZSetRef::Packed(_) => {
                    let row = if rev { len - 1 - start - i } else { start + i };
                    packed.get(row).copied().flatten()
                }
            };
            (e, ttl)
        })
    }

    /// A copy without the members due at `now_ms` (what a replica's
    /// clients see before the primary's ZREM comes).
    pub fn without_members_due(self, now_ms: i64) -> ZSet {
        let mut live = self.to_zset();
        live.remove_due(now_ms, usize::MAX);
        live
    }
}

impl std::fmt::Debug for ZSetRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter_from(0, false)).finish()
    }
}

impl ZSet {
    /// An empty sorted set for a first member of `len` bytes (ZADD's rule).
    pub fn create(len: usize, limits: ZLimits) -> ZSet {
        if limits.entries == 0 || len > limits.value {
            ZSet::Tree(Box::default())
        } else {
            ZSet::default()
        }
    }

    /// The sorted set for reading.
    pub fn view(&self) -> ZSetRef<'_> {
        match self {
            ZSet::Packed(p) => ZSetRef::Packed(p.view()),
            ZSet::Tree(t) => ZSetRef::Tree(t),
        }
    }

    pub fn len(&self) -> usize {
        self.view().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `member` or moves it to `score`; true if it was new. A new
    /// member that would pass the limits makes it a tree first.
    pub fn insert(&mut self, member: &[u8], score: f64, limits: ZLimits) -> bool {
        if self.has_packed_deadlines() {
            if self.view().score(member) == Some(score + 0.0) {
                return false;
            }
            return packed_ttl::keeping_deadlines(self, |z| z.insert(member, score, limits));
        }
        let score = score + 0.0; // -0 becomes 0
        if let ZSet::Packed(p) = self {
            let existing = entries(p.items(2))
                .find(|e| e.member.eq_bytes(member))
                .map(|e| e.score);
            let fits = p.len() / 2 < limits.entries && member.len() <= limits.value;
            if existing.is_some() || fits {
                return insert_packed(p, member, score, existing);
            }
            self.make_tree();
        }
        match self {
            ZSet::Tree(t) => t.insert(member, score),
            ZSet::Packed(_) => false,
        }
    }

    /// Whether it is packed with member deadlines in its preamble.
    fn has_packed_deadlines(&self) -> bool {
        matches!(self, ZSet::Packed(p) if p.view().has_preamble())
    }

    /// Gives the members in `kept` their deadline there (a member not in
    /// the sorted set is skipped), all at once.
    pub fn put_member_ttls(&mut self, kept: &Kept) {
        packed_ttl::put_deadlines(self, kept);
    }

    /// Removes `member`, returning its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        if self.has_packed_deadlines() {
            self.view().score(member)?;
            return packed_ttl::keeping_deadlines(self, |z| z.remove(member));
        }
        match self {
            ZSet::Packed(p) => {
                let mut removed = None;
                let mut b = Builder::with_capacity(2, p.allocated());
                let mut items = p.items(2);
                while let (Some(m), Some(s)) = (items.next(), items.next()) {
                    if removed.is_none() && m.eq_bytes(member) {
                        removed = Some(item_score(s));
                    } else {
                        b.push(m);
                        b.push(s);
                    }
                }
                if removed.is_some() {
                    *p = b.finish();
                }
                removed
            }
            ZSet::Tree(t) => t.remove(member),
        }
    }

    /// Removes and returns the first (`max` false) or last member.
    pub fn pop(&mut self, max: bool) -> Option<(Vec<u8>, f64)> {
        match self {
            ZSet::Packed(_) => {
                let first = self.view().iter_from(0, max).next()?;
                let member = first.member.to_vec();
                self.remove(&member).map(|score| (member, score))
            }
            ZSet::Tree(t) => t.pop(max).map(|(m, s)| (m.as_bytes().to_vec(), s)),
        }
    }

    /// Sets (`Some`) or removes `member`'s deadline; false if it is not a
    /// member. The representation stays.
    pub fn set_member_ttl(&mut self, member: &[u8], at_ms: Option<i64>) -> bool {
        match self {
            ZSet::Tree(t) => t.set_member_ttl(member, at_ms),
            ZSet::Packed(p) => packed_ttl::set_member_ttl(p, 2, member, at_ms),
        }
    }

    /// Removes the members whose deadline is at or before `now_ms`,
    /// earliest first, at most `max`; the members removed.
    pub fn remove_due(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
        match self {
            ZSet::Tree(t) => t.remove_due(now_ms, max),
            ZSet::Packed(p) => packed_ttl::remove_due(p, 2, now_ms, max),
        }
    }

    /// Makes it a tree (a no-op if it is one), as Redis's SORT does to
    /// the sorted set it reads.
    pub fn convert_to_tree(&mut self) {
        self.make_tree();
    }

    /// Makes it a tree (a no-op if it is one).
    fn make_tree(&mut self) {
        if let ZSet::Packed(p) = self {
            let mut t = ZTree::default();
            let deadlines = packed_ttl::all(p.view());
            for (row, e) in entries(p.items(2)).enumerate() {
                e.member.with_bytes(|m| {
                    t.insert(m, e.score);
                    if let Some(at) = deadlines.get(row).copied().flatten() {
                        t.set_member_ttl(m, Some(at));
                    }
                });
            }
            *self = ZSet::Tree(Box::new(t));
        }
    }

    /// Becomes packed if it is within the limits (Redis's
    /// `zsetConvertToListpackIfNeeded`, for the *STORE commands' results).
    pub fn pack_if_fit(&mut self, limits: ZLimits) {
        let ZSet::Tree(t) = self else { return };
        if t.len() > limits.entries
            || t.member_ttl_count() > 0
            || t.nodes().any(|n| n.member.as_bytes().len() > limits.value)
        {
            return;
        }
        let mut b = Builder::new(2);
        for n in t.iter_from(0, false) {
            b.push_bytes(n.member.as_bytes());
            b.push(score_item(n.score));
        }
        *self = ZSet::Packed(b.finish());
    }
}

impl packed_ttl::PackedOrTable for ZSet {
    const STRIDE: usize = 2;
    fn packed_mut(&mut self) -> Option<&mut Packed> {
        match self {
            ZSet::Packed(p) => Some(p),
            ZSet::Tree(_) => None,
        }
    }
    fn set_table_ttl(&mut self, member: &[u8], at_ms: i64) {
        if let ZSet::Tree(t) = self {
            t.set_member_ttl(member, Some(at_ms));
        }
    }
}

/// `insert` on a packed set: `member` (whose score was `existing`) at its
/// place for `score`, by one rebuild; true if it is new.
fn insert_packed(p: &mut Packed, member: &[u8], score: f64, existing: Option<f64>) -> bool {
    if existing.is_some_and(|s| s.total_cmp(&score) == Ordering::Equal) {
        return false;
    }
    let mut b = Builder::with_capacity(2, p.allocated() + member.len() + 10);
    let mut placed = false;
    let mut items = p.items(2);
    while let (Some(m), Some(s)) = (items.next(), items.next()) {
        if m.eq_bytes(member) {
            continue;
        }
        let entry = ZEntry {
            member: m,
            score: item_score(s),
        };
        if !placed && entry.cmp_to(score, member) == Ordering::Greater {
            b.push_bytes(member);
            b.push(score_item(score));
            placed = true;
        }
        b.push(m);
        b.push(s);
    }
    if !placed {
        b.push_bytes(member);
        b.push(score_item(score));
    }
    *p = b.finish();
    existing.is_none()
}

/// A packed block's (member, score) pairs as entries.
fn entries(items: Items<'_>) -> Entries<'_> {
    Entries(items)
}

pub struct Entries<'a>(Items<'a>);

impl<'a> Iterator for Entries<'a> {
    type Item = ZEntry<'a>;

    fn next(&mut self) -> Option<ZEntry<'a>> {
        let member = self.0.next()?;
        let score = item_score(self.0.next()?);
        Some(ZEntry { member, score })
    }
}

/// Entries in rank order (see `ZSetRef::iter_from`).
pub enum ZIter<'a> {
    Forward(Entries<'a>),
    Back(Vec<ZEntry<'a>>),
    Tree(TreeIter<'a>),
}

impl<'a> Iterator for ZIter<'a> {
    type Item = ZEntry<'a>;

    fn next(&mut self) -> Option<ZEntry<'a>> {
        match self {
            ZIter::Forward(it) => it.next(),
            ZIter::Back(v) => v.pop(),
            ZIter::Tree(t) => t.next().map(|n| ZEntry {
                member: Item::bytes(n.member.as_bytes()),
                score: n.score,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: ZLimits = ZLimits {
        entries: 4,
        value: 6,
    };

    fn contents(z: &ZSet, rev: bool) -> Vec<(String, f64)> {
        z.view()
            .iter_from(0, rev)
            .map(|e| {
                (
                    String::from_utf8(e.member.to_vec()).unwrap_or_default(),
                    e.score,
                )
            })
            .collect()
    }

    #[test]
    fn packed_keeps_score_then_member_order() {
        let mut z = ZSet::default();
        assert!(z.insert(b"b", 2.0, SMALL));
        assert!(z.insert(b"a", 2.0, SMALL));
        assert!(z.insert(b"c", -1.5, SMALL));
        assert!(!z.insert(b"b", 0.5, SMALL));
        assert_eq!(z.view().encoding(), "listpack");
        let want = vec![
            ("c".to_string(), -1.5),
            ("b".into(), 0.5),
            ("a".into(), 2.0),
        ];
        assert_eq!(contents(&z, false), want);
        assert_eq!(
            contents(&z, true),
            want.iter().rev().cloned().collect::<Vec<_>>()
        );
        assert_eq!(z.view().rank(b"a"), Some(2));
        assert_eq!(z.view().score(b"b"), Some(0.5));
        assert_eq!(z.view().count_before(|e| e.score < 1.0), 2);
        assert_eq!(
            z.view()
                .iter_from(1, true)
                .map(|e| e.score)
                .collect::<Vec<_>>(),
            vec![0.5, -1.5]
        );
        assert_eq!(z.pop(true), Some((b"a".to_vec(), 2.0)));
        assert_eq!(z.remove(b"c"), Some(-1.5));
        assert_eq!(z.len(), 1);
    }

    #[test]
    fn scores_round_trip_exactly() {
        let mut z = ZSet::default();
        let scores = [
            0.0,
            -0.0,
            1e300,
            -7.0,
            0.1,
            f64::INFINITY,
            f64::NEG_INFINITY,
            9007199254740993.0,
        ];
        for (i, s) in scores.iter().enumerate() {
            z.insert(format!("m{i}").as_bytes(), *s, ZLimits::DEFAULT);
        }
        for (i, s) in scores.iter().enumerate() {
            let got = z.view().score(format!("m{i}").as_bytes());
            assert_eq!(got.map(f64::to_bits), Some((s + 0.0).to_bits()));
        }
    }

    #[test]
    fn limits_make_a_tree_for_good_and_stores_pack_again() {
        let mut z = ZSet::create(1, SMALL);
        for (i, m) in ["a", "b", "c", "d"].iter().enumerate() {
            z.insert(m.as_bytes(), i as f64, SMALL);
        }
        assert_eq!(z.view().encoding(), "listpack");
        // An existing member's new score does not count as growth.
        z.insert(b"a", 10.0, SMALL);
        assert_eq!(z.view().encoding(), "listpack");
        z.insert(b"e", 5.0, SMALL);
        assert_eq!(z.view().encoding(), "skiplist");
        z.remove(b"e");
        assert_eq!(z.view().encoding(), "skiplist");
        let before = contents(&z, false);
        z.pack_if_fit(SMALL);
        assert_eq!(
            (z.view().encoding(), contents(&z, false)),
            ("listpack", before)
        );
        // A long member converts, and a long first member starts a tree.
        z.insert(b"sevench", 1.0, SMALL);
        assert_eq!(z.view().encoding(), "skiplist");
        assert_eq!(ZSet::create(7, SMALL).view().encoding(), "skiplist");
    }
}
