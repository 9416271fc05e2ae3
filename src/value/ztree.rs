//! `ZTree`: a big sorted set (Redis's `skiplist` encoding; small ones are
//! packed, see `zset`). Members are unique; the order is (score, member),
//! members compared bytewise, as in Redis.
//!
//! One storage serves both of Redis's structures: a `Dict<ZNode>` finds a
//! member in O(1) (ZSCORE, ZADD's existence check), and its nodes are also
//! the nodes of a treap, a binary search tree kept balanced by random
//! priorities, whose subtree sizes give O(log n) rank, select, counts and
//! the start of any range. A skiplist would do the same with pointers; a
//! treap over dict indices needs no `unsafe` and no second copy of members.
//!
//! Child links are dict indices. The dict keeps its entries dense by moving
//! the last entry into a removed one's place; `remove` repairs the single
//! link that pointed at the moved entry.
//!
//! Scores are never NaN (commands reject it) and -0 is stored as 0, so
//! `f64::total_cmp` is the order Redis uses.

use std::cmp::Ordering;

use super::elem::Elem;
use super::field_ttl::TtlDict;
use crate::dict::{DictEntry, Moved};

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct ZNode {
    pub member: Elem,
    pub score: f64,
    left: u32,
    right: u32,
    /// Nodes in this subtree, this one included.
    size: u32,
    /// Heap priority: a parent's is at least its children's.
    prio: u32,
}

impl DictEntry for ZNode {
    fn key(&self) -> &[u8] {
        self.member.as_bytes()
    }
}

impl ZNode {
    /// This node's place relative to (`score`, `member`).
    pub fn cmp_to(&self, score: f64, member: &[u8]) -> Ordering {
        self.score
            .total_cmp(&score)
            .then_with(|| self.member.as_bytes().cmp(member))
    }
}

#[derive(Clone)]
pub struct ZTree {
    /// The nodes, with member deadlines (lapse's ZEXPIRE family) once any
    /// has one.
    dict: TtlDict<ZNode>,
    root: u32,
    /// xorshift state for node priorities, seeded randomly per set so a
    /// client cannot choose members that unbalance the tree.
    rng: u64,
}

impl Default for ZTree {
    fn default() -> Self {
        Self {
            dict: TtlDict::default(),
            root: NIL,
            rng: rand::random::<u64>() | 1,
        }
    }
}

impl std::fmt::Debug for ZTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter_from(0, false)).finish()
    }
}

impl ZTree {
    pub fn len(&self) -> usize {
        self.dict.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dict.is_empty()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.dict.find(member).map(|i| self.node(i).score)
    }

    /// Adds `member` or moves it to `score`. Returns true if it was new.
    pub fn insert(&mut self, member: &[u8], score: f64) -> bool {
        let score = score + 0.0; // -0 becomes 0
        if let Some(x) = self.dict.find(member) {
            if self.node(x).score.total_cmp(&score) != Ordering::Equal {
                self.root = self.detach(self.root, x);
                let node = self.dict.entry_mut(x);
                node.score = score;
                (node.left, node.right, node.size) = (NIL, NIL, 1);
                self.root = self.attach(self.root, x);
            }
            return false;
        }
        let prio = self.next_prio();
        let x = self.dict.insert_new(ZNode {
            member: Elem::new(member),
            score,
            left: NIL,
            right: NIL,
            size: 1,
            prio,
        });
        self.root = self.attach(self.root, x);
        true
    }

    /// `member`'s deadline: `None` if it is not a member.
    pub fn member_ttl(&self, member: &[u8]) -> Option<Option<i64>> {
        let x = self.dict.find(member)?;
        Some(self.dict.ttl_of(x))
    }

    /// Sets or removes `member`'s deadline; false if it is not a member.
    pub fn set_member_ttl(&mut self, member: &[u8], at_ms: Option<i64>) -> bool {
        let Some(x) = self.dict.find(member) else {
            return false;
        };
        self.dict.set_ttl(x, at_ms);
        true
    }

    /// The earliest member deadline.
    pub fn earliest_member_ttl(&self) -> Option<i64> {
        self.dict.earliest().map(|(_, at)| at)
    }

    /// Members with a deadline.
    pub fn member_ttl_count(&self) -> usize {
        self.dict.ttl_count()
    }

    /// Removes the members due at `now_ms`, earliest first, at most
    /// `max`; the members removed.
    pub fn remove_due(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
        let mut gone = Vec::new();
        while gone.len() < max {
            let Some((x, at)) = self.dict.earliest() else {
                break;
            };
            if at > now_ms {
                break;
            }
            gone.push(self.remove_at(x).member.as_bytes().to_vec());
        }
        gone
    }

    /// Removes `member`, returning its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let x = self.dict.find(member)?;
        Some(self.remove_at(x).score)
    }

    /// Rank (0-based, ascending) of `member`.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let x = self.dict.find(member)?;
        let mut rank = 0;
        let mut t = self.root;
        while t != x && t != NIL {
            if self.before(x, t) {
                t = self.node(t).left;
            } else {
                rank += self.size(self.node(t).left) + 1;
                t = self.node(t).right;
            }
        }
        Some(rank + self.size(self.node(x).left))
    }

    /// How many members come before a bound, given as `before(node)`: true
    /// for every node strictly before it (a prefix of the order).
    pub fn count_before(&self, before: impl Fn(&ZNode) -> bool) -> usize {
        let mut n = 0;
        let mut t = self.root;
        while t != NIL {
            let node = self.node(t);
            if before(node) {
                n += self.size(node.left) + 1;
                t = node.right;
            } else {
                t = node.left;
            }
        }
        n
    }

    /// The members from position `start` on, in ascending order, or in
    /// descending order when `rev` (then position 0 is the last member).
    /// O(log n) to start, then O(1) amortised per member; use `take` to stop.
    pub fn iter_from(&self, start: usize, rev: bool) -> TreeIter<'_> {
        let mut iter = TreeIter {
            set: self,
            stack: Vec::new(),
            remaining: self.len().saturating_sub(start),
            rev,
        };
        let mut k = start;
        let mut t = if iter.remaining > 0 { self.root } else { NIL };
        while t != NIL {
            let (near, far) = iter.children(t);
            let near_size = self.size(near);
            if k <= near_size {
                iter.stack.push(t);
                if k == near_size {
                    break;
                }
                t = near;
            } else {
                k -= near_size + 1;
                t = far;
            }
        }
        iter
    }

    /// Removes and returns the first (`max` false) or last member.
    pub fn pop(&mut self, max: bool) -> Option<(Elem, f64)> {
        let x = self.iter_from(0, max).next_index()?;
        let node = self.remove_at(x);
        Some((node.member, node.score))
    }

    /// A uniformly random member. O(1).
    pub fn random(&self, rng: &mut impl rand::Rng) -> Option<&ZNode> {
        (!self.is_empty()).then(|| self.node(rng.gen_range(0..self.len()) as u32))
    }

    /// The node at dict index `i` (`i < len`): with `len`, a way to pick
    /// members at random.
    pub fn node_at(&self, i: u32) -> &ZNode {
        self.node(i)
    }

    pub fn nodes(&self) -> impl Iterator<Item = &ZNode> {
        self.dict.iter().map(|(_, n)| n)
    }

    /// One SCAN step over the members (see `Dict::scan_step`).
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&ZNode)) -> u64 {
        let dict = &self.dict;
        dict.scan_step(cursor, |i| visit(dict.entry(i)))
    }

    /// Empties the set in slices (see `Dict::clear_paced`).
    pub fn clear_paced(&mut self, tick: &mut dyn FnMut(), release: &mut dyn FnMut(*mut u8, usize)) {
        self.dict.clear_paced(tick, release);
        self.root = NIL;
    }

    fn node(&self, i: u32) -> &ZNode {
        self.dict.entry(i)
    }

    fn size(&self, t: u32) -> usize {
        if t == NIL {
            0
        } else {
            self.node(t).size as usize
        }
    }

    fn update_size(&mut self, t: u32) {
        let node = self.node(t);
        let size = 1 + self.size(node.left) + self.size(node.right);
        self.dict.entry_mut(t).size = size as u32;
    }

    /// Whether node `a` comes before node `b`.
    fn before(&self, a: u32, b: u32) -> bool {
        let b = self.node(b);
        self.node(a).cmp_to(b.score, b.member.as_bytes()) == Ordering::Less
    }

    fn next_prio(&mut self) -> u32 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    /// Inserts the detached node `x` into subtree `t`; returns the new root.
    fn attach(&mut self, t: u32, x: u32) -> u32 {
        if t == NIL {
            return x;
        }
        if self.node(x).prio > self.node(t).prio {
            let (l, r) = self.split(t, x);
            let node = self.dict.entry_mut(x);
            (node.left, node.right) = (l, r);
            self.update_size(x);
            return x;
        }
        if self.before(x, t) {
            let l = self.attach(self.node(t).left, x);
            self.dict.entry_mut(t).left = l;
        } else {
            let r = self.attach(self.node(t).right, x);
            self.dict.entry_mut(t).right = r;
        }
        self.update_size(t);
        t
    }

    /// Splits subtree `t` into the nodes before `x` and those after it.
    fn split(&mut self, t: u32, x: u32) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.before(t, x) {
            let (l, r) = self.split(self.node(t).right, x);
            self.dict.entry_mut(t).right = l;
            self.update_size(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.node(t).left, x);
            self.dict.entry_mut(t).left = r;
            self.update_size(t);
            (l, t)
        }
    }

    /// Joins subtrees `a` and `b`, every node of `a` before every node of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.node(a).prio > self.node(b).prio {
            let r = self.merge(self.node(a).right, b);
            self.dict.entry_mut(a).right = r;
            self.update_size(a);
            a
        } else {
            let l = self.merge(a, self.node(b).left);
            self.dict.entry_mut(b).left = l;
            self.update_size(b);
            b
        }
    }

    /// Takes node `x` out of subtree `t` (the node stays in the dict);
    /// returns the new root.
    fn detach(&mut self, t: u32, x: u32) -> u32 {
        if t == NIL {
            return NIL;
        }
        if t == x {
            let node = self.node(x);
            return self.merge(node.left, node.right);
        }
        if self.before(x, t) {
            let l = self.detach(self.node(t).left, x);
            self.dict.entry_mut(t).left = l;
        } else {
            let r = self.detach(self.node(t).right, x);
            self.dict.entry_mut(t).right = r;
        }
        self.update_size(t);
        t
    }

    fn remove_at(&mut self, x: u32) -> ZNode {
        self.root = self.detach(self.root, x);
        let (node, moved) = self.dict.remove_at(x);
        if let Some(Moved { from, to }) = moved {
            self.relink(from, to);
        }
        node
    }

    /// Points the link that referred to `from` at `to`, where the dict has
    /// just moved that node.
    fn relink(&mut self, from: u32, to: u32) {
        if self.root == from {
            self.root = to;
            return;
        }
        let mut t = self.root;
        while t != NIL {
            let node = self.node(t);
            let go_left = self.before(to, t);
            let child = if go_left { node.left } else { node.right };
            if child == from {
                let node = self.dict.entry_mut(t);
                if go_left {
                    node.left = to;
                } else {
                    node.right = to;
                }
                return;
            }
            t = child;
        }
    }

    #[cfg(test)]
    fn check(&self) {
        fn walk(s: &ZTree, t: u32, out: &mut Vec<u32>) -> usize {
            if t == NIL {
                return 0;
            }
            let n = s.node(t);
            for c in [n.left, n.right] {
                assert!(c == NIL || s.node(c).prio <= n.prio);
            }
            let l = walk(s, n.left, out);
            out.push(t);
            let r = walk(s, n.right, out);
            assert_eq!(n.size as usize, l + r + 1);
            l + r + 1
        }
        let mut order = Vec::new();
        assert_eq!(walk(self, self.root, &mut order), self.len());
        for w in order.windows(2) {
            assert!(self.before(w[0], w[1]));
        }
    }
}

/// In-order iterator over a rank range (see `ZTree::iter_range`).
pub struct TreeIter<'a> {
    set: &'a ZTree,
    /// Nodes still to visit, next on top, each with its far subtree pending.
    stack: Vec<u32>,
    remaining: usize,
    rev: bool,
}

impl TreeIter<'_> {
    /// (near, far) children in the walking direction.
    fn children(&self, t: u32) -> (u32, u32) {
        let node = self.set.node(t);
        if self.rev {
            (node.right, node.left)
        } else {
            (node.left, node.right)
        }
    }

    fn next_index(&mut self) -> Option<u32> {
        if self.remaining == 0 {
            return None;
        }
        let t = self.stack.pop()?;
        self.remaining -= 1;
        let mut c = self.children(t).1;
        while c != NIL {
            self.stack.push(c);
            c = self.children(c).0;
        }
        Some(t)
    }
}

impl<'a> Iterator for TreeIter<'a> {
    type Item = &'a ZNode;

    fn next(&mut self) -> Option<&'a ZNode> {
        let set = self.set;
        self.next_index().map(|t| set.node(t))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    fn members(z: &ZTree, from: usize, to: usize, rev: bool) -> Vec<String> {
        z.iter_from(from, rev)
            .take(to - from)
            .map(|n| String::from_utf8_lossy(n.member.as_bytes()).into_owned())
            .collect()
    }

    #[test]
    fn matches_a_sorted_model_under_random_edits() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut z = ZTree::default();
        // model: member -> score
        let mut model: BTreeMap<String, i64> = BTreeMap::new();
        for step in 0..20_000 {
            let m = format!("m{}", rng.gen_range(0..500));
            match rng.gen_range(0..3) {
                0 | 1 => {
                    let score = rng.gen_range(-20..20);
                    assert_eq!(
                        z.insert(m.as_bytes(), score as f64),
                        !model.contains_key(&m)
                    );
                    model.insert(m, score);
                }
                _ => {
                    assert_eq!(z.remove(m.as_bytes()), model.remove(&m).map(|s| s as f64));
                }
            }
            if step % 1000 == 0 {
                z.check();
            }
            let mut sorted: Vec<(i64, &String)> = model.iter().map(|(m, s)| (*s, m)).collect();
            sorted.sort();
            if step % 97 == 0 {
                let all: Vec<String> = sorted.iter().map(|(_, m)| (*m).clone()).collect();
                assert_eq!(members(&z, 0, z.len(), false), all);
                let mut rev = all.clone();
                rev.reverse();
                assert_eq!(members(&z, 0, z.len(), true), rev);
                if all.len() > 10 {
                    assert_eq!(members(&z, 3, 8, false), all[3..8].to_vec());
                    assert_eq!(members(&z, 3, 8, true), rev[3..8].to_vec());
                }
                for (rank, (_, m)) in sorted.iter().enumerate().step_by(7) {
                    assert_eq!(z.rank(m.as_bytes()), Some(rank));
                }
                let below_zero = sorted.iter().filter(|(s, _)| *s < 0).count();
                assert_eq!(z.count_before(|n| n.score < 0.0), below_zero);
            }
        }
        z.check();
        while let Some((m, _)) = z.pop(false) {
            let first = model.iter().map(|(m, s)| (*s, m.clone())).min().unwrap();
            assert_eq!(m.as_bytes(), first.1.as_bytes());
            model.remove(&first.1);
        }
        assert!(model.is_empty());
    }
}
