//! `client-output-buffer-limit`: when a client's unsent output cuts it
//! off (its class's hard limit, its soft limit held too long, or what a
//! client that must still authenticate may have), checked after every
//! request and every delivery.

use tracing::warn;

use crate::config::Config;
use crate::connection::{ClientType, Session};
use crate::state::Stats;

/// Cuts off a client whose unsent output passed its class's limit
/// (`client-output-buffer-limit`, normal or pubsub): the output is dropped
/// and the client closed once that is done.
#[inline]
pub(super) fn enforce_output_limit(
    config: &Config,
    stats: &mut Stats,
    session: &mut Session,
    now_ms: i64,
) {
    // Below every limit that could apply, no soft limit's clock running
    // (the case after nearly every request): nothing to look at.
    let below_all = (session.reply.pending() as u64)
        <= UNAUTHENTICATED_MAX_OUTPUT_BYTES
            .min(config.output_limit_normal.smallest_bytes())
            .min(config.output_limit_pubsub.smallest_bytes());
    if !below_all || session.output_soft_since_ms.is_some() {
        cut_off_past_output_limit(config, stats, session, now_ms);
    }
}

#[inline(never)]
fn cut_off_past_output_limit(
    config: &Config,
    stats: &mut Stats,
    session: &mut Session,
    now_ms: i64,
) {
    if session.close_after_reply || !output_limit_reached(config, session, now_ms) {
        return;
    }
    warn!(
        "closing client {}: output buffer limit reached",
        session.addr
    );
    stats.client_output_buffer_limit_disconnections += 1;
    session.reply.buf.truncate(session.reply.sent);
    session.close_after_reply = true;
}

/// Unsent output past which a client that must still authenticate is
/// cut off: Redis's 16 KB reply buffer (any reply overflowing it into the
/// reply list closes such a client there), so that NOAUTH errors to a
/// client that never reads cannot fill memory.
const UNAUTHENTICATED_MAX_OUTPUT_BYTES: u64 = 16 * 1024;

/// Whether the session's unsent output passed the hard limit, or has been
/// over the soft limit for too long, or passed what a client that must
/// still authenticate may have.
fn output_limit_reached(config: &Config, session: &mut Session, now_ms: i64) -> bool {
    let limit = match session.client_type() {
        ClientType::PubSub => config.output_limit_pubsub,
        _ => config.output_limit_normal,
    };
    let pending = session.reply.pending() as u64;
    if !session.authenticated && pending > UNAUTHENTICATED_MAX_OUTPUT_BYTES {
        return true;
    }
    if limit.hard_bytes > 0 && pending > limit.hard_bytes {
        return true;
    }
    if limit.soft_bytes == 0 || pending <= limit.soft_bytes {
        session.output_soft_since_ms = None;
        return false;
    }
    let since = *session.output_soft_since_ms.get_or_insert(now_ms);
    now_ms.saturating_sub(since) as u64 >= limit.soft_seconds.saturating_mul(1000)
}
