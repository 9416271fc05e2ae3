//! Pieces of Redis's RDB serialization: lengths, strings (plain, integer
//! and LZF-compressed), the CRC-64 Redis checks them with, the DUMP
//! payload frame (body, RDB version, checksum) that FUNCTION DUMP and
//! FUNCTION RESTORE exchange, and the pieces of an RDB file (header,
//! database start, one key). Pure functions over bytes and values; the
//! order they are called in (a whole file, a save in slices) is
//! `jobs`' and `save`'s.
//!
//! CRC-64 is Redis's (Jones polynomial, reflected), from the `crc` crate's
//! catalogue (`CRC_64_REDIS`); LZF decompression from the `lzf` crate,
//! compression from `crate::lzf` (see there why).

use crc::{Crc, Table, CRC_64_REDIS};

/// The RDB format version Redis 7.0 writes (and the newest it reads).
pub const RDB_VERSION: u16 = 10;
/// The newest format version lapse reads: Redis 7.4's (7.2 added listpack
/// sets and streams with consumers' active times, 7.4 hashes with field
/// deadlines; lapse reads all of them).
pub const RDB_VERSION_READ: u16 = 12;
/// A function library in an RDB stream or DUMP payload (7.0 GA form).
pub const OPCODE_FUNCTION2: u8 = 245;

/// RDB opcodes and value types (Redis's `rdb.h`), for writing and
/// loading alike.
pub const OPCODE_FUNCTION_PRE_GA: u8 = 0xF6;
pub const OPCODE_MODULE_AUX: u8 = 0xF7;
pub const OPCODE_IDLE: u8 = 0xF8;
pub const OPCODE_FREQ: u8 = 0xF9;
pub const OPCODE_AUX: u8 = 0xFA;
pub const OPCODE_RESIZEDB: u8 = 0xFB;
pub const OPCODE_EXPIRETIME_MS: u8 = 0xFC;
pub const OPCODE_EXPIRETIME: u8 = 0xFD;
pub const OPCODE_SELECTDB: u8 = 0xFE;
pub const OPCODE_EOF: u8 = 0xFF;
pub const TYPE_STRING: u8 = 0;
pub const TYPE_LIST: u8 = 1;
pub const TYPE_SET: u8 = 2;
pub const TYPE_ZSET: u8 = 3;
pub const TYPE_HASH: u8 = 4;
pub const TYPE_ZSET_2: u8 = 5;
pub const TYPE_HASH_ZIPMAP: u8 = 9;
pub const TYPE_LIST_ZIPLIST: u8 = 10;
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_ZSET_ZIPLIST: u8 = 12;
pub const TYPE_HASH_ZIPLIST: u8 = 13;
pub const TYPE_LIST_QUICKLIST: u8 = 14;
pub const TYPE_HASH_LISTPACK: u8 = 16;
pub const TYPE_ZSET_LISTPACK: u8 = 17;
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;
pub const TYPE_SET_LISTPACK: u8 = 20;
pub const TYPE_STREAM_LISTPACKS: u8 = 15;
pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;
pub const TYPE_STREAM_LISTPACKS_3: u8 = 21;
/// Redis 7.4's hashes with field deadlines (not loadable by 7.0): before
/// 7.4's release (deadlines absolute, no earliest first), and since.
pub const TYPE_HASH_METADATA_PRE_GA: u8 = 22;
pub const TYPE_HASH_LISTPACK_EX_PRE_GA: u8 = 23;
pub const TYPE_HASH_METADATA: u8 = 24;
pub const TYPE_HASH_LISTPACK_EX: u8 = 25;
/// lapse's own: a set some of whose members have deadlines (Redis 8.12
/// documents no encoding for them). Laid out as `TYPE_HASH_METADATA`
/// without values: the earliest deadline, the count, then each member's
/// deadline relative to it (+1; 0: none) and the member. Far from Redis's
/// numbers, so a redis-server refuses the file ("Unknown RDB encoding
/// type") instead of misreading it; a set with no member deadline is
/// written as a plain set.
pub const TYPE_SET_MEMBER_TTLS: u8 = 240;
/// lapse's own: a sorted set some of whose members have deadlines, as
/// `TYPE_ZSET_2` after the earliest deadline, each member preceded by its
/// relative deadline (as in `TYPE_SET_MEMBER_TTLS`).
pub const TYPE_ZSET_MEMBER_TTLS: u8 = 241;

const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// Redis's CRC-64, with the crate's slice-by-16 tables (the bytewise
/// default was a tenth of loading a file).
pub static CRC64: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_REDIS);

pub fn crc64(bytes: &[u8]) -> u64 {
    CRC64.checksum(bytes)
}

/// `rdbSaveLen`.
pub fn write_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// A string as `rdbSaveRawString` writes it uncompressed: as an 8, 16 or
/// 32-bit integer when it is one written canonically
/// (`rdbTryIntegerEncoding`), else its length and bytes.
pub fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(n) = crate::value::canonical_int(s) {
            if let Ok(n) = i8::try_from(n) {
                out.extend_from_slice(&[0xC0 | ENC_INT8, n as u8]);
                return;
            } else if let Ok(n) = i16::try_from(n) {
                out.push(0xC0 | ENC_INT16);
                out.extend_from_slice(&n.to_le_bytes());
                return;
            } else if let Ok(n) = i32::try_from(n) {
                out.push(0xC0 | ENC_INT32);
                out.extend_from_slice(&n.to_le_bytes());
                return;
            }
        }
    }
    write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A string as `rdbSaveRawString` writes it with `rdbcompression yes`:
/// LZF-compressed when longer than 20 bytes and at least 4 bytes smaller
/// so, else plain.
fn write_string_compressed(out: &mut Vec<u8>, s: &[u8]) {
    thread_local! {
        static LZF: std::cell::RefCell<crate::lzf::Compressor> = Default::default();
    }
    if s.len() > 20 {
        let packed = LZF.with(|c| c.borrow_mut().compress(s, s.len() - 4));
        if let Some(packed) = packed {
            out.push(0xC0 | ENC_LZF);
            write_len(out, packed.len() as u64);
            write_len(out, s.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    write_string(out, s);
}

/// How strings are written under `options` (LZF or not).
fn string_writer(options: SaveOptions) -> fn(&mut Vec<u8>, &[u8]) {
    if options.compress {
        write_string_compressed
    } else {
        write_string
    }
}

/// How a save writes (`rdbcompression`, `rdbchecksum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaveOptions {
    pub compress: bool,
    pub checksum: bool,
}

/// Reads RDB data from a byte slice; every read checks its bounds.
#[derive(Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    pub at: usize,
}

/// A length, or a special string encoding.
enum Len {
    Plain(u64),
    Encoded(u8),
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, at: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.at
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.data.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    pub fn byte(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }

    fn len_or_encoding(&mut self) -> Option<Len> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => Len::Plain(u64::from(first & 0x3f)),
            1 => Len::Plain((u64::from(first & 0x3f) << 8) | u64::from(self.byte()?)),
            2 if first == 0x80 => Len::Plain(u64::from(u32::from_be_bytes(
                self.bytes(4)?.try_into().ok()?,
            ))),
            2 if first == 0x81 => Len::Plain(u64::from_be_bytes(self.bytes(8)?.try_into().ok()?)),
            2 => return None,
            _ => Len::Encoded(first & 0x3f),
        })
    }

    pub fn length(&mut self) -> Option<u64> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Some(n),
            Len::Encoded(_) => None,
        }
    }

    /// A string in any of its encodings, borrowed from the data when it
    /// is stored plain. `max_len` bounds what an LZF header may ask to
    /// allocate.
    pub fn string_ref(&mut self, max_len: usize) -> Option<std::borrow::Cow<'a, [u8]>> {
        let at = self.at;
        if let Some(Len::Plain(n)) = self.len_or_encoding() {
            return Some(std::borrow::Cow::Borrowed(
                self.bytes(usize::try_from(n).ok()?)?,
            ));
        }
        self.at = at;
        self.string(max_len).map(std::borrow::Cow::Owned)
    }

    /// A string in any of its encodings. `max_len` bounds what an LZF
    /// header may ask to allocate.
    pub fn string(&mut self, max_len: usize) -> Option<Vec<u8>> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Some(self.bytes(usize::try_from(n).ok()?)?.to_vec()),
            Len::Encoded(ENC_INT8) => Some((self.byte()? as i8).to_string().into_bytes()),
            Len::Encoded(ENC_INT16) => Some(
                i16::from_le_bytes(self.bytes(2)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Len::Encoded(ENC_INT32) => Some(
                i32::from_le_bytes(self.bytes(4)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Len::Encoded(ENC_LZF) => {
                let compressed = usize::try_from(self.length()?).ok()?;
                let plain = usize::try_from(self.length()?).ok()?;
                if plain > max_len {
                    return None;
                }
                let data = self.bytes(compressed)?;
                let out = lzf::decompress(data, plain).ok()?;
                (out.len() == plain).then_some(out)
            }
            Len::Encoded(_) => None,
        }
    }
}

/// A listpack (Redis's `listpack.c` layout) being built for an RDB file:
/// total bytes and count in a 6-byte header, the entries (strings that
/// read as canonical integers stored as integers, as `lpAppend` does),
/// each followed by its length backwards, then 0xFF.
pub struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

/// Listpack entry encodings (`listpack.c`).
const LP_ENCODING_13BIT_INT: u8 = 0xC0;
const LP_ENCODING_6BIT_STR: u8 = 0x80;
const LP_ENCODING_12BIT_STR: u8 = 0xE0;
const LP_ENCODING_16BIT_INT: u8 = 0xF1;
const LP_ENCODING_24BIT_INT: u8 = 0xF2;
const LP_ENCODING_32BIT_INT: u8 = 0xF3;
const LP_ENCODING_64BIT_INT: u8 = 0xF4;
const LP_ENCODING_32BIT_STR: u8 = 0xF0;
const LP_EOF: u8 = 0xFF;
const LP_HEADER_BYTES: usize = 6;

impl Default for ListpackWriter {
    fn default() -> Self {
        ListpackWriter {
            buf: vec![0; LP_HEADER_BYTES],
            count: 0,
        }
    }
}

impl ListpackWriter {
    /// Bytes so far (header and entries).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn push_int(&mut self, n: i64) {
        let start = self.buf.len();
        let b = &mut self.buf;
        if (0..=127).contains(&n) {
            b.push(n as u8);
        } else if (-4096..=4095).contains(&n) {
            let v = (n as u16) & 0x1FFF;
            b.extend_from_slice(&[LP_ENCODING_13BIT_INT | (v >> 8) as u8, v as u8]);
        } else if i16::try_from(n).is_ok() {
            b.push(LP_ENCODING_16BIT_INT);
            b.extend_from_slice(&(n as i16).to_le_bytes());
        } else if (-(1 << 23)..(1 << 23)).contains(&n) {
            b.push(LP_ENCODING_24BIT_INT);
            b.extend_from_slice(&(n as i32).to_le_bytes()[..3]);
        } else if i32::try_from(n).is_ok() {
            b.push(LP_ENCODING_32BIT_INT);
            b.extend_from_slice(&(n as i32).to_le_bytes());
        } else {
            b.push(LP_ENCODING_64BIT_INT);
            b.extend_from_slice(&n.to_le_bytes());
        }
        self.entry_done(start);
    }

    pub fn push(&mut self, s: &[u8]) {
        if let Some(n) = crate::value::canonical_int(s) {
            return self.push_int(n);
        }
        let start = self.buf.len();
        let b = &mut self.buf;
        let len = s.len();
        if len < 64 {
            b.push(LP_ENCODING_6BIT_STR | len as u8);
        } else if len < 4096 {
            b.extend_from_slice(&[LP_ENCODING_12BIT_STR | (len >> 8) as u8, len as u8]);
        } else {
            b.push(LP_ENCODING_32BIT_STR);
            b.extend_from_slice(&(len as u32).to_le_bytes());
        }
        b.extend_from_slice(s);
        self.entry_done(start);
    }

    pub fn push_item(&mut self, item: crate::value::Item<'_>) {
        match item {
            crate::value::Item::Int(n) => self.push_int(n),
            other => other.with_bytes(|b| self.push(b)),
        }
    }

    /// A sorted-set score as `zzlInsertAt` stores it: an integer when the
    /// double is one (`double2ll`), else `%.17g`.
    pub fn push_score(&mut self, score: f64) {
        const HALF_RANGE: f64 = (i64::MAX / 2) as f64;
        if (-HALF_RANGE..=HALF_RANGE).contains(&score) && score == (score as i64) as f64 {
            self.push_int(score as i64);
        } else {
            self.push(crate::protocol::reply::format_g(score, 17).as_bytes());
        }
    }

    /// The backwards length of the entry that started at `start`.
    fn entry_done(&mut self, start: usize) {
        let l = self.buf.len() - start;
        let b = &mut self.buf;
        if l <= 127 {
            b.push(l as u8);
        } else if l < 16383 {
            b.extend_from_slice(&[(l >> 7) as u8, (l & 127) as u8 | 128]);
        } else if l < 2097151 {
            b.extend_from_slice(&[
                (l >> 14) as u8,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        } else if l < 268435455 {
            b.extend_from_slice(&[
                (l >> 21) as u8,
                ((l >> 14) & 127) as u8 | 128,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        } else {
            b.extend_from_slice(&[
                (l >> 28) as u8,
                ((l >> 21) & 127) as u8 | 128,
                ((l >> 14) & 127) as u8 | 128,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        }
        self.count += 1;
    }

    /// The finished listpack's bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(LP_EOF);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let count = self.count.min(u16::MAX as usize) as u16;
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

/// An intset (Redis's `intset.c` layout): the narrowest of 2, 4 or 8
/// bytes per member, the count, the members ascending, little-endian.
pub fn intset(sorted: &[i64]) -> Vec<u8> {
    let width: usize = sorted.iter().fold(2, |w, &n| {
        if i16::try_from(n).is_ok() {
            w
        } else if i32::try_from(n).is_ok() {
            w.max(4)
        } else {
            8
        }
    });
    let mut out = Vec::with_capacity(8 + sorted.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    for n in sorted {
        out.extend_from_slice(&n.to_le_bytes()[..width]);
    }
    out
}

/// A quicklist node's listpack stops growing past this many bytes (the
/// default `list-max-listpack-size -2`: 8 KB).
const QUICKLIST_NODE_BYTES: usize = 8 * 1024;
/// Quicklist node container: a listpack (`QUICKLIST_NODE_CONTAINER_PACKED`).
const QUICKLIST_NODE_PACKED: u64 = 2;

/// The RDB type of a value as redis-server 7.0 writes it: the compact
/// encodings for what lapse keeps packed (which follow Redis's limits),
/// quicklist for every list, the plain ones otherwise. (Sets of strings
/// are plain: the listpack set type is 7.2's, unknown to 7.0.)
fn value_type(value: crate::value::ValueRef<'_>) -> u8 {
    use crate::value::{HashRef, ValueRef, ZSetRef};
    match value {
        ValueRef::Str(_) => TYPE_STRING,
        ValueRef::List(_) => TYPE_LIST_QUICKLIST_2,
        // Member deadlines first: a packed set or sorted set may have them.
        ValueRef::Set(_) if value.earliest_member_ttl().is_some() => TYPE_SET_MEMBER_TTLS,
        ValueRef::Set(set) if set.is_intset() => TYPE_SET_INTSET,
        ValueRef::Set(_) => TYPE_SET,
        ValueRef::ZSet(_) if value.earliest_member_ttl().is_some() => TYPE_ZSET_MEMBER_TTLS,
        ValueRef::ZSet(ZSetRef::Packed(_)) => TYPE_ZSET_LISTPACK,
        ValueRef::ZSet(_) => TYPE_ZSET_2,
        ValueRef::Hash(HashRef::Packed(p)) if p.flag() => TYPE_HASH_LISTPACK_EX,
        ValueRef::Hash(HashRef::Packed(_)) => TYPE_HASH_LISTPACK,
        // A table whose fields have no deadline left is a plain hash (as
        // Redis's `hashTypeGetMinExpire` decides).
        ValueRef::Hash(h) if h.field_ttl_count() > 0 => TYPE_HASH_METADATA,
        ValueRef::Hash(_) => TYPE_HASH,
        ValueRef::Stream(_) => TYPE_STREAM_LISTPACKS_2,
    }
}

/// A list as the listpack nodes of a quicklist, as the RDB holds it.
fn quicklist_nodes(list: &crate::value::List) -> Vec<Vec<u8>> {
    let mut nodes: Vec<Vec<u8>> = Vec::new();
    let mut node = ListpackWriter::default();
    for e in list.iter() {
        if node.len() >= QUICKLIST_NODE_BYTES {
            nodes.push(std::mem::take(&mut node).finish());
        }
        node.push(e);
    }
    if !node.is_empty() {
        nodes.push(node.finish());
    }
    nodes
}

/// A list's quicklist shape as DEBUG OBJECT reports it: how many
/// listpack nodes, and their bytes in all.
pub fn quicklist_shape(list: &crate::value::List) -> (usize, usize) {
    let nodes = quicklist_nodes(list);
    (nodes.len(), nodes.iter().map(Vec::len).sum())
}

/// A value after its type byte and key (see `value_type`).
fn write_value(
    out: &mut Vec<u8>,
    value: crate::value::ValueRef<'_>,
    string: fn(&mut Vec<u8>, &[u8]),
) {
    use crate::value::{HashRef, Item, ValueRef, ZSetRef};
    let write_string = string;
    match value {
        ValueRef::Str(s) => write_string(out, s),
        ValueRef::List(list) => {
            let nodes = quicklist_nodes(list);
            write_len(out, nodes.len() as u64);
            for node in nodes {
                write_len(out, QUICKLIST_NODE_PACKED);
                write_string(out, &node);
            }
        }
        // (`value_type`'s order: a packed set or sorted set with member
        // deadlines is written as a table with them.)
        ValueRef::Set(set) if set.is_intset() && set.earliest_member_ttl().is_none() => {
            let ints: Vec<i64> = set
                .iter()
                .map(|m| match m {
                    Item::Int(n) => n,
                    other => other.with_bytes(|b| crate::value::canonical_int(b).unwrap_or(0)),
                })
                .collect();
            write_string(out, &intset(&ints));
        }
        ValueRef::Set(set) => {
            let earliest = write_deadlines_head(out, value);
            write_len(out, set.len() as u64);
            write_set_members(out, set, 0, usize::MAX, earliest, write_string);
        }
        ValueRef::ZSet(z @ ZSetRef::Packed(_)) if z.earliest_member_ttl().is_none() => {
            let mut lp = ListpackWriter::default();
            for e in z.iter_from(0, false) {
                lp.push_item(e.member);
                lp.push_score(e.score);
            }
            write_string(out, &lp.finish());
        }
        ValueRef::ZSet(z) => {
            let earliest = write_deadlines_head(out, value);
            write_len(out, z.len() as u64);
            write_zset_members(out, z, 0, usize::MAX, earliest, write_string);
        }
        ValueRef::Hash(hash @ HashRef::Packed(p)) => {
            // listpackex: the earliest deadline (0: none), then triples
            // whose deadline is an integer entry (0: none).
            if p.flag() {
                let earliest = hash.earliest_field_ttl().unwrap_or(0);
                out.extend_from_slice(&earliest.to_le_bytes());
            }
            let mut lp = ListpackWriter::default();
            for (field, value, at) in hash.iter_with_ttls_from(0) {
                lp.push_item(field);
                lp.push_item(value);
                if p.flag() {
                    lp.push_item(Item::Int(at.unwrap_or(0)));
                }
            }
            write_string(out, &lp.finish());
        }
        ValueRef::Hash(hash) => {
            let earliest = write_deadlines_head(out, value);
            write_len(out, hash.len() as u64);
            write_hash_fields(out, hash, 0, usize::MAX, earliest, write_string);
        }
        ValueRef::Stream(stream) => write_stream(out, stream, write_string),
    }
}

/// The head of a table whose elements have deadlines
/// (`RDB_TYPE_HASH_METADATA`, `TYPE_SET_MEMBER_TTLS`): its earliest
/// deadline (8 bytes; a lower bound of them, which is all a loader needs:
/// the deadlines are written relative to it); returns it (`None` for a
/// value with no element deadline, which has no head).
fn write_deadlines_head(out: &mut Vec<u8>, value: crate::value::ValueRef<'_>) -> Option<i64> {
    let earliest = value.earliest_member_ttl()?;
    out.extend_from_slice(&earliest.to_le_bytes());
    Some(earliest)
}

/// Up to `units` fields of a hash table from the `at`th: each one's
/// deadline first when the hash has an `earliest` (0: none, else its
/// distance from the earliest plus 1, as `rdbSaveObject` writes them),
/// then field and value. Returns how many it wrote.
fn write_hash_fields(
    out: &mut Vec<u8>,
    hash: crate::value::HashRef<'_>,
    at: usize,
    units: usize,
    earliest: Option<i64>,
    string: fn(&mut Vec<u8>, &[u8]),
) -> usize {
    let mut written = 0;
    for (field, value, ttl) in hash.iter_with_ttls_from(at).take(units) {
        write_relative_deadline(out, ttl, earliest);
        field.with_bytes(|f| string(out, f));
        value.with_bytes(|v| string(out, v));
        written += 1;
    }
    written
}

/// An element's deadline in a value with an `earliest` (none: the format
/// has no deadlines): 0 for none, else its distance from the earliest
/// plus 1, as `rdbSaveObject` writes a hash field's.
fn write_relative_deadline(out: &mut Vec<u8>, ttl: Option<i64>, earliest: Option<i64>) {
    if let Some(earliest) = earliest {
        write_len(out, ttl.map_or(0, |ttl| (ttl - earliest) as u64 + 1));
    }
}

/// Up to `units` members of a set from the `at`th, each after its
/// deadline when the set has an `earliest`. Returns how many it wrote.
fn write_set_members(
    out: &mut Vec<u8>,
    set: crate::value::SetRef<'_>,
    at: usize,
    units: usize,
    earliest: Option<i64>,
    string: fn(&mut Vec<u8>, &[u8]),
) -> usize {
    let mut written = 0;
    for (member, ttl) in set.iter_with_ttls_from(at).take(units) {
        write_relative_deadline(out, ttl, earliest);
        member.with_bytes(|m| string(out, m));
        written += 1;
    }
    written
}

/// Up to `units` members of a sorted set tree from the `at`th, highest
/// score first as Redis writes them, each after its deadline when the
/// set has an `earliest`. Returns how many it wrote.
fn write_zset_members(
    out: &mut Vec<u8>,
    z: crate::value::ZSetRef<'_>,
    at: usize,
    units: usize,
    earliest: Option<i64>,
    string: fn(&mut Vec<u8>, &[u8]),
) -> usize {
    let mut written = 0;
    for (e, ttl) in z.iter_with_ttls_from(at, true).take(units) {
        write_relative_deadline(out, ttl, earliest);
        e.member.with_bytes(|m| string(out, m));
        out.extend_from_slice(&e.score.to_le_bytes());
        written += 1;
    }
    written
}

/// A stream as Redis 7.0's `rdbSaveObject` writes it
/// (`RDB_TYPE_STREAM_LISTPACKS_2`): each node as its master ID (16 bytes
/// big-endian) and a listpack laid out as `streamAppendItem` builds it,
/// then the length, last, first and max-deleted IDs, entries added, and
/// the consumer groups with their pending entries and consumers.
fn write_stream(
    out: &mut Vec<u8>,
    stream: &crate::value::Stream,
    write_string: fn(&mut Vec<u8>, &[u8]),
) {
    let nodes = stream.nodes_for_rdb();
    write_len(out, nodes.len() as u64);
    for (master, fields, live, deleted, entries) in nodes {
        let mut lp = ListpackWriter::default();
        lp.push_int(i64::from(live));
        lp.push_int(i64::from(deleted));
        lp.push_int(fields.len() as i64);
        fields.iter().for_each(|f| lp.push(f));
        lp.push_int(0);
        for (entry, is_deleted, same) in entries {
            let flags = i64::from(is_deleted) | if same { 2 } else { 0 };
            let n = entry.fields.len() / 2;
            lp.push_int(flags);
            lp.push_int(entry.id.ms.wrapping_sub(master.ms) as i64);
            lp.push_int(entry.id.seq.wrapping_sub(master.seq) as i64);
            if same {
                entry
                    .fields
                    .iter()
                    .skip(1)
                    .step_by(2)
                    .for_each(|v| lp.push(v));
            } else {
                lp.push_int(n as i64);
                entry.fields.iter().for_each(|f| lp.push(f));
            }
            lp.push_int(if same { n + 3 } else { 2 * n + 4 } as i64);
        }
        write_string(out, &master.to_be_bytes());
        write_string(out, &lp.finish());
    }
    write_len(out, stream.length);
    for id in [stream.last_id, stream.first_id, stream.max_deleted_entry_id] {
        write_len(out, id.ms);
        write_len(out, id.seq);
    }
    write_len(out, stream.entries_added);
    write_len(out, stream.groups.len() as u64);
    for (name, group) in &stream.groups {
        write_string(out, name);
        write_len(out, group.last_id.ms);
        write_len(out, group.last_id.seq);
        write_len(out, group.entries_read.unwrap_or(u64::MAX));
        write_len(out, group.pending.len() as u64);
        for (id, p) in &group.pending {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&p.delivery_time_ms.to_le_bytes());
            write_len(out, p.delivery_count);
        }
        write_len(out, group.consumers.len() as u64);
        for (name, consumer) in &group.consumers {
            write_string(out, name);
            out.extend_from_slice(&consumer.seen_time_ms.to_le_bytes());
            write_len(out, consumer.pending.len() as u64);
            for id in &consumer.pending {
                out.extend_from_slice(&id.to_be_bytes());
            }
        }
    }
}

fn write_aux(out: &mut Vec<u8>, key: &str, value: &str) {
    write_aux_bytes(out, key, value.as_bytes());
}

fn write_aux_bytes(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    out.push(OPCODE_AUX);
    write_string(out, key.as_bytes());
    write_string(out, value);
}

/// A key's soft deadline (issue 42), after the key: an AUX field
/// redis-server ignores (`crate::db::soft_deadlines`).
pub fn write_soft_deadline(out: &mut Vec<u8>, key: &[u8], soft_ms: i64) {
    use crate::db::soft_deadlines::{encode, LABEL};
    write_aux_bytes(out, LABEL, &encode(key, soft_ms));
}

/// The start of an RDB file, as Redis 7.0's `rdbSaveRio` writes it: the
/// magic and version, then the AUX fields (`aof_base`: whether this is the
/// base of an AOF). Function libraries and databases follow.
pub fn write_header(out: &mut Vec<u8>, now_ms: i64, used_memory: u64, aof_base: bool) {
    out.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
    write_aux(out, "redis-ver", crate::REDIS_COMPAT_VERSION);
    write_aux(out, "redis-bits", "64");
    write_aux(out, "ctime", &(now_ms / 1000).to_string());
    write_aux(out, "used-mem", &used_memory.to_string());
    write_aux(out, "aof-base", if aof_base { "1" } else { "0" });
}

/// SELECTDB and RESIZEDB: the keys after this belong to database `index`,
/// which holds about `keys` keys, `expires` of them with a deadline.
pub fn write_db_start(out: &mut Vec<u8>, index: usize, keys: usize, expires: usize) {
    out.push(OPCODE_SELECTDB);
    write_len(out, index as u64);
    out.push(OPCODE_RESIZEDB);
    write_len(out, keys as u64);
    write_len(out, expires as u64);
}

/// An entry's absolute deadline, if it has one (before its type).
fn write_deadline(out: &mut Vec<u8>, at_ms: Option<i64>) {
    if let Some(at_ms) = at_ms {
        out.push(OPCODE_EXPIRETIME_MS);
        out.extend_from_slice(&at_ms.to_le_bytes());
    }
}

/// A save's entries in RDB form (an RDB file, or an AOF base with the RDB
/// preamble).
pub struct RdbEntries(pub SaveOptions);

impl crate::db::snapshot::EntryFormat for RdbEntries {
    fn is_big(&self, value: crate::value::ValueRef<'_>) -> bool {
        is_big(value)
    }

    fn write_entry(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: crate::value::ValueRef<'_>,
        at_ms: Option<i64>,
    ) {
        write_entry(out, key, value, at_ms, self.0);
    }

    fn write_big_head(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: crate::value::ValueRef<'_>,
        at_ms: Option<i64>,
    ) {
        write_big_head(out, key, value, at_ms, self.0);
    }

    fn write_big_piece(
        &self,
        out: &mut Vec<u8>,
        _key: &[u8],
        value: crate::value::ValueRef<'_>,
        at: usize,
        units: usize,
        _at_ms: Option<i64>,
    ) -> Option<usize> {
        write_big_piece(out, value, at, units, self.0)
    }

    fn write_soft_deadline(&self, out: &mut Vec<u8>, key: &[u8], soft_ms: i64) {
        write_soft_deadline(out, key, soft_ms);
    }
}

/// One key: its absolute deadline if it has one, its type, key and value.
pub fn write_entry(
    out: &mut Vec<u8>,
    key: &[u8],
    value: crate::value::ValueRef<'_>,
    at_ms: Option<i64>,
    options: SaveOptions,
) {
    let string = string_writer(options);
    write_deadline(out, at_ms);
    out.push(value_type(value));
    string(out, key);
    write_value(out, value, string);
}

/// A value with more elements than this (or a string longer than
/// `BIG_STRING_BYTES`) is written in pieces (`write_big_head`, then
/// `write_big_piece`), so that a background save never holds the loop for
/// the whole of it.
pub const BIG_VALUE_ELEMENTS: usize = 4096;
pub const BIG_STRING_BYTES: usize = 1 << 20;
/// Bytes of a big string per unit of a piece's budget.
pub const STRING_BYTES_PER_UNIT: usize = 1024;

/// Whether `value` is written in pieces.
pub fn is_big(value: crate::value::ValueRef<'_>) -> bool {
    use crate::value::ValueRef;
    match value {
        ValueRef::Str(s) => s.len() > BIG_STRING_BYTES,
        ValueRef::List(l) => l.len() > BIG_VALUE_ELEMENTS,
        ValueRef::Set(s) => s.len() > BIG_VALUE_ELEMENTS,
        ValueRef::ZSet(z) => z.len() > BIG_VALUE_ELEMENTS,
        ValueRef::Hash(h) => h.len() > BIG_VALUE_ELEMENTS,
        // Written whole (its nodes are bounded listpacks).
        ValueRef::Stream(_) => false,
    }
}

/// The start of a big value's entry: its deadline, type, key and length.
/// Big values use the encodings whose length comes first and whose
/// elements follow one by one, all of which redis-server 7.0 loads: a
/// plain string (not LZF: that would need the whole string at once),
/// `RDB_TYPE_LIST`, `RDB_TYPE_SET`, `RDB_TYPE_ZSET_2`, `RDB_TYPE_HASH`.
pub fn write_big_head(
    out: &mut Vec<u8>,
    key: &[u8],
    value: crate::value::ValueRef<'_>,
    at_ms: Option<i64>,
    options: SaveOptions,
) {
    use crate::value::ValueRef;
    write_deadline(out, at_ms);
    let (kind, len) = match value {
        ValueRef::Str(s) => (TYPE_STRING, s.len()),
        ValueRef::List(l) => (TYPE_LIST, l.len()),
        ValueRef::Set(s) if s.earliest_member_ttl().is_some() => (TYPE_SET_MEMBER_TTLS, s.len()),
        ValueRef::Set(s) => (TYPE_SET, s.len()),
        ValueRef::ZSet(z) if z.earliest_member_ttl().is_some() => (TYPE_ZSET_MEMBER_TTLS, z.len()),
        ValueRef::ZSet(z) => (TYPE_ZSET_2, z.len()),
        ValueRef::Hash(h) if h.field_ttl_count() > 0 => (TYPE_HASH_METADATA, h.len()),
        ValueRef::Hash(h) => (TYPE_HASH, h.len()),
        // Never big (`is_big`): written whole by `write_value`.
        ValueRef::Stream(_) => (TYPE_STREAM_LISTPACKS_2, 0),
    };
    out.push(kind);
    string_writer(options)(out, key);
    write_deadlines_head(out, value);
    write_len(out, len as u64);
}

/// Writes up to `units` more elements (or KB of a string) of a big value
/// from position `at`; returns where the next piece starts, or `None`
/// when the value is complete. The value must not change in between.
pub fn write_big_piece(
    out: &mut Vec<u8>,
    value: crate::value::ValueRef<'_>,
    at: usize,
    units: usize,
    options: SaveOptions,
) -> Option<usize> {
    use crate::value::ValueRef;
    let string = string_writer(options);
    // The head wrote the same earliest element deadline (the value does
    // not change between pieces): the elements' are relative to it.
    let earliest = value.earliest_member_ttl();
    let (end, len) = match value {
        ValueRef::Str(s) => {
            let end = at
                .saturating_add(units.saturating_mul(STRING_BYTES_PER_UNIT))
                .min(s.len());
            out.extend_from_slice(&s[at.min(end)..end]);
            (end, s.len())
        }
        ValueRef::List(l) => {
            let mut end = at;
            for e in l.iter_from(at).take(units) {
                string(out, e);
                end += 1;
            }
            (end, l.len())
        }
        ValueRef::Set(s) => {
            let end = at + write_set_members(out, s, at, units, earliest, string);
            (end, s.len())
        }
        ValueRef::ZSet(z) => {
            let end = at + write_zset_members(out, z, at, units, earliest, string);
            (end, z.len())
        }
        ValueRef::Hash(h) => {
            let end = at + write_hash_fields(out, h, at, units, earliest, string);
            (end, h.len())
        }
        // Never big (`is_big`).
        ValueRef::Stream(_) => (0, 0),
    };
    // (No progress cannot happen while the value stays as it is; it ends
    // the value rather than loop.)
    (end < len && end > at).then_some(end)
}

/// DUMP's payload for one value: its RDB type and serialization (as in
/// a file, compact encodings included), framed by `dump_payload`.
pub fn dump_value(value: crate::value::ValueRef<'_>, options: SaveOptions) -> Vec<u8> {
    let string = string_writer(options);
    let mut body = vec![value_type(value)];
    write_value(&mut body, value, string);
    dump_payload(body)
}

/// The length of a value's serialization without its type byte (DEBUG
/// OBJECT's `serializedlength`, Redis's `rdbSavedObjectLen`).
pub fn serialized_len(value: crate::value::ValueRef<'_>, options: SaveOptions) -> usize {
    let mut body = Vec::new();
    write_value(&mut body, value, string_writer(options));
    body.len()
}

/// Frames a DUMP payload: `body`, the RDB version, the CRC-64 of both.
pub fn dump_payload(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// The body of a DUMP payload whose version this server reads and whose
/// checksum matches, unless told to skip that check (`verifyDumpPayload`).
pub fn payload_body(payload: &[u8], skip_checksum: bool) -> Option<&[u8]> {
    if payload.len() < 10 {
        return None;
    }
    let (framed, crc) = payload.split_at(payload.len() - 8);
    let version = u16::from_le_bytes([framed[framed.len() - 2], framed[framed.len() - 1]]);
    if version > RDB_VERSION_READ || (!skip_checksum && crc64(framed).to_le_bytes() != crc) {
        return None;
    }
    Some(&framed[..framed.len() - 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_redis_check_value() {
        // Redis's own crc64 test vector.
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn lengths_and_strings_round_trip() {
        for n in [
            0u64,
            63,
            64,
            16383,
            16384,
            u64::from(u32::MAX),
            u64::from(u32::MAX) + 1,
        ] {
            let mut out = Vec::new();
            write_len(&mut out, n);
            assert_eq!(Reader::new(&out).length(), Some(n));
        }
        for (text, bytes) in [
            (&b"-2"[..], &[0xC0, 0xFE][..]),
            (b"300", &[0xC1, 0x2C, 0x01]),
            (b"-2147483648", &[0xC2, 0, 0, 0, 0x80]),
        ] {
            let mut out = Vec::new();
            write_string(&mut out, text);
            assert_eq!(out, bytes);
            assert_eq!(Reader::new(&out).string(100).as_deref(), Some(text));
        }
        for plain in [&b"2147483648"[..], b"007", b"-0", b"+1"] {
            let mut out = Vec::new();
            write_string(&mut out, plain);
            assert_eq!(out[0] as usize, plain.len());
        }
        let mut out = Vec::new();
        write_string(&mut out, b"hello");
        assert_eq!(
            Reader::new(&out).string(100).as_deref(),
            Some(&b"hello"[..])
        );
        assert_eq!(
            Reader::new(&[0xc0, 0xfe]).string(10).as_deref(),
            Some(&b"-2"[..])
        );
        assert!(Reader::new(&[0x80, 0, 0, 0, 9]).string(100).is_none());
    }

    #[test]
    fn hashes_with_field_deadlines_round_trip_as_redis_7_4_writes_them() {
        use crate::value::{Hash, PackLimits, Value};
        const OPTIONS: SaveOptions = SaveOptions {
            compress: true,
            checksum: true,
        };
        let limits = crate::persistence::rdb_load::Limits {
            hash: PackLimits::HASH,
            set: crate::value::SetLimits::DEFAULT,
            list: crate::value::ListLimits::DEFAULT,
            zset: crate::value::ZLimits::DEFAULT,
        };
        // listpackex, a table (RDB_TYPE_HASH_METADATA), a big one (in
        // pieces), and a table whose deadlines were all cleared.
        for (n, expected_type) in [
            (3usize, TYPE_HASH_LISTPACK_EX),
            (600, TYPE_HASH_METADATA),
            (BIG_VALUE_ELEMENTS + 10, TYPE_HASH_METADATA),
            (601, TYPE_HASH),
        ] {
            let mut h = Hash::default();
            for i in 0..n {
                h.set(
                    format!("f{i}").as_bytes(),
                    format!("v{i}").as_bytes(),
                    PackLimits::HASH,
                );
            }
            for i in (0..n).step_by(2) {
                let at = 1_800_000_000_000 + (i as i64 * 7919) % 100_000;
                h.set_field_ttl(format!("f{i}").as_bytes(), Some(at), PackLimits::HASH);
                if expected_type == TYPE_HASH {
                    h.set_field_ttl(format!("f{i}").as_bytes(), None, PackLimits::HASH);
                }
            }
            let value = Value::Hash(h);
            assert_eq!(value_type(value.as_ref()), expected_type, "{n}");
            // DUMP / RESTORE: the whole value at once.
            let payload = dump_value(value.as_ref(), OPTIONS);
            let body = payload_body(&payload, false).unwrap();
            let back = crate::persistence::rdb_load::restore_value(body, limits).unwrap();
            assert_eq!(
                crate::value::sorted_triples(&back),
                crate::value::sorted_triples(&value),
                "{n}"
            );
            assert_eq!(back.as_ref().encoding(), value.as_ref().encoding(), "{n}");
            // A file, big values in pieces.
            let mut file = Vec::new();
            write_header(&mut file, 0, 0, false);
            write_db_start(&mut file, 0, 1, 0);
            if is_big(value.as_ref()) {
                write_big_head(&mut file, b"h", value.as_ref(), None, OPTIONS);
                let mut at = 0;
                while let Some(next) = write_big_piece(&mut file, value.as_ref(), at, 1000, OPTIONS)
                {
                    at = next;
                }
            } else {
                write_entry(&mut file, b"h", value.as_ref(), None, OPTIONS);
            }
            file.push(OPCODE_EOF);
            file.extend_from_slice(&[0; 8]);
            let loaded = crate::persistence::rdb_load::load(&file, limits).unwrap();
            let (_, keys) = loaded.dbs.into_iter().next().unwrap();
            assert_eq!(
                crate::value::sorted_triples(&keys[0].1),
                crate::value::sorted_triples(&value),
                "{n}"
            );
        }
        // A deadline past Redis's limit is refused, not stored.
        let mut body = vec![TYPE_HASH_METADATA];
        body.extend_from_slice(&1i64.to_le_bytes());
        write_len(&mut body, 1);
        write_len(&mut body, 1 << 48);
        write_string(&mut body, b"f");
        write_string(&mut body, b"v");
        assert!(crate::persistence::rdb_load::restore_value(&body, limits).is_none());
    }

    #[test]
    fn listpacks_and_intsets_round_trip_through_the_loader() {
        let mut ints = vec![
            0i64, 127, 128, -1, -4096, 4095, 4096, -4097, -32768, 32767, 32768,
        ];
        ints.extend([
            (1 << 23) - 1,
            -(1 << 23),
            1 << 23,
            i32::MAX.into(),
            i32::MIN.into(),
        ]);
        ints.extend([i64::from(i32::MAX) + 1, i64::MAX, i64::MIN]);
        let mut texts: Vec<Vec<u8>> = ints.iter().map(|n| n.to_string().into_bytes()).collect();
        // String lengths at each header and back-length boundary, and
        // numbers that are not canonical integers.
        for len in [
            0, 1, 63, 64, 125, 126, 127, 4095, 4096, 16376, 16377, 16378, 70_000,
        ] {
            texts.push(vec![b'x'; len]);
        }
        for odd in ["-0", "007", "+1", "9223372036854775808", "1.5", " 1"] {
            texts.push(odd.as_bytes().to_vec());
        }
        let mut lp = ListpackWriter::default();
        texts.iter().for_each(|t| lp.push(t));
        let blob = lp.finish();
        assert_eq!(
            crate::persistence::rdb_load::listpack(&blob).unwrap(),
            texts
        );
        assert_eq!(u16::from_le_bytes([blob[4], blob[5]]) as usize, texts.len());

        for set in [
            vec![1i64, 2, 3],
            vec![-70_000, 5],
            vec![i64::MIN, 0, i64::MAX],
        ] {
            let blob = intset(&set);
            let width = u32::from_le_bytes(blob[..4].try_into().unwrap());
            assert_eq!(width as usize, (blob.len() - 8) / set.len());
            let back = crate::persistence::rdb_load::intset(&blob).unwrap();
            let expected: Vec<Vec<u8>> = set.iter().map(|n| n.to_string().into_bytes()).collect();
            assert_eq!(back, expected);
        }
        assert_eq!(intset(&[1, 2])[..4], 2u32.to_le_bytes());
    }

    #[test]
    fn a_payload_with_a_bad_checksum_or_version_is_refused() {
        let payload = dump_payload(b"body".to_vec());
        assert_eq!(payload_body(&payload, false), Some(&b"body"[..]));
        let mut bad = payload.clone();
        bad[0] ^= 1;
        assert_eq!(payload_body(&bad, false), None);
        // Up to Redis 7.4's version (12) is read; a newer one is refused.
        for (version, readable) in [(11u16, true), (12, true), (13, false)] {
            let mut newer = b"body".to_vec();
            newer.extend_from_slice(&version.to_le_bytes());
            let crc = crc64(&newer);
            newer.extend_from_slice(&crc.to_le_bytes());
            assert_eq!(payload_body(&newer, false).is_some(), readable, "{version}");
        }
        assert_eq!(payload_body(b"short", false), None);
    }
}
