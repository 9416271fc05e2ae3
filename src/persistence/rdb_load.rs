//! Reading an RDB file (ours, or one redis-server 7.0 wrote) into values:
//! every opcode Redis 7.0 writes, the plain value types and the compact
//! ones it writes (intset, listpack hashes and sorted sets, quicklist-2
//! lists of listpacks), and the older ones it still loads (zipmap hashes,
//! ziplist lists, hashes and sorted sets, quicklist-1 lists of ziplists). Values are rebuilt through their own types, which
//! pick their representations by the configured limits as Redis's loader
//! does. Pure: bytes in, entries out to a `LoadSink` as they are read
//! (`Loaded` collects them); never panics on any input, and no length
//! read from the file allocates before the bytes behind it exist.

use super::rdb::*;
use crate::value::field_ttl::FIELD_TTL_MAX_MS;
use crate::value::packed_ttl::Kept;
use crate::value::{Hash, List, ListLimits, PackLimits, Set, SetLimits, Value, ZLimits, ZSet};

/// One key read: name, value, absolute ms deadline.
pub type LoadedKey = (Vec<u8>, Value, Option<i64>);

/// Everything an RDB file holds.
#[derive(Default)]
pub struct Loaded {
    /// Per database index: its keys.
    pub dbs: Vec<(usize, Vec<LoadedKey>)>,
    /// Function library sources (FUNCTION2 records).
    pub functions: Vec<Vec<u8>>,
}

/// Where the entries of a file go as they are read.
pub trait LoadSink {
    /// RESIZEDB: database `db` is about to receive about `keys` keys
    /// (already bounded by the bytes left in the file).
    fn size_hint(&mut self, _db: usize, _keys: usize) {}
    /// A string key (the common case, without building a `Value`).
    fn string(
        &mut self,
        db: usize,
        key: &[u8],
        value: &[u8],
        at_ms: Option<i64>,
    ) -> Result<(), String>;
    /// Any other key.
    fn value(
        &mut self,
        db: usize,
        key: &[u8],
        value: Value,
        at_ms: Option<i64>,
    ) -> Result<(), String>;
    /// A function library's source.
    fn function(&mut self, code: Vec<u8>) -> Result<(), String>;
    /// A key's soft deadline (issue 42's AUX field, after the key).
    fn soft_deadline(&mut self, _db: usize, _key: &[u8], _soft_ms: i64) {}
}

impl LoadSink for Loaded {
    fn string(
        &mut self,
        db: usize,
        key: &[u8],
        value: &[u8],
        at: Option<i64>,
    ) -> Result<(), String> {
        self.value(db, key, Value::Str(value.to_vec()), at)
    }

    fn value(
        &mut self,
        db: usize,
        key: &[u8],
        value: Value,
        at: Option<i64>,
    ) -> Result<(), String> {
        if self.dbs.last().is_none_or(|(index, _)| *index != db) {
            self.dbs.push((db, Vec::new()));
        }
        if let Some((_, keys)) = self.dbs.last_mut() {
            keys.push((key.to_vec(), value, at));
        }
        Ok(())
    }

    fn function(&mut self, code: Vec<u8>) -> Result<(), String> {
        self.functions.push(code);
        Ok(())
    }
}

/// The representation limits values are rebuilt with.
#[derive(Clone, Copy)]
pub struct Limits {
    pub hash: PackLimits,
    pub set: SetLimits,
    pub zset: ZLimits,
    pub list: ListLimits,
}

/// Longest string an LZF header may ask for (Redis's proto-max-bulk-len
/// default; nothing longer can have been stored).
const MAX_STRING_BYTES: usize = 512 * 1024 * 1024;

fn bad(what: &str) -> String {
    format!("Bad RDB: {what}")
}

/// Parses a whole RDB file into memory (checksum verified unless stored
/// as 0).
pub fn load(data: &[u8], limits: Limits) -> Result<Loaded, String> {
    let mut loaded = Loaded::default();
    load_into(data, limits, &mut loaded)?;
    Ok(loaded)
}

/// Parses a whole RDB file, handing each entry to `sink` as it is read;
/// returns the bytes it took (an old-style AOF has commands after them).
/// The checksum is verified at the end (as Redis does): on an error the
/// sink may have received part of the file.
pub fn load_into(data: &[u8], limits: Limits, sink: &mut impl LoadSink) -> Result<usize, String> {
    let header = data.get(..9).ok_or_else(|| bad("too short"))?;
    if &header[..5] != b"REDIS" {
        return Err(bad("wrong signature trying to load DB from file"));
    }
    let version: u16 = std::str::from_utf8(&header[5..])
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("unreadable version"))?;
    if !(1..=RDB_VERSION_READ).contains(&version) {
        return Err(format!("Can't handle RDB format version {version}"));
    }
    let mut r = Reader::new(data);
    r.bytes(9);
    // Where the entry being read started: what an error points at.
    let mut entry_at = r.at;
    read_entries(&mut r, &mut entry_at, limits, sink)
        .map_err(|e| format!("{e} (in the entry at byte offset {entry_at})"))?;
    let body_end = r.at;
    if version >= 5 {
        let stored = r
            .bytes(8)
            .ok_or_else(|| bad("unexpected end of file (no checksum)"))?;
        let stored = u64::from_le_bytes(stored.try_into().map_err(|_| bad("checksum"))?);
        if stored != 0 && stored != crc64(&data[..body_end]) {
            return Err("Wrong RDB checksum. Aborting now.".into());
        }
    }
    Ok(r.at)
}

/// The entries after the header, up to and including EOF.
fn read_entries(
    r: &mut Reader<'_>,
    entry_at: &mut usize,
    limits: Limits,
    sink: &mut impl LoadSink,
) -> Result<(), String> {
    let mut db: usize = 0;
    let mut expire: Option<i64> = None;
    loop {
        *entry_at = r.at;
        let opcode = r.byte().ok_or_else(truncated)?;
        match opcode {
            OPCODE_EOF => break,
            OPCODE_SELECTDB => {
                let index = r.length().ok_or_else(truncated)?;
                db = usize::try_from(index).map_err(|_| bad("database index"))?;
            }
            OPCODE_RESIZEDB => {
                let keys = r.length().ok_or_else(truncated)?;
                r.length().ok_or_else(truncated)?;
                // Each key takes at least three bytes: a size the file
                // cannot hold is not believed.
                let keys = usize::try_from(keys).unwrap_or(usize::MAX);
                sink.size_hint(db, keys.min(r.remaining() / 3));
            }
            OPCODE_AUX => {
                let name = r.string_ref(MAX_STRING_BYTES).ok_or_else(truncated)?;
                let value = r.string_ref(MAX_STRING_BYTES).ok_or_else(truncated)?;
                if *name == *crate::db::soft_deadlines::LABEL.as_bytes() {
                    if let Some((soft_ms, key)) = crate::db::soft_deadlines::decode(&value) {
                        sink.soft_deadline(db, key, soft_ms);
                    }
                }
            }
            OPCODE_EXPIRETIME_MS => {
                let ms = r.bytes(8).ok_or_else(truncated)?;
                expire = Some(i64::from_le_bytes(ms.try_into().map_err(|_| truncated())?));
            }
            OPCODE_EXPIRETIME => {
                let s = r.bytes(4).ok_or_else(truncated)?;
                let secs = i32::from_le_bytes(s.try_into().map_err(|_| truncated())?);
                expire = Some(i64::from(secs) * 1000);
            }
            // LRU idle time and LFU frequency: lapse keeps neither yet.
            OPCODE_IDLE => {
                r.length().ok_or_else(truncated)?;
            }
            OPCODE_FREQ => {
                r.byte().ok_or_else(truncated)?;
            }
            OPCODE_FUNCTION2 => {
                let code = r.string(MAX_STRING_BYTES).ok_or_else(truncated)?;
                sink.function(code)?;
            }
            OPCODE_FUNCTION_PRE_GA | OPCODE_MODULE_AUX => {
                return Err(bad("modules and pre-7.0 functions are not supported"))
            }
            kind => {
                let key = r.string_ref(MAX_STRING_BYTES).ok_or_else(truncated)?;
                let at = expire.take();
                if kind == TYPE_STRING {
                    let value = r.string_ref(MAX_STRING_BYTES).ok_or_else(truncated)?;
                    sink.string(db, &key, &value, at)?;
                    continue;
                }
                let value = read_value(r, kind, limits)?;
                // Redis skips empty aggregates (they cannot have been saved
                // by a healthy server, but a file may hold them).
                if !value.is_empty_aggregate() {
                    sink.value(db, &key, value, at)?;
                }
            }
        }
    }
    Ok(())
}

/// The value in a RESTORE payload's body (type byte, serialization),
/// which must be consumed whole. `None`: Redis's "Bad data format".
pub fn restore_value(body: &[u8], limits: Limits) -> Option<Value> {
    let mut r = Reader::new(body);
    let kind = r.byte()?;
    let value = match kind {
        TYPE_STRING => Value::Str(r.string(MAX_STRING_BYTES)?),
        kind => read_value(&mut r, kind, limits).ok()?,
    };
    (r.remaining() == 0 && !value.is_empty_aggregate()).then_some(value)
}

/// A count read from the file, checked against the bytes left (each
/// element takes at least one byte), so it cannot ask for a huge vector.
fn count(r: &mut Reader<'_>) -> Result<usize, String> {
    let n = r.length().ok_or_else(|| bad("unexpected end of file"))?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= r.remaining())
        .ok_or_else(|| bad("length past the end of the file"))
}

fn string(r: &mut Reader<'_>) -> Result<Vec<u8>, String> {
    r.string(MAX_STRING_BYTES)
        .ok_or_else(|| bad("unexpected end of file"))
}

/// An 8-byte little-endian millisecond time (`rdbLoadMillisecondTime`).
fn millis(r: &mut Reader<'_>) -> Result<i64, String> {
    let b = r.bytes(8).ok_or_else(truncated)?;
    Ok(i64::from_le_bytes(b.try_into().map_err(|_| truncated())?))
}

fn truncated() -> String {
    bad("unexpected end of file")
}

/// A field deadline stored as `ttl` relative to `earliest` (plus 1; an
/// absolute one with `earliest` 1), checked against Redis's limit.
fn field_deadline(ttl: u64, earliest: i64) -> Result<i64, String> {
    i64::try_from(ttl)
        .ok()
        .and_then(|ttl| ttl.checked_add(earliest - 1))
        .filter(|at| (1..=FIELD_TTL_MAX_MS).contains(at))
        .ok_or_else(|| bad("invalid hash field expire time"))
}

/// An element's deadline written relative to its value's `earliest`
/// (0: none; see `rdb::write_relative_deadline`).
fn relative_deadline(r: &mut Reader<'_>, earliest: i64) -> Result<Option<i64>, String> {
    match r.length().ok_or_else(truncated)? {
        0 => Ok(None),
        ttl => field_deadline(ttl, earliest).map(Some),
    }
}

/// A hash of loaded (field, value, deadline) triples.
fn hash_of(
    triples: Vec<crate::value::hash::Triple>,
    as_triples: bool,
    limits: Limits,
) -> Result<Value, String> {
    let hash = Hash::from_triples(triples, as_triples, limits.hash);
    Ok(Value::Hash(hash))
}

fn read_value(r: &mut Reader<'_>, kind: u8, limits: Limits) -> Result<Value, String> {
    Ok(match kind {
        TYPE_STRING => Value::Str(string(r)?),
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
            Value::Stream(Box::new(read_stream(r, kind)?))
        }
        TYPE_LIST => {
            let mut list = List::default();
            for _ in 0..count(r)? {
                list.push(crate::value::list::End::Right, &string(r)?, limits.list);
            }
            Value::List(list)
        }
        TYPE_SET | TYPE_SET_INTSET | TYPE_SET_LISTPACK => {
            let members = match kind {
                TYPE_SET => (0..count(r)?)
                    .map(|_| string(r))
                    .collect::<Result<Vec<_>, _>>()?,
                TYPE_SET_INTSET => intset(&string(r)?)?,
                _ => listpack(&string(r)?)?,
            };
            let first = members.first().map_or(&[][..], Vec::as_slice);
            let mut set = Set::create(first, members.len(), limits.set);
            for m in &members {
                set.add(m, limits.set);
            }
            Value::Set(set)
        }
        TYPE_ZSET_MEMBER_TTLS => {
            let earliest = millis(r)?;
            let n = count(r)?;
            let mut z = ZSet::create(0, limits.zset);
            let mut deadlines = Vec::new();
            for _ in 0..n {
                let at = relative_deadline(r, earliest)?;
                let member = string(r)?;
                let b = r.bytes(8).ok_or_else(|| bad("unexpected end of file"))?;
                let score = f64::from_le_bytes(b.try_into().map_err(|_| bad("score"))?);
                if score.is_nan() {
                    return Err(bad("NaN score"));
                }
                z.insert(&member, score, limits.zset);
                if let Some(at) = at {
                    deadlines.push((member, at));
                }
            }
            z.put_member_ttls(&Kept::new(deadlines));
            Value::ZSet(z)
        }
        TYPE_ZSET | TYPE_ZSET_2 | TYPE_ZSET_LISTPACK | TYPE_ZSET_ZIPLIST => {
            let pairs: Vec<(Vec<u8>, f64)> = match kind {
                TYPE_ZSET_LISTPACK | TYPE_ZSET_ZIPLIST => {
                    let blob = string(r)?;
                    let items = if kind == TYPE_ZSET_LISTPACK {
                        listpack(&blob)?
                    } else {
                        ziplist(&blob)?
                    };
                    items
                        .chunks(2)
                        .map(|p| match p {
                            [m, s] => Ok((m.clone(), parse_score(s)?)),
                            _ => Err(bad("odd sorted set listpack")),
                        })
                        .collect::<Result<_, _>>()?
                }
                _ => {
                    let n = count(r)?;
                    let mut pairs = Vec::with_capacity(n.min(1 << 16));
                    for _ in 0..n {
                        let member = string(r)?;
                        let score = if kind == TYPE_ZSET_2 {
                            let b = r.bytes(8).ok_or_else(|| bad("unexpected end of file"))?;
                            f64::from_le_bytes(b.try_into().map_err(|_| bad("score"))?)
                        } else {
                            old_score(r)?
                        };
                        pairs.push((member, score));
                    }
                    pairs
                }
            };
            let first = pairs.first().map_or(0, |(m, _)| m.len());
            let mut z = ZSet::create(first, limits.zset);
            for (m, s) in &pairs {
                if s.is_nan() {
                    return Err(bad("NaN score"));
                }
                z.insert(m, *s, limits.zset);
            }
            Value::ZSet(z)
        }
        TYPE_HASH | TYPE_HASH_LISTPACK | TYPE_HASH_ZIPLIST | TYPE_HASH_ZIPMAP => {
            let items = match kind {
                TYPE_HASH => {
                    let n = count(r)?;
                    let mut items = Vec::with_capacity(n.min(1 << 16) * 2);
                    for _ in 0..n {
                        items.push(string(r)?);
                        items.push(string(r)?);
                    }
                    items
                }
                TYPE_HASH_LISTPACK => listpack(&string(r)?)?,
                TYPE_HASH_ZIPLIST => ziplist(&string(r)?)?,
                _ => zipmap(&string(r)?)?,
            };
            if items.len() % 2 != 0 {
                return Err(bad("odd hash listpack"));
            }
            let pairs: Vec<(&[u8], &[u8])> = items
                .chunks(2)
                .map(|p| (p[0].as_slice(), p[1].as_slice()))
                .collect();
            let mut hash = Hash::default();
            hash.set_pairs(&pairs, limits.hash);
            Value::Hash(hash)
        }
        TYPE_SET_MEMBER_TTLS => {
            let earliest = millis(r)?;
            let n = count(r)?;
            let mut set = Set::create(b"", n, limits.set);
            let mut deadlines = Vec::new();
            for _ in 0..n {
                let at = relative_deadline(r, earliest)?;
                let member = string(r)?;
                set.add(&member, limits.set);
                if let Some(at) = at {
                    deadlines.push((member, at));
                }
            }
            set.put_member_ttls(&Kept::new(deadlines));
            Value::Set(set)
        }
        TYPE_HASH_METADATA | TYPE_HASH_METADATA_PRE_GA => {
            // 7.4: deadlines relative to the earliest (+1; 0: none); its
            // release candidates wrote them absolute, with no earliest.
            let earliest = match kind {
                TYPE_HASH_METADATA => millis(r)?,
                _ => 1,
            };
            let n = count(r)?;
            let mut triples = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                let at = relative_deadline(r, earliest)?;
                triples.push((string(r)?, string(r)?, at));
            }
            hash_of(triples, false, limits)?
        }
        TYPE_HASH_LISTPACK_EX | TYPE_HASH_LISTPACK_EX_PRE_GA => {
            if kind == TYPE_HASH_LISTPACK_EX {
                millis(r)?; // the earliest deadline, for information
            }
            let items = listpack(&string(r)?)?;
            if items.len() % 3 != 0 {
                return Err(bad("hash listpack with TTLs"));
            }
            let mut triples = Vec::with_capacity(items.len() / 3);
            let mut items = items.into_iter();
            while let (Some(f), Some(v), Some(t)) = (items.next(), items.next(), items.next()) {
                let at = match crate::value::canonical_int(&t) {
                    Some(0) => None,
                    Some(at) => Some(field_deadline(at as u64, 1)?),
                    None => return Err(bad("hash field TTL")),
                };
                triples.push((f, v, at));
            }
            // A listpackex stays one even with no deadline left.
            hash_of(triples, true, limits)?
        }
        TYPE_LIST_ZIPLIST => {
            let mut list = List::default();
            for e in ziplist(&string(r)?)? {
                list.push(crate::value::list::End::Right, &e, limits.list);
            }
            Value::List(list)
        }
        TYPE_LIST_QUICKLIST_2 | TYPE_LIST_QUICKLIST => {
            let mut list = List::default();
            for _ in 0..count(r)? {
                // Version 1 nodes are all ziplists; version 2 says which
                // container each is (1 plain, 2 listpack).
                const ZIPLIST_NODE: u64 = u64::MAX;
                let container = match kind {
                    TYPE_LIST_QUICKLIST => ZIPLIST_NODE,
                    _ => r.length().ok_or_else(|| bad("unexpected end of file"))?,
                };
                let node = string(r)?;
                match container {
                    ZIPLIST_NODE => {
                        for e in ziplist(&node)? {
                            list.push(crate::value::list::End::Right, &e, limits.list);
                        }
                    }
                    // A plain node: one big element.
                    1 => list.push(crate::value::list::End::Right, &node, limits.list),
                    2 => {
                        for e in listpack(&node)? {
                            list.push(crate::value::list::End::Right, &e, limits.list);
                        }
                    }
                    _ => return Err(bad("quicklist node container")),
                }
            }
            Value::List(list)
        }
        other => return Err(format!("Unknown RDB encoding type {other}")),
    })
}

fn parse_score(text: &[u8]) -> Result<f64, String> {
    crate::float::parse_f64_lenient(text)
        .filter(|s| !s.is_nan())
        .ok_or_else(|| bad("score"))
}

/// A `TYPE_ZSET` score: a length byte then `%.17g` text; 253 NaN, 254
/// +inf, 255 -inf.
fn old_score(r: &mut Reader<'_>) -> Result<f64, String> {
    let len = r.byte().ok_or_else(|| bad("unexpected end of file"))?;
    match len {
        253 => Ok(f64::NAN),
        254 => Ok(f64::INFINITY),
        255 => Ok(f64::NEG_INFINITY),
        n => parse_score(r.bytes(usize::from(n)).ok_or_else(|| bad("score"))?),
    }
}

/// A stream (`RDB_TYPE_STREAM_LISTPACKS`, or `_2` with the first and
/// max-deleted IDs, entries added and groups' entries read): nodes as
/// master ID and listpack, the counters, then the consumer groups.
fn read_stream(r: &mut Reader<'_>, kind: u8) -> Result<crate::value::Stream, String> {
    // 7.0 added entries-read counters; 7.2 a consumer's active time.
    let v2 = kind != TYPE_STREAM_LISTPACKS;
    let v3 = kind == TYPE_STREAM_LISTPACKS_3;
    use crate::value::stream::{Consumer, Group, Pending, StreamId};
    let mut stream = crate::value::Stream::default();
    for _ in 0..count(r)? {
        let key = string(r)?;
        let master = StreamId::from_be_bytes(&key)
            .filter(|_| key.len() == 16)
            .ok_or_else(|| bad("stream node key"))?;
        let elements = listpack(&string(r)?)?;
        let (fields, entries) =
            stream_node(master, &elements).ok_or_else(|| bad("stream listpack"))?;
        stream.load_node(master, fields, entries);
    }
    let len = |r: &mut Reader<'_>| r.length().ok_or_else(truncated);
    let id = |r: &mut Reader<'_>| -> Result<StreamId, String> {
        let ms = r.length().ok_or_else(truncated)?;
        let seq = r.length().ok_or_else(truncated)?;
        Ok(StreamId::new(ms, seq))
    };
    let length = len(r)?;
    if length != stream.length {
        return Err(bad("stream length"));
    }
    stream.last_id = id(r)?;
    if stream
        .edge_id(false)
        .is_some_and(|top| top > stream.last_id)
    {
        return Err(bad("stream last ID below its entries"));
    }
    if v2 {
        stream.first_id = id(r)?;
        stream.max_deleted_entry_id = id(r)?;
        stream.entries_added = len(r)?;
    } else {
        stream.first_id = stream
            .range(StreamId::MIN, StreamId::MAX, false, 1)
            .first()
            .map_or(StreamId::MIN, |e| e.id);
        stream.entries_added = stream.length;
    }
    let raw_id = |r: &mut Reader<'_>| {
        StreamId::from_be_bytes(r.bytes(16).unwrap_or_default()).ok_or_else(truncated)
    };
    for _ in 0..count(r)? {
        let name = string(r)?;
        let mut group = Group {
            last_id: id(r)?,
            ..Group::default()
        };
        group.entries_read = if v2 {
            Some(len(r)?).filter(|&n| n != u64::MAX)
        } else {
            stream.distance_from_first(group.last_id)
        };
        for _ in 0..count(r)? {
            let pid = raw_id(r)?;
            let delivery_time_ms = millis(r)?;
            let delivery_count = len(r)?;
            group.pending.insert(
                pid,
                Pending {
                    consumer: Vec::new(),
                    delivery_time_ms,
                    delivery_count,
                },
            );
        }
        for _ in 0..count(r)? {
            let cname = string(r)?;
            let mut consumer = Consumer {
                seen_time_ms: millis(r)?,
                ..Consumer::default()
            };
            if v3 {
                // Its last successful read (7.2's `active-time`): 7.0,
                // whose XINFO lapse answers as, has only the seen time.
                millis(r)?;
            }
            for _ in 0..count(r)? {
                let pid = raw_id(r)?;
                let entry = group
                    .pending
                    .get_mut(&pid)
                    .ok_or_else(|| bad("stream consumer PEL"))?;
                entry.consumer = cname.clone();
                consumer.pending.insert(pid);
            }
            group.consumers.insert(cname, consumer);
        }
        if group.pending.values().any(|p| p.consumer.is_empty()) {
            return Err(bad("stream PEL without a consumer"));
        }
        stream.groups.insert(name, group);
    }
    Ok(stream)
}

/// One node's listpack elements as `streamAppendItem` lays them out: the
/// master fields, then each entry with whether it is deleted.
#[allow(clippy::type_complexity)]
fn stream_node(
    master: crate::value::stream::StreamId,
    lp: &[Vec<u8>],
) -> Option<(Vec<Vec<u8>>, Vec<(crate::value::stream::Entry, bool)>)> {
    use crate::value::stream::{Entry, StreamId};
    let int = |e: &Vec<u8>| crate::protocol::request::parse_i64(e);
    let mut at = 0;
    let mut next = || {
        let e = lp.get(at);
        at += 1;
        e
    };
    let _live = int(next()?)?;
    let _deleted = int(next()?)?;
    let nfields = usize::try_from(int(next()?)?).ok()?;
    let mut fields = Vec::new();
    for _ in 0..nfields {
        fields.push(next()?.clone());
    }
    if int(next()?)? != 0 {
        return None;
    }
    let mut entries = Vec::new();
    while let Some(flags) = next() {
        let flags = int(flags)?;
        let ms = master.ms.wrapping_add(int(next()?)? as u64);
        let seq = master.seq.wrapping_add(int(next()?)? as u64);
        let same = flags & 2 != 0;
        let mut pairs = Vec::new();
        if same {
            for f in &fields {
                pairs.push(f.clone());
                pairs.push(next()?.clone());
            }
        } else {
            let n = usize::try_from(int(next()?)?).ok()?;
            for _ in 0..n.checked_mul(2)? {
                pairs.push(next()?.clone());
            }
        }
        next()?; // lp-count
        let entry = Entry {
            id: StreamId::new(ms, seq),
            fields: pairs,
        };
        entries.push((entry, flags & 1 != 0));
    }
    Some((fields, entries))
}

/// A little-endian two's-complement integer of 1 to 8 bytes (the integer
/// encodings of listpacks and ziplists).
fn le_signed(bytes: &[u8]) -> i64 {
    let mut buf = [0u8; 8];
    buf[..bytes.len()].copy_from_slice(bytes);
    let shift = 64 - 8 * bytes.len() as u32;
    (i64::from_le_bytes(buf) << shift) >> shift
}

/// A ziplist blob's entries (Redis before 7.0: `ziplist.c`): u32 total
/// bytes, u32 offset of the last entry, u16 count, then entries (the
/// previous entry's length in 1 or 5 bytes, an encoding, the data), 0xFF.
pub(crate) fn ziplist(blob: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let fail = || bad("ziplist");
    let total = blob.get(..4).ok_or_else(fail)?;
    if u32::from_le_bytes(total.try_into().map_err(|_| fail())?) as usize != blob.len()
        || blob.len() < 11
        || blob.last() != Some(&0xFF)
    {
        return Err(fail());
    }
    let mut r = Reader::new(&blob[10..]);
    let mut out = Vec::new();
    loop {
        let prevlen = r.byte().ok_or_else(fail)?;
        if prevlen == 0xFF {
            break;
        }
        if prevlen == 0xFE {
            r.bytes(4).ok_or_else(fail)?;
        }
        let enc = r.byte().ok_or_else(fail)?;
        let entry = match enc >> 6 {
            0 => r.bytes(usize::from(enc & 0x3F)).ok_or_else(fail)?.to_vec(),
            1 => {
                let low = r.byte().ok_or_else(fail)?;
                let len = (usize::from(enc & 0x3F) << 8) | usize::from(low);
                r.bytes(len).ok_or_else(fail)?.to_vec()
            }
            2 if enc == 0x80 => {
                let len = u32::from_be_bytes(
                    r.bytes(4)
                        .ok_or_else(fail)?
                        .try_into()
                        .map_err(|_| fail())?,
                );
                r.bytes(len as usize).ok_or_else(fail)?.to_vec()
            }
            2 => return Err(fail()),
            _ => {
                let n = match enc {
                    0xC0 => le_signed(r.bytes(2).ok_or_else(fail)?),
                    0xD0 => le_signed(r.bytes(4).ok_or_else(fail)?),
                    0xE0 => le_signed(r.bytes(8).ok_or_else(fail)?),
                    0xF0 => le_signed(r.bytes(3).ok_or_else(fail)?),
                    0xFE => le_signed(r.bytes(1).ok_or_else(fail)?),
                    0xF1..=0xFD => i64::from(enc & 0x0F) - 1,
                    _ => return Err(fail()),
                };
                n.to_string().into_bytes()
            }
        };
        out.push(entry);
    }
    if r.remaining() != 0 {
        return Err(fail());
    }
    Ok(out)
}

/// A zipmap blob's fields and values, alternating (Redis before 2.6:
/// `zipmap.c`): a count byte, then per entry the key's length (1 byte, or
/// 254 and 4 bytes), the key, the value's length, a free-space byte, the
/// value and that much unused space; 0xFF.
pub(crate) fn zipmap(blob: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let fail = || bad("zipmap");
    let mut r = Reader::new(blob);
    r.byte().ok_or_else(fail)?;
    let mut out = Vec::new();
    let length = |r: &mut Reader<'_>| -> Result<Option<usize>, String> {
        match r.byte().ok_or_else(fail)? {
            0xFF => Ok(None),
            0xFE => {
                let n = u32::from_le_bytes(
                    r.bytes(4)
                        .ok_or_else(fail)?
                        .try_into()
                        .map_err(|_| fail())?,
                );
                Ok(Some(n as usize))
            }
            n => Ok(Some(usize::from(n))),
        }
    };
    while let Some(klen) = length(&mut r)? {
        out.push(r.bytes(klen).ok_or_else(fail)?.to_vec());
        let vlen = length(&mut r)?.ok_or_else(fail)?;
        let free = r.byte().ok_or_else(fail)?;
        out.push(r.bytes(vlen).ok_or_else(fail)?.to_vec());
        r.bytes(usize::from(free)).ok_or_else(fail)?;
    }
    if r.remaining() != 0 {
        return Err(fail());
    }
    Ok(out)
}

/// An intset blob's members (`u32` encoding 2/4/8, `u32` count, values LE).
pub(crate) fn intset(blob: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let header = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(blob.get(at..at + 4)?.try_into().ok()?))
    };
    let (width, n) = header(0)
        .zip(header(4))
        .ok_or_else(|| bad("intset header"))?;
    let width = width as usize;
    if ![2, 4, 8].contains(&width) || blob.len() != 8 + width * n as usize {
        return Err(bad("intset size"));
    }
    Ok(blob[8..]
        .chunks(width)
        .map(|c| {
            let v = match width {
                2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
                4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                _ => i64::from_le_bytes(c.try_into().unwrap_or([0; 8])),
            };
            v.to_string().into_bytes()
        })
        .collect())
}

/// A listpack blob's entries as text (integers in decimal).
pub(crate) fn listpack(blob: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let fail = || bad("listpack");
    let total = blob.get(..4).ok_or_else(fail)?;
    if u32::from_le_bytes(total.try_into().map_err(|_| fail())?) as usize != blob.len()
        || blob.last() != Some(&0xFF)
    {
        return Err(fail());
    }
    let mut at = 6;
    let mut out = Vec::new();
    let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
        let s = blob
            .get(*at..at.checked_add(n).ok_or_else(fail)?)
            .ok_or_else(fail)?;
        *at += n;
        Ok(s)
    };
    loop {
        let start = at;
        let enc = *blob.get(at).ok_or_else(fail)?;
        if enc == 0xFF {
            break;
        }
        at += 1;
        let entry: Vec<u8> = match enc {
            0x00..=0x7F => enc.to_string().into_bytes(),
            0x80..=0xBF => take(&mut at, usize::from(enc & 0x3F))?.to_vec(),
            0xC0..=0xDF => {
                // 13-bit signed integer, high bits in the first byte.
                let low = take(&mut at, 1)?[0];
                let v = (i64::from(enc & 0x1F) << 8) | i64::from(low);
                let v = if v >= 1 << 12 { v - (1 << 13) } else { v };
                v.to_string().into_bytes()
            }
            0xE0..=0xEF => {
                let low = take(&mut at, 1)?[0];
                let len = (usize::from(enc & 0x0F) << 8) | usize::from(low);
                take(&mut at, len)?.to_vec()
            }
            0xF0 => {
                let len = u32::from_le_bytes(take(&mut at, 4)?.try_into().map_err(|_| fail())?);
                take(&mut at, len as usize)?.to_vec()
            }
            0xF1 => le_signed(take(&mut at, 2)?).to_string().into_bytes(),
            0xF2 => le_signed(take(&mut at, 3)?).to_string().into_bytes(),
            0xF3 => le_signed(take(&mut at, 4)?).to_string().into_bytes(),
            0xF4 => le_signed(take(&mut at, 8)?).to_string().into_bytes(),
            _ => return Err(fail()),
        };
        // The back-length: the entry's size in 7-bit groups.
        let size = at - start;
        // (Redis's `lpEncodeBacklen` boundaries: `< 16383` takes two.)
        let backlen = match size {
            0..=127 => 1,
            128..=16382 => 2,
            16383..=2097150 => 3,
            2097151..=268435454 => 4,
            _ => 5,
        };
        take(&mut at, backlen)?;
        out.push(entry);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        hash: PackLimits::HASH,
        set: SetLimits::DEFAULT,
        zset: ZLimits::DEFAULT,
        list: ListLimits::DEFAULT,
    };

    /// A file redis-server 7.4.1 wrote (format 12): hashes with field
    /// deadlines as a listpackex (`small`, and `persisted`, whose only
    /// deadline was removed) and a table (`big`: 600 fields, every other
    /// one due at 1900000000000 + its number in seconds' thousandths), a
    /// listpack set and a stream with a consumer group (7.2's layout).
    #[test]
    fn a_redis_7_4_file_with_field_deadlines_loads() {
        let file = include_bytes!("../../tests/fixtures/redis-7.4-field-ttls.rdb");
        let loaded = load(file, LIMITS).unwrap();
        let (_, keys) = loaded.dbs.into_iter().next().unwrap();
        let get = |name: &str| {
            keys.iter()
                .find(|(k, _, _)| k == name.as_bytes())
                .map(|(_, v, _)| v)
                .unwrap_or_else(|| panic!("{name} missing"))
        };
        let deadlines = |name: &str| crate::value::sorted_triples(get(name));
        let t =
            |f: &str, v: &str, at: Option<i64>| (f.as_bytes().to_vec(), v.as_bytes().to_vec(), at);
        assert_eq!(
            deadlines("small"),
            vec![
                t("a", "1", Some(1_900_000_000_000)),
                t("b", "2", Some(1_900_000_000_123)),
                t("c", "3", Some(1_900_000_000_000)),
            ]
        );
        assert_eq!(get("small").as_ref().encoding(), "listpackex");
        assert_eq!(
            deadlines("persisted"),
            vec![t("x", "1", None), t("y", "2", None)]
        );
        assert_eq!(get("persisted").as_ref().encoding(), "listpackex");
        let big = deadlines("big");
        assert_eq!(big.len(), 600);
        for i in 0..600 {
            let expected = (i % 2 == 0).then(|| 1_900_000_000_000 + i as i64 * 1000);
            let (f, v) = (format!("f{i}"), format!("v{i}"));
            assert!(big.contains(&t(&f, &v, expected)), "{f}");
        }
        assert_eq!(get("big").as_ref().encoding(), "hashtable");
        let crate::value::ValueRef::Set(tags) = get("tags").as_ref() else {
            panic!("a set");
        };
        assert_eq!(tags.len(), 3);
        assert!(tags.contains(b"gamma"));
        let crate::value::ValueRef::Stream(s) = get("s").as_ref() else {
            panic!("a stream");
        };
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn intset_and_listpack_blobs_decode() {
        // The intset Redis writes for 1 2 3 (facts: hexdump of 7.0.15).
        let blob = [2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 2, 0, 3, 0];
        assert_eq!(
            intset(&blob).unwrap(),
            vec![b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]
        );
        // A listpack of "a", 5, -300 (13-bit int), "hello".
        let mut lp = vec![0, 0, 0, 0, 4, 0];
        lp.extend_from_slice(&[0x81, b'a', 2]);
        lp.extend_from_slice(&[5, 1]);
        let v: i64 = -300 + (1 << 13);
        lp.extend_from_slice(&[0xC0 | (v >> 8) as u8, v as u8, 2]);
        lp.extend_from_slice(&[0x85, b'h', b'e', b'l', b'l', b'o', 6]);
        lp.push(0xFF);
        let total = lp.len() as u32;
        lp[..4].copy_from_slice(&total.to_le_bytes());
        let items = listpack(&lp).unwrap();
        assert_eq!(
            items,
            vec![
                b"a".to_vec(),
                b"5".to_vec(),
                b"-300".to_vec(),
                b"hello".to_vec()
            ]
        );
    }

    /// A fuzz pass over the loader: every byte of a file holding every
    /// type in every encoding lapse writes (listpacks, intsets, quicklist
    /// nodes, plain forms, LZF strings), flipped three ways, and every
    /// truncation: an error or a load, never a panic. (Lengths are checked
    /// against the bytes left before anything is allocated, so a flipped
    /// length cannot ask for more memory than the file could fill.)
    #[test]
    fn flipped_and_truncated_files_never_panic_the_loader() {
        use crate::value::list::End;
        let mut dbs: Vec<crate::db::Db> = (0..2).map(crate::db::Db::new).collect();
        let ttl = crate::db::Ttl::At(i64::MAX / 2);
        let db = &mut dbs[1];
        db.set(b"str", Value::Str(b"12345".to_vec()), ttl, 0);
        db.set(
            b"lzf",
            Value::Str(b"abc".repeat(40)),
            crate::db::Ttl::Clear,
            0,
        );
        for (name, n) in [(&b"small"[..], 4), (&b"big"[..], 130)] {
            let mut hash = Hash::default();
            let mut set = Set::default();
            let mut strs = Set::default();
            let mut z = ZSet::default();
            let mut list = List::default();
            for i in 0..n {
                let m = format!("m{i}");
                hash.set(m.as_bytes(), i.to_string().as_bytes(), PackLimits::HASH);
                set.add(i.to_string().as_bytes(), SetLimits::DEFAULT);
                strs.add(m.as_bytes(), SetLimits::DEFAULT);
                z.insert(m.as_bytes(), f64::from(i) / 3.0, ZLimits::DEFAULT);
                list.push(End::Right, m.as_bytes(), ListLimits::DEFAULT);
            }
            let key = |kind: &str| [name, kind.as_bytes()].concat();
            db.set(&key("h"), Value::Hash(hash), ttl, 0);
            db.set(&key("s"), Value::Set(set), ttl, 0);
            db.set(&key("t"), Value::Set(strs), ttl, 0);
            db.set(&key("z"), Value::ZSet(z), ttl, 0);
            db.set(&key("l"), Value::List(list), ttl, 0);
        }
        let options = crate::persistence::rdb::SaveOptions {
            compress: true,
            checksum: false,
        };
        // RESTORE payloads of the same values, flipped and cut the same way.
        let mut payloads = Vec::new();
        dbs[1].for_each_entry(|_, value, _| {
            payloads.push(crate::persistence::rdb::dump_value(value, options))
        });
        for payload in &payloads {
            let body = crate::persistence::rdb::payload_body(payload, false).unwrap();
            assert!(restore_value(body, LIMITS).is_some());
            for i in 0..body.len() {
                let _ = restore_value(&body[..i], LIMITS);
                for mask in [0x01, 0x80, 0xFF] {
                    let mut damaged = body.to_vec();
                    damaged[i] ^= mask;
                    let _ = restore_value(&damaged, LIMITS);
                }
            }
        }
        let bytes = crate::persistence::jobs::encode_to_vec(&mut dbs, 0, options);
        let loaded = load(&bytes, LIMITS).unwrap();
        assert_eq!(loaded.dbs[0].1.len(), 12);
        for cut in 0..bytes.len() {
            let _ = load(&bytes[..cut], LIMITS);
        }
        for i in 9..bytes.len() {
            for mask in [0x01, 0x80, 0xFF] {
                let mut damaged = bytes.clone();
                damaged[i] ^= mask;
                let _ = load(&damaged, LIMITS);
            }
        }
    }

    /// Random blobs with plausible headers into the old decoders: errors
    /// or entries, never a panic.
    #[test]
    fn random_ziplists_and_zipmaps_never_panic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        for _ in 0..20_000 {
            let len = rng.gen_range(0..64);
            let mut blob: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            if len >= 11 {
                blob[..4].copy_from_slice(&(len as u32).to_le_bytes());
                blob[len - 1] = 0xFF;
            }
            let _ = ziplist(&blob);
            let _ = zipmap(&blob);
            let _ = listpack(&blob);
            let _ = intset(&blob);
        }
    }

    #[test]
    fn our_snapshot_loads_back_and_damage_is_an_error_not_a_panic() {
        let mut dbs: Vec<crate::db::Db> = (0..2).map(crate::db::Db::new).collect();
        dbs[1].set(b"k", Value::Str(b"v".to_vec()), crate::db::Ttl::Clear, 0);
        let options = crate::persistence::rdb::SaveOptions {
            compress: true,
            checksum: true,
        };
        dbs[1].set(
            b"long",
            Value::Str(vec![b'z'; 1000]),
            crate::db::Ttl::Clear,
            0,
        );
        let bytes = crate::persistence::jobs::encode_to_vec(&mut dbs, 0, options);
        assert!(
            bytes.len() < 200,
            "the long string is compressed: {}",
            bytes.len()
        );
        let loaded = load(&bytes, LIMITS).unwrap();
        assert_eq!(loaded.dbs.len(), 1);
        assert_eq!(loaded.dbs[0].0, 1);
        assert_eq!(loaded.dbs[0].1.len(), 2);
        let long = loaded.dbs[0].1.iter().find(|(k, _, _)| k == b"long");
        assert!(matches!(long, Some((_, Value::Str(v), None)) if v.len() == 1000));
        for cut in 0..bytes.len() {
            let _ = load(&bytes[..cut], LIMITS);
        }
        for i in 9..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x5A;
            let _ = load(&damaged, LIMITS);
        }
        let mut flipped = bytes.clone();
        let last = flipped.len() - 9;
        flipped[last - 1] ^= 1;
        assert!(load(&flipped, LIMITS).is_err());
    }
}
