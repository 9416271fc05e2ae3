//! The stream type: entries with increasing IDs, held in nodes of up to
//! `stream-node-max-entries` entries (and, as Redis's listpacks measure
//! it, `stream-node-max-bytes`), each node keyed by its first ("master")
//! ID in a B-tree, like Redis's radix tree of listpacks.
//!
//! A node's entries are packed in one buffer of our own layout: a flags
//! byte (deleted, same fields as the node's master entry), the ID as a
//! varint offset from the master ID's ms and a varint seq, then either
//! the values alone (same fields) or a field count and field/value pairs,
//! every string length-prefixed. Deleted entries stay, flagged, until the
//! node empties, as in Redis. Each node also tracks how many bytes the
//! same entries take as a Redis listpack, so nodes split where Redis's do
//! (XINFO's node count and `~` trimming then agree with redis-server).
//!
//! Consumer groups live beside the entries (`groups`).

use std::collections::BTreeMap;

use super::listpack::{lp_int_size, lp_string_size};

/// A stream entry ID: milliseconds and a sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The next ID (`streamIncrID`); `None` past the last possible one.
    pub fn incr(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId::new(ms + 1, 0)),
            (ms, seq) => Some(StreamId::new(ms, seq + 1)),
        }
    }

    /// The previous ID (`streamDecrID`); `None` before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId::new(ms - 1, u64::MAX)),
            (ms, seq) => Some(StreamId::new(ms, seq - 1)),
        }
    }

    /// `<ms>-<seq>`, as replies and the stream print it.
    pub fn to_text(self) -> String {
        format!("{}-{}", self.ms, self.seq)
    }

    /// The 16-byte big-endian form (RDB node keys, PEL entries).
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.ms.to_be_bytes());
        out[8..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }

    pub fn from_be_bytes(b: &[u8]) -> Option<StreamId> {
        let ms = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
        let seq = u64::from_be_bytes(b.get(8..16)?.try_into().ok()?);
        Some(StreamId::new(ms, seq))
    }
}

const FLAG_DELETED: u8 = 1;
const FLAG_SAME_FIELDS: u8 = 2;
/// A new node's room (Redis's `STREAM_LISTPACK_MAX_PRE_ALLOCATE`).
const NODE_PREALLOC_BYTES: usize = 4096;
/// Redis's cap on one listpack (`STREAM_LISTPACK_MAX_SIZE`, 1 GB).
pub const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// A node: the master entry's fields, the packed entries, their counts.
#[derive(Debug, Clone, Default)]
struct Node {
    master_fields: Vec<Vec<u8>>,
    data: Vec<u8>,
    live: u32,
    deleted: u32,
    /// The bytes of the same node as a Redis listpack.
    lp_bytes: usize,
}

/// One entry as read from a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: StreamId,
    /// Field, value, field, value...
    pub fields: Vec<Vec<u8>>,
}

/// A consumer group's pending entry (Redis's NACK).
#[derive(Debug, Clone)]
pub struct Pending {
    pub consumer: Vec<u8>,
    pub delivery_time_ms: i64,
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, Default)]
pub struct Consumer {
    pub seen_time_ms: i64,
    /// The IDs it has pending (their details are in the group's PEL).
    pub pending: std::collections::BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Debug, Clone, Default)]
pub struct Group {
    pub last_id: StreamId,
    /// Entries read by the group (`None`: unknown, Redis's -1).
    pub entries_read: Option<u64>,
    pub pending: BTreeMap<StreamId, Pending>,
    /// By name, in name order (Redis's radix tree order).
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

#[derive(Debug, Clone, Default)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    pub length: u64,
    pub last_id: StreamId,
    /// The first entry's ID as recorded (0-0 when empty).
    pub first_id: StreamId,
    pub max_deleted_entry_id: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// By name, in name order.
    pub groups: BTreeMap<Vec<u8>, Group>,
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn get_varint(data: &[u8], pos: &mut usize) -> u64 {
    let mut n = 0u64;
    let mut shift = 0;
    while let Some(&b) = data.get(*pos) {
        *pos += 1;
        n |= u64::from(b & 0x7f) << shift.min(63);
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    n
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn get_bytes<'a>(data: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let len = get_varint(data, pos) as usize;
    let start = (*pos).min(data.len());
    let end = start.saturating_add(len).min(data.len());
    *pos = end;
    &data[start..end]
}

/// Where an entry sits in its node's buffer, and what it is.
#[derive(Debug, Clone, Copy)]
struct Slot {
    at: usize,
    id: StreamId,
    flags: u8,
}

impl Node {
    /// Every entry's place, in order.
    fn slots(&self, master: StreamId) -> Vec<Slot> {
        let mut out = Vec::with_capacity((self.live + self.deleted) as usize);
        let mut pos = 0;
        while pos < self.data.len() {
            let at = pos;
            let flags = self.data[pos];
            pos += 1;
            let ms = master.ms.wrapping_add(get_varint(&self.data, &mut pos));
            let seq = get_varint(&self.data, &mut pos);
            let n = if flags & FLAG_SAME_FIELDS != 0 {
                self.master_fields.len()
            } else {
                get_varint(&self.data, &mut pos) as usize * 2
            };
            for _ in 0..n {
                get_bytes(&self.data, &mut pos);
            }
            out.push(Slot {
                at,
                id: StreamId::new(ms, seq),
                flags,
            });
        }
        out
    }

    fn entry_at(&self, slot: Slot) -> Entry {
        let mut pos = slot.at + 1;
        get_varint(&self.data, &mut pos);
        get_varint(&self.data, &mut pos);
        let fields = if slot.flags & FLAG_SAME_FIELDS != 0 {
            let mut f = Vec::with_capacity(self.master_fields.len() * 2);
            for name in &self.master_fields {
                f.push(name.clone());
                f.push(get_bytes(&self.data, &mut pos).to_vec());
            }
            f
        } else {
            let n = get_varint(&self.data, &mut pos) as usize * 2;
            (0..n)
                .map(|_| get_bytes(&self.data, &mut pos).to_vec())
                .collect()
        };
        Entry {
            id: slot.id,
            fields,
        }
    }

    /// The listpack bytes of one entry (`streamAppendItem`'s elements:
    /// flags, ms-diff, seq-diff, [count, fields], values, lp-count).
    fn entry_lp_bytes(id: StreamId, master: StreamId, flags: u8, fields: &[&[u8]]) -> usize {
        let same = flags & FLAG_SAME_FIELDS != 0;
        let n = fields.len() / 2;
        let mut size = lp_int_size(i64::from(flags))
            + lp_int_size(id.ms.wrapping_sub(master.ms) as i64)
            + lp_int_size(id.seq.wrapping_sub(master.seq) as i64);
        if same {
            size += fields
                .iter()
                .skip(1)
                .step_by(2)
                .map(|v| lp_string_size(v))
                .sum::<usize>();
        } else {
            size += lp_int_size(n as i64) + fields.iter().map(|f| lp_string_size(f)).sum::<usize>();
        }
        let lp_count = if same { n + 3 } else { 2 * n + 4 };
        size + lp_int_size(lp_count as i64)
    }

    /// A new node's listpack bytes: header, the master entry, the end.
    fn master_lp_bytes(fields: &[Vec<u8>], live: u32, deleted: u32) -> usize {
        7 + lp_int_size(i64::from(live))
            + lp_int_size(i64::from(deleted))
            + lp_int_size(fields.len() as i64)
            + fields.iter().map(|f| lp_string_size(f)).sum::<usize>()
            + lp_int_size(0)
    }

    /// Changes the live/deleted counts, keeping `lp_bytes` right.
    fn set_counts(&mut self, live: u32, deleted: u32) {
        self.lp_bytes =
            self.lp_bytes + lp_int_size(i64::from(live)) + lp_int_size(i64::from(deleted))
                - lp_int_size(i64::from(self.live))
                - lp_int_size(i64::from(self.deleted));
        self.live = live;
        self.deleted = deleted;
    }
}

/// A node as an RDB file stores it: master ID, master fields, live and
/// deleted counts, and each entry with its deleted and same-fields flags.
pub type RdbNode<'a> = (StreamId, &'a [Vec<u8>], u32, u32, Vec<(Entry, bool, bool)>);

/// How XADD/XTRIM trim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

impl Stream {
    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// Same entries, IDs, counters and groups (what tests and digests
    /// compare; the node layout may differ).
    pub fn same_content(&self, other: &Stream) -> bool {
        let all = |s: &Stream| s.range(StreamId::MIN, StreamId::MAX, false, 0);
        let meta = |s: &Stream| {
            (
                s.length,
                s.last_id,
                s.first_id,
                s.max_deleted_entry_id,
                s.entries_added,
            )
        };
        let groups = |s: &Stream| {
            s.groups
                .iter()
                .map(|(name, g)| {
                    let pel: Vec<_> = g
                        .pending
                        .iter()
                        .map(|(id, p)| (*id, p.consumer.clone(), p.delivery_count))
                        .collect();
                    let consumers: Vec<_> = g.consumers.keys().cloned().collect();
                    (name.clone(), g.last_id, g.entries_read, pel, consumers)
                })
                .collect::<Vec<_>>()
        };
        meta(self) == meta(other) && all(self) == all(other) && groups(self) == groups(other)
    }

    /// Nodes (Redis's radix tree keys).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Appends an entry with `id` (already checked to be past `last_id`);
    /// `fields` is field, value, ... A new node starts when the last one
    /// is full by Redis's measures.
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]], max_bytes: usize, max_entries: usize) {
        let total: usize = fields.iter().map(|f| f.len()).sum();
        let max_bytes = if max_bytes == 0 || max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            max_bytes
        };
        let tail_full = self.nodes.last_key_value().is_none_or(|(_, n)| {
            n.lp_bytes + total >= max_bytes
                || (max_entries > 0 && (n.live + n.deleted) as usize >= max_entries)
        });
        if tail_full {
            // The closed node gives back its spare room; the new one starts
            // with room for a node's worth, as Redis preallocates its
            // listpacks (growing by doubling would leave freed blocks of
            // every size behind).
            if let Some((_, closed)) = self.nodes.iter_mut().next_back() {
                closed.data.shrink_to_fit();
            }
            let master_fields: Vec<Vec<u8>> =
                fields.iter().step_by(2).map(|f| f.to_vec()).collect();
            let node = Node {
                lp_bytes: Node::master_lp_bytes(&master_fields, 0, 0),
                master_fields,
                data: Vec::with_capacity(max_bytes.min(NODE_PREALLOC_BYTES)),
                ..Node::default()
            };
            self.nodes.insert(id, node);
        }
        let Some((&master, node)) = self.nodes.iter_mut().next_back() else {
            return;
        };
        let same = fields.len() / 2 == node.master_fields.len()
            && fields
                .iter()
                .step_by(2)
                .zip(&node.master_fields)
                .all(|(a, b)| *a == b.as_slice());
        let flags = if same { FLAG_SAME_FIELDS } else { 0 };
        node.data.push(flags);
        put_varint(&mut node.data, id.ms.wrapping_sub(master.ms));
        put_varint(&mut node.data, id.seq);
        if same {
            fields
                .iter()
                .skip(1)
                .step_by(2)
                .for_each(|v| put_bytes(&mut node.data, v));
        } else {
            put_varint(&mut node.data, (fields.len() / 2) as u64);
            fields.iter().for_each(|f| put_bytes(&mut node.data, f));
        }
        node.lp_bytes += Node::entry_lp_bytes(id, master, flags, fields);
        let (live, deleted) = (node.live + 1, node.deleted);
        node.set_counts(live, deleted);
        if self.length == 0 {
            self.first_id = id;
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
    }

    /// Live entries with IDs in `start..=end`, ascending or (`rev`)
    /// descending, at most `count` (0: all).
    pub fn range(&self, start: StreamId, end: StreamId, rev: bool, count: usize) -> Vec<Entry> {
        let mut out = Vec::new();
        if start > end {
            return out;
        }
        // The node holding `start` may begin before it.
        let first_node = self
            .nodes
            .range(..=start)
            .next_back()
            .map_or(start, |(k, _)| *k);
        let nodes: Box<dyn Iterator<Item = (&StreamId, &Node)>> = if rev {
            Box::new(self.nodes.range(first_node..=end).rev())
        } else {
            Box::new(self.nodes.range(first_node..=end))
        };
        for (&master, node) in nodes {
            let mut slots = node.slots(master);
            if rev {
                slots.reverse();
            }
            for slot in slots {
                if slot.flags & FLAG_DELETED != 0 || slot.id < start || slot.id > end {
                    continue;
                }
                out.push(node.entry_at(slot));
                if count != 0 && out.len() >= count {
                    return out;
                }
            }
        }
        out
    }

    /// The first or last live entry's ID.
    pub fn edge_id(&self, first: bool) -> Option<StreamId> {
        let entry = if first {
            self.range(StreamId::MIN, StreamId::MAX, false, 1)
        } else {
            self.range(StreamId::MIN, StreamId::MAX, true, 1)
        };
        entry.first().map(|e| e.id)
    }

    /// Deletes the entry `id`; whether it was there (`streamDeleteItem`).
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let Some(slot) = node
            .slots(master)
            .into_iter()
            .find(|s| s.id == id && s.flags & FLAG_DELETED == 0)
        else {
            return false;
        };
        node.data[slot.at] |= FLAG_DELETED;
        let (live, deleted) = (node.live - 1, node.deleted + 1);
        node.set_counts(live, deleted);
        if live == 0 {
            self.nodes.remove(&master);
        }
        self.length -= 1;
        if id > self.max_deleted_entry_id {
            self.max_deleted_entry_id = id;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if id == self.first_id {
            self.first_id = self.edge_id(true).unwrap_or_default();
        }
        true
    }

    /// Trims from the start (`streamTrim`): whole nodes while they are
    /// entirely past the limit; with `approx`, only whole nodes and at most
    /// `limit` entries (0: no limit), else entry by entry. Returns how
    /// many entries went.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        loop {
            if let Trim::MaxLen(max) = how {
                if self.length <= max {
                    break;
                }
            }
            let Some((&master, node)) = self.nodes.first_key_value() else {
                break;
            };
            let entries = u64::from(node.live);
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let whole = match how {
                Trim::MaxLen(max) => self.length - u64::from(node.live) >= max,
                Trim::MinId(min) => {
                    // The node's last ID: it goes whole if below the minimum.
                    let last = node.slots(master).last().map_or(master, |s| s.id);
                    last < min
                }
            };
            if whole {
                // (Trimming leaves the max-deleted ID alone, as Redis's.)
                self.nodes.remove(&master);
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            // Entry by entry inside the node.
            let victims: Vec<StreamId> = node
                .slots(master)
                .into_iter()
                .filter(|s| s.flags & FLAG_DELETED == 0)
                .map(|s| s.id)
                .collect();
            for id in victims {
                let stop = match how {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                self.mark_deleted_in(master, id);
                deleted += 1;
            }
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge_id(true).unwrap_or_default();
        }
        deleted
    }

    /// Flags `id` deleted inside the node at `master` (trimming: the
    /// max-deleted ID is left alone, and a node left with no live entry
    /// stays, as Redis's trim does).
    fn mark_deleted_in(&mut self, master: StreamId, id: StreamId) {
        let Some(node) = self.nodes.get_mut(&master) else {
            return;
        };
        if let Some(slot) = node.slots(master).into_iter().find(|s| s.id == id) {
            node.data[slot.at] |= FLAG_DELETED;
            let (live, deleted) = (node.live.saturating_sub(1), node.deleted + 1);
            node.set_counts(live, deleted);
            self.length -= 1;
        }
    }

    /// Whether any entry in `start..=end` was deleted (a tombstone lies in
    /// the range: `streamRangeHasTombstones`).
    pub fn has_tombstones(&self, start: StreamId, end: Option<StreamId>) -> bool {
        if self.length == 0 || self.max_deleted_entry_id == StreamId::MIN {
            return false;
        }
        let first = self.first_id;
        let start = if start < first { first } else { start };
        let end = end.unwrap_or(StreamId::MAX);
        self.max_deleted_entry_id >= start && self.max_deleted_entry_id <= end
    }

    /// An entry's distance from the first entry ever added, if it can be
    /// known (`streamEstimateDistanceFromFirstEverEntry`).
    pub fn distance_from_first(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id < self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        } else if id > self.last_id {
            return None;
        }
        if self.max_deleted_entry_id == StreamId::MIN || self.max_deleted_entry_id < self.first_id {
            if id < self.first_id {
                return Some(self.entries_added - self.length);
            } else if id == self.first_id {
                return Some(self.entries_added - self.length + 1);
            }
        }
        None
    }

    /// Redis's `lazyfreeGetFreeEffort` for a stream: its nodes, and every
    /// group's pending entries.
    pub fn free_effort(&self) -> usize {
        self.nodes.len()
            + self
                .groups
                .values()
                .map(|g| 1 + g.pending.len())
                .sum::<usize>()
    }

    /// Whether a live entry `id` exists (`streamEntryExists`).
    pub fn contains(&self, id: StreamId) -> bool {
        !self.range(id, id, false, 1).is_empty()
    }

    /// The entry `id`, if live.
    pub fn get(&self, id: StreamId) -> Option<Entry> {
        self.range(id, id, false, 1).pop()
    }

    /// A group's lag: entries added not yet read by it, when it can be
    /// known (`streamReplyWithCGLag`).
    /// (Negative when the group was told it read more than was added, as
    /// Redis's arithmetic gives it.)
    pub fn lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let read = match group.entries_read {
            Some(read) if !self.has_tombstones(group.last_id, None) => Some(read),
            _ => self.distance_from_first(group.last_id),
        };
        read.map(|r| (self.entries_added as i64).wrapping_sub(r as i64))
    }

    /// Memory held by the entries (for MEMORY USAGE and eviction).
    pub fn heap_bytes(&self) -> usize {
        self.nodes
            .values()
            .map(|n| {
                n.data.capacity()
                    + n.master_fields
                        .iter()
                        .map(|f| f.capacity() + 24)
                        .sum::<usize>()
                    + 64
            })
            .sum::<usize>()
            + self.groups.len() * 128
    }

    /// Every node as (master ID, master fields, entries with flags),
    /// deleted ones included: what an RDB file stores.
    pub fn nodes_for_rdb(&self) -> Vec<RdbNode<'_>> {
        self.nodes
            .iter()
            .map(|(&master, node)| {
                let entries = node
                    .slots(master)
                    .into_iter()
                    .map(|s| {
                        (
                            node.entry_at(s),
                            s.flags & FLAG_DELETED != 0,
                            s.flags & FLAG_SAME_FIELDS != 0,
                        )
                    })
                    .collect();
                (
                    master,
                    node.master_fields.as_slice(),
                    node.live,
                    node.deleted,
                    entries,
                )
            })
            .collect()
    }

    /// Puts back a node read from an RDB file: its master ID and fields,
    /// and its entries with their deleted flags, in order.
    pub fn load_node(
        &mut self,
        master: StreamId,
        master_fields: Vec<Vec<u8>>,
        entries: Vec<(Entry, bool)>,
    ) {
        let mut node = Node {
            lp_bytes: Node::master_lp_bytes(&master_fields, 0, 0),
            master_fields,
            ..Node::default()
        };
        let (mut live, mut deleted) = (0u32, 0u32);
        for (entry, is_deleted) in entries {
            let refs: Vec<&[u8]> = entry.fields.iter().map(Vec::as_slice).collect();
            let same = refs.len() / 2 == node.master_fields.len()
                && refs
                    .iter()
                    .step_by(2)
                    .zip(&node.master_fields)
                    .all(|(a, b)| *a == b.as_slice());
            let flags =
                if same { FLAG_SAME_FIELDS } else { 0 } | if is_deleted { FLAG_DELETED } else { 0 };
            node.data.push(flags);
            put_varint(&mut node.data, entry.id.ms.wrapping_sub(master.ms));
            put_varint(&mut node.data, entry.id.seq);
            if same {
                refs.iter()
                    .skip(1)
                    .step_by(2)
                    .for_each(|v| put_bytes(&mut node.data, v));
            } else {
                put_varint(&mut node.data, (refs.len() / 2) as u64);
                refs.iter().for_each(|f| put_bytes(&mut node.data, f));
            }
            node.lp_bytes +=
                Node::entry_lp_bytes(entry.id, master, flags & FLAG_SAME_FIELDS, &refs);
            if is_deleted {
                deleted += 1;
            } else {
                live += 1;
            }
        }
        node.set_counts(live, deleted);
        // (A node of deleted entries only is kept, as Redis loads it.)
        if live + deleted > 0 {
            self.length += u64::from(live);
            self.nodes.insert(master, node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(s: &mut Stream, ms: u64, fields: &[&[u8]]) {
        let id = StreamId::new(ms, 0);
        s.append(id, fields, 4096, 100);
    }

    #[test]
    fn appends_ranges_and_deletes() {
        let mut s = Stream::default();
        for i in 1..=250 {
            add(&mut s, i, &[b"f", i.to_string().as_bytes()]);
        }
        add(&mut s, 251, &[b"g", b"x", b"h", b"y"]);
        assert_eq!(s.len(), 251);
        assert_eq!(s.node_count(), 3);
        let r = s.range(StreamId::new(99, 0), StreamId::new(102, 0), false, 0);
        assert_eq!(
            r.iter().map(|e| e.id.ms).collect::<Vec<_>>(),
            [99, 100, 101, 102]
        );
        assert_eq!(r[0].fields, vec![b"f".to_vec(), b"99".to_vec()]);
        let last = s.range(StreamId::MIN, StreamId::MAX, true, 2);
        assert_eq!(
            last[0].fields,
            vec![b"g".to_vec(), b"x".to_vec(), b"h".to_vec(), b"y".to_vec()]
        );
        assert_eq!(last[1].id.ms, 250);
        assert!(s.delete(StreamId::new(1, 0)));
        assert!(!s.delete(StreamId::new(1, 0)));
        assert_eq!(s.first_id, StreamId::new(2, 0));
        assert_eq!(s.max_deleted_entry_id, StreamId::new(1, 0));
    }

    #[test]
    fn trimming_exact_and_by_whole_nodes() {
        let mut s = Stream::default();
        for i in 1..=250 {
            add(&mut s, i, &[b"f", b"v"]);
        }
        assert_eq!(s.clone().trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.clone().trim(Trim::MaxLen(120), false, 0), 130);
        let mut exact = s.clone();
        exact.trim(Trim::MinId(StreamId::new(150, 0)), false, 0);
        assert_eq!(exact.first_id, StreamId::new(150, 0));
        assert_eq!(exact.len(), 101);
    }

    #[test]
    fn nodes_split_where_redis_listpacks_would() {
        let mut s = Stream::default();
        let big = vec![b'x'; 1000];
        for i in 1..=10 {
            add(&mut s, i, &[b"f", &big]);
        }
        // A 4096-byte listpack takes four 1000-byte entries (the check
        // is before adding: 3054 + 1001 < 4096), the fifth starts a node
        // (XINFO STREAM's radix-tree-keys on redis-server: 3).
        assert_eq!(s.node_count(), 3);
    }
}
