//! What freeing a value costs: Redis's free effort (elements, chunks)
//! and an estimate of its heap bytes, and whether it is big enough for
//! the lazyfree thread (the keyspace hands such values over; `lazyfree`
//! frees them).

use super::{Hash, Set, Value, ZSet};

/// Values with more free effort than this are freed on the background
/// thread (Redis's `LAZYFREE_THRESHOLD`).
pub const LAZYFREE_THRESHOLD: usize = 64;
/// Bytes of string that count as one unit of free effort: strings above
/// 64 × 64 KiB = 4 MiB are handed over.
pub const STRING_EFFORT_UNIT_BYTES: usize = 64 * 1024;

/// How much work freeing `value` is, in Redis's units: elements for hashes,
/// sets and sorted sets (as Redis counts its hash tables and skiplists),
/// chunks for lists (as Redis counts quicklist nodes).
pub fn free_effort(value: &Value) -> usize {
    match value {
        Value::Str(s) => string_effort(s.len()),
        Value::List(l) => l.chunk_count(),
        // One allocation, as Redis counts a listpack.
        Value::Hash(Hash::Packed(_)) => 1,
        Value::Hash(Hash::Table(h)) => h.len(),
        Value::Set(Set::Table(s)) => s.len(),
        Value::Set(_) => 1,
        Value::ZSet(ZSet::Tree(z)) => z.len(),
        Value::ZSet(ZSet::Packed(_)) => 1,
        Value::Stream(s) => s.free_effort(),
    }
}

fn string_effort(len: usize) -> usize {
    1 + len / STRING_EFFORT_UNIT_BYTES
}

/// Whether a string of `len` bytes is big enough for the lazyfree thread
/// (`is_big` of it, without the string).
pub fn is_big_string(len: usize) -> bool {
    string_effort(len) > LAZYFREE_THRESHOLD
}

/// About how many heap bytes `value` holds, in O(1): its length times
/// a typical cost per element (a measure would cost what lazy free
/// saves). Only for counting memory on its way back.
pub fn estimated_bytes(value: &Value) -> usize {
    match value {
        Value::Str(s) => s.capacity(),
        Value::List(l) => l.chunk_count() * 8 * 1024,
        Value::Hash(Hash::Table(h)) => h.len() * 96,
        Value::Set(Set::Table(s)) => s.len() * 64,
        Value::ZSet(ZSet::Tree(z)) => z.len() * 96,
        Value::Hash(Hash::Packed(p)) => p.allocated(),
        Value::Set(_) | Value::ZSet(_) => 256,
        Value::Stream(s) => s.heap_bytes(),
    }
}

/// Whether `value` is worth handing to the background thread.
pub fn is_big(value: &Value) -> bool {
    free_effort(value) > LAZYFREE_THRESHOLD
}
