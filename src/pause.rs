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

#[derive(Debug, Default)]
pub struct ClientPause {
    kind: PauseKind,
    /// Unix ms when it ends by itself.
    end_ms: i64,
    /// The connections (tokens) whose next request waits for the pause to
    /// end, in the order they were held: counted in INFO
    /// `blocked_clients`, as Redis counts its postponed clients.
    held: Vec<usize>,
}

impl ClientPause {
    /// CLIENT PAUSE: a pause already on keeps the later end and the more
    /// restrictive kind (Redis's `pauseClients`).
    pub fn pause(&mut self, kind: PauseKind, end_ms: i64) {
        if self.kind == PauseKind::Off {
            self.end_ms = end_ms;
        }
        self.kind = self.kind.max(kind);
        self.end_ms = self.end_ms.max(end_ms);
    }

    /// Ends the pause; the clients it held stay listed until the server
    /// takes them back ([`ClientPause::take_held`]).
    pub fn unpause(&mut self) {
        self.kind = PauseKind::Off;
        self.end_ms = 0;
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

    /// Ends the pause if its time has come; true while it is on.
    pub fn check(&mut self, now_ms: i64) -> bool {
        if self.kind != PauseKind::Off && self.end_ms < now_ms {
            self.unpause();
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
        let mut p = ClientPause::default();
        assert!(!p.check(0));
        p.pause(PauseKind::All, 1000);
        p.pause(PauseKind::Write, 500);
        assert_eq!((p.kind, p.end_ms), (PauseKind::All, 1000));
        p.pause(PauseKind::Write, 2000);
        assert_eq!((p.kind, p.end_ms), (PauseKind::All, 2000));
        assert!(p.check(2000));
        assert!(!p.check(2001));
        p.pause(PauseKind::Write, 100);
        assert_eq!((p.kind, p.end_ms), (PauseKind::Write, 100));
    }

    #[test]
    fn write_pause_holds_what_may_replicate() {
        let lookup = |n: &str| crate::command_table::lookup(n.as_bytes()).unwrap().flags;
        let mut p = ClientPause::default();
        p.pause(PauseKind::Write, i64::MAX);
        for held in [
            "set", "del", "eval", "evalsha", "fcall", "publish", "pfcount",
        ] {
            assert!(p.holds(may_replicate(lookup(held))), "{held}");
        }
        for free in ["get", "eval_ro", "fcall_ro", "ping", "client", "multi"] {
            assert!(!p.holds(may_replicate(lookup(free))), "{free}");
        }
        p.pause(PauseKind::All, 0);
        assert!(p.holds(false));
        p.hold(3);
        p.hold(1);
        p.hold(3);
        p.unpause();
        assert_eq!(p.held_count(), 2);
        p.forget(3);
        assert_eq!(p.take_held(), [1]);
    }
}
