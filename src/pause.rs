//! CLIENT PAUSE: which commands wait, until when. Owns the pause's kind
//! and end; the server holds the waiting clients' requests unread (a
//! client whose command must wait stops there, its request kept whole)
//! and reads them again when the pause ends. While a pause is on the
//! dataset stays as it is: no key expires (reads find an expired key
//! missing and leave it, as a replica does) and nothing is evicted, as in
//! Redis 7.0, so a failover can compare offsets that do not move.

use crate::command_table::Flags;

/// What is paused, the more restrictive last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseKind {
    #[default]
    Off,
    /// Commands that write or may propagate (Redis's `write` and
    /// `may_replicate`), and EXEC of a transaction holding one.
    Write,
    /// Every command.
    All,
}

/// Who asked for a pause (Redis's `pause_purpose`): each purpose's pause
/// starts and ends on its own; clients wait for the most restrictive one
/// on, until the latest end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PausePurpose {
    /// CLIENT PAUSE / UNPAUSE.
    ClientCommand,
    /// A cluster master's writes stopped for its replica's manual
    /// failover.
    Failover,
}

const PURPOSES: usize = 2;

#[derive(Debug, Default)]
pub struct ClientPause {
    /// Each purpose's pause, if on: its kind and end (unix ms).
    by_purpose: [Option<(PauseKind, i64)>; PURPOSES],
    /// What the purposes' pauses add up to.
    kind: PauseKind,
    /// Unix ms when it ends by itself.
    end_ms: i64,
    /// The pause became less restrictive (a purpose's ended, the others
    /// go on): the held clients are to be tried again.
    relaxed: bool,
    /// The connections (tokens) whose next request waits for the pause to
    /// end, in the order they were held: counted in INFO
    /// `blocked_clients`, as Redis counts its postponed clients.
    held: Vec<usize>,
}

impl ClientPause {
    /// A pause for `purpose`: one already on for it keeps the later end
    /// and the more restrictive kind (Redis's `pauseClients`).
    pub fn pause(&mut self, purpose: PausePurpose, kind: PauseKind, end_ms: i64) {
        let slot = &mut self.by_purpose[purpose as usize];
        *slot = Some(match *slot {
            Some((k, end)) => (k.max(kind), end.max(end_ms)),
            None => (kind, end_ms),
        });
        self.sum_up(None);
    }

    /// Ends `purpose`'s pause (the others go on); the clients it held
    /// stay listed until the server takes them back
    /// ([`ClientPause::take_held`]).
    pub fn unpause(&mut self, purpose: PausePurpose) {
        self.by_purpose[purpose as usize] = None;
        self.sum_up(None);
    }

    /// The pause the purposes add up to, those over at `now_ms` dropped
    /// (Redis's `updateClientPauseTypeAndEndTime`).
    fn sum_up(&mut self, now_ms: Option<i64>) {
        let (mut kind, mut end_ms) = (PauseKind::Off, 0);
        for slot in &mut self.by_purpose {
            if let (Some((_, end)), Some(now)) = (*slot, now_ms) {
                if end < now {
                    *slot = None;
                }
            }
            if let Some((k, end)) = *slot {
                kind = kind.max(k);
                end_ms = end_ms.max(end);
            }
        }
        self.relaxed |= kind < self.kind;
        (self.kind, self.end_ms) = (kind, end_ms);
    }

    /// Whether the pause became less restrictive since last asked.
    pub fn take_relaxed(&mut self) -> bool {
        std::mem::take(&mut self.relaxed)
    }

    /// Records that the client at `token` waits for the pause's end.
    pub fn hold(&mut self, token: usize) {
        if !self.held.contains(&token) {
            self.held.push(token);
        }
    }

    /// The held clients, in the order they were held, forgotten.
    pub fn take_held(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.held)
    }

    /// The client at `token` went away.
    pub fn forget(&mut self, token: usize) {
        self.held.retain(|&t| t != token);
    }

    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// Ends the pauses whose time has come; true while one is on.
    pub fn check(&mut self, now_ms: i64) -> bool {
        if self.kind != PauseKind::Off {
            self.sum_up(Some(now_ms));
        }
        self.is_on()
    }

    pub fn is_on(&self) -> bool {
        self.kind != PauseKind::Off
    }

    /// Whether a command must wait, given whether it may replicate
    /// (Redis's `is_may_replicate_command`: its flags, as a script's
    /// declared flags make them, `write` or `may_replicate`; for EXEC,
    /// any queued command's). The caller exempts replicas (never paused)
    /// and the primary's link.
    pub fn holds(&self, may_replicate: bool) -> bool {
        match self.kind {
            PauseKind::Off => false,
            PauseKind::All => true,
            PauseKind::Write => may_replicate,
        }
    }
}

/// Redis's `is_may_replicate_command` for one command's flags.
pub fn may_replicate(flags: Flags) -> bool {
    flags.has(Flags::WRITE) || flags.has(Flags::MAY_REPLICATE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_pause_extends_and_escalates_never_shortens() {
        let client = PausePurpose::ClientCommand;
        let mut p = ClientPause::default();
        assert!(!p.check(0));
        p.pause(client, PauseKind::All, 1000);
        p.pause(client, PauseKind::Write, 500);
        assert_eq!((p.kind, p.end_ms), (PauseKind::All, 1000));
        p.pause(client, PauseKind::Write, 2000);
        assert_eq!((p.kind, p.end_ms), (PauseKind::All, 2000));
        assert!(p.check(2000));
        assert!(!p.check(2001));
        p.pause(client, PauseKind::Write, 100);
        assert_eq!((p.kind, p.end_ms), (PauseKind::Write, 100));
    }

    #[test]
    fn purposes_pause_and_end_apart() {
        let (client, failover) = (PausePurpose::ClientCommand, PausePurpose::Failover);
        let mut p = ClientPause::default();
        p.pause(failover, PauseKind::Write, 10_000);
        p.pause(client, PauseKind::All, 1000);
        assert_eq!((p.kind, p.end_ms), (PauseKind::All, 10_000));
        // CLIENT UNPAUSE leaves the failover's pause on.
        p.unpause(client);
        assert_eq!((p.kind, p.end_ms), (PauseKind::Write, 10_000));
        p.pause(client, PauseKind::All, 1000);
        // The client's pause runs out; the failover's goes on.
        assert!(p.check(1001));
        assert_eq!((p.kind, p.end_ms), (PauseKind::Write, 10_000));
        p.unpause(failover);
        assert!(!p.is_on());
    }

    #[test]
    fn write_pause_holds_what_may_replicate() {
        let lookup = |n: &str| crate::command_table::lookup(n.as_bytes()).unwrap().flags;
        let mut p = ClientPause::default();
        p.pause(PausePurpose::ClientCommand, PauseKind::Write, i64::MAX);
        for held in [
            "set", "del", "eval", "evalsha", "fcall", "publish", "pfcount",
        ] {
            assert!(p.holds(may_replicate(lookup(held))), "{held}");
        }
        for free in ["get", "eval_ro", "fcall_ro", "ping", "client", "multi"] {
            assert!(!p.holds(may_replicate(lookup(free))), "{free}");
        }
        p.pause(PausePurpose::Failover, PauseKind::All, 0);
        assert!(p.holds(false));
        p.hold(3);
        p.hold(1);
        p.hold(3);
        p.unpause(PausePurpose::Failover);
        assert_eq!(p.held_count(), 2);
        p.forget(3);
        assert_eq!(p.take_held(), [1]);
    }
}
