//! `Slot`: one key and its value, stored compactly.
//!
//! Most keys in a cache are short strings with short values. Those are kept
//! inline in the slot itself, key and value side by side, so such a key costs
//! no allocation at all. A longer string is kept joined to its key in one
//! allocation of their exact size, whatever the key's length; once edited
//! in place (APPEND, SETRANGE) it is held as a growable buffer instead, so
//! repeated appends stay cheap. A small packed hash, set or sorted set
//! whose block fits beside its key is kept inline the same way (most small
//! aggregates are a few tags or ids). A short key with any other value
//! keeps the key inline beside the value (the value then costs its own
//! allocation and nothing more). Anything bigger keeps its key and value
//! on the heap.
//! The slot is 40 bytes either way, and every form carries the key's
//! `Meta` (its string encoding and access history) in the same four bytes
//! after the tag: with the dict's link and the deadline position beside
//! it, a key costs one 48-byte node.
//!
//! An inline block is read in place (`value` lends it as a `PackedRef`);
//! to be changed it is first unpacked into an owned value (`value_mut`),
//! and `pack` puts it back inline once the change is done, if it still
//! fits (the `Db` calls it at the end of each command).

use super::access::Access;
use crate::value::packed::{Packed, PackedRef};
use crate::value::{Hash, HashRef, Set, SetRef, Value, ValueRef, ZSet, ZSetRef};

/// Key plus value bytes that fit inline.
pub const INLINE_CAP: usize = 33;
/// Key bytes that fit inline beside a value.
pub const SHORT_KEY_CAP: usize = 10;
/// Key plus packed block bytes that fit inline.
pub const PACKED_CAP: usize = 32;

/// What OBJECT ENCODING says of a string, where its bytes alone don't tell:
/// Redis's encoding follows the value's history, not just its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum StrEncoding {
    /// As a freshly stored argument: `int`, `embstr` or `raw` by content.
    #[default]
    Auto,
    /// Built from a formatted number (INCRBYFLOAT): `embstr` even if it
    /// reads as an integer (`raw` past 44 bytes).
    NotInt,
    /// Edited in place (APPEND, SETRANGE): `raw` whatever it holds.
    Raw,
}

/// What a key keeps beside its key and value, whatever form its slot
/// takes: kept when the value changes form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Meta {
    /// How Redis would have encoded a string value.
    pub encoding: StrEncoding,
    /// When it was last used, or how often (eviction).
    pub access: Access,
}

/// Which aggregate an inline block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackedKind {
    Hash,
    Set,
    ZSet,
}

/// `repr(u8)`: every form is a C struct after the one-byte tag, so `meta`
/// is at the same offset in all of them (reading it is one load).
#[repr(u8)]
pub enum Slot {
    /// A string value whose key and value together fit in `INLINE_CAP` bytes.
    Inline {
        meta: Meta,
        klen: u8,
        vlen: u8,
        buf: [u8; INLINE_CAP],
    },
    /// A packed hash, set or sorted set whose key and block together fit
    /// in `PACKED_CAP` bytes.
    Packed {
        meta: Meta,
        kind: PackedKind,
        klen: u8,
        blen: u8,
        buf: [u8; PACKED_CAP],
    },
    /// A string value that does not fit inline, after its key in one
    /// allocation.
    Joined {
        meta: Meta,
        klen: u32,
        bytes: Box<[u8]>,
    },
    /// Any value whose key fits in `SHORT_KEY_CAP` bytes.
    Short {
        meta: Meta,
        klen: u8,
        key: [u8; SHORT_KEY_CAP],
        value: Value,
    },
    /// Everything else.
    Heap { meta: Meta, held: Box<HeapSlot> },
}

pub struct HeapSlot {
    key: Box<[u8]>,
    value: Value,
}

impl Slot {
    /// A slot for a string value, inline when it fits.
    pub fn new_str(key: &[u8], value: &[u8]) -> Slot {
        Self::str_with(Meta::default(), key, value)
    }

    pub fn new(key: &[u8], value: Value) -> Slot {
        Self::with(Meta::default(), key, value)
    }

    /// Inline, joined, or (a string big enough for the lazyfree thread,
    /// which takes it whole) held.
    fn str_with(meta: Meta, key: &[u8], value: &[u8]) -> Slot {
        if let Some(inline) = Self::try_inline(meta, key, value) {
            return inline;
        }
        if crate::value::effort::is_big_string(value.len()) {
            return Self::boxed(meta, key, Value::Str(value.to_vec()));
        }
        Self::joined(meta, key, value)
    }

    fn with(meta: Meta, key: &[u8], value: Value) -> Slot {
        match &value {
            Value::Str(s) => Self::str_with(meta, key, s),
            other => packed_block(other)
                .and_then(|(kind, p)| Self::try_packed(meta, key, kind, p))
                .unwrap_or_else(|| Self::boxed(meta, key, value)),
        }
    }

    fn joined(meta: Meta, key: &[u8], value: &[u8]) -> Slot {
        let mut bytes = Vec::with_capacity(key.len() + value.len());
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        Slot::Joined {
            meta,
            // Keys are at most 512 MB (`proto-max-bulk-len`'s ceiling).
            klen: key.len() as u32,
            bytes: bytes.into_boxed_slice(),
        }
    }

    /// The key's encoding and access history.
    pub fn meta(&self) -> Meta {
        match self {
            Slot::Inline { meta, .. }
            | Slot::Packed { meta, .. }
            | Slot::Joined { meta, .. }
            | Slot::Short { meta, .. }
            | Slot::Heap { meta, .. } => *meta,
        }
    }

    pub fn meta_mut(&mut self) -> &mut Meta {
        match self {
            Slot::Inline { meta, .. }
            | Slot::Packed { meta, .. }
            | Slot::Joined { meta, .. }
            | Slot::Short { meta, .. }
            | Slot::Heap { meta, .. } => meta,
        }
    }

    /// A slot keeping `block` inline beside `key`, if both fit.
    fn try_packed(meta: Meta, key: &[u8], kind: PackedKind, block: PackedRef<'_>) -> Option<Slot> {
        let bytes = block.bytes();
        if key.len() + bytes.len() > PACKED_CAP {
            return None;
        }
        let mut buf = [0u8; PACKED_CAP];
        buf[..key.len()].copy_from_slice(key);
        buf[key.len()..key.len() + bytes.len()].copy_from_slice(bytes);
        Some(Slot::Packed {
            meta,
            kind,
            klen: key.len() as u8,
            blen: bytes.len() as u8,
            buf,
        })
    }

    /// Puts a packed value back inline if it fits now (after a change
    /// through `value_mut`); anything else stays as it is.
    pub fn pack(&mut self) {
        let packed = match self.held() {
            Some(value) => packed_block(value)
                .and_then(|(kind, p)| Self::try_packed(self.meta(), self.key(), kind, p)),
            None => None,
        };
        if let Some(packed) = packed {
            *self = packed;
        }
    }

    /// Whether a change could leave the value fit to be kept inline: it
    /// is inline already, or a packed aggregate held apart.
    pub fn may_pack(&self) -> bool {
        match self {
            Slot::Packed { .. } => true,
            Slot::Inline { .. } | Slot::Joined { .. } => false,
            Slot::Short { value, .. } => packed_block(value).is_some(),
            Slot::Heap { held, .. } => packed_block(&held.value).is_some(),
        }
    }

    /// A slot holding `value` itself: the key beside it if short enough.
    fn boxed(meta: Meta, key: &[u8], value: Value) -> Slot {
        if key.len() <= SHORT_KEY_CAP {
            let mut buf = [0u8; SHORT_KEY_CAP];
            buf[..key.len()].copy_from_slice(key);
            return Slot::Short {
                meta,
                klen: key.len() as u8,
                key: buf,
                value,
            };
        }
        Slot::Heap {
            meta,
            held: Box::new(HeapSlot {
                key: key.into(),
                value,
            }),
        }
    }

    /// The value for changing in place; `None` for inline strings (which
    /// are changed through `update_str`). An inline block is unpacked
    /// first (see `pack`).
    pub fn value_mut(&mut self) -> Option<&mut Value> {
        if let Slot::Packed { .. } | Slot::Joined { .. } = self {
            *self = Self::boxed(self.meta(), self.key(), self.to_value());
        }
        self.held_mut()
    }

    /// The value when it is held apart from the slot's bytes.
    fn held(&self) -> Option<&Value> {
        match self {
            Slot::Heap { held, .. } => Some(&held.value),
            Slot::Short { value, .. } => Some(value),
            Slot::Inline { .. } | Slot::Packed { .. } | Slot::Joined { .. } => None,
        }
    }

    fn held_mut(&mut self) -> Option<&mut Value> {
        match self {
            Slot::Heap { held, .. } => Some(&mut held.value),
            Slot::Short { value, .. } => Some(value),
            Slot::Inline { .. } | Slot::Packed { .. } | Slot::Joined { .. } => None,
        }
    }

    fn try_inline(meta: Meta, key: &[u8], value: &[u8]) -> Option<Slot> {
        if key.len() + value.len() > INLINE_CAP {
            return None;
        }
        let mut buf = [0u8; INLINE_CAP];
        buf[..key.len()].copy_from_slice(key);
        buf[key.len()..key.len() + value.len()].copy_from_slice(value);
        Some(Slot::Inline {
            meta,
            klen: key.len() as u8,
            vlen: value.len() as u8,
            buf,
        })
    }

    #[inline]
    pub fn key(&self) -> &[u8] {
        match self {
            Slot::Inline { klen, buf, .. } => &buf[..*klen as usize],
            Slot::Packed { klen, buf, .. } => &buf[..*klen as usize],
            Slot::Joined { klen, bytes, .. } => &bytes[..*klen as usize],
            Slot::Short { klen, key, .. } => &key[..*klen as usize],
            Slot::Heap { held, .. } => &held.key,
        }
    }

    pub fn value(&self) -> ValueRef<'_> {
        match self {
            Slot::Inline {
                klen, vlen, buf, ..
            } => {
                let k = *klen as usize;
                ValueRef::Str(&buf[k..k + *vlen as usize])
            }
            Slot::Packed {
                kind,
                klen,
                blen,
                buf,
                ..
            } => {
                let k = *klen as usize;
                let block = PackedRef::new(&buf[k..k + *blen as usize]);
                match kind {
                    PackedKind::Hash => ValueRef::Hash(HashRef::Packed(block)),
                    PackedKind::Set => ValueRef::Set(SetRef::Packed(block)),
                    PackedKind::ZSet => ValueRef::ZSet(ZSetRef::Packed(block)),
                }
            }
            Slot::Joined { klen, bytes, .. } => ValueRef::Str(&bytes[*klen as usize..]),
            Slot::Short { value, .. } => value.as_ref(),
            Slot::Heap { held, .. } => held.value.as_ref(),
        }
    }

    /// The earliest deadline among the value's fields or members: a
    /// string's forms answer without looking at the value (a write over
    /// one asks twice).
    #[inline]
    pub fn earliest_member_ttl(&self) -> Option<i64> {
        match self {
            Slot::Inline { .. } | Slot::Joined { .. } => None,
            _ => self.value().earliest_member_ttl(),
        }
    }

    /// Replaces the value with a string, reusing the slot.
    pub fn set_str(&mut self, value: &[u8]) {
        let stays_big = self.key().len() + value.len() > INLINE_CAP;
        // Reuse the allocation for a big string replaced by a big string.
        if let Some(Value::Str(s)) = self.held_mut() {
            if stays_big {
                s.clear();
                s.extend_from_slice(value);
                return;
            }
        }
        *self = Slot::str_with(self.meta(), self.key(), value);
    }

    /// Replaces the value, returning the old one.
    /// Heap values move out without a copy (a big aggregate is never cloned).
    pub fn replace(&mut self, value: Value) -> Value {
        let new = Slot::with(self.meta(), self.key(), value);
        std::mem::replace(self, new).into_value()
    }

    /// Takes out a value big enough for the lazyfree thread, leaving an
    /// empty string in its place. `None` (and nothing changed) otherwise.
    pub fn take_big_value(&mut self) -> Option<Value> {
        match self.held_mut() {
            Some(value) if crate::value::effort::is_big(value) => {
                Some(std::mem::replace(value, Value::Str(Vec::new())))
            }
            _ => None,
        }
    }

    /// The value as an owned `Value` (copies inline values).
    pub fn to_value(&self) -> Value {
        match self {
            Slot::Inline { .. } | Slot::Packed { .. } | Slot::Joined { .. } => {
                self.value().to_owned()
            }
            Slot::Short { value, .. } => value.clone(),
            Slot::Heap { held, .. } => held.value.clone(),
        }
    }

    /// Consumes the slot, returning its value without copying heap values.
    pub fn into_value(self) -> Value {
        match self {
            Slot::Heap { held, .. } => held.value,
            Slot::Short { value, .. } => value,
            inline => inline.to_value(),
        }
    }

    /// Runs `f` on the string value as a growable buffer, then stores the
    /// result (inline again if it fits). `None` if the value is not a string.
    /// Heap strings are edited in place, so appends stay amortised O(1).
    pub fn update_str<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> Option<R> {
        let klen = self.key().len();
        if let Some(value) = self.held_mut() {
            let Value::Str(s) = value else {
                return None;
            };
            let result = f(s);
            if klen + s.len() <= INLINE_CAP {
                let shrunk = std::mem::take(s);
                *self = Slot::str_with(self.meta(), self.key(), &shrunk);
            }
            return Some(result);
        }
        let ValueRef::Str(current) = self.value() else {
            return None;
        };
        let mut s = current.to_vec();
        let result = f(&mut s);
        // Held as a growable buffer from now on if it does not fit inline.
        let (meta, key) = (self.meta(), self.key());
        *self = Self::try_inline(meta, key, &s)
            .unwrap_or_else(|| Self::boxed(meta, key, Value::Str(s)));
        Some(result)
    }
}

/// A value's packed block, if it is a packed hash, set or sorted set.
fn packed_block(value: &Value) -> Option<(PackedKind, PackedRef<'_>)> {
    let (kind, p): (PackedKind, &Packed) = match value {
        Value::Hash(Hash::Packed(p)) => (PackedKind::Hash, p),
        Value::Set(Set::Packed(p)) => (PackedKind::Set, p),
        Value::ZSet(ZSet::Packed(p)) => (PackedKind::ZSet, p),
        _ => return None,
    };
    Some((kind, p.view()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_is_forty_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 40);
    }

    #[test]
    fn inline_and_heap_round_trip() {
        let small = Slot::new_str(b"key:1", b"0123456789abcdef");
        assert!(matches!(small, Slot::Inline { .. }));
        assert_eq!(small.key(), b"key:1");
        assert_eq!(small.value(), ValueRef::Str(b"0123456789abcdef"));
        let big_value = vec![7u8; 100];
        let mut big = Slot::new_str(b"key:2", &big_value);
        assert!(matches!(big, Slot::Joined { .. }));
        assert_eq!(big.value(), ValueRef::Str(&big_value));
        big.set_str(b"tiny");
        assert!(matches!(big, Slot::Inline { .. }));
        assert_eq!(big.key(), b"key:2");
    }

    #[test]
    fn update_moves_between_inline_and_heap() {
        let mut s = Slot::new_str(b"k", b"abc");
        s.update_str(|v| v.extend_from_slice(&[b'x'; 50]));
        assert!(matches!(s, Slot::Short { .. }));
        assert_eq!(
            s.value(),
            ValueRef::Str(&[&b"abc"[..], &[b'x'; 50]].concat())
        );
        s.update_str(|v| v.truncate(2));
        assert!(matches!(s, Slot::Inline { .. }));
        assert_eq!(s.value(), ValueRef::Str(b"ab"));
        assert_eq!(s.key(), b"k");
        assert_eq!(
            s.replace(Value::Str(b"new".to_vec())),
            Value::Str(b"ab".to_vec())
        );
        assert_eq!(s.into_value(), Value::Str(b"new".to_vec()));
    }

    #[test]
    fn a_long_key_goes_to_the_heap_with_its_value() {
        let key = [b'k'; SHORT_KEY_CAP + 1];
        let s = Slot::new(&key, Value::List(Default::default()));
        assert!(matches!(s, Slot::Heap { .. }));
        assert_eq!(s.key(), &key);
        let short = Slot::new(&key[..SHORT_KEY_CAP], Value::List(Default::default()));
        assert!(matches!(short, Slot::Short { .. }));
        assert_eq!(short.key(), &key[..SHORT_KEY_CAP]);
        assert_eq!(short.into_value(), Value::List(Default::default()));
    }

    #[test]
    fn a_string_too_long_to_fit_is_one_allocation_until_edited() {
        let key = [b'k'; 30];
        let mut s = Slot::new_str(&key, &[b'v'; 40]);
        s.meta_mut().encoding = StrEncoding::NotInt;
        let Slot::Joined { bytes, .. } = &s else {
            panic!("joined");
        };
        assert_eq!(bytes.len(), 70, "the key and the value, nothing more");
        assert_eq!(s.key(), &key);
        assert_eq!(s.value(), ValueRef::Str(&[b'v'; 40]));
        // Edited: held as a growable buffer, the key's meta kept.
        s.update_str(|v| v.extend_from_slice(b"w"));
        assert!(matches!(s, Slot::Heap { .. }));
        assert_eq!(s.meta().encoding, StrEncoding::NotInt);
        assert_eq!(s.key(), &key);
        s.update_str(|v| v.truncate(2));
        assert!(matches!(s, Slot::Inline { .. }));
        assert_eq!((s.key(), s.value()), (&key[..], ValueRef::Str(b"vv")));
        assert_eq!(s.meta().encoding, StrEncoding::NotInt);
        // Replaced whole: joined again; and changed through value_mut.
        let mut s = Slot::new_str(b"k", &[b'x'; 40]);
        s.meta_mut().encoding = StrEncoding::Raw;
        assert_eq!(
            s.replace(Value::Str(vec![b'y'; 50])),
            Value::Str(vec![b'x'; 40])
        );
        assert!(matches!(s, Slot::Joined { .. }));
        let Some(Value::Str(v)) = s.value_mut() else {
            panic!("a string");
        };
        v.push(b'z');
        assert!(matches!(s, Slot::Short { .. }));
        assert_eq!(s.meta().encoding, StrEncoding::Raw);
        assert_eq!(s.into_value(), Value::Str([&[b'y'; 50][..], b"z"].concat()));
    }

    fn small_set(members: &[&[u8]]) -> Value {
        let mut set = Set::default();
        for m in members {
            set.add(m, crate::value::SetLimits::DEFAULT);
        }
        Value::Set(set)
    }

    #[test]
    fn a_small_packed_value_is_kept_inline_and_read_in_place() {
        let value = small_set(&[b"3", b"1", b"2"]);
        let slot = Slot::new(b"tags:1", value.clone());
        assert!(matches!(
            slot,
            Slot::Packed {
                kind: PackedKind::Set,
                ..
            }
        ));
        assert_eq!(slot.key(), b"tags:1");
        assert_eq!(slot.value(), value.as_ref());
        assert_eq!(slot.value().encoding(), "intset");
        assert_eq!(slot.to_value(), value);
        assert_eq!(slot.into_value(), value);
        // Hashes and sorted sets too.
        let mut hash = Hash::default();
        hash.set(b"f", b"v", crate::value::PackLimits::HASH);
        let slot = Slot::new(b"h", Value::Hash(hash.clone()));
        assert!(matches!(
            slot,
            Slot::Packed {
                kind: PackedKind::Hash,
                ..
            }
        ));
        assert_eq!(slot.value(), Value::Hash(hash).as_ref());
        let mut z = ZSet::default();
        z.insert(b"m", 1.5, crate::value::ZLimits::DEFAULT);
        let slot = Slot::new(b"z", Value::ZSet(z.clone()));
        assert!(matches!(
            slot,
            Slot::Packed {
                kind: PackedKind::ZSet,
                ..
            }
        ));
        assert_eq!(slot.value(), Value::ZSet(z).as_ref());
    }

    #[test]
    fn inline_only_while_key_and_block_fit() {
        // One byte of block header plus one per small integer.
        let members: Vec<Vec<u8>> = (0..40).map(|n| n.to_string().into_bytes()).collect();
        let refs: Vec<&[u8]> = members.iter().map(|m| m.as_slice()).collect();
        let fits = PACKED_CAP - 4;
        let at_cap = Slot::new(b"keyk", small_set(&refs[..fits - 1]));
        assert!(
            matches!(at_cap, Slot::Packed { .. }),
            "key 4 + block 28 = 32"
        );
        let over = Slot::new(b"keyk", small_set(&refs[..fits]));
        assert!(matches!(over, Slot::Short { .. }));
        let long_key = [b'k'; 20];
        let heap = Slot::new(&long_key, small_set(&refs[..20]));
        assert!(matches!(heap, Slot::Heap { .. }));
        assert!(heap.may_pack());
        // Tables and lists never go inline.
        let mut big = small_set(&[b"x"]);
        if let Value::Set(s) = &mut big {
            for n in 0..200 {
                s.add(format!("m{n}").as_bytes(), crate::value::SetLimits::DEFAULT);
            }
            assert_eq!(s.view().encoding(), "hashtable");
            s.remove(b"x");
            for n in 1..200 {
                s.remove(format!("m{n}").as_bytes());
            }
        }
        let table = Slot::new(b"t", big);
        assert!(matches!(table, Slot::Short { .. }));
        assert!(!table.may_pack());
    }

    #[test]
    fn a_change_unpacks_and_pack_puts_it_back_when_it_fits() {
        let mut slot = Slot::new(b"s", small_set(&[b"1"]));
        assert!(slot.may_pack());
        let Some(Value::Set(set)) = slot.value_mut() else {
            panic!("a set");
        };
        for n in 2..=40 {
            set.add(n.to_string().as_bytes(), crate::value::SetLimits::DEFAULT);
        }
        assert!(matches!(slot, Slot::Short { .. }));
        slot.pack();
        assert!(
            matches!(slot, Slot::Short { .. }),
            "41 bytes of block stay apart"
        );
        let Some(Value::Set(set)) = slot.value_mut() else {
            panic!("a set");
        };
        for n in 2..=40 {
            set.remove(n.to_string().as_bytes());
        }
        slot.pack();
        assert!(matches!(slot, Slot::Packed { .. }));
        assert_eq!(slot.value(), small_set(&[b"1"]).as_ref());
        assert_eq!(slot.key(), b"s");
        // A string slot is left alone.
        let mut s = Slot::new_str(b"k", b"v");
        s.pack();
        assert!(matches!(s, Slot::Inline { .. }));
        assert!(s.value_mut().is_none());
        assert!(s.update_str(|v| v.push(b'w')).is_some());
        // And a string never reads an inline block as its bytes.
        let mut p = Slot::new(b"k", small_set(&[b"1"]));
        assert!(p.update_str(|v| v.push(b'w')).is_none());
        assert!(p.take_big_value().is_none());
        assert!(matches!(p, Slot::Packed { .. }));
    }
}
