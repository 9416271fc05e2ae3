//! The open-files limit and `maxclients`, fitted to each other as Redis's
//! `adjustOpenFilesLimit` does: the soft limit is raised to `maxclients`
//! plus `RESERVED_FDS` (up to the hard limit, which needs no privilege);
//! where even the hard limit is short, `maxclients` is lowered to fit, so
//! that the listener is never left unable to accept (a client past
//! `maxclients` is told `-ERR max number of clients reached` instead).

use tracing::{info, warn};

/// Descriptors kept for the server itself (listeners, the poll, logs,
/// threads): Redis's `CONFIG_MIN_RESERVED_FDS`.
pub const RESERVED_FDS: usize = 32;

/// The soft and hard `RLIMIT_NOFILE`; `None` where it cannot be read.
fn limits() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    ok.then_some((limit.rlim_cur, limit.rlim_max))
}

fn set_soft_limit(soft: u64, hard: u64) -> std::io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct it is given, nothing else.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Raises the open-files limit for `maxclients` clients as far as the hard
/// limit allows; returns the `maxclients` that fits (lower when it could
/// not be raised enough), logging as Redis does.
pub fn fit_maxclients(maxclients: usize) -> usize {
    let Some((soft, hard)) = limits() else {
        return maxclients;
    };
    let wanted = maxclients.saturating_add(RESERVED_FDS) as u64;
    if soft >= wanted {
        return maxclients;
    }
    let best = wanted.min(hard);
    match set_soft_limit(best, hard) {
        Ok(()) if best == wanted => {
            info!("Increased maximum number of open files to {wanted} (it was originally set to {soft}).");
            return maxclients;
        }
        Ok(()) => {}
        Err(e) => {
            warn!("Server can't set maximum open files to {wanted} because of OS error: {e}.")
        }
    }
    let current = limits().map_or(soft, |(s, _)| s);
    let fitted = (current as usize).saturating_sub(RESERVED_FDS).max(1);
    warn!("You requested maxclients of {maxclients} requiring at least {wanted} max file descriptors.");
    warn!(
        "Current maximum open files is {current}. maxclients has been reduced to {fitted} to \
         compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
    );
    fitted
}
