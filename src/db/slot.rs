//! `Slot`: one key and its value, stored compactly.
//!
//! Most keys in a cache are short strings with short values. Those are kept
//! inline in the slot itself, key and value side by side, so such a key costs
//! no allocation at all. A short key with any other value keeps the key
//! inline beside the value (a small aggregate then costs its own allocation
//! and nothing more). Anything bigger keeps its key and value on the heap.
//! The slot is 40 bytes either way.

use crate::value::{Value, ValueRef};

/// Key plus value bytes that fit inline.
pub const INLINE_CAP: usize = 37;
/// Key bytes that fit inline beside a value.
pub const SHORT_KEY_CAP: usize = 14;

pub enum Slot {
    /// A string value whose key and value together fit in `INLINE_CAP` bytes.
    Inline {
        klen: u8,
        vlen: u8,
        buf: [u8; INLINE_CAP],
    },
    /// Any value whose key fits in `SHORT_KEY_CAP` bytes.
    Short {
        klen: u8,
        key: [u8; SHORT_KEY_CAP],
        value: Value,
    },
    /// Everything else.
    Heap(Box<HeapSlot>),
}

pub struct HeapSlot {
    key: Box<[u8]>,
    value: Value,
}

impl Slot {
    /// A slot for a string value, inline when it fits.
    pub fn new_str(key: &[u8], value: &[u8]) -> Slot {
        Self::try_inline(key, value).unwrap_or_else(|| Self::boxed(key, Value::Str(value.to_vec())))
    }

    pub fn new(key: &[u8], value: Value) -> Slot {
        if let Value::Str(s) = &value {
            if let Some(inline) = Self::try_inline(key, s) {
                return inline;
            }
        }
        Self::boxed(key, value)
    }

    /// A slot holding `value` itself: the key beside it if short enough.
    fn boxed(key: &[u8], value: Value) -> Slot {
        if key.len() <= SHORT_KEY_CAP {
            let mut buf = [0u8; SHORT_KEY_CAP];
            buf[..key.len()].copy_from_slice(key);
            return Slot::Short {
                klen: key.len() as u8,
                key: buf,
                value,
            };
        }
        Slot::Heap(Box::new(HeapSlot {
            key: key.into(),
            value,
        }))
    }

    /// The value for changing in place; `None` for inline strings (which
    /// are changed through `update_str`).
    pub fn value_mut(&mut self) -> Option<&mut Value> {
        match self {
            Slot::Heap(h) => Some(&mut h.value),
            Slot::Short { value, .. } => Some(value),
            Slot::Inline { .. } => None,
        }
    }

    fn try_inline(key: &[u8], value: &[u8]) -> Option<Slot> {
        if key.len() + value.len() > INLINE_CAP {
            return None;
        }
        let mut buf = [0u8; INLINE_CAP];
        buf[..key.len()].copy_from_slice(key);
        buf[key.len()..key.len() + value.len()].copy_from_slice(value);
        Some(Slot::Inline {
            klen: key.len() as u8,
            vlen: value.len() as u8,
            buf,
        })
    }

    pub fn key(&self) -> &[u8] {
        match self {
            Slot::Inline { klen, buf, .. } => &buf[..*klen as usize],
            Slot::Short { klen, key, .. } => &key[..*klen as usize],
            Slot::Heap(h) => &h.key,
        }
    }

    pub fn value(&self) -> ValueRef<'_> {
        match self {
            Slot::Inline { klen, vlen, buf } => {
                let k = *klen as usize;
                ValueRef::Str(&buf[k..k + *vlen as usize])
            }
            Slot::Short { value, .. } => value.as_ref(),
            Slot::Heap(h) => h.value.as_ref(),
        }
    }

    /// Replaces the value with a string, reusing the slot.
    pub fn set_str(&mut self, value: &[u8]) {
        let stays_big = self.key().len() + value.len() > INLINE_CAP;
        // Reuse the allocation for a big string replaced by a big string.
        if let Some(Value::Str(s)) = self.value_mut() {
            if stays_big {
                s.clear();
                s.extend_from_slice(value);
                return;
            }
        }
        *self = Slot::new_str(self.key(), value);
    }

    /// Replaces the value, returning the old one.
    /// Heap values move out without a copy (a big aggregate is never cloned).
    pub fn replace(&mut self, value: Value) -> Value {
        let new = Slot::new(self.key(), value);
        std::mem::replace(self, new).into_value()
    }

    /// Takes out a value big enough for the lazyfree thread, leaving an
    /// empty string in its place. `None` (and nothing changed) otherwise.
    pub fn take_big_value(&mut self) -> Option<Value> {
        match self.value_mut() {
            Some(value) if crate::lazyfree::is_big(value) => {
                Some(std::mem::replace(value, Value::Str(Vec::new())))
            }
            _ => None,
        }
    }

    /// The value as an owned `Value` (copies inline strings).
    pub fn to_value(&self) -> Value {
        match self {
            Slot::Inline { .. } => self.value().to_owned(),
            Slot::Short { value, .. } => value.clone(),
            Slot::Heap(h) => h.value.clone(),
        }
    }

    /// Consumes the slot, returning its value without copying heap values.
    pub fn into_value(self) -> Value {
        match self {
            Slot::Heap(h) => h.value,
            Slot::Short { value, .. } => value,
            inline => inline.to_value(),
        }
    }

    /// Runs `f` on the string value as a growable buffer, then stores the
    /// result (inline again if it fits). `None` if the value is not a string.
    /// Heap strings are edited in place, so appends stay amortised O(1).
    pub fn update_str<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> Option<R> {
        let klen = self.key().len();
        if let Some(value) = self.value_mut() {
            let Value::Str(s) = value else {
                return None;
            };
            let result = f(s);
            if klen + s.len() <= INLINE_CAP {
                let shrunk = std::mem::take(s);
                *self = Slot::new_str(self.key(), &shrunk);
            }
            return Some(result);
        }
        let ValueRef::Str(current) = self.value() else {
            return None;
        };
        let mut s = current.to_vec();
        let result = f(&mut s);
        *self = Slot::new(self.key(), Value::Str(s));
        Some(result)
    }
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
        assert!(matches!(big, Slot::Short { .. }));
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
        let mut s = Slot::new_str(&key, &[b'v'; 40]);
        assert!(matches!(s, Slot::Heap(_)));
        assert_eq!(s.key(), &key);
        s.update_str(|v| v.truncate(3));
        assert!(matches!(s, Slot::Inline { .. }));
        assert_eq!(s.key(), &key);
        let short = Slot::new(&key[..SHORT_KEY_CAP], Value::Str(vec![b'v'; 40]));
        assert!(matches!(short, Slot::Short { .. }));
        assert_eq!(short.key(), &key[..SHORT_KEY_CAP]);
        assert_eq!(short.into_value(), Value::Str(vec![b'v'; 40]));
    }
}
