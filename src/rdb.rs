//! Pieces of Redis's RDB serialization: lengths, strings (plain, integer
//! and LZF-compressed), the CRC-64 Redis checks them with, the DUMP
//! payload frame (body, RDB version, checksum) that FUNCTION DUMP and
//! FUNCTION RESTORE exchange, and the pieces of an RDB file (header,
//! database start, one key). Pure functions over bytes and values; the
//! order they are called in (a whole file, a save in slices) is
//! `persist`'s.
//!
//! CRC-64 is Redis's (Jones polynomial, reflected), from the `crc` crate's
//! catalogue (`CRC_64_REDIS`); LZF from the `lzf` crate: both maintained
//! and made for exactly these formats.

use crc::{Crc, CRC_64_REDIS};

/// The RDB format version Redis 7.0 writes (and the newest it reads).
pub const RDB_VERSION: u16 = 10;
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
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_HASH_LISTPACK: u8 = 16;
pub const TYPE_ZSET_LISTPACK: u8 = 17;
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;
pub const TYPE_SET_LISTPACK: u8 = 20;

const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

pub fn crc64(bytes: &[u8]) -> u64 {
    Crc::<u64>::new(&CRC_64_REDIS).checksum(bytes)
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

/// A string as `rdbSaveRawString` writes it uncompressed.
pub fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A string as `rdbSaveRawString` writes it with `rdbcompression yes`:
/// LZF-compressed when longer than 20 bytes and at least 4 bytes smaller
/// so, else plain.
fn write_string_compressed(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() > 20 {
        if let Ok(packed) = lzf::compress(s) {
            if packed.len() + 4 <= s.len() {
                out.push(0xC0 | ENC_LZF);
                write_len(out, packed.len() as u64);
                write_len(out, s.len() as u64);
                out.extend_from_slice(&packed);
                return;
            }
        }
    }
    write_string(out, s);
}

/// How a save writes (`rdbcompression`, `rdbchecksum`).
#[derive(Debug, Clone, Copy)]
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

/// The RDB type of a value in the plain encodings `write_value` uses (the
/// forms every Redis loads, re-encoding small values as it likes).
fn value_type(value: crate::value::ValueRef<'_>) -> u8 {
    use crate::value::ValueRef;
    match value {
        ValueRef::Str(_) => TYPE_STRING,
        ValueRef::List(_) => TYPE_LIST,
        ValueRef::Set(_) => TYPE_SET,
        ValueRef::ZSet(_) => TYPE_ZSET_2,
        ValueRef::Hash(_) => TYPE_HASH,
    }
}

/// A value after its type byte and key (see `value_type`).
fn write_value(
    out: &mut Vec<u8>,
    value: crate::value::ValueRef<'_>,
    string: fn(&mut Vec<u8>, &[u8]),
) {
    use crate::value::ValueRef;
    let write_string = string;
    match value {
        ValueRef::Str(s) => write_string(out, s),
        ValueRef::List(list) => {
            write_len(out, list.len() as u64);
            list.iter().for_each(|e| write_string(out, e));
        }
        ValueRef::Set(set) => {
            write_len(out, set.len() as u64);
            set.iter()
                .for_each(|m| m.with_bytes(|m| write_string(out, m)));
        }
        ValueRef::ZSet(z) => {
            // Highest score first, as Redis writes them.
            write_len(out, z.len() as u64);
            for e in z.iter_from(0, true) {
                e.member.with_bytes(|m| write_string(out, m));
                out.extend_from_slice(&e.score.to_le_bytes());
            }
        }
        ValueRef::Hash(hash) => {
            write_len(out, hash.len() as u64);
            for (field, value) in hash.iter() {
                field.with_bytes(|f| write_string(out, f));
                value.with_bytes(|v| write_string(out, v));
            }
        }
    }
}

fn write_aux(out: &mut Vec<u8>, key: &str, value: &str) {
    out.push(OPCODE_AUX);
    write_string(out, key.as_bytes());
    write_string(out, value.as_bytes());
}

/// The start of an RDB file, as Redis 7.0's `rdbSaveRio` writes it: the
/// magic and version, then the AUX fields (`aof_base`: whether this is the
/// base of an AOF). Function libraries and databases follow.
pub fn write_header(out: &mut Vec<u8>, now_ms: i64, used_memory: u64, aof_base: bool) {
    out.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
    write_aux(out, "redis-ver", crate::info::REDIS_COMPAT_VERSION);
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

/// One key: its absolute deadline if it has one, its type, key and value.
pub fn write_entry(
    out: &mut Vec<u8>,
    key: &[u8],
    value: crate::value::ValueRef<'_>,
    at_ms: Option<i64>,
    options: SaveOptions,
) {
    let string: fn(&mut Vec<u8>, &[u8]) = if options.compress {
        write_string_compressed
    } else {
        write_string
    };
    if let Some(at_ms) = at_ms {
        out.push(OPCODE_EXPIRETIME_MS);
        out.extend_from_slice(&at_ms.to_le_bytes());
    }
    out.push(value_type(value));
    string(out, key);
    write_value(out, value, string);
}

/// Frames a DUMP payload: `body`, the RDB version, the CRC-64 of both.
pub fn dump_payload(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// The body of a DUMP payload whose version this server reads and whose
/// checksum matches (`verifyDumpPayload`).
pub fn payload_body(payload: &[u8]) -> Option<&[u8]> {
    if payload.len() < 10 {
        return None;
    }
    let (framed, crc) = payload.split_at(payload.len() - 8);
    let version = u16::from_le_bytes([framed[framed.len() - 2], framed[framed.len() - 1]]);
    if version > RDB_VERSION || crc64(framed).to_le_bytes() != crc {
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
    fn a_payload_with_a_bad_checksum_or_version_is_refused() {
        let payload = dump_payload(b"body".to_vec());
        assert_eq!(payload_body(&payload), Some(&b"body"[..]));
        let mut bad = payload.clone();
        bad[0] ^= 1;
        assert_eq!(payload_body(&bad), None);
        let mut newer = b"body".to_vec();
        newer.extend_from_slice(&11u16.to_le_bytes());
        let crc = crc64(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(payload_body(&newer), None);
        assert_eq!(payload_body(b"short"), None);
    }
}
