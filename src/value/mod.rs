//! The values a key can hold: owned (`Value`, moved in and out of the
//! keyspace) and borrowed (`ValueRef`, what lookups hand to commands).
//!
//! Aggregates other than lists are boxed so a `Value` stays small: most
//! values in a keyspace are strings.

pub mod effort;
pub mod elem;
pub mod field_ttl;
pub mod hash;
pub mod list;
pub mod listpack;
pub mod packed;
pub mod packed_ttl;
pub mod set;
pub mod stream;
pub mod zset;
pub mod ztree;

pub use hash::{Hash, HashRef, OnSet, PackLimits};
pub use list::{List, ListLimits};
pub use packed::{canonical_int, Item};
pub use set::{Set, SetLimits, SetRef};
pub use stream::Stream;
pub use zset::{ZLimits, ZSet, ZSetRef};

/// A stored value. Strings are binary-safe bytes, copied out of the read
/// buffer so a stored value never pins a client's buffer. Aggregates are
/// boxed: a `Value` is 24 bytes, the size of a string's `Vec` (the tag fits
/// in the `Vec`'s unused capacity bits).
#[derive(Clone)]
pub enum Value {
    Str(Vec<u8>),
    /// A list: elements in order, pushes and pops at both ends O(1).
    List(List),
    Hash(Hash),
    Set(Set),
    ZSet(ZSet),
    Stream(Box<Stream>),
}

/// A value borrowed from the keyspace.
#[derive(Clone, Copy)]
pub enum ValueRef<'a> {
    Str(&'a [u8]),
    List(&'a List),
    Hash(HashRef<'a>),
    Set(SetRef<'a>),
    ZSet(ZSetRef<'a>),
    Stream(&'a Stream),
}

const _: () = assert!(std::mem::size_of::<Value>() == 24);

impl Value {
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Str(s) => ValueRef::Str(s),
            Value::List(l) => ValueRef::List(l),
            Value::Hash(h) => ValueRef::Hash(h.view()),
            Value::Set(s) => ValueRef::Set(s.view()),
            Value::ZSet(z) => ValueRef::ZSet(z.view()),
            Value::Stream(s) => ValueRef::Stream(s),
        }
    }

    /// An aggregate with no elements left (Redis deletes those keys).
    pub fn is_empty_aggregate(&self) -> bool {
        self.as_ref().is_empty_aggregate()
    }

    /// Element expiry: removes a hash's fields or a (sorted) set's
    /// members whose deadline is at or before `now_ms`, earliest first, at
    /// most `max`; what went.
    pub fn remove_due_members(&mut self, now_ms: i64, max: usize) -> Vec<Vec<u8>> {
        match self {
            Value::Hash(h) => h.remove_due(now_ms, max),
            Value::Set(s) => s.remove_due(now_ms, max),
            Value::ZSet(z) => z.remove_due(now_ms, max),
            _ => Vec::new(),
        }
    }
}

impl ValueRef<'_> {
    /// The earliest deadline among a hash's fields or a (sorted) set's
    /// members (O(1)).
    pub fn earliest_member_ttl(self) -> Option<i64> {
        match self {
            ValueRef::Hash(h) => h.earliest_field_ttl(),
            ValueRef::Set(s) => s.earliest_member_ttl(),
            ValueRef::ZSet(z) => z.earliest_member_ttl(),
            _ => None,
        }
    }

    /// A copy without the fields or members due at `now_ms`, if any is
    /// (what a replica's clients read before the primary deletes them).
    pub fn without_members_due(self, now_ms: i64) -> Option<Value> {
        if self.earliest_member_ttl().is_none_or(|at| at > now_ms) {
            return None;
        }
        match self {
            ValueRef::Hash(h) => Some(Value::Hash(h.without_fields_due(now_ms))),
            ValueRef::Set(s) => Some(Value::Set(s.without_members_due(now_ms))),
            ValueRef::ZSet(z) => Some(Value::ZSet(z.without_members_due(now_ms))),
            _ => None,
        }
    }

    /// An aggregate with no elements left (Redis deletes those keys).
    pub fn is_empty_aggregate(&self) -> bool {
        match self {
            ValueRef::Str(_) => false,
            ValueRef::List(l) => l.is_empty(),
            ValueRef::Hash(h) => h.is_empty(),
            ValueRef::Set(s) => s.is_empty(),
            ValueRef::ZSet(z) => z.is_empty(),
            // An emptied stream stays (its IDs and groups matter).
            ValueRef::Stream(_) => false,
        }
    }

    /// The name TYPE replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            ValueRef::Str(_) => "string",
            ValueRef::List(_) => "list",
            ValueRef::Hash(_) => "hash",
            ValueRef::Set(_) => "set",
            ValueRef::ZSet(_) => "zset",
            ValueRef::Stream(_) => "stream",
        }
    }

    /// The name OBJECT ENCODING replies with: Redis's name for the structure
    /// closest to what lapse actually holds. Strings follow Redis's own rule
    /// (an integer that fits, up to 44 bytes, or longer); aggregates have
    /// one representation each: a deque of elements (Redis's `quicklist`, a
    /// list of chunks), a hash table, and a hash table threaded by a
    /// balanced tree (Redis's `skiplist`: dict plus ordered index).
    pub fn encoding(&self) -> &'static str {
        match self {
            ValueRef::Str(s) => {
                let is_int = s.len() <= 20
                    && crate::protocol::request::parse_i64(s).is_some_and(|n| {
                        let mut tmp = [0u8; 20];
                        crate::protocol::reply::format_i64(n, &mut tmp) == *s
                    });
                if is_int {
                    "int"
                } else if s.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            ValueRef::List(_) => "quicklist",
            ValueRef::Hash(h) => h.encoding(),
            ValueRef::Set(s) => s.encoding(),
            ValueRef::ZSet(z) => z.encoding(),
            ValueRef::Stream(_) => "stream",
        }
    }

    pub fn to_owned(self) -> Value {
        match self {
            ValueRef::Str(s) => Value::Str(s.to_vec()),
            ValueRef::List(l) => Value::List((*l).clone()),
            ValueRef::Hash(h) => Value::Hash(h.to_hash()),
            ValueRef::Set(s) => Value::Set(s.to_set()),
            ValueRef::ZSet(z) => Value::ZSet(z.to_zset()),
            ValueRef::Stream(s) => Value::Stream(Box::new((*s).clone())),
        }
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_ref().fmt(f)
    }
}

impl std::fmt::Debug for ValueRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueRef::Str(s) => write!(f, "Str({:?})", String::from_utf8_lossy(s)),
            ValueRef::List(l) => write!(f, "List(len {})", l.len()),
            ValueRef::Hash(h) => write!(f, "Hash(len {})", h.len()),
            ValueRef::Set(s) => write!(f, "Set(len {})", s.len()),
            ValueRef::ZSet(z) => write!(f, "ZSet({z:?})"),
            ValueRef::Stream(s) => write!(f, "Stream(len {})", s.len()),
        }
    }
}

/// Equal content (what tests compare); O(n) for aggregates.
impl PartialEq for ValueRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ValueRef::Str(a), ValueRef::Str(b)) => a == b,
            (ValueRef::List(a), ValueRef::List(b)) => a == b,
            (ValueRef::Hash(a), ValueRef::Hash(b)) => {
                a.len() == b.len() && a.iter().all(|(f, v)| f.with_bytes(|f| b.get(f) == Some(v)))
            }
            (ValueRef::Set(a), ValueRef::Set(b)) => {
                a.len() == b.len() && a.iter().all(|m| m.with_bytes(|m| b.contains(m)))
            }
            (ValueRef::ZSet(a), ValueRef::ZSet(b)) => {
                a.len() == b.len()
                    && a.iter_from(0, false)
                        .all(|e| e.member.with_bytes(|m| b.score(m)) == Some(e.score))
            }
            (ValueRef::Stream(a), ValueRef::Stream(b)) => a.same_content(b),
            _ => false,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.as_ref() == other.as_ref()
    }
}

/// About how many bytes an element's text takes (an integer: 8).
fn item_bytes(item: &packed::Item<'_>) -> usize {
    match item {
        packed::Item::Str(prefix, rest) => prefix.len() + rest.len(),
        packed::Item::Int(_) | packed::Item::Double(_) => 8,
    }
}

/// Bytes per element a table, tree or list spends beyond the elements'
/// own text (node, links, allocation headers), for `memory_usage`.
const ELEMENT_OVERHEAD_BYTES: usize = 48;

impl ValueRef<'_> {
    /// MEMORY USAGE's estimate of the value's heap bytes: exact for
    /// strings and packed encodings; for the others the average of the
    /// first `samples` elements (all when 0) times their number, plus a
    /// per-element overhead — Redis's way of sizing big values cheaply.
    pub fn memory_usage(&self, samples: usize) -> usize {
        let take = if samples == 0 { usize::MAX } else { samples };
        let scaled = |sum: usize, seen: usize, len: usize| -> usize {
            let average = sum.checked_div(seen).unwrap_or(0);
            (average + ELEMENT_OVERHEAD_BYTES) * len
        };
        match self {
            ValueRef::Str(s) => s.len(),
            ValueRef::Stream(s) => s.heap_bytes(),
            ValueRef::Hash(HashRef::Packed(p))
            | ValueRef::Set(SetRef::Packed(p))
            | ValueRef::ZSet(ZSetRef::Packed(p)) => p.bytes().len(),
            ValueRef::Hash(h) => {
                let (mut sum, mut seen) = (0, 0);
                for (field, value) in h.iter().take(take) {
                    sum += item_bytes(&field) + item_bytes(&value);
                    seen += 1;
                }
                scaled(sum, seen, h.len())
            }
            ValueRef::Set(set) => {
                let (mut sum, mut seen) = (0, 0);
                for member in set.iter().take(take) {
                    sum += item_bytes(&member);
                    seen += 1;
                }
                scaled(sum, seen, set.len())
            }
            ValueRef::ZSet(z) => {
                let (mut sum, mut seen) = (0, 0);
                for entry in z.iter_from(0, false).take(take) {
                    sum += item_bytes(&entry.member) + 8;
                    seen += 1;
                }
                scaled(sum, seen, z.len())
            }
            // Lists live in 8 KiB packed chunks.
            ValueRef::List(l) => l.chunk_count() * 8 * 1024,
        }
    }
}

/// Every field with its value and deadline, sorted (what tests compare).
#[cfg(test)]
pub(crate) fn sorted_triples(value: &Value) -> Vec<hash::Triple> {
    let ValueRef::Hash(h) = value.as_ref() else {
        panic!("a hash");
    };
    let mut all: Vec<hash::Triple> = h
        .iter_with_ttls_from(0)
        .map(|(f, v, at)| (f.to_vec(), v.to_vec(), at))
        .collect();
    all.sort();
    all
}
