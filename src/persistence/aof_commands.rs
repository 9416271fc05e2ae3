//! An AOF base without the RDB preamble (`aof-use-rdb-preamble no`):
//! each key as the commands that build it, its deadline as PEXPIREAT
//! (Redis's `rewriteAppendOnlyFileRio`).

use crate::protocol::encode_request;

/// Items per command when a rewrite writes a big value as commands
/// (Redis's `AOF_REWRITE_ITEMS_PER_CMD`).
const ITEMS_PER_COMMAND: usize = 64;

/// Writes the commands that build `key` with `value` (and its deadline):
/// a rewrite's base without the RDB preamble (Redis's
/// `rewriteAppendOnlyFileRio`, `ITEMS_PER_COMMAND` items per command).
/// A save's entries as the commands that build each key (an AOF base
/// without the RDB preamble).
pub struct CommandEntries;

impl crate::db::snapshot::EntryFormat for CommandEntries {
    fn is_big(&self, value: crate::value::ValueRef<'_>) -> bool {
        super::rdb::is_big(value)
    }

    fn write_big_head(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: crate::value::ValueRef<'_>,
        _at_ms: Option<i64>,
    ) {
        write_big_commands_head(out, key, value);
    }

    fn write_big_piece(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: crate::value::ValueRef<'_>,
        at: usize,
        units: usize,
        at_ms: Option<i64>,
    ) -> Option<usize> {
        write_big_commands_piece(out, key, value, at, units, at_ms)
    }

    fn write_soft_deadline(&self, out: &mut Vec<u8>, key: &[u8], soft_ms: i64) {
        let message = crate::db::soft_deadlines::echo_message(key, soft_ms);
        encode_request(&[&b"ECHO"[..], &message], out);
    }
}

/// The start of a big value's commands (`super::rdb::is_big`): for a string, the
/// head of its SET up to the value's length, the bytes following in
/// pieces; nothing for the others, whose commands each piece writes.
pub fn write_big_commands_head(out: &mut Vec<u8>, key: &[u8], value: crate::value::ValueRef<'_>) {
    if let crate::value::ValueRef::Str(s) = value {
        out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
        out.extend_from_slice(format!("${}\r\n", key.len()).as_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(format!("\r\n${}\r\n", s.len()).as_bytes());
    }
}

/// Writes the commands for up to `units` more elements (or KB of a
/// string) of a big value from position `at`, and its deadline after the
/// last; returns where the next piece starts, or `None` when complete.
pub fn write_big_commands_piece(
    out: &mut Vec<u8>,
    key: &[u8],
    value: crate::value::ValueRef<'_>,
    at: usize,
    units: usize,
    at_ms: Option<i64>,
) -> Option<usize> {
    use crate::value::ValueRef;
    let (end, len) = match value {
        ValueRef::Str(s) => {
            let end = at
                .saturating_add(units.saturating_mul(super::rdb::STRING_BYTES_PER_UNIT))
                .min(s.len());
            out.extend_from_slice(&s[at.min(end)..end]);
            if end == s.len() {
                out.extend_from_slice(b"\r\n");
            }
            (end, s.len())
        }
        ValueRef::List(l) => {
            let items: Vec<Vec<u8>> = l.iter_from(at).take(units).map(<[u8]>::to_vec).collect();
            write_batched(out, b"RPUSH", key, &items, 1);
            (at + items.len(), l.len())
        }
        ValueRef::Set(set) => {
            let mut items = Vec::new();
            let mut deadlines = Vec::new();
            for (member, deadline) in set.iter_with_ttls_from(at).take(units) {
                let member = member.with_bytes(<[u8]>::to_vec);
                if let Some(deadline) = deadline {
                    deadlines.push((deadline, member.clone()));
                }
                items.push(member);
            }
            write_batched(out, b"SADD", key, &items, 1);
            write_deadlines(out, b"SPEXPIREAT", key, b"MEMBERS", &deadlines);
            (at + items.len(), set.len())
        }
        ValueRef::ZSet(z) => {
            let mut items = Vec::new();
            let mut deadlines = Vec::new();
            for (e, deadline) in z.iter_with_ttls_from(at, false).take(units) {
                let member = e.member.with_bytes(<[u8]>::to_vec);
                if let Some(deadline) = deadline {
                    deadlines.push((deadline, member.clone()));
                }
                items.push(crate::protocol::reply::format_double(e.score).into_bytes());
                items.push(member);
            }
            write_batched(out, b"ZADD", key, &items, 2);
            write_deadlines(out, b"ZPEXPIREAT", key, b"MEMBERS", &deadlines);
            (at + items.len() / 2, z.len())
        }
        ValueRef::Hash(hash) => {
            let mut items = Vec::new();
            let mut deadlines = Vec::new();
            for (field, value, deadline) in hash.iter_with_ttls_from(at).take(units) {
                let field = field.with_bytes(<[u8]>::to_vec);
                if let Some(deadline) = deadline {
                    deadlines.push((deadline, field.clone()));
                }
                items.push(field);
                items.push(value.with_bytes(<[u8]>::to_vec));
            }
            write_batched(out, b"HSET", key, &items, 2);
            write_deadlines(out, b"HPEXPIREAT", key, b"FIELDS", &deadlines);
            (at + items.len() / 2, hash.len())
        }
        ValueRef::Stream(stream) => {
            write_stream_commands(out, key, stream);
            (1, 1)
        }
    };
    if end < len && end > at {
        return Some(end);
    }
    if let Some(at_ms) = at_ms {
        let at = at_ms.to_string();
        encode_request(&[&b"PEXPIREAT"[..], key, at.as_bytes()], out);
    }
    None
}

/// Each element's deadline after the elements (as Redis 7.4's rewrite
/// does for hash fields, one `command key at TOKEN 1 element` each).
fn write_deadlines(
    out: &mut Vec<u8>,
    command: &[u8],
    key: &[u8],
    token: &[u8],
    deadlines: &[(i64, Vec<u8>)],
) {
    for (deadline, element) in deadlines {
        let at = deadline.to_string();
        encode_request(&[command, key, at.as_bytes(), token, b"1", element], out);
    }
}

/// The commands that rebuild a stream (Redis's `rewriteStreamObject`):
/// its entries as XADDs with their IDs (an empty stream as an XADD its
/// MAXLEN 0 empties), then XSETID for the last ID, entries added and
/// max-deleted ID; then each group with XGROUP CREATE, its pending
/// entries as forced XCLAIMs, and consumers with nothing pending.
fn write_stream_commands(out: &mut Vec<u8>, key: &[u8], stream: &crate::value::Stream) {
    use crate::value::stream::StreamId;
    let last = stream.last_id.to_text();
    if stream.is_empty() {
        // ID 0-1 as Redis writes it (XADD refuses 0-0, an empty stream's
        // last ID when nothing was ever added); XSETID sets the real one.
        encode_request(
            &[&b"XADD"[..], key, b"MAXLEN", b"0", b"0-1", b"x", b"y"],
            out,
        );
    }
    for entry in stream.range(StreamId::MIN, StreamId::MAX, false, 0) {
        let id = entry.id.to_text();
        let mut args: Vec<&[u8]> = vec![b"XADD", key, id.as_bytes()];
        args.extend(entry.fields.iter().map(Vec::as_slice));
        encode_request(&args, out);
    }
    let (added, deleted) = (
        stream.entries_added.to_string(),
        stream.max_deleted_entry_id.to_text(),
    );
    encode_request(
        &[
            &b"XSETID"[..],
            key,
            last.as_bytes(),
            b"ENTRIESADDED",
            added.as_bytes(),
            b"MAXDELETEDID",
            deleted.as_bytes(),
        ],
        out,
    );
    for (name, group) in &stream.groups {
        let last = group.last_id.to_text();
        let read = group
            .entries_read
            .map_or("-1".to_string(), |n| n.to_string());
        encode_request(
            &[
                &b"XGROUP"[..],
                b"CREATE",
                key,
                name,
                last.as_bytes(),
                b"ENTRIESREAD",
                read.as_bytes(),
            ],
            out,
        );
        for (id, p) in &group.pending {
            let (id, time, count) = (
                id.to_text(),
                p.delivery_time_ms.to_string(),
                p.delivery_count.to_string(),
            );
            encode_request(
                &[
                    &b"XCLAIM"[..],
                    key,
                    name,
                    &p.consumer,
                    b"0",
                    id.as_bytes(),
                    b"TIME",
                    time.as_bytes(),
                    b"RETRYCOUNT",
                    count.as_bytes(),
                    b"JUSTID",
                    b"FORCE",
                ],
                out,
            );
        }
        for (consumer, c) in &group.consumers {
            if c.pending.is_empty() {
                encode_request(
                    &[&b"XGROUP"[..], b"CREATECONSUMER", key, name, consumer],
                    out,
                );
            }
        }
    }
}

/// `command key item…` for `items` taken `per_item` at a time (a member,
/// or a score and member), `ITEMS_PER_COMMAND` per command.
fn write_batched(
    out: &mut Vec<u8>,
    command: &[u8],
    key: &[u8],
    items: &[Vec<u8>],
    per_item: usize,
) {
    for chunk in items.chunks(ITEMS_PER_COMMAND * per_item) {
        let mut args: Vec<&[u8]> = Vec::with_capacity(chunk.len() + 2);
        args.push(command);
        args.push(key);
        args.extend(chunk.iter().map(Vec::as_slice));
        encode_request(&args, out);
    }
}
