//! The refusals a command may meet before it runs, shared by the
//! dispatcher and by the commands a script or EXEC runs: Redis's error
//! texts, the disk and replica states that cause them, and the ACL log
//! entry of a refusal.

use super::{CmdError, Ctx};
use crate::command_table::Command;
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
