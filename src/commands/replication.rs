//! Replication commands: REPLICAOF / SLAVEOF, ROLE, REPLCONF (the
//! replica's side; see `replication`).

use super::{CmdError, CmdResult, Ctx, Handler};
use crate::protocol::Args;
use crate::replication::Link;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("replicaof", replicaof),
    ("slaveof", replicaof),
    ("role", role),
    ("psync", psync),
    ("sync", psync),
    ("wait", wait),
    ("replconf", replconf),
];

/// REPLICAOF host port | NO ONE, with Redis's replies. The loop notices
/// the change (`Replication::epoch`) and drops or makes the link.
fn replicaof(ctx: &mut Ctx, args: Args) -> CmdResult {
    if ctx.server.cluster.is_some() {
        return Err(CmdError::Static(
            "ERR REPLICAOF not allowed in cluster mode.",
        ));
    }
    let promote = super::is(&args[1], "NO") && super::is(&args[2], "ONE");
    let target = if promote {
        if ctx.server.repl.master.is_none() {
            ctx.out().ok();
            return Ok(());
        }
        tracing::info!(
            "MASTER MODE enabled (user request from '{}')",
            ctx.session.addr
        );
        None
    } else {
        let port = super::int_arg(&args[2])?;
        let port = u16::try_from(port).map_err(|_| CmdError::Static("ERR Invalid master port"))?;
        let host = String::from_utf8_lossy(&args[1]).into_owned();
        if ctx.server.repl.master.as_ref() == Some(&(host.clone(), port)) {
            ctx.out().simple("OK Already connected to specified master");
            return Ok(());
        }
        tracing::info!(
            "REPLICAOF {host}:{port} enabled (user request from '{}')",
            ctx.session.addr
        );
        Some((host, port))
    };
    ctx.server.set_primary(target);
    ctx.out().ok();
    Ok(())
}

/// ROLE: `master` with its offset and (no) replicas, or `slave` with the
/// primary, the link's state and the offset applied.
fn role(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let repl = &ctx.server.repl;
    match repl.master.clone() {
        None => {
            let offset = repl.offset;
            let out = ctx.out();
            out.array(3);
            out.bulk(b"master");
            out.int(offset);
            out.array(0);
        }
        Some((host, port)) => {
            let (link, offset) = (repl.link, repl.offset);
            let out = ctx.out();
            out.array(5);
            out.bulk(b"slave");
            out.bulk(host.as_bytes());
            out.int(i64::from(port));
            out.bulk(link.name().as_bytes());
            out.int(if link == Link::Connected { offset } else { -1 });
        }
    }
    Ok(())
}

/// REPLCONF: from the primary, `GETACK` asks for `REPLCONF ACK <offset>`
/// (the only reply a primary gets); the options a replica announces to a
/// primary are accepted.
fn replconf(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    if args.len() >= 2 && super::is(&args[1], "GETACK") {
        if ctx.session.master {
            let ack = crate::replication::ack(ctx.server.repl.offset);
            ctx.session.reply.buf.extend_from_slice(&ack);
        }
        return Ok(());
    }
    if args.len() >= 2 && super::is(&args[1], "ACK") {
        // A replica's offset; it needs no answer.
        if let (Some(link), Ok(offset)) = (ctx.session.replica.as_mut(), super::int_arg(&args[2])) {
            link.ack_offset = link.ack_offset.max(offset);
            link.last_ack = std::time::Instant::now();
            // A diskless sync's replica has read its RDB: the stream
            // held since starts now.
            if link.state == crate::replication::ReplicaState::WaitAck {
                link.state = crate::replication::ReplicaState::Online;
                ctx.session.reply.buf.append(&mut link.held);
                tracing::info!(
                    "Synchronization with replica {} succeeded",
                    ctx.session.addr
                );
            }
        }
        return Ok(());
    }
    let mut i = 1;
    while i + 1 < args.len() {
        if super::is(&args[i], "listening-port") {
            let port = super::int_arg(&args[i + 1])?;
            ctx.session.replica_port = u16::try_from(port).unwrap_or(0);
        } else if super::is(&args[i], "capa") && super::is(&args[i + 1], "eof") {
            ctx.session.replica_eof_capable = true;
        }
        i += 2;
    }
    ctx.out().ok();
    Ok(())
}

/// PSYNC replid offset (and SYNC): a replica of this server asks for the
/// stream. It continues from this server's backlog when it can
/// (`+CONTINUE <replid>` and the bytes it missed); otherwise it waits for
/// a background save, whose start the loop answers with `+FULLRESYNC
/// <replid> <offset>` before the RDB (see `server`).
fn psync(ctx: &mut Ctx, args: Args) -> CmdResult {
    if ctx.server.repl.is_replica() {
        return Err(CmdError::Static(
            "ERR lapse does not serve replicas while it is a replica itself",
        ));
    }
    if ctx.session.replica.is_some() {
        // Redis ignores a second SYNC on a replica link.
        return Ok(());
    }
    ctx.server.start_replication_feed();
    let repl = &mut ctx.server.repl;
    if args.len() == 3 {
        let wanted = super::int_arg(&args[2]).ok();
        let same_history = args[1] == *repl.replid.as_bytes();
        let missed = match (same_history, wanted, repl.feed.as_ref()) {
            (true, Some(from), Some(feed)) => feed.backlog.since(from),
            _ => None,
        };
        if let Some(missed) = missed {
            repl.sync_partial_ok += 1;
            let replid = repl.replid.clone();
            ctx.out().simple(&format!("CONTINUE {replid}"));
            ctx.session.reply.buf.extend_from_slice(&missed);
            ctx.session.replica = Some(Box::new(crate::replication::ReplicaLink::new(
                crate::replication::ReplicaState::Online,
            )));
            tracing::info!(
                "Partial resynchronization request from {} accepted.",
                ctx.session.addr
            );
            return Ok(());
        }
        if args[1] != *b"?" {
            repl.sync_partial_err += 1;
        }
    }
    repl.sync_full += 1;
    tracing::info!("Full resync requested by replica {}", ctx.session.addr);
    let mut link =
        crate::replication::ReplicaLink::new(crate::replication::ReplicaState::WaitBgsave);
    link.pre_psync = args.len() == 1;
    ctx.session.replica = Some(Box::new(link));
    Ok(())
}

/// WAIT numreplicas timeout: how many replicas acknowledged every write
/// made so far — at once if enough did (or inside a transaction), else
/// when enough do or `timeout` ms pass (0: no limit). The loop asks the
/// replicas for their offsets and answers (`server`).
fn wait(ctx: &mut Ctx, args: Args) -> CmdResult {
    if ctx.server.repl.is_replica() {
        return Err(CmdError::Static(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        ));
    }
    let wanted = super::int_arg(&args[1])?;
    let timeout = super::int_arg(&args[2])?;
    if timeout < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    let target = crate::replication::written_offset(&ctx.server.repl);
    let mut acked = 0usize;
    ctx.peers.for_each_session(&mut |s| {
        if s.replica.as_ref().is_some_and(|r| r.ack_offset >= target) {
            acked += 1;
        }
    });
    if acked as i64 >= wanted || ctx.session.deny_blocking {
        ctx.out().int(acked as i64);
        return Ok(());
    }
    let deadline_ms = (timeout > 0).then(|| ctx.now_ms.saturating_add(timeout));
    ctx.server.repl.waits.push(crate::replication::Wait {
        client: ctx.session.id,
        token: ctx.session.token,
        target,
        replicas: usize::try_from(wanted).unwrap_or(0),
        deadline_ms,
    });
    crate::replication::request_acks(&mut ctx.server.repl);
    // Its next requests wait for the answer.
    ctx.session.paused_until_ms = i64::MAX;
    Ok(())
}
