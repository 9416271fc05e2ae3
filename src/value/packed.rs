//! `Packed`: a small aggregate's elements in one allocation, the role
//! Redis's listpack and intset play, in a layout of our own that is
//! smaller for the values keyspaces are full of.
//!
//! The block is a header (LEB128 of the element count times four, plus a
//! bit that says it has a preamble, times two, plus a flag bit its owner
//! may use: a set marks itself integers-only) followed by the elements in
//! order, each a header byte and its payload:
//!
//! | header | element |
//! |---|---|
//! | `0vvvvvvv` | the integer `v` (0..=127) |
//! | `10llllll` | a string of `l` (0..=63) bytes, which follow |
//! | `110sssss` `l` | a string: the first `s` (1..=31) bytes of its column's anchor, then `l` (0..=255) bytes that follow |
//! | `1110nnnn` | an integer in `n + 1` (1..=8) little-endian two's complement bytes |
//! | `11110000` `len` | a string of LEB128 `len` bytes, which follow |
//! | `11110001` | a double: 8 little-endian bytes follow |
//!
//! Strings that read as canonical integers (Redis's `string2ll` rule: no
//! sign other than `-`, no leading zeros) are stored as integers and read
//! back as the same text. A string stored whole is its column's anchor;
//! a later string of the same column sharing at least `MIN_SHARED` leading
//! bytes with it stores only the rest (front coding: `field1`, `field2`...
//! cost two bytes plus what differs). Columns: elements alternate between
//! `stride` columns, one or two (a hash's fields and values, a sorted
//! set's members and scores), so fields share with fields and values with
//! values.
//!
//! An owner may keep a preamble of its own between the header and the
//! elements (LEB128 of its length, then its bytes): a hash, set or sorted
//! set with element deadlines keeps them there. The header says a block
//! has one; `items` skips it, `preamble` reads it.
//!
//! Reading walks the block from the start, as Redis walks a listpack; every
//! change rebuilds it through `Builder` (a listpack insert moves the tail
//! as well). Small aggregates stay small (the `*-max-listpack-*` limits),
//! so both are a few hundred bytes of work.

use std::fmt;

/// Fewest shared leading bytes worth front coding (the shared form costs
/// one byte more than the whole form).
const MIN_SHARED: usize = 2;
const MAX_SHARED: usize = 31;
/// Most columns a block alternates between (a hash keeps its field
/// deadlines in its preamble, apart from the rows).
const MAX_STRIDE: usize = 2;
/// The header's low bits: the owner's flag, and whether a preamble
/// follows; the element count is above them.
const FLAG: u64 = 1;
const HAS_PREAMBLE: u64 = 2;
const HEADER_BITS: u32 = 2;
const TAG_SHARED: u8 = 0b1100_0000;
const TAG_INT: u8 = 0b1110_0000;
const TAG_LONG_STR: u8 = 0xF0;
const TAG_DOUBLE: u8 = 0xF1;

/// One element as read from a block: a string (in two parts: the shared
/// prefix of its anchor, then its own bytes), an integer, or a double.
#[derive(Clone, Copy)]
pub enum Item<'a> {
    Str(&'a [u8], &'a [u8]),
    Int(i64),
    Double(f64),
}

impl<'a> Item<'a> {
    /// A whole string as an item.
    pub fn bytes(bytes: &'a [u8]) -> Item<'a> {
        Item::Str(&[], bytes)
    }

    /// Whether this element's text is `needle`.
    pub fn eq_bytes(&self, needle: &[u8]) -> bool {
        match *self {
            Item::Str(prefix, rest) => {
                if needle.len() != prefix.len() + rest.len() {
                    return false;
                }
                // Members alike (`member:1`, `member:2`) differ at the end:
                // one byte tells most of them apart before the full compare.
                if let (Some(a), Some(b)) = (rest.last(), needle.last()) {
                    if a != b {
                        return false;
                    }
                }
                needle[..prefix.len()] == *prefix && needle[prefix.len()..] == *rest
            }
            Item::Int(n) => canonical_int(needle) == Some(n),
            Item::Double(d) => parse_f64(needle).is_some_and(|x| x.to_bits() == d.to_bits()),
        }
    }

    /// Runs `f` on the element's text (integers in decimal, doubles as
    /// Redis prints scores).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match *self {
            Item::Str(&[], rest) => f(rest),
            Item::Str(prefix, rest) => {
                let mut buf = [0u8; MAX_SHARED + 64];
                let len = prefix.len() + rest.len();
                if len <= buf.len() {
                    buf[..prefix.len()].copy_from_slice(prefix);
                    buf[prefix.len()..len].copy_from_slice(rest);
                    f(&buf[..len])
                } else {
                    f(&[prefix, rest].concat())
                }
            }
            Item::Int(n) => {
                use std::io::Write;
                let mut buf = [0u8; 20];
                let mut cursor = &mut buf[..];
                // Twenty bytes hold every i64 in decimal.
                let _ = write!(cursor, "{n}");
                let len = 20 - cursor.len();
                f(&buf[..len])
            }
            Item::Double(d) => f(crate::protocol::reply::format_double(d).as_bytes()),
        }
    }

    pub fn to_vec(self) -> Vec<u8> {
        self.with_bytes(<[u8]>::to_vec)
    }

    /// The element's length as text.
    pub fn len(&self) -> usize {
        match *self {
            Item::Str(prefix, rest) => prefix.len() + rest.len(),
            _ => self.with_bytes(<[u8]>::len),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for Item<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_bytes(|b| write!(f, "{:?}", String::from_utf8_lossy(b)))
    }
}

impl PartialEq for Item<'_> {
    fn eq(&self, other: &Self) -> bool {
        other.with_bytes(|b| self.eq_bytes(b))
    }
}

/// `bytes` as an integer if it is one written canonically (so that it
/// reads back as the same text).
pub fn canonical_int(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    if digits.is_empty() || digits.len() > 19 || (digits[0] == b'0' && bytes.len() > 1) {
        return None;
    }
    let mut n: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_sub(i64::from(c - b'0'))?;
    }
    if bytes.len() == digits.len() {
        n.checked_neg()
    } else {
        Some(n)
    }
}

fn parse_f64(bytes: &[u8]) -> Option<f64> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// Elements by index, for random picks: a packed value's read once into a
/// vector (its elements are found by walking), a table's through `table`.
/// `packed`: the packed value's elements, `None` for a table.
pub fn by_index<'a, T: Copy + 'a>(
    packed: Option<impl Iterator<Item = T>>,
    table: impl Fn(u32) -> Option<T> + 'a,
) -> impl Fn(u32) -> Option<T> + 'a {
    let read: Option<Vec<T>> = packed.map(Iterator::collect);
    move |i| match &read {
        Some(read) => read.get(i as usize).copied(),
        None => table(i),
    }
}

/// A packed block (see the module's documentation).
#[derive(Clone, PartialEq, Eq)]
pub struct Packed(Box<[u8]>);

impl Default for Packed {
    fn default() -> Packed {
        Builder::new(1).finish()
    }
}

impl fmt::Debug for Packed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items(1)).finish()
    }
}

/// A block borrowed: from a `Packed`, or from a keyspace slot that keeps
/// a small block inline beside its key. Everything that reads a block
/// reads it through this.
#[derive(Clone, Copy)]
pub struct PackedRef<'a>(&'a [u8]);

impl<'a> PackedRef<'a> {
    /// A block of no elements.
    pub const EMPTY: PackedRef<'static> = PackedRef(&[0]);

    /// A block's bytes as `PackedRef::bytes` gave them.
    pub fn new(bytes: &'a [u8]) -> PackedRef<'a> {
        PackedRef(bytes)
    }

    pub fn len(self) -> usize {
        (read_varint(self.0, &mut 0).unwrap_or(0) >> HEADER_BITS) as usize
    }

    /// The owner's flag bit (see the module's documentation).
    pub fn flag(self) -> bool {
        read_varint(self.0, &mut 0).unwrap_or(0) & FLAG == FLAG
    }

    /// Whether the block has a preamble (see the module's documentation).
    pub fn has_preamble(self) -> bool {
        read_varint(self.0, &mut 0).unwrap_or(0) & HAS_PREAMBLE == HAS_PREAMBLE
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The block's bytes (its whole size).
    pub fn bytes(self) -> &'a [u8] {
        self.0
    }

    /// The elements in order (after the preamble, if there is one);
    /// `stride`: how many columns alternate.
    pub fn items(self, stride: usize) -> Items<'a> {
        if self.has_preamble() {
            let (_, end, count) = self.preamble_and_end().unwrap_or((&[], 0, 0));
            return self.items_from(end, count, stride);
        }
        let mut pos = 0;
        let count = (read_varint(self.0, &mut pos).unwrap_or(0) >> HEADER_BITS) as usize;
        self.items_from(pos, count, stride)
    }

    /// The `count` elements from `pos` on.
    fn items_from(self, pos: usize, count: usize, stride: usize) -> Items<'a> {
        Items {
            data: self.0,
            pos,
            remaining: count,
            column: 0,
            stride: stride.clamp(1, MAX_STRIDE),
            anchors: [(0, 0); MAX_STRIDE],
        }
    }

    /// The owner's preamble (see the module's documentation); empty in a
    /// block that has none.
    pub fn preamble(self) -> &'a [u8] {
        if !self.has_preamble() {
            return &[];
        }
        self.preamble_and_end().map_or(&[], |(bytes, _, _)| bytes)
    }

    /// The preamble, where the elements start, and how many there are.
    fn preamble_and_end(self) -> Option<(&'a [u8], usize, usize)> {
        let mut pos = 0;
        let header = read_varint(self.0, &mut pos)?;
        let len = usize::try_from(read_varint(self.0, &mut pos)?).ok()?;
        let (_, bytes) = take(self.0, &mut pos, len)?;
        Some((bytes, pos, (header >> HEADER_BITS) as usize))
    }

    /// An owned copy.
    pub fn to_packed(self) -> Packed {
        Packed(self.0.into())
    }
}

impl Packed {
    pub fn view(&self) -> PackedRef<'_> {
        PackedRef(&self.0)
    }

    pub fn len(&self) -> usize {
        self.view().len()
    }

    /// The owner's flag bit (see the module's documentation).
    pub fn flag(&self) -> bool {
        self.view().flag()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes allocated.
    pub fn allocated(&self) -> usize {
        self.0.len()
    }

    /// The elements in order; `stride`: how many columns alternate.
    pub fn items(&self, stride: usize) -> Items<'_> {
        self.view().items(stride)
    }

    /// A block of `items`, in order.
    pub fn from_items<'a>(stride: usize, items: impl IntoIterator<Item = Item<'a>>) -> Packed {
        let mut b = Builder::new(stride);
        for item in items {
            b.push(item);
        }
        b.finish()
    }
}

/// The elements of a block, in order.
pub struct Items<'a> {
    data: &'a [u8],
    pos: usize,
    remaining: usize,
    column: usize,
    stride: usize,
    /// Per column: where its anchor string is in `data` (start, length).
    anchors: [(usize, usize); MAX_STRIDE],
}

impl<'a> Iterator for Items<'a> {
    type Item = Item<'a>;

    fn next(&mut self) -> Option<Item<'a>> {
        let (header, bytes, column) = self.raw_next()?;
        self.item_of(header, bytes, column)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining))
    }
}

impl<'a> Items<'a> {
    /// The element `raw_next` read.
    fn item_of(&self, header: u8, bytes: &'a [u8], column: usize) -> Option<Item<'a>> {
        Some(match header {
            0..=0x7F => Item::Int(i64::from(header)),
            0xC0..=0xDF => {
                let shared = usize::from(header & 0x1F);
                let (start, anchor_len) = self.anchors[column];
                let prefix = self.data.get(start..start + shared.min(anchor_len))?;
                Item::Str(prefix, bytes)
            }
            0xE0..=0xEF => {
                let mut buf = [0u8; 8];
                buf[..bytes.len()].copy_from_slice(bytes);
                // Sign-extend from the top byte stored.
                let shift = 64 - 8 * bytes.len() as u32;
                Item::Int((i64::from_le_bytes(buf) << shift) >> shift)
            }
            TAG_DOUBLE => Item::Double(f64::from_le_bytes(bytes.try_into().ok()?)),
            _ => Item::Str(&[], bytes),
        })
    }

    /// From a row's start: passes the rows whose first element is not
    /// `needle`, and returns the second element of the one that is (a
    /// hash's field lookup: a field stored whole is compared as it lies).
    pub fn find_row(&mut self, needle: &[u8]) -> Option<Item<'a>> {
        let as_int = canonical_int(needle);
        loop {
            let (header, bytes, column) = self.raw_next()?;
            let found = match header {
                0..=0x7F => as_int == Some(i64::from(header)),
                // A string stored whole never reads as an integer.
                0x80..=0xBF | TAG_LONG_STR => {
                    bytes.len() == needle.len() && bytes.last() == needle.last() && bytes == needle
                }
                _ => match self.item_of(header, bytes, column)? {
                    Item::Int(n) => as_int == Some(n),
                    other => other.eq_bytes(needle),
                },
            };
            if found {
                return self.next();
            }
            for _ in 1..self.stride {
                self.pass()?;
            }
        }
    }

    /// Elements not read yet.
    pub fn remaining(&self) -> usize {
        self.remaining
    }

    /// Moves past the rows (from a row's start) whose first element
    /// `touched` does not pick, to the start of the first one it picks,
    /// or to the end.
    pub fn skip_rows_until(&mut self, touched: impl Fn(Item<'a>) -> bool) {
        loop {
            // Only the first column is read in the row that stops: its
            // anchor is all there is to put back.
            let (pos, remaining, anchor) = (self.pos, self.remaining, self.anchors[0]);
            let Some(first) = self.next() else {
                return;
            };
            if touched(first) || (1..self.stride).any(|_| self.pass().is_none()) {
                (self.pos, self.remaining, self.anchors[0]) = (pos, remaining, anchor);
                self.column = 0;
                return;
            }
        }
    }

    /// Passes over the next element (a search's other columns): `None`
    /// at the end or on a malformed block.
    pub fn pass(&mut self) -> Option<()> {
        self.raw_next().map(|_| ())
    }

    /// The next element as stored: its header, its bytes (a front-coded
    /// string's own part) and its column, moving past it; a whole string
    /// becomes its column's anchor. What `next` and `pass` share.
    #[inline]
    fn raw_next(&mut self) -> Option<(u8, &'a [u8], usize)> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let column = self.column;
        // No division: it would cost more than decoding a small item.
        self.column += 1;
        if self.column == self.stride {
            self.column = 0;
        }
        let data = self.data;
        let pos = &mut self.pos;
        let header = *data.get(*pos)?;
        *pos += 1;
        let len = match header {
            0..=0x7F => 0,
            0x80..=0xBF => usize::from(header & 0x3F),
            0xC0..=0xDF => usize::from(*take(data, pos, 1)?.1.first()?),
            0xE0..=0xEF => (usize::from(header & 0x0F) + 1).min(8),
            TAG_LONG_STR => usize::try_from(read_varint(data, pos)?).ok()?,
            TAG_DOUBLE => 8,
            _ => return None,
        };
        let (start, bytes) = take(data, pos, len)?;
        if matches!(header, 0x80..=0xBF | TAG_LONG_STR) {
            self.anchors[column] = (start, len);
        }
        Some((header, bytes, column))
    }
}

/// Writes a block element by element.
pub struct Builder {
    body: Vec<u8>,
    count: usize,
    flag: bool,
    /// Whether the body starts with a preamble.
    preamble: bool,
    column: usize,
    stride: usize,
    anchors: [(usize, usize); MAX_STRIDE],
}

impl Builder {
    pub fn new(stride: usize) -> Builder {
        Builder::with_capacity(stride, 0)
    }

    /// A builder expecting about `bytes` of block.
    pub fn with_capacity(stride: usize, bytes: usize) -> Builder {
        // The body starts with room for a one-byte header (fewer than 64
        // elements), which `finish` fills in or widens.
        let mut body = Vec::with_capacity(bytes.max(1));
        body.push(0);
        Builder {
            body,
            count: 0,
            flag: false,
            preamble: false,
            column: 0,
            stride: stride.clamp(1, MAX_STRIDE),
            anchors: [(0, 0); MAX_STRIDE],
        }
    }

    /// A builder for a block with `preamble` (see the module's
    /// documentation) before its elements.
    pub fn with_preamble(stride: usize, preamble: &[u8], bytes: usize) -> Builder {
        let mut b = Builder::with_capacity(stride, bytes + preamble.len() + 2);
        b.preamble = true;
        write_varint(&mut b.body, preamble.len() as u64);
        b.body.extend_from_slice(preamble);
        b
    }

    /// A builder holding the elements of `items`' block before where
    /// `items` is (and the preamble, if the block has one), copied as
    /// they are, with room for the block and `extra` bytes more:
    /// what follows is pushed. An edit late in a block re-encodes only
    /// what comes after it. `None` unless `items` is at a row's start.
    pub fn continuing(items: &Items<'_>, extra: usize) -> Option<Builder> {
        let mut header_len = 0;
        let header = read_varint(items.data, &mut header_len)?;
        let copied = items.data.get(header_len..items.pos)?;
        if items.column != 0 {
            return None;
        }
        let mut body = Vec::with_capacity(1 + items.data.len() - header_len + extra);
        body.push(0);
        body.extend_from_slice(copied);
        // Anchors move with the bytes: the body has a one-byte header.
        let anchors = items.anchors.map(|(start, len)| match len {
            0 => (0, 0),
            _ => ((start + 1).saturating_sub(header_len), len),
        });
        Some(Builder {
            body,
            count: ((header >> HEADER_BITS) as usize).saturating_sub(items.remaining),
            flag: false,
            preamble: header & HAS_PREAMBLE == HAS_PREAMBLE,
            column: 0,
            stride: items.stride,
            anchors,
        })
    }

    /// Sets the block's flag bit.
    pub fn flagged(mut self, flag: bool) -> Builder {
        self.flag = flag;
        self
    }

    /// Appends a string, stored as an integer if it reads as one.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        self.push(Item::bytes(bytes));
    }

    pub fn push(&mut self, item: Item<'_>) {
        let column = self.column;
        self.column += 1;
        if self.column == self.stride {
            self.column = 0;
        }
        self.count += 1;
        match item {
            Item::Int(n) => self.push_int(n),
            Item::Double(d) => {
                self.body.push(TAG_DOUBLE);
                self.body.extend_from_slice(&d.to_le_bytes());
            }
            // A string split in two comes from a block, where it was not
            // an integer: only whole strings are checked.
            Item::Str(&[], bytes) => match canonical_int(bytes) {
                Some(n) => self.push_int(n),
                None => self.push_str(column, &[], bytes),
            },
            Item::Str(prefix, rest) => self.push_str(column, prefix, rest),
        }
    }

    fn push_int(&mut self, n: i64) {
        if (0..=0x7F).contains(&n) {
            self.body.push(n as u8);
            return;
        }
        let bytes = n.to_le_bytes();
        // Fewest bytes whose sign extension gives `n` back.
        let len = (1..=8)
            .find(|&len| {
                let shift = 64 - 8 * len as u32;
                (n << shift) >> shift == n
            })
            .unwrap_or(8);
        self.body.push(TAG_INT | (len as u8 - 1));
        self.body.extend_from_slice(&bytes[..len]);
    }

    /// A string (given in two parts) stored whole, or front coded
    /// against its column's anchor.
    fn push_str(&mut self, column: usize, prefix: &[u8], rest: &[u8]) {
        let len = prefix.len() + rest.len();
        let (start, anchor_len) = self.anchors[column];
        let anchor = &self.body[start..start + anchor_len];
        let shared = anchor
            .iter()
            .zip(prefix.iter().chain(rest))
            .take(MAX_SHARED)
            .take_while(|(a, b)| a == b)
            .count();
        if shared >= MIN_SHARED && len - shared <= 0xFF {
            self.body.push(TAG_SHARED | shared as u8);
            self.body.push((len - shared) as u8);
            if shared < prefix.len() {
                self.body.extend_from_slice(&prefix[shared..]);
                self.body.extend_from_slice(rest);
            } else {
                self.body.extend_from_slice(&rest[shared - prefix.len()..]);
            }
            return;
        }
        if len <= 0x3F {
            self.body.push(0x80 | len as u8);
        } else {
            self.body.push(TAG_LONG_STR);
            write_varint(&mut self.body, len as u64);
        }
        self.anchors[column] = (self.body.len(), len);
        self.body.extend_from_slice(prefix);
        self.body.extend_from_slice(rest);
    }

    /// The block, in an allocation of its exact size: copied out rather
    /// than shrunk in place, which would leave it in the builder's bigger
    /// chunk (glibc keeps a remainder under 32 bytes in the chunk).
    pub fn finish(self) -> Packed {
        let header = (self.count as u64) << HEADER_BITS
            | if self.preamble { HAS_PREAMBLE } else { 0 }
            | if self.flag { FLAG } else { 0 };
        let header_len = (64 - (header | 1).leading_zeros() as usize).div_ceil(7);
        let mut block = Vec::with_capacity(header_len + self.body.len() - 1);
        write_varint(&mut block, header);
        block.extend_from_slice(&self.body[1..]);
        debug_assert_eq!(block.len(), block.capacity());
        Packed(block.into_boxed_slice())
    }
}

/// The `len` bytes at `pos` (and where they start), moving past them.
fn take<'a>(data: &'a [u8], pos: &mut usize, len: usize) -> Option<(usize, &'a [u8])> {
    let start = *pos;
    let bytes = data.get(start..start.checked_add(len)?)?;
    *pos += len;
    Some((start, bytes))
}

pub(crate) fn write_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

pub(crate) fn read_varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*pos)?;
        *pos += 1;
        n |= u64::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `find_row` finds each row by its first element, whatever its
    /// form (integer, whole, front coded, long), in blocks with and
    /// without a preamble, and nothing else.
    #[test]
    fn find_row_finds_every_first_element_and_no_other() {
        let firsts: Vec<Vec<u8>> = vec![
            b"7".to_vec(),
            b"-300".to_vec(),
            b"field:1".to_vec(),
            b"field:2".to_vec(),
            b"field:10".to_vec(),
            b"07".to_vec(),
            b"".to_vec(),
            vec![b'x'; 100],
            b"4294967296".to_vec(),
            b"fie".to_vec(),
        ];
        for preamble in [None, Some(&b"\x03abc"[..])] {
            let mut b = match preamble {
                Some(bytes) => Builder::with_preamble(2, bytes, 0).flagged(true),
                None => Builder::new(2),
            };
            for (i, f) in firsts.iter().enumerate() {
                b.push_bytes(f);
                b.push_bytes(format!("value:{i}").as_bytes());
            }
            let block = b.finish();
            let rows = || block.items(2);
            assert_eq!(block.view().has_preamble(), preamble.is_some());
            assert_eq!(block.view().preamble(), preamble.unwrap_or_default());
            for (i, f) in firsts.iter().enumerate() {
                let found = rows().find_row(f).map(|v| v.to_vec());
                assert_eq!(found, Some(format!("value:{i}").into_bytes()), "{f:?}");
            }
            for missing in [&b"8"[..], b"field:3", b"field:", b"value:0", b"x", b"-3"] {
                assert!(rows().find_row(missing).is_none(), "{missing:?}");
            }
        }
    }

    fn texts(p: &Packed, stride: usize) -> Vec<Vec<u8>> {
        p.items(stride).map(|i| i.to_vec()).collect()
    }

    fn round_trip(stride: usize, elements: &[&[u8]]) -> Packed {
        let p = Packed::from_items(stride, elements.iter().map(|e| Item::bytes(e)));
        assert_eq!(p.len(), elements.len());
        let back = texts(&p, stride);
        assert_eq!(
            back,
            elements.iter().map(|e| e.to_vec()).collect::<Vec<_>>()
        );
        for (item, e) in p.items(stride).zip(elements) {
            assert!(
                item.eq_bytes(e),
                "{item:?} vs {:?}",
                String::from_utf8_lossy(e)
            );
            assert_eq!(item.len(), e.len());
        }
        // Rebuilt from its own items (front-coded ones arrive split).
        let again = Packed::from_items(stride, p.items(stride));
        assert_eq!(again, p);
        p
    }

    #[test]
    fn integers_round_trip_as_their_text() {
        let ints: Vec<String> = [
            0,
            1,
            127,
            128,
            -1,
            -128,
            -129,
            255,
            32767,
            -32768,
            1 << 40,
            i64::MAX,
            i64::MIN,
        ]
        .iter()
        .map(|n| n.to_string())
        .collect();
        let refs: Vec<&[u8]> = ints.iter().map(|s| s.as_bytes()).collect();
        round_trip(1, &refs);
        // Small integers cost one byte each.
        let p = round_trip(1, &[b"0", b"1", b"2", b"127"]);
        assert_eq!(p.allocated(), 5);
    }

    #[test]
    fn integer_like_strings_that_are_not_canonical_stay_strings() {
        let odd: &[&[u8]] = &[
            b"007",
            b"-0",
            b"+1",
            b"1.0",
            b" 1",
            b"",
            b"-",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"12345678901234567890",
        ];
        let p = round_trip(1, odd);
        assert!(p.items(1).all(|i| matches!(i, Item::Str(..))));
    }

    #[test]
    fn front_coding_shares_prefixes_per_column() {
        let fields: Vec<Vec<u8>> = (0..10)
            .flat_map(|j| {
                [
                    format!("field{j}").into_bytes(),
                    format!("value{:04}", j * 37).into_bytes(),
                ]
            })
            .collect();
        let refs: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
        let p = round_trip(2, &refs);
        // 1 count + "field0" 7 + 9 * 3 + "value0000" 10 + 9 * (2 + at most 4).
        assert!(p.allocated() <= 1 + 7 + 27 + 10 + 54, "{}", p.allocated());
        // Binary, empty, long and anchor-changing strings.
        let long = vec![b'x'; 300];
        let long2 = [&long[..], b"y"].concat();
        round_trip(
            1,
            &[
                b"",
                b"\x00\xff",
                b"ab",
                b"abc",
                b"zz",
                b"zzz",
                &long,
                &long2,
                b"a",
                b"ab",
            ],
        );
        round_trip(
            2,
            &[
                b"member:1",
                b"1.5",
                b"member:2",
                b"-2.5e10",
                b"member:10",
                b"x",
            ],
        );
    }

    #[test]
    fn doubles_and_mixed_items() {
        let p = Packed::from_items(
            2,
            [
                Item::bytes(b"m"),
                Item::Double(1.5),
                Item::bytes(b"n"),
                Item::Int(-7),
                Item::bytes(b"o"),
                Item::Double(-0.0),
            ],
        );
        let items: Vec<Item> = p.items(2).collect();
        assert!(matches!(items[1], Item::Double(d) if d == 1.5));
        assert!(matches!(items[3], Item::Int(-7)));
        assert!(matches!(items[5], Item::Double(d) if d == 0.0 && d.is_sign_negative()));
        assert_eq!(items[1].to_vec(), b"1.5");
    }

    #[test]
    fn a_damaged_block_ends_iteration_without_panicking() {
        let p = round_trip(2, &[b"hello", b"help", b"12345", b"x", b"hello:2", b"-9"]);
        let walk = |block: &Packed| {
            block.items(2).for_each(|i| drop(i.to_vec()));
            for needle in [&b"hello:2"[..], b"-9", b"absent"] {
                let _ = block.items(2).find_row(needle).map(|i| i.to_vec());
            }
        };
        for cut in 0..p.0.len() {
            walk(&Packed(p.0[..cut].into()));
        }
        for at in 1..p.0.len() {
            for byte in 0..=255u8 {
                let mut raw = p.0.to_vec();
                raw[at] = byte;
                walk(&Packed(raw.into()));
            }
        }
    }

    #[test]
    fn canonical_int_follows_string2ll() {
        assert_eq!(canonical_int(b"0"), Some(0));
        assert_eq!(canonical_int(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(canonical_int(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b"-0"[..],
            b"01",
            b"",
            b"-",
            b"1a",
            b"+5",
            b"9223372036854775808",
        ] {
            assert_eq!(
                canonical_int(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
