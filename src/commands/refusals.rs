//! The refusals a command may meet before it runs, shared by the
//! dispatcher and by the commands a script or EXEC runs: Redis's error
//! texts, the disk and replica states that cause them, and the ACL log
//! entry of a refusal.

use super::{CmdError, Ctx};
use crate::command_table::{Command, Flags};
use crate::protocol::Args;
use crate::state::ServerState;

/// An ACL refusal to the ACL log.
pub fn log_denial(
    ctx: &mut Ctx,
    denied: &crate::acl::Denied,
    cmd: &Command,
    parent: Option<&Command>,
    context: &'static str,
) {
    let (reason, object) = denied.log_reason(cmd, parent);
    let tracker = ctx.server.tracking.tracker(ctx.session.id);
    let info = ctx.session.info_line(ctx.now_ms, tracker, None);
    let user = ctx.session.user_name().to_string();
    let max = ctx.server.config.acllog_max_len;
    ctx.server
        .acl
        .log(reason, context, object, user, info, ctx.now_ms, max);
}

/// Redis's `shared.oomerr`.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// MISCONF, while the last background save failed or the AOF cannot be
/// written (see `disk_error_check`).
#[inline]
pub fn disk_refusal(server: &ServerState) -> Option<CmdError> {
    if crate::persistence::save::writes_refused(server) {
        Some(CmdError::Static(MISCONF_RDB))
    } else {
        let e = server.aof.disk_error()?;
        Some(CmdError::owned(format!(
            "MISCONF Errors writing to the AOF file: {e}"
        )))
    }
}

/// A primary with `min-replicas-to-write` and fewer good replicas.
pub fn too_few_replicas(server: &ServerState) -> bool {
    let wanted = server.config.min_replicas_to_write;
    let lag = server.config.min_replicas_max_lag;
    !server.repl.is_replica() && wanted > 0 && lag > 0 && server.repl.good_replicas < wanted
}

pub const READONLY_REPLICA: &str = "READONLY You can't write against a read only replica.";
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Redis's `shared.bgsaveerr`.
pub const MISCONF_RDB: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// The keys a request names, for the cluster's routing: by position
/// when the command's keys are a range (no allocation), else by its key
/// specs.
pub fn request_keys<'a>(
    cmd: &'static Command,
    parent: Option<&'static Command>,
    args: Args<'a>,
) -> Vec<&'a [u8]> {
    match crate::command_table::key_layout(cmd) {
        crate::command_table::KeyLayout::None => Vec::new(),
        layout @ crate::command_table::KeyLayout::Range { .. } => layout.range_keys(args).collect(),
        crate::command_table::KeyLayout::Specs => {
            crate::command_table::keys_with_flags(cmd, parent, &args)
                .unwrap_or_default()
                .into_iter()
                .map(|k| k.key)
                .collect()
        }
    }
}

/// Why this cluster node does not serve a request (Redis's
/// `CLUSTER_REDIR_*`).
pub enum ClusterRefusal {
    CrossSlot,
    TryAgain,
    Down,
    DownReadOnly,
    Unbound,
    Moved(u16, crate::cluster::NodeId),
    Ask(u16, crate::cluster::NodeId),
}

impl ClusterRefusal {
    /// The error a client (over TLS or not: see `Cluster::client_port`)
    /// gets, Redis's words.
    pub fn error(&self, server: &ServerState, tls_client: bool) -> CmdError {
        match self {
            Self::CrossSlot => {
                CmdError::Static("CROSSSLOT Keys in request don't hash to the same slot")
            }
            Self::TryAgain => {
                CmdError::Static("TRYAGAIN Multiple keys request during rehashing of slot")
            }
            Self::Down => CmdError::Static("CLUSTERDOWN The cluster is down"),
            Self::DownReadOnly => {
                CmdError::Static("CLUSTERDOWN The cluster is down and only accepts read commands")
            }
            Self::Unbound => CmdError::Static("CLUSTERDOWN Hash slot not served"),
            Self::Moved(slot, to) | Self::Ask(slot, to) => {
                let kind = if matches!(self, Self::Moved(..)) {
                    "MOVED"
                } else {
                    "ASK"
                };
                let endpoint = server.config.cluster.preferred_endpoint;
                let Some(cluster) = server.cluster.as_ref() else {
                    return CmdError::Static("CLUSTERDOWN The cluster is down");
                };
                let node = cluster.node(*to);
                CmdError::owned(format!(
                    "{kind} {slot} {}:{}",
                    super::cluster::preferred_endpoint(endpoint, node),
                    cluster.client_port(node, tls_client)
                ))
            }
        }
    }

    /// The error a script's command gets (Redis's `scriptVerifyClusterState`).
    pub fn script_message(&self) -> &'static str {
        match self {
            Self::DownReadOnly => {
                "ERR Script attempted to execute a write command while the cluster is down and readonly"
            }
            Self::Down => "ERR Script attempted to execute a command while the cluster is down",
            _ => "ERR Script attempted to access a non local key in a cluster node",
        }
    }
}

/// Why a client blocked by `cmd` on `key` should stop waiting on this
/// node (Redis's `clusterRedirectBlockedClientIfNeeded`): the cluster is
/// down (a write that would wake it may never come), or the key's slot is
/// served elsewhere and not being imported here. A READONLY client's read
/// may wait on its master's keys on a replica.
pub fn blocked_refusal(
    server: &ServerState,
    cmd: &Command,
    key: &[u8],
    readonly: bool,
) -> Option<ClusterRefusal> {
    let cluster = server.cluster.as_ref()?;
    if !cluster.state_ok {
        return Some(ClusterRefusal::Down);
    }
    let slot = crate::cluster::slot::key_slot(key);
    let me = cluster.myself;
    let owner = cluster.slot_owner(usize::from(slot));
    let served_here = owner == Some(me)
        || (readonly
            && !cmd.flags.has(Flags::WRITE)
            && cluster.me().is_replica()
            && owner.is_some()
            && cluster.me().slaveof == owner);
    if served_here || cluster.importing_from(slot).is_some() {
        return None;
    }
    Some(match owner {
        Some(node) => ClusterRefusal::Moved(slot, node),
        None => ClusterRefusal::Unbound,
    })
}

/// The node that serves `keys` (Redis's `getNodeByQuery`): Ok with
/// their slot (None: no key) when it is this one. `cmd` is the command the client sent (EXEC for a transaction),
/// `flags` its request flags; `asking` and `readonly` the client's state.
pub fn cluster_route<'k>(
    server: &ServerState,
    cmd: &Command,
    keys: impl Iterator<Item = &'k [u8]>,
    flags: impl Fn() -> Flags,
    asking: bool,
    readonly: bool,
    now_ms: i64,
) -> Result<Option<u16>, ClusterRefusal> {
    use crate::cluster::slot::key_slot;
    let Some(cluster) = server.cluster.as_ref() else {
        return Ok(None);
    };
    let shard_pubsub = ["ssubscribe", "sunsubscribe", "spublish"].contains(&cmd.name);
    let db = &server.dbs[0];
    let mut first: Option<(&[u8], u16, crate::cluster::NodeId)> = None;
    let (mut migrating, mut importing, mut multiple) = (false, false, false);
    let (mut missing, mut existing) = (0, 0);
    for key in keys {
        let slot = key_slot(key);
        match first {
            None => {
                let owner = cluster
                    .slot_owner(usize::from(slot))
                    .ok_or(ClusterRefusal::Unbound)?;
                if owner == cluster.myself && cluster.migrating_to(slot).is_some() {
                    migrating = true;
                } else if cluster.importing_from(slot).is_some() {
                    importing = true;
                }
                first = Some((key, slot, owner));
            }
            Some((first_key, first_slot, _)) if first_key != key => {
                if slot != first_slot {
                    return Err(ClusterRefusal::CrossSlot);
                }
                multiple = true;
            }
            Some(_) => {}
        }
        if (migrating || importing) && !shard_pubsub {
            if db.exists_raw(key) && !db.is_logically_expired(key, now_ms) {
                existing += 1;
            } else {
                missing += 1;
            }
        }
    }
    let Some((_, slot, owner)) = first else {
        return Ok(None);
    };
    // The request's flags matter only off the common path (asked lazily).
    let writes = || flags().has(Flags::WRITE);
    let config = &server.config.cluster;
    if !cluster.state_ok {
        if shard_pubsub {
            if !config.allow_pubsubshard_when_down {
                return Err(ClusterRefusal::Down);
            }
        } else if !config.allow_reads_when_down {
            return Err(ClusterRefusal::Down);
        } else if writes() {
            return Err(ClusterRefusal::DownReadOnly);
        }
    }
    if (migrating || importing) && cmd.name == "migrate" {
        return Ok(Some(slot));
    }
    if migrating && missing > 0 {
        if existing > 0 {
            return Err(ClusterRefusal::TryAgain);
        }
        if let Some(target) = cluster.migrating_to(slot) {
            return Err(ClusterRefusal::Ask(slot, target));
        }
    }
    if importing && (asking || cmd.flags.has(Flags::ASKING)) {
        if multiple && missing > 0 {
            return Err(ClusterRefusal::TryAgain);
        }
        return Ok(Some(slot));
    }
    let me = cluster.me();
    if (readonly || shard_pubsub) && me.is_replica() && me.slaveof == Some(owner) && !writes() {
        return Ok(Some(slot));
    }
    if owner != cluster.myself {
        return Err(ClusterRefusal::Moved(slot, owner));
    }
    Ok(Some(slot))
}
