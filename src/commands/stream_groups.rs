//! Consumer groups (Redis's `t_stream.c`, second half): XGROUP,
//! XREADGROUP (with BLOCK), XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO
//! GROUPS and CONSUMERS. A group's delivery and claims go out as XCLAIM
//! and XGROUP SETID effects, as Redis propagates them, so replicas and
//! the AOF hold the same pending entries.

use super::aggregate::{read, read_for_write, write, STREAM};
use super::blocking::{retrying, wait_for_keys};
use super::streams::*;
use super::{c_str, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, Ttl};
use crate::protocol::request::parse_i64;
use crate::protocol::Args;
use crate::value::stream::{Entry, Group, Pending, Stream, StreamId};
use crate::value::Value;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("xreadgroup", xreadgroup),
    ("xack", xack),
    ("xpending", xpending),
    ("xclaim", xclaim),
    ("xautoclaim", xautoclaim),
    ("xgroup|create", xgroup_create),
    ("xgroup|createconsumer", xgroup_createconsumer),
    ("xgroup|delconsumer", xgroup_delconsumer),
    ("xgroup|destroy", xgroup_destroy),
    ("xgroup|setid", xgroup_setid),
    ("xgroup|help", xgroup_help),
    ("xinfo|consumers", xinfo_consumers),
    ("xinfo|groups", xinfo_groups),
];

/// Redis's NOGROUP errors, naming the key and group as `%s` prints them.
fn no_group(prefix: &str, key: &[u8], middle: &str, group: &[u8], suffix: &str) -> CmdError {
    let mut msg = format!("NOGROUP {prefix}").into_bytes();
    msg.extend_from_slice(c_str(key, usize::MAX));
    msg.extend_from_slice(middle.as_bytes());
    msg.extend_from_slice(c_str(group, usize::MAX));
    msg.extend_from_slice(suffix.as_bytes());
    CmdError::Owned(msg)
}

/// "No such key 'k' or consumer group 'g'" (XPENDING, XCLAIM...).
fn no_key_or_group(key: &[u8], group: &[u8]) -> CmdError {
    no_group("No such key '", key, "' or consumer group '", group, "'")
}

/// "No such consumer group 'g' for key name 'k'" (XGROUP, XINFO).
fn no_group_for_key(key: &[u8], group: &[u8]) -> CmdError {
    no_group(
        "No such consumer group '",
        group,
        "' for key name '",
        key,
        "'",
    )
}

/// The consumer `name` of `group`, created if absent; its seen time
/// refreshed (`streamLookupConsumer`). Whether it was created.
fn consumer_of(group: &mut Group, name: &[u8], now_ms: i64) -> bool {
    let created = !group.consumers.contains_key(name);
    let consumer = group.consumers.entry(name.to_vec()).or_default();
    consumer.seen_time_ms = now_ms;
    created
}

/// The XCLAIM that reproduces a delivery or claim on replicas
/// (`streamPropagateXCLAIM`).
fn xclaim_effect(
    key: &[u8],
    group_name: &[u8],
    group: &Group,
    id: StreamId,
    p: &Pending,
) -> Vec<Vec<u8>> {
    vec![
        b"XCLAIM".to_vec(),
        key.to_vec(),
        group_name.to_vec(),
        p.consumer.clone(),
        b"0".to_vec(),
        id.to_text().into_bytes(),
        b"TIME".to_vec(),
        p.delivery_time_ms.to_string().into_bytes(),
        b"RETRYCOUNT".to_vec(),
        p.delivery_count.to_string().into_bytes(),
        b"FORCE".to_vec(),
        b"JUSTID".to_vec(),
        b"LASTID".to_vec(),
        group.last_id.to_text().into_bytes(),
    ]
}

/// XGROUP SETID's effect carrying the group's position
/// (`streamPropagateGroupID`).
fn setid_effect(key: &[u8], group_name: &[u8], group: &Group) -> Vec<Vec<u8>> {
    let read = group
        .entries_read
        .map_or("-1".to_string(), |n| n.to_string());
    vec![
        b"XGROUP".to_vec(),
        b"SETID".to_vec(),
        key.to_vec(),
        group_name.to_vec(),
        group.last_id.to_text().into_bytes(),
        b"ENTRIESREAD".to_vec(),
        read.into_bytes(),
    ]
}

/// Sends `effects` instead of the command itself (nothing if none:
/// consumer group commands propagate only what they did).
fn emit(ctx: &mut Ctx, effects: Vec<Vec<Vec<u8>>>) {
    ctx.server.propagate.suppress();
    for e in effects {
        let refs: Vec<&[u8]> = e.iter().map(Vec::as_slice).collect();
        ctx.propagate_as(&refs);
    }
}

/// Where a delivery goes and how (XREADGROUP's GROUP and options).
struct Delivery<'a> {
    key: &'a [u8],
    group: &'a [u8],
    consumer: &'a [u8],
    count: usize,
    noack: bool,
    now_ms: i64,
    /// Whether anything consumes effects (else none are built).
    propagating: bool,
}

/// Delivers new entries after the group's last ID to the consumer
/// (`streamReplyWithRange` with a group): the group moves on, each entry
/// goes pending (unless NOACK), and the effects to propagate are added.
fn deliver_new(
    s: &mut Stream,
    d: &Delivery,
    effects: &mut Vec<Vec<Vec<u8>>>,
) -> Vec<(StreamId, Option<Entry>)> {
    let Some(start) = s.groups.get(d.group).and_then(|g| g.last_id.incr()) else {
        return Vec::new();
    };
    let entries = s.range(start, StreamId::MAX, false, d.count);
    let mut moved = false;
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let id = e.id;
        let (estimate, tombstones, added) = (
            s.distance_from_first(id),
            s.has_tombstones(id, None),
            s.entries_added,
        );
        let Some(group) = s.groups.get_mut(d.group) else {
            break;
        };
        if id > group.last_id {
            group.entries_read = match group.entries_read {
                Some(n) if !tombstones => Some(n + 1),
                _ if added > 0 => estimate,
                read => read,
            };
            group.last_id = id;
            moved = true;
        }
        if !d.noack {
            if let Some(old) = group.pending.get(&id) {
                let previous = old.consumer.clone();
                if let Some(c) = group.consumers.get_mut(&previous) {
                    c.pending.remove(&id);
                }
            }
            let p = Pending {
                consumer: d.consumer.to_vec(),
                delivery_time_ms: d.now_ms,
                delivery_count: 1,
            };
            if d.propagating {
                effects.push(xclaim_effect(d.key, d.group, group, id, &p));
            }
            group.pending.insert(id, p);
            if let Some(c) = group.consumers.get_mut(d.consumer) {
                c.pending.insert(id);
            }
        }
        out.push((id, Some(e)));
    }
    if d.noack && moved {
        if let Some(group) = s.groups.get(d.group) {
            effects.push(setid_effect(d.key, d.group, group));
        }
    }
    out
}

/// The consumer's history from `start` (`streamReplyWithRangeFromConsumerPEL`):
/// its pending entries, each delivered once more (an entry deleted since
/// comes back as `[id, nil]`).
fn deliver_history(
    s: &mut Stream,
    d: &Delivery,
    start: StreamId,
) -> Vec<(StreamId, Option<Entry>)> {
    let take = if d.count == 0 { usize::MAX } else { d.count };
    let ids: Vec<StreamId> = s
        .groups
        .get(d.group)
        .and_then(|g| g.consumers.get(d.consumer))
        .map(|c| c.pending.range(start..).take(take).copied().collect())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let entry = s.get(id);
        if entry.is_some() {
            if let Some(p) = s
                .groups
                .get_mut(d.group)
                .and_then(|g| g.pending.get_mut(&id))
            {
                p.delivery_time_ms = d.now_ms;
                p.delivery_count += 1;
            }
        }
        out.push((id, entry));
    }
    out
}

fn xreadgroup(ctx: &mut Ctx, args: Args) -> CmdResult {
    let o = parse_read(ctx, &args)?;
    let group_at = o.group_at.unwrap_or(0);
    let (group_name, consumer_name) = (args.get(group_at), args.get(group_at + 1));
    let keys: Vec<&[u8]> = args.iter().skip(o.streams_at).take(o.nstreams).collect();
    // Each stream's start: `>` (new entries, MAX) or a history ID.
    let mut from: Vec<StreamId> = Vec::with_capacity(o.nstreams);
    for (n, key) in keys.iter().enumerate() {
        let arg = &args[o.streams_at + o.nstreams + n];
        let waking = retrying(ctx);
        let s = match read(ctx, key, &STREAM) {
            // Woken while blocked: as Redis 7.0.15 serves a blocked group
            // reader, its stream gone (or replaced) or its group gone
            // ends the wait with an error of its own.
            Ok(None) | Err(_) if waking => {
                return Err(CmdError::Static(
                    "UNBLOCKED the stream key no longer exists",
                ))
            }
            Ok(Some(s)) if waking && !s.groups.contains_key(group_name) => {
                return Err(CmdError::Static(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                ));
            }
            found => found?,
        };
        if s.is_none_or(|s| !s.groups.contains_key(group_name)) {
            return Err(no_group(
                "No such key '",
                key,
                "' or consumer group '",
                group_name,
                "' in XREADGROUP with GROUP option",
            ));
        }
        if arg == b"$" {
            return Err(CmdError::Static("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."));
        }
        from.push(if arg == b">" {
            StreamId::MAX
        } else {
            strict_id(arg)?
        });
    }
    let now_ms = ctx.now_ms;
    let propagating = ctx.server.propagate.active();
    let mut effects: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut results: Vec<StreamResult<'_>> = Vec::new();
    for (key, &gt) in keys.iter().zip(&from) {
        let Some(s) = write(ctx, key, &STREAM)? else {
            continue;
        };
        let history = gt != StreamId::MAX;
        let last = s.groups.get(group_name).map(|g| g.last_id);
        // Nothing past the group's position when the last ID ever made is
        // not (the cheap test first: the top entry takes a node's decoding).
        let serve = history
            || last.is_some_and(|last| {
                s.last_id > last && s.edge_id(false).is_some_and(|top| top > last)
            });
        let Some(group) = s.groups.get_mut(group_name).filter(|_| serve) else {
            continue;
        };
        let created = consumer_of(group, consumer_name, now_ms);
        let d = Delivery {
            key,
            group: group_name,
            consumer: consumer_name,
            count: o.count,
            noack: o.noack,
            now_ms,
            propagating,
        };
        if created && o.noack {
            effects.push(vec![
                b"XGROUP".to_vec(),
                b"CREATECONSUMER".to_vec(),
                key.to_vec(),
                group_name.to_vec(),
                consumer_name.to_vec(),
            ]);
        }
        let entries = match gt.incr() {
            Some(start) if history => deliver_history(s, &d, start),
            _ => deliver_new(s, &d, &mut effects),
        };
        if created {
            ctx.signal(EventClass::STREAM, "xgroup-createconsumer", key);
        }
        ctx.db().mark_dirty();
        results.push((key, entries));
    }
    emit(ctx, effects);
    if !results.is_empty() {
        reply_streams(ctx.out(), &results);
        return Ok(());
    }
    let Some(deadline) = o.block_deadline else {
        ctx.out().null_array();
        return Ok(());
    };
    wait_for_keys(ctx, args, &keys, deadline);
    Ok(())
}

fn xack(ctx: &mut Ctx, args: Args) -> CmdResult {
    let exists = read(ctx, &args[1], &STREAM)?.is_some_and(|s| s.groups.contains_key(&args[2][..]));
    if !exists {
        ctx.out().int(0);
        return Ok(());
    }
    let ids = strict_ids(&args, 3)?;
    let s = write(ctx, &args[1], &STREAM)?.ok_or(CmdError::WrongType)?;
    let mut acked = 0;
    if let Some(group) = s.groups.get_mut(&args[2][..]) {
        acked = ids
            .into_iter()
            .filter(|&id| drop_pending(group, id).is_some())
            .count();
    }
    for _ in 0..acked {
        ctx.db().mark_dirty();
    }
    ctx.out().int(acked as i64);
    Ok(())
}

/// XPENDING's range form: IDLE, start, end, count, consumer.
struct PendingQuery<'a> {
    min_idle: i64,
    start: StreamId,
    end: StreamId,
    count: i64,
    consumer: Option<&'a [u8]>,
}

fn pending_query<'a>(args: &Args<'a>) -> Result<PendingQuery<'a>, CmdError> {
    let mut at = 3;
    let mut min_idle = 0;
    if is(&args[3], "idle") {
        min_idle = int_arg(&args[4])?;
        if args.len() < 8 {
            return Err(CmdError::Syntax);
        }
        at += 2;
    }
    let count = int_arg(&args[at + 2])?.max(0);
    let (start, ex) = interval_id(&args[at], 0)?;
    let start = if ex {
        start
            .incr()
            .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?
    } else {
        start
    };
    let (end, ex) = interval_id(&args[at + 1], u64::MAX)?;
    let end = if ex {
        end.decr()
            .ok_or(CmdError::Static("ERR invalid end ID for the interval"))?
    } else {
        end
    };
    let consumer = (at + 3 < args.len()).then(|| args.get(at + 3));
    Ok(PendingQuery {
        min_idle,
        start,
        end,
        count,
        consumer,
    })
}

fn xpending(ctx: &mut Ctx, args: Args) -> CmdResult {
    let summary = args.len() == 3;
    if !summary && !(6..=9).contains(&args.len()) {
        return Err(CmdError::Syntax);
    }
    let query = if summary {
        None
    } else {
        Some(pending_query(&args)?)
    };
    let now_ms = ctx.now_ms;
    let s = read(ctx, &args[1], &STREAM)?;
    let Some(group) = s.and_then(|s| s.groups.get(&args[2][..])) else {
        return Err(no_key_or_group(&args[1], &args[2]));
    };
    let Some(q) = query else {
        let edges = group
            .pending
            .keys()
            .next()
            .zip(group.pending.keys().next_back());
        let edges = edges.map(|(a, b)| (*a, *b));
        let owners: Vec<(Vec<u8>, usize)> = group
            .consumers
            .iter()
            .filter(|(_, c)| !c.pending.is_empty())
            .map(|(n, c)| (n.clone(), c.pending.len()))
            .collect();
        let len = group.pending.len();
        let out = ctx.out();
        out.array(4);
        out.int(len as i64);
        match edges {
            Some((first, last)) => {
                out.bulk(first.to_text().as_bytes());
                out.bulk(last.to_text().as_bytes());
                out.array(owners.len());
                for (name, n) in owners {
                    out.array(2);
                    out.bulk(&name);
                    out.bulk(n.to_string().as_bytes());
                }
            }
            None => {
                out.null();
                out.null();
                out.null_array();
            }
        }
        return Ok(());
    };
    let ids: Vec<StreamId> = match q.consumer {
        Some(name) => match group.consumers.get(name) {
            Some(c) => c.pending.range(q.start..).copied().collect(),
            None => Vec::new(),
        },
        None => group.pending.range(q.start..).map(|(id, _)| *id).collect(),
    };
    let mut rows = Vec::new();
    let mut count = q.count;
    for id in ids {
        if count == 0 || id > q.end {
            break;
        }
        let Some(p) = group.pending.get(&id) else {
            continue;
        };
        if q.min_idle != 0 && now_ms.saturating_sub(p.delivery_time_ms) < q.min_idle {
            continue;
        }
        count -= 1;
        rows.push((
            id,
            p.consumer.clone(),
            now_ms.saturating_sub(p.delivery_time_ms).max(0),
            p.delivery_count,
        ));
    }
    let out = ctx.out();
    out.array(rows.len());
    for (id, consumer, idle, deliveries) in rows {
        out.array(4);
        out.bulk(id.to_text().as_bytes());
        out.bulk(&consumer);
        out.int(idle);
        out.int(deliveries as i64);
    }
    Ok(())
}

/// Hands pending entry `id` to `consumer` (XCLAIM, XAUTOCLAIM): moved
/// from its previous owner, delivery time set, count as given or bumped.
fn claim(
    group: &mut Group,
    id: StreamId,
    consumer: &[u8],
    time_ms: i64,
    retry: Option<u64>,
    bump: bool,
) -> Option<Pending> {
    let p = group.pending.get_mut(&id)?;
    if p.consumer != consumer {
        let previous = std::mem::replace(&mut p.consumer, consumer.to_vec());
        if let Some(c) = group.consumers.get_mut(&previous) {
            c.pending.remove(&id);
        }
    }
    p.delivery_time_ms = time_ms;
    match retry {
        Some(n) => p.delivery_count = n,
        None if bump => p.delivery_count += 1,
        None => {}
    }
    let p = p.clone();
    if let Some(c) = group.consumers.get_mut(consumer) {
        c.pending.insert(id);
    }
    Some(p)
}

/// Drops pending entry `id` from the group and its owner.
fn drop_pending(group: &mut Group, id: StreamId) -> Option<Pending> {
    let p = group.pending.remove(&id)?;
    if let Some(c) = group.consumers.get_mut(&p.consumer) {
        c.pending.remove(&id);
    }
    Some(p)
}

/// XCLAIM's options after the IDs.
struct ClaimOptions {
    force: bool,
    justid: bool,
    time_ms: i64,
    retry: Option<u64>,
    last_id: StreamId,
}

fn claim_options(args: &Args, mut j: usize, now_ms: i64) -> Result<ClaimOptions, CmdError> {
    let mut o = ClaimOptions {
        force: false,
        justid: false,
        time_ms: -1,
        retry: None,
        last_id: StreamId::MIN,
    };
    let int = |arg: &[u8], what: &'static str| parse_i64(arg).ok_or(CmdError::Static(what));
    let mut retry = -1;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = &args[j];
        if is(opt, "force") {
            o.force = true;
        } else if is(opt, "justid") {
            o.justid = true;
        } else if is(opt, "idle") && more > 0 {
            j += 1;
            o.time_ms = now_ms.saturating_sub(int(
                &args[j],
                "ERR Invalid IDLE option argument for XCLAIM",
            )?);
        } else if is(opt, "time") && more > 0 {
            j += 1;
            o.time_ms = int(&args[j], "ERR Invalid TIME option argument for XCLAIM")?;
        } else if is(opt, "retrycount") && more > 0 {
            j += 1;
            retry = int(
                &args[j],
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            )?;
        } else if is(opt, "lastid") && more > 0 {
            j += 1;
            o.last_id = strict_id(&args[j])?;
        } else {
            return Err(CmdError::with_arg(
                "ERR Unrecognized XCLAIM option '",
                c_str(opt, usize::MAX),
                "'",
            ));
        }
        j += 1;
    }
    if !(0..=now_ms).contains(&o.time_ms) {
        o.time_ms = now_ms;
    }
    o.retry = u64::try_from(retry).ok();
    Ok(o)
}

fn xclaim(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (key, group_name, consumer) = (&args[1], &args[2], &args[3]);
    if read(ctx, key, &STREAM)?.is_none_or(|s| !s.groups.contains_key(group_name)) {
        return Err(no_key_or_group(key, group_name));
    }
    let min_idle = parse_i64(&args[4])
        .ok_or(CmdError::Static(
            "ERR Invalid min-idle-time argument for XCLAIM",
        ))?
        .max(0);
    let ids: Vec<StreamId> = args
        .iter()
        .skip(5)
        .map_while(|a| parse_id(a, 0, true, false).ok().map(|(id, _)| id))
        .collect();
    let now_ms = ctx.now_ms;
    let o = claim_options(&args, 5 + ids.len(), now_ms)?;
    let s = write(ctx, key, &STREAM)?.ok_or(CmdError::WrongType)?;
    let found: Vec<Option<Entry>> = ids.iter().map(|&id| s.get(id)).collect();
    let Some(group) = s.groups.get_mut(group_name) else {
        return Err(no_key_or_group(key, group_name));
    };
    let mut propagate_last_id = false;
    if o.last_id > group.last_id {
        group.last_id = o.last_id;
        propagate_last_id = true;
    }
    let (mut effects, mut claimed, mut created) = (Vec::new(), Vec::new(), None);
    for (&id, entry) in ids.iter().zip(found) {
        let Some(entry) = entry else {
            // The entry is gone: so is its pending record.
            if let Some(p) = drop_pending(group, id) {
                effects.push(xclaim_effect(key, group_name, group, id, &p));
                propagate_last_id = false;
            }
            continue;
        };
        if o.force && !group.pending.contains_key(&id) {
            let p = Pending {
                consumer: Vec::new(),
                delivery_time_ms: now_ms,
                delivery_count: 1,
            };
            group.pending.insert(id, p);
        }
        let Some(p) = group.pending.get(&id) else {
            continue;
        };
        if !p.consumer.is_empty()
            && min_idle != 0
            && now_ms.saturating_sub(p.delivery_time_ms) < min_idle
        {
            continue;
        }
        if created.is_none() {
            created = Some(consumer_of(group, consumer, now_ms));
        }
        if let Some(p) = claim(group, id, consumer, o.time_ms, o.retry, !o.justid) {
            effects.push(xclaim_effect(key, group_name, group, id, &p));
        }
        propagate_last_id = false;
        claimed.push(entry);
    }
    if propagate_last_id {
        effects.push(setid_effect(key, group_name, group));
    }
    if created == Some(true) {
        ctx.signal(EventClass::STREAM, "xgroup-createconsumer", key);
    }
    for _ in 0..effects.len() {
        ctx.db().mark_dirty();
    }
    emit(ctx, effects);
    let out = ctx.out();
    out.array(claimed.len());
    for e in &claimed {
        if o.justid {
            out.bulk(e.id.to_text().as_bytes());
        } else {
            reply_entry(out, e);
        }
    }
    Ok(())
}

fn xautoclaim(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (key, group_name, consumer) = (&args[1], &args[2], &args[3]);
    let min_idle = parse_i64(&args[4])
        .ok_or(CmdError::Static(
            "ERR Invalid min-idle-time argument for XAUTOCLAIM",
        ))?
        .max(0);
    let (start, ex) = interval_id(&args[5], 0)?;
    let start = if ex {
        start
            .incr()
            .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?
    } else {
        start
    };
    let (mut count, mut justid) = (100i64, false);
    let mut j = 6;
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            let max = i64::MAX / 16;
            count = parse_i64(&args[j + 1])
                .filter(|n| (1..=max).contains(n))
                .ok_or(CmdError::Static("ERR COUNT must be > 0"))?;
            j += 1;
        } else if is(&args[j], "justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if read(ctx, key, &STREAM)?.is_none_or(|s| !s.groups.contains_key(group_name)) {
        return Err(no_key_or_group(key, group_name));
    }
    let now_ms = ctx.now_ms;
    let s = write(ctx, key, &STREAM)?.ok_or(CmdError::WrongType)?;
    let candidates: Vec<StreamId> = s
        .groups
        .get(group_name)
        .map(|g| g.pending.range(start..).map(|(id, _)| *id).collect())
        .unwrap_or_default();
    let mut attempts = count.saturating_mul(10);
    let (mut claimed, mut deleted, mut effects) = (Vec::new(), Vec::new(), Vec::new());
    // The last pending entry examined, when the scan stopped early.
    let mut stopped_after: Option<StreamId> = None;
    let mut created = false;
    let mut examined = None;
    for id in candidates {
        if attempts == 0 || count == 0 {
            stopped_after = examined;
            break;
        }
        attempts -= 1;
        examined = Some(id);
        let entry = s.get(id);
        let Some(group) = s.groups.get_mut(group_name) else {
            break;
        };
        let Some(entry) = entry else {
            if let Some(p) = drop_pending(group, id) {
                effects.push(xclaim_effect(key, group_name, group, id, &p));
            }
            deleted.push(id);
            count -= 1;
            continue;
        };
        let idle = group
            .pending
            .get(&id)
            .map_or(0, |p| now_ms.saturating_sub(p.delivery_time_ms));
        if min_idle != 0 && idle < min_idle {
            continue;
        }
        created |= consumer_of(group, consumer, now_ms);
        if let Some(p) = claim(group, id, consumer, now_ms, None, !justid) {
            effects.push(xclaim_effect(key, group_name, group, id, &p));
        }
        claimed.push(entry);
        count -= 1;
    }
    // The cursor: the next pending entry after the last one examined.
    let next = stopped_after
        .and_then(|last| {
            let g = s.groups.get(group_name)?;
            g.pending
                .range(last..)
                .map(|(id, _)| *id)
                .find(|id| *id > last)
        })
        .unwrap_or(StreamId::MIN);
    if created {
        ctx.signal(EventClass::STREAM, "xgroup-createconsumer", key);
    }
    for _ in 0..effects.len() {
        ctx.db().mark_dirty();
    }
    emit(ctx, effects);
    let out = ctx.out();
    out.array(3);
    out.bulk(next.to_text().as_bytes());
    out.array(claimed.len());
    for e in &claimed {
        if justid {
            out.bulk(e.id.to_text().as_bytes());
        } else {
            reply_entry(out, e);
        }
    }
    out.array(deleted.len());
    deleted
        .iter()
        .for_each(|id| out.bulk(id.to_text().as_bytes()));
    Ok(())
}

/// XGROUP's shared start (`xgroupCommand`): the options after the fourth
/// argument, the key's type, and the group's existence where needed.
/// Returns ENTRIESREAD (`None`: -1 or not given).
fn xgroup_prologue(ctx: &mut Ctx, args: &Args, needs_group: bool) -> Result<Option<u64>, CmdError> {
    let sub = &args[1];
    let (create, setid) = (is(sub, "create"), is(sub, "setid"));
    let (mut mkstream, mut entries_read) = (false, None);
    let mut i = 5;
    while i < args.len() {
        if create && is(&args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is(&args[i], "entriesread") && i + 1 < args.len() {
            let n = int_arg(&args[i + 1])?;
            if n < 0 && n != -1 {
                return Err(CmdError::Static(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            entries_read = u64::try_from(n).ok();
            i += 2;
        } else {
            return Err(CmdError::subcommand_syntax(args, "XGROUP"));
        }
    }
    let s = read_for_write(ctx, &args[2], &STREAM)?;
    if !mkstream {
        let Some(s) = s else {
            return Err(CmdError::Static("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."));
        };
        if needs_group && !s.groups.contains_key(&args[3][..]) {
            return Err(no_group_for_key(&args[2], &args[3]));
        }
    }
    Ok(entries_read)
}

fn xgroup_create(ctx: &mut Ctx, args: Args) -> CmdResult {
    let entries_read = xgroup_prologue(ctx, &args, false)?;
    if args.len() > 8 {
        return Err(CmdError::subcommand_syntax(&args, "XGROUP"));
    }
    let now_ms = ctx.now_ms;
    let last = read_for_write(ctx, &args[2], &STREAM)?.map(|s| s.last_id);
    let id = if &args[4][..] == b"$" {
        last.unwrap_or(StreamId::MIN)
    } else {
        strict_id(&args[4])?
    };
    if last.is_none() {
        ctx.db()
            .set(&args[2], Value::Stream(Box::default()), Ttl::Clear, now_ms);
    }
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    if s.groups.contains_key(&args[3][..]) {
        return Err(CmdError::Static(
            "BUSYGROUP Consumer Group name already exists",
        ));
    }
    let group = Group {
        last_id: id,
        entries_read,
        ..Group::default()
    };
    s.groups.insert(args[3].to_vec(), group);
    ctx.signal(EventClass::STREAM, "xgroup-create", &args[2]);
    ctx.out().ok();
    Ok(())
}

fn xgroup_setid(ctx: &mut Ctx, args: Args) -> CmdResult {
    let entries_read = xgroup_prologue(ctx, &args, true)?;
    if args.len() != 5 && args.len() != 7 {
        return Err(CmdError::subcommand_syntax(&args, "XGROUP"));
    }
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    let id = if &args[4][..] == b"$" {
        s.last_id
    } else {
        parse_id(&args[4], 0, false, false)?.0
    };
    if let Some(g) = s.groups.get_mut(&args[3][..]) {
        g.last_id = id;
        g.entries_read = entries_read;
    }
    ctx.signal(EventClass::STREAM, "xgroup-setid", &args[2]);
    ctx.out().ok();
    Ok(())
}

fn xgroup_destroy(ctx: &mut Ctx, args: Args) -> CmdResult {
    xgroup_prologue(ctx, &args, false)?;
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    let removed = s.groups.remove(&args[3][..]).is_some();
    if removed {
        ctx.signal(EventClass::STREAM, "xgroup-destroy", &args[2]);
    }
    ctx.out().int(i64::from(removed));
    Ok(())
}

fn xgroup_createconsumer(ctx: &mut Ctx, args: Args) -> CmdResult {
    xgroup_prologue(ctx, &args, true)?;
    let now_ms = ctx.now_ms;
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    let created = s
        .groups
        .get_mut(&args[3][..])
        .is_some_and(|g| consumer_of(g, &args[4], now_ms));
    if created {
        ctx.signal(EventClass::STREAM, "xgroup-createconsumer", &args[2]);
    }
    ctx.out().int(i64::from(created));
    Ok(())
}

fn xgroup_delconsumer(ctx: &mut Ctx, args: Args) -> CmdResult {
    xgroup_prologue(ctx, &args, true)?;
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    let mut pending = None;
    if let Some(g) = s.groups.get_mut(&args[3][..]) {
        if let Some(c) = g.consumers.remove(&args[4][..]) {
            for id in &c.pending {
                g.pending.remove(id);
            }
            pending = Some(c.pending.len());
        }
    }
    if pending.is_some() {
        ctx.signal(EventClass::STREAM, "xgroup-delconsumer", &args[2]);
    }
    ctx.out().int(pending.unwrap_or(0) as i64);
    Ok(())
}

fn xgroup_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    );
    Ok(())
}

fn xinfo_groups(ctx: &mut Ctx, args: Args) -> CmdResult {
    let s = read(ctx, &args[2], &STREAM)?.ok_or(CmdError::NoSuchKey)?;
    let rows: Vec<_> = s
        .groups
        .iter()
        .map(|(name, g)| {
            (
                name.clone(),
                g.consumers.len(),
                g.pending.len(),
                g.last_id,
                g.entries_read,
                s.lag(g),
            )
        })
        .collect();
    let out = ctx.out();
    out.array(rows.len());
    for (name, consumers, pending, last, read, lag) in rows {
        out.map(6);
        out.bulk(b"name");
        out.bulk(&name);
        out.bulk(b"consumers");
        out.int(consumers as i64);
        out.bulk(b"pending");
        out.int(pending as i64);
        out.bulk(b"last-delivered-id");
        out.bulk(last.to_text().as_bytes());
        reply_group_counters(out, read, lag);
    }
    Ok(())
}

fn xinfo_consumers(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let s = read(ctx, &args[2], &STREAM)?.ok_or(CmdError::NoSuchKey)?;
    let Some(g) = s.groups.get(&args[3][..]) else {
        return Err(no_group_for_key(&args[2], &args[3]));
    };
    let rows: Vec<_> = g
        .consumers
        .iter()
        .map(|(name, c)| {
            (
                name.clone(),
                c.pending.len(),
                now_ms.saturating_sub(c.seen_time_ms).max(0),
            )
        })
        .collect();
    let out = ctx.out();
    out.array(rows.len());
    for (name, pending, idle) in rows {
        out.map(3);
        out.bulk(b"name");
        out.bulk(&name);
        out.bulk(b"pending");
        out.int(pending as i64);
        out.bulk(b"idle");
        out.int(idle);
    }
    Ok(())
}
