//! DEBUG DIGEST and DEBUG DIGEST-VALUE, computed as redis-server computes
//! them (`debug.c`), so that a dataset's digest in lapse equals
//! redis-server's for the same data. Tests compare datasets with it, and
//! so will persistence and replication.
//!
//! The scheme: `xor(d, data)` XORs SHA1(data) into d (order-free, for
//! set-like things); `mix(d, data)` sets d = SHA1(d XOR SHA1(data))
//! (order-sensitive). Per key: mix the key, mix the type, then the value,
//! then XOR `!!expire!!` if it has a TTL; keys are XORed together; each
//! non-empty database mixes its number in first. Reads only; logically
//! expired keys count (Redis iterates the dict).

use crate::db::Db;
use crate::protocol::reply::format_double;
use crate::value::ValueRef;

pub type Digest = [u8; 20];

fn sha1(data: &[u8]) -> Digest {
    sha1_smol::Sha1::from(data).digest().bytes()
}

fn xor_digest(digest: &mut Digest, data: &[u8]) {
    for (d, h) in digest.iter_mut().zip(sha1(data)) {
        *d ^= h;
    }
}

fn mix_digest(digest: &mut Digest, data: &[u8]) {
    xor_digest(digest, data);
    *digest = sha1(digest.as_slice());
}

/// Redis's object type numbers (`OBJ_STRING` ...), mixed in big-endian.
fn type_number(value: ValueRef<'_>) -> u32 {
    match value {
        ValueRef::Str(_) => 0,
        ValueRef::List(_) => 1,
        ValueRef::Set(_) => 2,
        ValueRef::ZSet(_) => 3,
        ValueRef::Hash(_) => 4,
        ValueRef::Stream(_) => 6,
    }
}

/// `xorObjectDigest`: mixes one value (and its TTL flag) into `digest`.
fn mix_value(digest: &mut Digest, value: ValueRef<'_>, has_ttl: bool) {
    mix_digest(digest, &type_number(value).to_be_bytes());
    match value {
        ValueRef::Str(s) => mix_digest(digest, s),
        ValueRef::List(list) => list.iter().for_each(|e| mix_digest(digest, e)),
        ValueRef::Set(set) => set
            .iter()
            .for_each(|m| m.with_bytes(|m| xor_digest(digest, m))),
        ValueRef::ZSet(z) => {
            for entry in z.iter_from(0, false) {
                let mut element = [0u8; 20];
                entry.member.with_bytes(|m| mix_digest(&mut element, m));
                mix_digest(&mut element, format_double(entry.score).as_bytes());
                xor_digest(digest, &element);
            }
        }
        ValueRef::Stream(stream) => {
            use crate::value::stream::StreamId;
            for entry in stream.range(StreamId::MIN, StreamId::MAX, false, 0) {
                let id = format!("{}.{}", entry.id.ms, entry.id.seq);
                mix_digest(digest, id.as_bytes());
                entry.fields.iter().for_each(|f| mix_digest(digest, f));
            }
        }
        ValueRef::Hash(hash) => {
            for (field, value, deadline) in hash.iter_with_ttls_from(0) {
                let mut element = [0u8; 20];
                field.with_bytes(|f| mix_digest(&mut element, f));
                value.with_bytes(|v| mix_digest(&mut element, v));
                // A field with a deadline (Redis 7.4: whatever the time).
                if deadline.is_some() {
                    xor_digest(&mut element, b"!!hexpire!!");
                }
                xor_digest(digest, &element);
            }
        }
    }
    if has_ttl {
        xor_digest(digest, b"!!expire!!");
    }
}

/// DEBUG DIGEST-VALUE of one key: zeros if absent.
pub fn value_digest(db: &Db, key: &[u8]) -> Digest {
    let mut digest = [0u8; 20];
    if let Some((value, at_ms)) = db.peek(key) {
        mix_value(&mut digest, value, at_ms.is_some());
    }
    digest
}

/// DEBUG DIGEST of every database (`computeDatasetDigest`); all zeros for
/// an empty server.
pub fn dataset_digest(dbs: &[Db]) -> Digest {
    let mut digest = [0u8; 20];
    for db in dbs.iter().filter(|db| !db.is_empty()) {
        mix_digest(&mut digest, &(db.index as u32).to_be_bytes());
        db.for_each_entry(|key, value, at_ms| {
            let mut entry = [0u8; 20];
            mix_digest(&mut entry, key);
            mix_value(&mut entry, value, at_ms.is_some());
            xor_digest(&mut digest, &entry);
        });
    }
    digest
}

pub fn hex(digest: &Digest) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
