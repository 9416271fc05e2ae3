//! Replication commands: REPLICAOF / SLAVEOF, ROLE, REPLCONF (the
//! replica's side; see `replication`).

use super::{cmd, CmdError, CmdResult, Command, Ctx};
use crate::protocol::Args;
use crate::replication::Link;

pub static COMMANDS: &[Command] = &[
    cmd!(
        "replicaof",
        3,
        ["admin", "noscript", "stale", "no_multi"],
        (0, 0, 0),
        replicaof,
        "server",
        "Configures a server as replica of another, or promotes it to a master."
    ),
    cmd!(
        "slaveof",
        3,
        ["admin", "noscript", "stale", "no_multi"],
        (0, 0, 0),
        replicaof,
        "server",
        "Sets a Redis server as a replica of another, or promotes it to being a master."
    ),
    cmd!(
        "role",
        1,
        ["noscript", "loading", "stale", "fast"],
        (0, 0, 0),
        role,
        "server",
        "Returns the replication role."
    ),
    cmd!(
        "replconf",
        -1,
        ["admin", "noscript", "loading", "stale", "allow_busy"],
        (0, 0, 0),
        replconf,
        "server",
        "An internal command for configuring the replication stream."
    ),
];

/// REPLICAOF host port | NO ONE, with Redis's replies. The loop notices
/// the change (`Replication::epoch`) and drops or makes the link.
fn replicaof(ctx: &mut Ctx, args: Args) -> CmdResult {
    let repl = &mut ctx.server.repl;
    if super::is(&args[1], "NO") && super::is(&args[2], "ONE") {
        if repl.master.take().is_some() {
            tracing::info!(
                "MASTER MODE enabled (user request from '{}')",
                ctx.session.addr
            );
            repl.epoch += 1;
            repl.link_down();
            repl.resumable = false;
            // A promoted replica serves its own history from here.
            repl.replid = crate::replication::random_replid();
            ctx.server.apply_config();
        }
        ctx.out().ok();
        return Ok(());
    }
    let port = super::int_arg(&args[2])?;
    let port = u16::try_from(port).map_err(|_| CmdError::Static("ERR Invalid master port"))?;
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    if repl.master.as_ref() == Some(&(host.clone(), port)) {
        ctx.out().simple("OK Already connected to specified master");
        return Ok(());
    }
    tracing::info!(
        "REPLICAOF {host}:{port} enabled (user request from '{}')",
        ctx.session.addr
    );
    repl.master = Some((host, port));
    repl.epoch += 1;
    repl.link_down();
    // Another primary's stream does not continue this data.
    repl.resumable = false;
    ctx.server.apply_config();
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
        // An ACK needs no answer.
        return Ok(());
    }
    ctx.out().ok();
    Ok(())
}
