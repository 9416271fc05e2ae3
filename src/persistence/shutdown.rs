//! The save before the server stops (SHUTDOWN, SIGTERM): the AOF's last
//! write and sync, then the RDB file if one is wanted.

use super::aof;
use super::jobs::{Job, SaveError};
use super::save::{abandon, save};
use crate::state::ServerState;

/// The save before the server stops (SHUTDOWN, SIGTERM): `explicit` is
/// SHUTDOWN's SAVE (`Some(true)`) or NOSAVE (`Some(false)`); without one,
/// the server saves if save points are set. A background save in
/// progress is abandoned first, as Redis kills its child; the AOF is
/// written and synced (`aof::before_shutdown`, which `force` overrides).
pub fn save_for_shutdown(
    state: &mut ServerState,
    explicit: Option<bool>,
    force: bool,
    now_ms: i64,
) -> Result<(), SaveError> {
    aof::before_shutdown(state, force).map_err(SaveError::Io)?;
    abandon(state, Job::Rdb);
    let wanted = explicit.unwrap_or(!state.config.save_points.is_empty());
    if !wanted {
        return Ok(());
    }
    tracing::info!("Saving the final RDB snapshot before exiting.");
    save(state, now_ms)
}
