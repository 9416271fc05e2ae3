//! `List`: a list of byte strings. A short list is one block (`Small`:
//! the element count, then each element after its length, no more); a
//! list that outgrows one block (`ListLimits`: `list-max-listpack-size`,
//! 8 KiB by default) becomes `Chunks` for good, chunks packed like Redis's
//! quicklist of listpacks and filled by the same rule. Redis 7.0 calls
//! both `quicklist`.
//!
//! A small list's push or pop moves the block's bytes (at most one
//! block's, as a listpack node's insert does); reading it backwards first
//! notes where its elements start.
//!
//! One allocation per element (a `Vec<u8>` each) cost 56 bytes for an
//! 8-byte element; Redis needs about 10. Here elements sit back to back in
//! chunks of up to a block's size, each framed by its length before and
//! after it (the copy after it lets a chunk be read backwards, for RPOP),
//! so a short element costs its bytes plus two.
//!
//! Pushes and pops at either end are O(1) amortised (at most one chunk's
//! bytes move). Access by index walks chunk counts, then one chunk:
//! O(n / elements per chunk), as in Redis.

use std::collections::VecDeque;

/// How full one block of a list may grow: `list-max-listpack-size`,
/// Redis's quicklist `fill`. -1 to -5 cap a block's bytes at 4, 8, 16, 32
/// or 64 KiB; a positive n caps its elements at n and its bytes at 8 KiB
/// (Redis's safety limit); anything else makes every element a block of
/// its own, as in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListLimits {
    pub fill: i64,
}

impl ListLimits {
    /// Redis's default: 8 KiB blocks.
    pub const DEFAULT: ListLimits = ListLimits { fill: -2 };

    /// Block sizes of fills -1 to -5 (Redis's `optimization_level`).
    const LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
    /// The most bytes a block capped by count holds (`SIZE_SAFETY_LIMIT`).
    const SAFETY_BYTES: usize = 8192;

    /// The byte cap of a negative fill, if it has one.
    fn level(self) -> Option<usize> {
        let offset = usize::try_from(self.fill.unsigned_abs().checked_sub(1)?).ok()?;
        (self.fill < 0).then(|| Self::LEVELS.get(offset).copied())?
    }

    /// Whether a block of `count` elements may take one more and grow to
    /// `bytes` (Redis's `_quicklistNodeAllowInsert`).
    fn allows(self, bytes: usize, count: usize) -> bool {
        match self.level() {
            Some(cap) => bytes <= cap,
            None => bytes <= Self::SAFETY_BYTES && (count as i64) < self.fill,
        }
    }

    /// The bytes a block aims at (a block grown in the middle is split
    /// at twice this).
    fn block_bytes(self) -> usize {
        self.level().unwrap_or(Self::SAFETY_BYTES)
    }
}

#[derive(Clone, Default)]
struct Chunk {
    /// Elements in `bytes`.
    count: u32,
    /// `[len varint][element][len varint, bytes reversed]` per element.
    bytes: Vec<u8>,
}

/// A list of chunks (a list past one block).
#[derive(Clone, Default)]
pub struct Chunks {
    chunks: VecDeque<Chunk>,
    len: usize,
}

/// Which end of a list.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum End {
    Left,
    Right,
}

fn varint(mut n: usize, out: &mut [u8; 10]) -> usize {
    let mut i = 0;
    loop {
        let more = n >= 0x80;
        out[i] = (n as u8 & 0x7f) | if more { 0x80 } else { 0 };
        i += 1;
        n >>= 7;
        if !more {
            return i;
        }
    }
}

/// The framed form of `elem`.
fn frame(elem: &[u8]) -> Vec<u8> {
    let mut len = [0u8; 10];
    let n = varint(elem.len(), &mut len);
    let mut out = Vec::with_capacity(elem.len() + 2 * n);
    out.extend_from_slice(&len[..n]);
    out.extend_from_slice(elem);
    out.extend(len[..n].iter().rev());
    out
}

/// Decodes the element starting at `at`: (element range, next offset).
fn decode_forward(bytes: &[u8], at: usize) -> (std::ops::Range<usize>, usize) {
    let (mut len, mut shift, mut i) = (0usize, 0, at);
    loop {
        let b = bytes[i];
        len |= usize::from(b & 0x7f) << shift;
        shift += 7;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
    }
    let prefix = i - at;
    (i..i + len, i + len + prefix)
}

/// Decodes the element ending just before `end`: (element range, its
/// frame's start offset).
fn decode_backward(bytes: &[u8], end: usize) -> (std::ops::Range<usize>, usize) {
    let (mut len, mut shift, mut i) = (0usize, 0, end);
    loop {
        i -= 1;
        let b = bytes[i];
        len |= usize::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    let suffix = end - i;
    let start = i - len;
    (start..i, start - suffix)
}

impl Chunk {
    /// Byte offsets of each element's frame start, plus the end.
    fn offsets(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.count as usize + 1);
        let mut at = 0;
        while at < self.bytes.len() {
            out.push(at);
            at = decode_forward(&self.bytes, at).1;
        }
        out.push(at);
        out
    }

    /// The frame start of element `i` of this chunk.
    fn offset_of(&self, i: usize) -> usize {
        (0..i).fold(0, |at, _| decode_forward(&self.bytes, at).1)
    }

    fn has_room(&self, extra: usize, limits: ListLimits) -> bool {
        limits.allows(self.bytes.len() + extra, self.count as usize) || self.count == 0
    }
}

impl Chunks {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Allocations holding the elements (what freeing the list costs).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    pub fn push(&mut self, end: End, elem: &[u8], limits: ListLimits) {
        let framed = frame(elem);
        let edge = match end {
            End::Left => self.chunks.front_mut(),
            End::Right => self.chunks.back_mut(),
        };
        let room = edge
            .as_ref()
            .is_some_and(|c| c.has_room(framed.len(), limits));
        if !room {
            // A power-of-two start keeps doubling on powers of two, so a
            // chunk that fills up to a power-of-two size has no spare
            // capacity; one closed short of its capacity (a count limit)
            // gives the rest back.
            if let Some(full) = edge {
                full.bytes.shrink_to_fit();
            }
            let fresh = Chunk {
                count: 0,
                bytes: Vec::with_capacity(framed.len().next_power_of_two().max(64)),
            };
            match end {
                End::Left => self.chunks.push_front(fresh),
                End::Right => self.chunks.push_back(fresh),
            }
        }
        let chunk = match end {
            End::Left => self.chunks.front_mut(),
            End::Right => self.chunks.back_mut(),
        };
        if let Some(chunk) = chunk {
            match end {
                End::Left => {
                    chunk.bytes.splice(0..0, framed);
                }
                End::Right => chunk.bytes.extend_from_slice(&framed),
            }
            chunk.count += 1;
            self.len += 1;
        }
    }

    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let chunk = match end {
            End::Left => self.chunks.front_mut()?,
            End::Right => self.chunks.back_mut()?,
        };
        let elem = match end {
            End::Left => {
                let (range, next) = decode_forward(&chunk.bytes, 0);
                let elem = chunk.bytes[range].to_vec();
                chunk.bytes.drain(..next);
                elem
            }
            End::Right => {
                let (range, start) = decode_backward(&chunk.bytes, chunk.bytes.len());
                let elem = chunk.bytes[range].to_vec();
                chunk.bytes.truncate(start);
                elem
            }
        };
        chunk.count -= 1;
        if chunk.count == 0 {
            match end {
                End::Left => self.chunks.pop_front(),
                End::Right => self.chunks.pop_back(),
            };
        }
        self.len -= 1;
        Some(elem)
    }

    /// The chunk holding element `i` and the index within it.
    fn locate(&self, mut i: usize) -> Option<(usize, usize)> {
        if i >= self.len {
            return None;
        }
        // Walk from the nearer end.
        if i < self.len / 2 {
            for (c, chunk) in self.chunks.iter().enumerate() {
                if i < chunk.count as usize {
                    return Some((c, i));
                }
                i -= chunk.count as usize;
            }
        } else {
            let mut from_end = self.len - 1 - i;
            for (c, chunk) in self.chunks.iter().enumerate().rev() {
                if from_end < chunk.count as usize {
                    return Some((c, chunk.count as usize - 1 - from_end));
                }
                from_end -= chunk.count as usize;
            }
        }
        None
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let (c, k) = self.locate(i)?;
        let chunk = &self.chunks[c];
        let (range, _) = decode_forward(&chunk.bytes, chunk.offset_of(k));
        Some(&chunk.bytes[range])
    }

    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, elem: &[u8], limits: ListLimits) -> bool {
        let Some((c, k)) = self.locate(i) else {
            return false;
        };
        let chunk = &mut self.chunks[c];
        let at = chunk.offset_of(k);
        let next = decode_forward(&chunk.bytes, at).1;
        chunk.bytes.splice(at..next, frame(elem));
        self.split_if_big(c, limits);
        true
    }

    /// Inserts `elem` so that it becomes element `i` (`i <= len`).
    pub fn insert(&mut self, i: usize, elem: &[u8], limits: ListLimits) {
        if i == 0 {
            return self.push(End::Left, elem, limits);
        }
        if i >= self.len {
            return self.push(End::Right, elem, limits);
        }
        let Some((c, k)) = self.locate(i) else {
            return;
        };
        let chunk = &mut self.chunks[c];
        let at = chunk.offset_of(k);
        chunk.bytes.splice(at..at, frame(elem));
        chunk.count += 1;
        self.len += 1;
        self.split_if_big(c, limits);
    }

    /// Splits chunk `c` in two if it grew well past a block's size
    /// (inserts in the middle never start a new chunk on their own).
    fn split_if_big(&mut self, c: usize, limits: ListLimits) {
        let chunk = &mut self.chunks[c];
        if chunk.bytes.len() <= 2 * limits.block_bytes() || chunk.count < 2 {
            return;
        }
        let offsets = chunk.offsets();
        let half = chunk.count as usize / 2;
        let tail = Chunk {
            count: chunk.count - half as u32,
            bytes: chunk.bytes.split_off(offsets[half]),
        };
        chunk.count = half as u32;
        chunk.bytes.shrink_to_fit();
        self.chunks.insert(c + 1, tail);
    }

    /// Keeps elements `from..=to` only (`to < len`, `from <= to`); drops
    /// everything if `keep` is None.
    /// Returns the whole chunks it dropped (as a list, for the caller to
    /// free where it likes).
    pub fn trim(&mut self, keep: Option<(usize, usize)>) -> Chunks {
        let Some((from, to)) = keep else {
            return std::mem::take(self);
        };
        // Whole chunks go at once; only the two boundary chunks are popped
        // element by element.
        let mut dropped = Chunks::default();
        for (end, count) in [(End::Right, self.len - 1 - to), (End::Left, from)] {
            let rest = self.drop_whole_chunks(end, count, &mut dropped);
            for _ in 0..rest {
                self.pop(end);
            }
        }
        dropped
    }

    /// Moves whole chunks holding up to `count` elements from `end` into
    /// `dropped`; returns how many of the `count` are left to pop.
    fn drop_whole_chunks(&mut self, end: End, mut count: usize, dropped: &mut Chunks) -> usize {
        loop {
            let next = match end {
                End::Left => self.chunks.front(),
                End::Right => self.chunks.back(),
            };
            if next.is_none_or(|c| c.count as usize > count) {
                return count;
            }
            let chunk = match end {
                End::Left => self.chunks.pop_front(),
                End::Right => self.chunks.pop_back(),
            };
            let Some(chunk) = chunk else { return count };
            count -= chunk.count as usize;
            self.len -= chunk.count as usize;
            dropped.len += chunk.count as usize;
            dropped.chunks.push_back(chunk);
        }
    }

    /// Empties the list a few chunks at a time, with `tick()` between (for
    /// the lazy-free thread, which pauses there).
    pub fn clear_paced(&mut self, tick: &mut dyn FnMut()) {
        const CHUNKS_PER_TICK: usize = 16;
        while !self.chunks.is_empty() {
            let keep = self.chunks.len().saturating_sub(CHUNKS_PER_TICK);
            self.chunks.truncate(keep);
            tick();
        }
        self.len = 0;
    }

    /// Elements from the left (`rev()` for the right).
    pub fn iter(&self) -> ChunkIter<'_> {
        ChunkIter {
            list: self,
            front: (0, 0),
            back: (
                self.chunks.len(),
                self.chunks.back().map_or(0, |c| c.bytes.len()),
            ),
            remaining: self.len,
        }
    }

    /// Elements `from..` from the left.
    pub fn iter_from(&self, from: usize) -> ChunkIter<'_> {
        let mut iter = self.iter();
        if let Some((c, k)) = self.locate(from) {
            iter.front = (c, self.chunks[c].offset_of(k));
            iter.remaining = self.len - from;
        } else {
            iter.remaining = 0;
        }
        iter
    }
}

/// Iterates a chunk list's elements; both ends work.
pub struct ChunkIter<'a> {
    list: &'a Chunks,
    /// (chunk, byte offset) of the next element from the left.
    front: (usize, usize),
    /// (chunk + 1, byte end) of the next element from the right; a byte
    /// end of 0 means: continue at the end of the chunk before.
    back: (usize, usize),
    remaining: usize,
}

impl<'a> Iterator for ChunkIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let chunks = &self.list.chunks;
        while self.front.1 >= chunks.get(self.front.0)?.bytes.len() {
            self.front = (self.front.0 + 1, 0);
        }
        let bytes = &chunks[self.front.0].bytes;
        let (range, next) = decode_forward(bytes, self.front.1);
        self.front.1 = next;
        self.remaining -= 1;
        Some(&bytes[range])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl DoubleEndedIterator for ChunkIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let chunks = &self.list.chunks;
        while self.back.1 == 0 {
            self.back.0 = self.back.0.checked_sub(1)?;
            self.back.1 = chunks.get(self.back.0.checked_sub(1)?)?.bytes.len();
        }
        let bytes = &chunks[self.back.0 - 1].bytes;
        let (range, start) = decode_backward(bytes, self.back.1);
        self.back.1 = start;
        self.remaining -= 1;
        Some(&bytes[range])
    }
}

/// A short list in one block: `[count varint]([len varint][element])*`.
#[derive(Clone)]
pub struct Small(Box<[u8]>);

impl Default for Small {
    fn default() -> Small {
        Small(Box::new([0]))
    }
}

/// A varint at `at`: (value, bytes it took).
fn read_len(bytes: &[u8], at: usize) -> (usize, usize) {
    let (mut n, mut shift, mut i) = (0usize, 0, at);
    while let Some(&b) = bytes.get(i) {
        n |= usize::from(b & 0x7f) << shift.min(63);
        shift += 7;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
    }
    (n, i - at)
}

impl Small {
    fn header(&self) -> (usize, usize) {
        read_len(&self.0, 0)
    }

    fn len(&self) -> usize {
        self.header().0
    }

    /// The block with the framed elements in `at..at_end` (a byte range)
    /// replaced by `insert`, holding `count` elements in all.
    fn rebuilt(&self, at: usize, at_end: usize, insert: &[&[u8]], count: usize) -> Small {
        let (_, head) = self.header();
        Small::assemble(count, &self.0[head..at], insert, &self.0[at_end..])
    }

    /// A block of `count` elements: `before` (already framed), `insert`
    /// (framed here), then `after` (already framed).
    fn assemble(count: usize, before: &[u8], insert: &[&[u8]], after: &[u8]) -> Small {
        let mut len = [0u8; 10];
        let added: usize = insert.iter().map(|e| e.len() + 2).sum();
        let mut out = Vec::with_capacity(before.len() + added + after.len() + 2);
        let n = varint(count, &mut len);
        out.extend_from_slice(&len[..n]);
        out.extend_from_slice(before);
        for e in insert {
            let n = varint(e.len(), &mut len);
            out.extend_from_slice(&len[..n]);
            out.extend_from_slice(e);
        }
        out.extend_from_slice(after);
        Small(out.into_boxed_slice())
    }

    /// Where framed element `i` starts (`i == len`: the end).
    fn offset_of(&self, i: usize) -> usize {
        let (_, mut at) = self.header();
        for _ in 0..i {
            let (len, n) = read_len(&self.0, at);
            at += n + len;
        }
        at.min(self.0.len())
    }

    /// Whether one more element of `extra` bytes keeps it one block.
    fn fits(&self, extra: usize, limits: ListLimits) -> bool {
        limits.allows(self.0.len() + extra + 2, self.len()) || self.len() == 0
    }

    fn insert(&mut self, i: usize, elem: &[u8]) {
        let at = self.offset_of(i);
        *self = self.rebuilt(at, at, &[elem], self.len() + 1);
    }

    fn remove(&mut self, i: usize) -> Vec<u8> {
        let at = self.offset_of(i);
        let (len, n) = read_len(&self.0, at);
        let end = (at + n + len).min(self.0.len());
        let elem = self.0[at + n..end].to_vec();
        *self = self.rebuilt(at, end, &[], self.len().saturating_sub(1));
        elem
    }

    fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len() {
            return None;
        }
        let at = self.offset_of(i);
        let (len, n) = read_len(&self.0, at);
        self.0.get(at + n..at + n + len)
    }
}

/// A list (see the module's documentation).
#[derive(Clone)]
pub enum List {
    Small(Small),
    Chunks(Box<Chunks>),
}

impl Default for List {
    fn default() -> List {
        List::Small(Small::default())
    }
}

impl List {
    pub fn len(&self) -> usize {
        match self {
            List::Small(s) => s.len(),
            List::Chunks(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Allocations holding the elements (what freeing the list costs).
    pub fn chunk_count(&self) -> usize {
        match self {
            List::Small(_) => 1,
            List::Chunks(c) => c.chunk_count(),
        }
    }

    /// Makes room for one more element of `extra` bytes: a small list
    /// that would outgrow its block becomes chunks. Returns the small form
    /// if it stays small.
    fn small_for(&mut self, extra: usize, limits: ListLimits) -> Option<&mut Small> {
        if let List::Small(s) = self {
            if !s.fits(extra, limits) {
                let mut chunks = Chunks::default();
                for e in self.iter() {
                    chunks.push(End::Right, e, limits);
                }
                *self = List::Chunks(Box::new(chunks));
            }
        }
        match self {
            List::Small(s) => Some(s),
            List::Chunks(_) => None,
        }
    }

    pub fn push(&mut self, end: End, elem: &[u8], limits: ListLimits) {
        if let Some(s) = self.small_for(elem.len(), limits) {
            let at = if end == End::Left { 0 } else { s.len() };
            return s.insert(at, elem);
        }
        if let List::Chunks(c) = self {
            c.push(end, elem, limits);
        }
    }

    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        match self {
            List::Small(s) => {
                let len = s.len();
                (len > 0).then(|| s.remove(if end == End::Left { 0 } else { len - 1 }))
            }
            List::Chunks(c) => c.pop(end),
        }
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        match self {
            List::Small(s) => s.get(i),
            List::Chunks(c) => c.get(i),
        }
    }

    /// Replaces element `i`; false if out of range.
    pub fn set(&mut self, i: usize, elem: &[u8], limits: ListLimits) -> bool {
        if i >= self.len() {
            return false;
        }
        if let Some(s) = self.small_for(elem.len(), limits) {
            let at = s.offset_of(i);
            let end = s.offset_of(i + 1);
            *s = s.rebuilt(at, end, &[elem], s.len());
            return true;
        }
        match self {
            List::Chunks(c) => c.set(i, elem, limits),
            List::Small(_) => false,
        }
    }

    /// Inserts `elem` so that it becomes element `i` (`i <= len`).
    pub fn insert(&mut self, i: usize, elem: &[u8], limits: ListLimits) {
        if let Some(s) = self.small_for(elem.len(), limits) {
            return s.insert(i.min(s.len()), elem);
        }
        if let List::Chunks(c) = self {
            c.insert(i, elem, limits);
        }
    }

    /// Keeps elements `from..=to` only (`to < len`, `from <= to`); drops
    /// everything if `keep` is None.
    /// Returns what it dropped whole, if anything (chunks of a long list,
    /// which the caller may hand to the lazy-free thread).
    pub fn trim(&mut self, keep: Option<(usize, usize)>) -> Option<List> {
        match self {
            List::Small(s) => {
                *s = match keep {
                    None => Small::default(),
                    Some((from, to)) => {
                        // The kept run, whole: one copy.
                        let (at, end) = (s.offset_of(from), s.offset_of(to + 1));
                        Small::assemble(to + 1 - from, &s.0[at..end], &[], &[])
                    }
                };
                None
            }
            List::Chunks(c) => {
                let dropped = c.trim(keep);
                (!dropped.is_empty()).then(|| List::Chunks(Box::new(dropped)))
            }
        }
    }

    /// Keeps the elements for which `keep` returns true, in order, visiting
    /// them from the left or, with `End::Right`, from the right.
    pub fn retain(&mut self, from: End, limits: ListLimits, mut keep: impl FnMut(&[u8]) -> bool) {
        if matches!(self, List::Small(_)) {
            // One block built from the kept elements, not one per element.
            let mut kept: Vec<&[u8]> = match from {
                End::Left => self.iter().filter(|e| keep(e)).collect(),
                End::Right => self.iter().rev().filter(|e| keep(e)).collect(),
            };
            if from == End::Right {
                kept.reverse();
            }
            let block = Small::assemble(kept.len(), &[], &kept, &[]);
            *self = List::Small(block);
            return;
        }
        let mut kept = List::default();
        match from {
            End::Left => self
                .iter()
                .filter(|e| keep(e))
                .for_each(|e| kept.push(End::Right, e, limits)),
            End::Right => self
                .iter()
                .rev()
                .filter(|e| keep(e))
                .for_each(|e| kept.push(End::Left, e, limits)),
        }
        *self = kept;
    }

    /// Empties the list a few chunks at a time, with `tick()` between (for
    /// the lazy-free thread, which pauses there).
    pub fn clear_paced(&mut self, tick: &mut dyn FnMut()) {
        match self {
            List::Small(s) => *s = Small::default(),
            List::Chunks(c) => c.clear_paced(tick),
        }
    }

    /// Elements from the left (`rev()` for the right).
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// Elements `from..` from the left.
    pub fn iter_from(&self, from: usize) -> Iter<'_> {
        match self {
            List::Small(s) => Iter::Small {
                bytes: &s.0,
                at: s.offset_of(from),
                remaining: s.len().saturating_sub(from),
                back: None,
            },
            List::Chunks(c) => Iter::Chunks(c.iter_from(from)),
        }
    }
}

/// Iterates a list's elements; both ends work.
pub enum Iter<'a> {
    Small {
        bytes: &'a [u8],
        /// Where the next element from the left is framed.
        at: usize,
        remaining: usize,
        /// Once read from the right: the ranges of the elements left.
        back: Option<VecDeque<std::ops::Range<usize>>>,
    },
    Chunks(ChunkIter<'a>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        match self {
            Iter::Small {
                bytes,
                at,
                remaining,
                back,
            } => {
                if *remaining == 0 {
                    return None;
                }
                *remaining -= 1;
                if let Some(back) = back {
                    return back.pop_front().and_then(|r| bytes.get(r));
                }
                let (len, n) = read_len(bytes, *at);
                let start = *at + n;
                *at = start + len;
                bytes.get(start..start + len)
            }
            Iter::Chunks(c) => c.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Iter::Small { remaining, .. } => *remaining,
            Iter::Chunks(c) => return c.size_hint(),
        };
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small {
                bytes,
                at,
                remaining,
                back,
            } => {
                if *remaining == 0 {
                    return None;
                }
                let ranges = back.get_or_insert_with(|| {
                    let mut ranges = VecDeque::with_capacity(*remaining);
                    let mut pos = *at;
                    for _ in 0..*remaining {
                        let (len, n) = read_len(bytes, pos);
                        ranges.push_back(pos + n..pos + n + len);
                        pos += n + len;
                    }
                    ranges
                });
                *remaining -= 1;
                ranges.pop_back().and_then(|r| bytes.get(r))
            }
            Iter::Chunks(c) => c.next_back(),
        }
    }
}

impl PartialEq for List {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for List {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// One operation on the list and on its model: 0 push right, 1 push
    /// left, 2 pop left, 3 pop right, 4 set, 5 insert, 6 get.
    fn apply(
        list: &mut List,
        model: &mut VecDeque<Vec<u8>>,
        op: usize,
        elem: Vec<u8>,
        rng: &mut impl Rng,
    ) {
        apply_with(list, model, op, elem, rng, ListLimits::DEFAULT)
    }

    fn apply_with(
        list: &mut List,
        model: &mut VecDeque<Vec<u8>>,
        op: usize,
        elem: Vec<u8>,
        rng: &mut impl Rng,
        limits: ListLimits,
    ) {
        match op {
            0 => {
                list.push(End::Right, &elem, limits);
                model.push_back(elem);
            }
            1 => {
                list.push(End::Left, &elem, limits);
                model.push_front(elem);
            }
            2 => assert_eq!(list.pop(End::Left), model.pop_front()),
            3 => assert_eq!(list.pop(End::Right), model.pop_back()),
            4 if !model.is_empty() => {
                let i = rng.gen_range(0..model.len());
                assert!(list.set(i, &elem, limits));
                model[i] = elem;
            }
            5 => {
                let i = rng.gen_range(0..=model.len());
                list.insert(i, &elem, limits);
                model.insert(i, elem);
            }
            _ if !model.is_empty() => {
                let i = rng.gen_range(0..model.len());
                assert_eq!(list.get(i), Some(model[i].as_slice()));
            }
            _ => {}
        }
    }

    #[test]
    fn trimming_a_long_list_drops_whole_chunks_and_keeps_the_range() {
        for (from, to) in [
            (0, 0),
            (1, 99_998),
            (5_000, 5_000),
            (0, 99_999),
            (70_123, 99_999),
            (3, 4_000),
        ] {
            let mut list = List::default();
            (0..100_000).for_each(|i| {
                list.push(End::Right, format!("e{i}").as_bytes(), ListLimits::DEFAULT)
            });
            assert!(matches!(list, List::Chunks(_)));
            list.trim(Some((from, to)));
            assert_eq!(list.len(), to - from + 1);
            let want: Vec<String> = (from..=to).map(|i| format!("e{i}")).collect();
            assert!(
                list.iter().eq(want.iter().map(|e| e.as_bytes())),
                "{from}..={to}"
            );
            assert!(list
                .iter()
                .rev()
                .eq(want.iter().rev().map(|e| e.as_bytes())));
        }
    }

    #[test]
    fn a_small_list_matches_a_deque_and_becomes_chunks_past_its_size() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        let mut list = List::default();
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        for step in 0..3000 {
            let elem: Vec<u8> = (0..rng.gen_range(0..12)).map(|_| rng.gen()).collect();
            match rng.gen_range(0..8usize) {
                7 if model.len() > 2 => {
                    let (from, to) = (1, model.len() - 2);
                    list.trim(Some((from, to)));
                    model = model
                        .iter()
                        .skip(from)
                        .take(to - from + 1)
                        .cloned()
                        .collect();
                }
                7 => {}
                // Pushes at the right twice as often as anything else.
                n => apply(&mut list, &mut model, n.saturating_sub(1), elem, &mut rng),
            }
            assert!(matches!(list, List::Small(_)), "step {step}");
            assert_eq!(list.len(), model.len());
            assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
            assert!(list.iter().rev().eq(model.iter().rev().map(Vec::as_slice)));
            if let Some(i) = (!model.is_empty()).then(|| rng.gen_range(0..model.len())) {
                assert_eq!(list.get(i), Some(model[i].as_slice()));
                assert!(list
                    .iter_from(i)
                    .eq(model.iter().skip(i).map(Vec::as_slice)));
            }
        }
        // Past the block size: chunks, same elements.
        while matches!(list, List::Small(_)) {
            list.push(End::Right, &[b'x'; 100], ListLimits::DEFAULT);
            model.push_back(vec![b'x'; 100]);
        }
        assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
        list.trim(None);
        assert!(list.is_empty());
    }

    #[test]
    fn matches_a_deque_under_random_operations() {
        for fill in [-2, -1, -5, 0, 1, 5, 128] {
            random_operations(ListLimits { fill }, 20_000);
        }
        random_operations(ListLimits::DEFAULT, 60_000);
    }

    fn random_operations(limits: ListLimits, steps: usize) {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let mut list = List::default();
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        for step in 0..steps {
            let size = if rng.gen_bool(0.01) {
                rng.gen_range(100..20_000)
            } else {
                rng.gen_range(0..12)
            };
            let elem: Vec<u8> = (0..size).map(|_| rng.gen_range(b'a'..=b'z')).collect();
            // Pushes three times, left pushes twice as often as the rest.
            let op = [0, 0, 0, 1, 1, 2, 3, 4, 5, 6][rng.gen_range(0..10)];
            apply_with(&mut list, &mut model, op, elem, &mut rng, limits);
            assert_eq!(list.len(), model.len());
            if step % 500 == 0 {
                assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
                assert!(list.iter().rev().eq(model.iter().rev().map(Vec::as_slice)));
                if !model.is_empty() {
                    let from = rng.gen_range(0..model.len());
                    assert!(list
                        .iter_from(from)
                        .eq(model.iter().skip(from).map(Vec::as_slice)));
                }
            }
        }
        let mut it = list.iter();
        let mut m = model.iter();
        // Mixed ends meet in the middle.
        loop {
            let (a, b) = if rng.gen_bool(0.5) {
                (it.next(), m.next())
            } else {
                (it.next_back(), m.next_back())
            };
            assert_eq!(a, b.map(Vec::as_slice));
            if a.is_none() {
                break;
            }
        }
        list.retain(End::Right, ListLimits::DEFAULT, |e| e.len() % 2 == 0);
        model.retain(|e| e.len() % 2 == 0);
        assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
        let n = model.len();
        if n > 4 {
            list.trim(Some((1, n - 2)));
            model.pop_front();
            model.pop_back();
            assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
        }
        list.trim(None);
        assert!(list.is_empty() && list.iter().next().is_none());
    }

    #[test]
    fn list_max_listpack_size_decides_how_full_a_block_grows() {
        let fill = |fill| ListLimits { fill };
        // Negative: a byte cap per level, -1 4 KiB to -5 64 KiB.
        assert!(fill(-1).allows(4096, 1_000_000));
        assert!(!fill(-1).allows(4097, 0));
        assert!(fill(-5).allows(65536, 0) && !fill(-5).allows(65537, 0));
        // Positive: a count cap, and 8 KiB whatever the count.
        assert!(fill(3).allows(100, 2) && !fill(3).allows(100, 3));
        assert!(!fill(1000).allows(8193, 1));
        // Past the levels, or 0: nothing more fits (an element a block).
        for f in [-6, 0, i64::MIN] {
            assert!(!fill(f).allows(10, 0), "{f}");
        }

        // A list of 10 short elements with 4 to a block: chunks of 4, 4, 2.
        let mut list = List::default();
        for i in 0..10 {
            list.push(End::Right, format!("e{i}").as_bytes(), fill(4));
            if i < 4 {
                assert!(matches!(list, List::Small(_)), "{i}");
            }
        }
        assert_eq!(list.chunk_count(), 3);
        // One element a block.
        let mut list = List::default();
        for i in 0..5 {
            list.push(End::Left, format!("e{i}").as_bytes(), fill(0));
        }
        assert_eq!(list.chunk_count(), 5);
        assert_eq!(list.iter().next(), Some(&b"e4"[..]));
        // 4 KiB blocks: 100-byte elements, about 40 a block.
        let mut list = List::default();
        for _ in 0..400 {
            list.push(End::Right, &[b'x'; 100], fill(-1));
        }
        assert!(
            (10..=11).contains(&list.chunk_count()),
            "{}",
            list.chunk_count()
        );
        let mut list = List::default();
        for _ in 0..400 {
            list.push(End::Right, &[b'x'; 100], ListLimits::DEFAULT);
        }
        assert!(
            (5..=6).contains(&list.chunk_count()),
            "{}",
            list.chunk_count()
        );
    }
}
