//! Member deadlines of a small set or sorted set, kept in its packed
//! block's preamble, so that a set or sorted set with member TTLs keeps
//! its compact encoding (an intset stays an intset, a listpack a
//! listpack) up to the same limits as one without.
//!
//! The preamble is the earliest deadline (LEB128), then one LEB128 per
//! row, in the rows' order: 0 for a member without a deadline, else its
//! deadline's distance from the earliest plus one. Members sharing a
//! deadline cost a byte each, the earliest (what the expiry registry
//! asks after every write) is read in one step, and the rows stay as they
//! are in a block without deadlines: reading a member costs the same. A
//! block whose members have no deadline has no preamble at all.
//!
//! A change that moves rows (an insert in order, a removal, a conversion)
//! is made on the rows alone and the deadlines are put back by member
//! (`Kept`): every change of a packed block rebuilds it anyway, and
//! blocks are small (the `*-max-listpack-*` and intset limits).

use super::packed::{read_varint, write_varint, Builder, Item, Packed, PackedRef};

/// The earliest member deadline of the block (O(1)).
pub fn earliest(p: PackedRef<'_>) -> Option<i64> {
    read_varint(p.preamble(), &mut 0).map(|at| at as i64)
}

/// Every row's deadline, in the rows' order; empty if none has one.
pub fn all(p: PackedRef<'_>) -> Vec<Option<i64>> {
    let bytes = p.preamble();
    let mut pos = 0;
    let Some(earliest) = read_varint(bytes, &mut pos) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(bytes.len());
    while let Some(d) = read_varint(bytes, &mut pos) {
        out.push((d > 0).then(|| earliest.wrapping_add(d - 1) as i64));
    }
    out
}

/// Row `row`'s deadline.
pub fn of_row(p: PackedRef<'_>, row: usize) -> Option<i64> {
    all(p).get(row).copied().flatten()
}

/// How many rows have a deadline.
pub fn count(p: PackedRef<'_>) -> usize {
    all(p).iter().filter(|at| at.is_some()).count()
}

/// `p`'s rows (`stride` elements each) with `deadlines` (one per row, or
/// fewer: the rest have none), flagged as `p` is.
pub fn with_deadlines(p: PackedRef<'_>, stride: usize, deadlines: &[Option<i64>]) -> Packed {
    let earliest = deadlines.iter().flatten().min();
    let mut b = match earliest {
        Some(&earliest) => {
            let mut preamble = Vec::with_capacity(8 + p.len() / stride);
            write_varint(&mut preamble, earliest as u64);
            for row in 0..p.len() / stride {
                let d = deadlines.get(row).copied().flatten();
                write_varint(
                    &mut preamble,
                    d.map_or(0, |at| (at as u64).wrapping_sub(earliest as u64) + 1),
                );
            }
            Builder::with_preamble(stride, &preamble, p.bytes().len())
        }
        None => Builder::with_capacity(stride, p.bytes().len()),
    }
    .flagged(p.flag());
    p.items(stride).for_each(|item| b.push(item));
    b.finish()
}

/// The row whose member (its first element) is `member`.
fn row_of(p: PackedRef<'_>, stride: usize, member: &[u8]) -> Option<usize> {
    p.items(stride)
        .step_by(stride)
        .position(|m| m.eq_bytes(member))
}

/// `member`'s deadline: `None` if it is not there, `Some(None)` if it has
/// none.
pub fn member_ttl(p: PackedRef<'_>, stride: usize, member: &[u8]) -> Option<Option<i64>> {
    row_of(p, stride, member).map(|row| of_row(p, row))
}

/// Gives `member` the deadline `at_ms` (`None`: none); false if it is
/// not there.
pub fn set_member_ttl(p: &mut Packed, stride: usize, member: &[u8], at_ms: Option<i64>) -> bool {
    let Some(row) = row_of(p.view(), stride, member) else {
        return false;
    };
    set_row(p, stride, row, at_ms);
    true
}

/// Gives row `row` of `p` the deadline `at_ms` (`None`: none).
fn set_row(p: &mut Packed, stride: usize, row: usize, at_ms: Option<i64>) {
    let mut deadlines = all(p.view());
    if deadlines.is_empty() && at_ms.is_none() {
        return;
    }
    deadlines.resize(p.len() / stride, None);
    if let Some(d) = deadlines.get_mut(row) {
        *d = at_ms;
    }
    *p = with_deadlines(p.view(), stride, &deadlines);
}

/// A set or a sorted set: packed (rows of `STRIDE` elements, the first
/// the member) or a table that keeps member deadlines its own way.
pub trait PackedOrTable {
    const STRIDE: usize;
    /// The block, if it is packed.
    fn packed_mut(&mut self) -> Option<&mut Packed>;
    /// In a table: `member`'s deadline becomes `at_ms` (if it is there).
    fn set_table_ttl(&mut self, member: &[u8], at_ms: i64);
}

/// `change` made on the rows alone, the member deadlines of a packed
/// value put back by member afterwards (whatever it became).
pub fn keeping_deadlines<T: PackedOrTable, R>(
    value: &mut T,
    change: impl FnOnce(&mut T) -> R,
) -> R {
    let Some(kept) = value.packed_mut().and_then(|p| Kept::take(p, T::STRIDE)) else {
        return change(value);
    };
    let result = change(value);
    put_deadlines(value, &kept);
    result
}

/// Gives the members in `kept` their deadline in `value` (a member not
/// there is skipped), all at once.
pub fn put_deadlines<T: PackedOrTable>(value: &mut T, kept: &Kept) {
    match value.packed_mut() {
        Some(p) => kept.restore(p, T::STRIDE),
        None => kept
            .iter()
            .for_each(|(member, at)| value.set_table_ttl(member, at)),
    }
}

/// Removes the rows whose deadline is at or before `now_ms`, earliest
/// first, at most `max`; their members, in that order.
pub fn remove_due(p: &mut Packed, stride: usize, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
    let view = p.view();
    let deadlines = all(view);
    let mut due: Vec<(i64, usize)> = deadlines
        .iter()
        .enumerate()
        .filter_map(|(row, at)| Some((at.filter(|&at| at <= now_ms)?, row)))
        .collect();
    if due.is_empty() {
        return Vec::new();
    }
    due.sort_unstable();
    due.truncate(max);
    let mut gone = vec![false; deadlines.len()];
    due.iter().for_each(|&(_, row)| gone[row] = true);
    let members: Vec<Item<'_>> = view.items(stride).step_by(stride).collect();
    let removed = due.iter().map(|&(_, row)| members[row].to_vec()).collect();
    let mut rows = Builder::with_capacity(stride, view.bytes().len()).flagged(view.flag());
    let mut items = view.items(stride);
    for &g in &gone {
        for _ in 0..stride {
            if let Some(item) = items.next() {
                if !g {
                    rows.push(item);
                }
            }
        }
    }
    let rows = rows.finish();
    let kept: Vec<Option<i64>> = deadlines
        .iter()
        .zip(&gone)
        .filter_map(|(&at, &g)| (!g).then_some(at))
        .collect();
    *p = with_deadlines(rows.view(), stride, &kept);
    removed
}

/// Member deadlines kept across a change of a block's rows: the members
/// (each row's first element) that have one, sorted for lookup.
pub struct Kept(Vec<(Vec<u8>, i64)>);

impl Kept {
    /// Takes the deadlines out of `p`, leaving its rows alone; `None` if
    /// it has none (nothing to keep).
    pub fn take(p: &mut Packed, stride: usize) -> Option<Kept> {
        let view = p.view();
        if !view.has_preamble() {
            return None;
        }
        let kept = view
            .items(stride)
            .step_by(stride)
            .zip(all(view))
            .filter_map(|(member, at)| Some((member.to_vec(), at?)))
            .collect();
        *p = with_deadlines(view, stride, &[]);
        Some(Kept::new(kept))
    }

    /// Deadlines to put on members (a file's, say).
    pub fn new(mut deadlines: Vec<(Vec<u8>, i64)>) -> Kept {
        deadlines.sort_unstable();
        Kept(deadlines)
    }

    /// The deadline kept for `member`.
    pub fn get(&self, member: &[u8]) -> Option<i64> {
        let i = self
            .0
            .binary_search_by(|(m, _)| m.as_slice().cmp(member))
            .ok()?;
        Some(self.0[i].1)
    }

    /// Puts the kept deadlines back on `p`'s rows, by member (a member no
    /// longer there has lost its own).
    pub fn restore(&self, p: &mut Packed, stride: usize) {
        let view = p.view();
        let deadlines: Vec<Option<i64>> = view
            .items(stride)
            .step_by(stride)
            .map(|member: Item<'_>| member.with_bytes(|m| self.get(m)))
            .collect();
        *p = with_deadlines(view, stride, &deadlines);
    }

    /// The members and their deadlines.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.0.iter().map(|(m, at)| (m.as_slice(), *at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Set, SetLimits, ZLimits, ZSet};
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    /// What the random check does to a set or a sorted set.
    trait Members {
        fn add(&mut self, member: &[u8], rng: &mut impl Rng) -> bool;
        fn remove(&mut self, member: &[u8]) -> bool;
        fn set_ttl(&mut self, member: &[u8], at: Option<i64>) -> bool;
        fn remove_due(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>>;
        fn ttl(&self, member: &[u8]) -> Option<Option<i64>>;
        fn earliest(&self) -> Option<i64>;
        fn count(&self) -> usize;
        fn len(&self) -> usize;
        fn with_ttls(&self) -> Vec<(Vec<u8>, Option<i64>)>;
    }

    impl Members for Set {
        fn add(&mut self, member: &[u8], _: &mut impl Rng) -> bool {
            let limits = SetLimits {
                intset_entries: 10,
                listpack_entries: 8,
                listpack_value: 4,
            };
            Set::add(self, member, limits)
        }
        fn remove(&mut self, member: &[u8]) -> bool {
            Set::remove(self, member)
        }
        fn set_ttl(&mut self, member: &[u8], at: Option<i64>) -> bool {
            self.set_member_ttl(member, at)
        }
        fn remove_due(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
            Set::remove_due(self, now_ms, max)
        }
        fn ttl(&self, member: &[u8]) -> Option<Option<i64>> {
            self.view().member_ttl(member)
        }
        fn earliest(&self) -> Option<i64> {
            self.view().earliest_member_ttl()
        }
        fn count(&self) -> usize {
            self.view().member_ttl_count()
        }
        fn len(&self) -> usize {
            Set::len(self)
        }
        fn with_ttls(&self) -> Vec<(Vec<u8>, Option<i64>)> {
            let v = self.view();
            let mut all: Vec<_> = v
                .iter_with_ttls_from(0)
                .map(|(m, at)| (m.to_vec(), at))
                .collect();
            all.sort();
            all
        }
    }

    impl Members for ZSet {
        fn add(&mut self, member: &[u8], rng: &mut impl Rng) -> bool {
            let limits = ZLimits {
                entries: 8,
                value: 4,
            };
            self.insert(member, f64::from(rng.gen_range(0..4)), limits)
        }
        fn remove(&mut self, member: &[u8]) -> bool {
            ZSet::remove(self, member).is_some()
        }
        fn set_ttl(&mut self, member: &[u8], at: Option<i64>) -> bool {
            self.set_member_ttl(member, at)
        }
        fn remove_due(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
            ZSet::remove_due(self, now_ms, max)
        }
        fn ttl(&self, member: &[u8]) -> Option<Option<i64>> {
            self.view().member_ttl(member)
        }
        fn earliest(&self) -> Option<i64> {
            self.view().earliest_member_ttl()
        }
        fn count(&self) -> usize {
            self.view().member_ttl_count()
        }
        fn len(&self) -> usize {
            ZSet::len(self)
        }
        fn with_ttls(&self) -> Vec<(Vec<u8>, Option<i64>)> {
            let v = self.view();
            let mut all: Vec<_> = [(0, false), (0, true), (1, false), (1, true)]
                .into_iter()
                .flat_map(|(start, rev)| {
                    v.iter_with_ttls_from(start.min(self.len()), rev)
                        .map(|(e, at)| (e.member.to_vec(), at))
                })
                .collect();
            // Both directions, from the first entry and the second: every
            // member, each time with its own deadline.
            all.sort();
            all.dedup();
            all
        }
    }

    /// Random adds, removals, deadlines and expiry on a small set or
    /// sorted set (crossing between intset, listpack and table or tree)
    /// against a map of members to deadlines.
    fn follows_the_model<T: Members + Default>(seed: u64) {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        for _ in 0..40 {
            let mut value = T::default();
            let mut model: BTreeMap<Vec<u8>, Option<i64>> = BTreeMap::new();
            for _ in 0..150 {
                let n = rng.gen_range(0..14);
                let member = match rng.gen_range(0..3) {
                    0 => format!("m{n}"),
                    1 => format!("long-member-{n}"),
                    _ => n.to_string(),
                }
                .into_bytes();
                match rng.gen_range(0..6) {
                    0 | 1 => {
                        let new = value.add(&member, &mut rng);
                        assert_eq!(new, !model.contains_key(&member));
                        model.entry(member).or_insert(None);
                    }
                    2 => assert_eq!(value.remove(&member), model.remove(&member).is_some()),
                    3 | 4 => {
                        let at = rng.gen_bool(0.8).then(|| rng.gen_range(1_000..1_040));
                        let there = model.get_mut(&member).map(|d| *d = at).is_some();
                        assert_eq!(value.set_ttl(&member, at), there);
                    }
                    _ => {
                        let now = rng.gen_range(1_000..1_040);
                        let due = model.values().flatten().filter(|&&at| at <= now).count();
                        let gone = value.remove_due(now, 3);
                        assert_eq!(gone.len(), due.min(3));
                        let mut last = i64::MIN;
                        for m in gone {
                            let at = model.remove(&m).flatten().unwrap();
                            assert!(at <= now && at >= last);
                            last = at;
                        }
                    }
                }
                assert_eq!(value.len(), model.len());
                for (m, at) in &model {
                    assert_eq!(value.ttl(m), Some(*at), "{m:?}");
                }
                assert_eq!(value.earliest(), model.values().flatten().min().copied());
                assert_eq!(value.count(), model.values().flatten().count());
                if !model.is_empty() {
                    let expected: Vec<_> = model.iter().map(|(m, at)| (m.clone(), *at)).collect();
                    assert_eq!(value.with_ttls(), expected);
                }
            }
        }
    }

    #[test]
    fn set_member_deadlines_follow_their_members() {
        follows_the_model::<Set>(40);
    }

    #[test]
    fn sorted_set_member_deadlines_follow_their_members() {
        follows_the_model::<ZSet>(41);
    }

    fn block(members: &[&str]) -> Packed {
        Packed::from_items(1, members.iter().map(|m| Item::bytes(m.as_bytes())))
    }

    #[test]
    fn deadlines_read_back_by_row_and_leave_the_rows_alone() {
        let p = block(&["a", "b", "17", "c"]);
        let at = 1_795_000_000_000;
        let deadlines = [Some(at + 5), None, Some(at), Some(at + 3_600_000)];
        let q = with_deadlines(p.view(), 1, &deadlines);
        assert!(q.view().has_preamble());
        assert_eq!(all(q.view()), deadlines);
        assert_eq!(earliest(q.view()), Some(at));
        assert_eq!(count(q.view()), 3);
        assert_eq!(of_row(q.view(), 1), None);
        assert_eq!(of_row(q.view(), 3), Some(at + 3_600_000));
        let rows: Vec<Vec<u8>> = q.items(1).map(|i| i.to_vec()).collect();
        assert_eq!(rows, [&b"a"[..], b"b", b"17", b"c"]);
        // Members sharing a deadline cost a byte each.
        let shared = with_deadlines(p.view(), 1, &[Some(at); 4]);
        assert_eq!(shared.allocated(), p.allocated() + 1 + 6 + 4);
        // None left: no preamble, the plain block.
        let plain = with_deadlines(q.view(), 1, &[None; 4]);
        assert_eq!(plain.view().bytes(), p.view().bytes());
        assert_eq!(earliest(plain.view()), None);
    }

    #[test]
    fn kept_deadlines_follow_their_members_through_a_change() {
        let at = 1_795_000_000_000;
        let mut p = with_deadlines(
            block(&["a", "b", "c"]).view(),
            1,
            &[Some(at), None, Some(at + 1)],
        );
        let kept = Kept::take(&mut p, 1).unwrap();
        assert!(!p.view().has_preamble());
        // The rows change: "a" goes, "d" comes first, "c" moves.
        let mut changed = block(&["d", "c", "b"]);
        kept.restore(&mut changed, 1);
        assert_eq!(all(changed.view()), [None, Some(at + 1), None]);
        assert_eq!(kept.get(b"a"), Some(at));
        assert!(Kept::take(&mut block(&["x"]), 1).is_none());
    }
}
