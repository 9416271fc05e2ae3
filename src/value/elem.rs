//! `Elem`: one element of an aggregate (a hash field or value, a set or
//! sorted-set member), stored compactly.
//!
//! Most elements are short. Those live inline in the 24-byte `Elem` itself,
//! so a small element costs no allocation; longer ones are one boxed slice.

use std::fmt;

/// Bytes that fit inline.
pub const ELEM_INLINE_CAP: usize = 22;

#[derive(Clone)]
pub enum Elem {
    Inline { len: u8, buf: [u8; ELEM_INLINE_CAP] },
    Heap(Box<[u8]>),
}

impl Elem {
    pub fn new(bytes: &[u8]) -> Elem {
        if bytes.len() <= ELEM_INLINE_CAP {
            let mut buf = [0u8; ELEM_INLINE_CAP];
            buf[..bytes.len()].copy_from_slice(bytes);
            Elem::Inline {
                len: bytes.len() as u8,
                buf,
            }
        } else {
            Elem::Heap(bytes.into())
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Elem::Inline { len, buf } => &buf[..*len as usize],
            Elem::Heap(b) => b,
        }
    }

    /// Whether dropping this element frees an allocation (what lazy free
    /// counts as effort).
    pub fn is_heap(&self) -> bool {
        matches!(self, Elem::Heap(_))
    }
}

impl PartialEq for Elem {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Elem {}

impl fmt::Debug for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl crate::dict::DictEntry for Elem {
    fn key(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// A hash entry: field and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    pub field: Elem,
    pub value: Elem,
}

impl crate::dict::DictEntry for Pair {
    fn key(&self) -> &[u8] {
        self.field.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elem_is_24_bytes_and_round_trips() {
        assert_eq!(std::mem::size_of::<Elem>(), 24);
        for n in [0, 1, 22, 23, 100] {
            let bytes = vec![b'x'; n];
            let e = Elem::new(&bytes);
            assert_eq!(e.as_bytes(), &bytes[..]);
            assert_eq!(e.is_heap(), n > ELEM_INLINE_CAP);
        }
    }
}
