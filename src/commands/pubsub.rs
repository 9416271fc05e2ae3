//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! SSUBSCRIBE, SUNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.
//!
//! The `pubsub` room keeps the subscriptions and queues deliveries; these
//! handlers only reply. A message to the publishing client itself is
//! written at once, so (as in Redis) it precedes PUBLISH's own reply.

use super::{CmdError, CmdResult, Ctx, Handler};
use crate::protocol::Args;
use crate::pubsub::{Kind, Subscriber};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("subscribe", subscribe),
    ("unsubscribe", unsubscribe),
    ("psubscribe", psubscribe),
    ("punsubscribe", punsubscribe),
    ("ssubscribe", ssubscribe),
    ("sunsubscribe", sunsubscribe),
    ("publish", publish),
    ("spublish", spublish),
    ("pubsub|channels", pubsub_channels),
    ("pubsub|numsub", pubsub_numsub),
    ("pubsub|numpat", pubsub_numpat),
    ("pubsub|shardchannels", pubsub_shardchannels),
    ("pubsub|shardnumsub", pubsub_shardnumsub),
    ("pubsub|help", pubsub_help),
];

/// The count a (un)subscribe reply carries: channels plus patterns, or
/// shard channels for the S forms.
fn reply_count(ctx: &Ctx, kind: Kind) -> usize {
    let (channels, patterns, shard) = ctx.session.pubsub_counts;
    match kind {
        Kind::Shard => shard,
        _ => channels + patterns,
    }
}

/// One `[subscribe, name, count]`-style reply (a push in RESP3).
fn confirm(ctx: &mut Ctx, word: &str, name: Option<&[u8]>, kind: Kind) {
    let count = reply_count(ctx, kind);
    ctx.push_out(|out| {
        out.push(3);
        out.bulk(word.as_bytes());
        match name {
            Some(name) => out.bulk(name),
            None => out.null(),
        }
        out.int(count as i64);
    });
}

fn sync_counts(ctx: &mut Ctx) {
    ctx.session.pubsub_counts = ctx.server.pubsub.counts(ctx.session.id);
}

fn subscribe_generic(ctx: &mut Ctx, args: Args, kind: Kind) -> CmdResult {
    let who = Subscriber {
        client: ctx.session.id,
        token: ctx.session.token,
    };
    for name in args.iter().skip(1) {
        ctx.server.pubsub.subscribe(who, kind, name);
        sync_counts(ctx);
        confirm(ctx, kind.words().0, Some(name), kind);
    }
    Ok(())
}

/// Unsubscribes from the named channels, or from all of `kind` without
/// names (then a lone `[unsubscribe, nil, count]` if there were none).
fn unsubscribe_generic(ctx: &mut Ctx, args: Args, kind: Kind) -> CmdResult {
    let client = ctx.session.id;
    let names: Vec<Vec<u8>> = if args.len() > 1 {
        args.iter().skip(1).map(<[u8]>::to_vec).collect()
    } else {
        ctx.server.pubsub.subscriptions(client, kind)
    };
    if names.is_empty() {
        confirm(ctx, kind.words().1, None, kind);
    }
    for name in names {
        ctx.server.pubsub.unsubscribe(client, kind, &name);
        sync_counts(ctx);
        confirm(ctx, kind.words().1, Some(&name), kind);
    }
    Ok(())
}

fn subscribe(ctx: &mut Ctx, args: Args) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Channel)
}

fn unsubscribe(ctx: &mut Ctx, args: Args) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Channel)
}

fn psubscribe(ctx: &mut Ctx, args: Args) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Pattern)
}

fn punsubscribe(ctx: &mut Ctx, args: Args) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Pattern)
}

fn ssubscribe(ctx: &mut Ctx, args: Args) -> CmdResult {
    subscribe_generic(ctx, args, Kind::Shard)
}

fn sunsubscribe(ctx: &mut Ctx, args: Args) -> CmdResult {
    unsubscribe_generic(ctx, args, Kind::Shard)
}

fn publish_generic(ctx: &mut Ctx, args: Args, shard: bool) -> CmdResult {
    let receivers = ctx.server.pubsub.publish(&args[1], &args[2], shard);
    match ctx.server.cluster.as_mut() {
        // The other nodes hear it over the bus (SPUBLISH: the shard's).
        Some(cluster) => cluster.propagate_publish(&args[1], &args[2], shard),
        // A replica's subscribers hear it too (Redis propagates PUBLISH
        // to replicas, not to the AOF).
        None => ctx.server.propagate.force_to_replicas(),
    }
    deliver_to_self(ctx);
    ctx.out().int(receivers as i64);
    Ok(())
}

/// Writes the queued messages addressed to the running client into its
/// own reply now; the rest wait for the loop.
pub fn deliver_to_self(ctx: &mut Ctx) {
    let me = ctx.session.id;
    let outbox = ctx.server.pubsub.take_outbox();
    let (mine, others): (Vec<_>, Vec<_>) = outbox.into_iter().partition(|d| d.to.client == me);
    for delivery in mine {
        ctx.push_out(|out| delivery.encode(out));
    }
    ctx.server.pubsub.requeue(others);
}

fn publish(ctx: &mut Ctx, args: Args) -> CmdResult {
    publish_generic(ctx, args, false)
}

fn spublish(ctx: &mut Ctx, args: Args) -> CmdResult {
    publish_generic(ctx, args, true)
}

fn channels_generic(ctx: &mut Ctx, args: Args, shard: bool) -> CmdResult {
    if args.len() > 3 {
        // Redis's PUBSUB container words it this way (7.0).
        return Err(CmdError::subcommand_syntax(&args, "PUBSUB"));
    }
    let pattern = (args.len() == 3).then(|| args.get(2));
    let names = ctx.server.pubsub.channel_names(shard, pattern);
    let out = ctx.out();
    out.array(names.len());
    for name in names {
        out.bulk(&name);
    }
    Ok(())
}

fn numsub_generic(ctx: &mut Ctx, args: Args, shard: bool) -> CmdResult {
    let counts: Vec<(&[u8], usize)> = args
        .iter()
        .skip(2)
        .map(|c| (c, ctx.server.pubsub.subscriber_count(shard, c)))
        .collect();
    let out = ctx.out();
    out.array(counts.len() * 2);
    for (channel, n) in counts {
        out.bulk(channel);
        out.int(n as i64);
    }
    Ok(())
}

fn pubsub_channels(ctx: &mut Ctx, args: Args) -> CmdResult {
    channels_generic(ctx, args, false)
}

fn pubsub_shardchannels(ctx: &mut Ctx, args: Args) -> CmdResult {
    channels_generic(ctx, args, true)
}

fn pubsub_numsub(ctx: &mut Ctx, args: Args) -> CmdResult {
    numsub_generic(ctx, args, false)
}

fn pubsub_shardnumsub(ctx: &mut Ctx, args: Args) -> CmdResult {
    numsub_generic(ctx, args, true)
}

fn pubsub_numpat(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let patterns = ctx.server.pubsub.totals().1;
    ctx.out().int(patterns as i64);
    Ok(())
}

/// Whether `name` may run in RESP2 subscribed mode.
pub fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

fn pubsub_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
    Ok(())
}
