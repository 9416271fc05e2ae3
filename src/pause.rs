//! CLIENT PAUSE: which commands wait, until when. Owns the pause's kind
//! and end; the server holds the waiting clients' requests unread (a
//! client whose command must wait stops there, its request kept whole)
//! and reads them again when the pause ends. While a pause is on the
//! dataset stays as it is: no key expires (reads find an expired key
//! missing and leave it, as a replica does) and nothing is evicted, as in
//! Redis 7.0, so a failover can compare offsets that do not move.

use crate::commands::{Command, Flags};

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

    pub fn unpause(&mut self) {
        *self = ClientPause::default();
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

    /// Whether `cmd` must wait: `queued` are the commands an EXEC would
    /// run. The caller exempts replicas (never paused) and the primary's
    /// link.
    pub fn holds(&self, cmd: &Command, queued: Option<&[&'static Command]>) -> bool {
        let writes = |c: &Command| c.flags.has(Flags::WRITE) || c.flags.has(Flags::MAY_REPLICATE);
        match self.kind {
            PauseKind::Off => false,
            PauseKind::All => true,
            PauseKind::Write => writes(cmd) || queued.is_some_and(|q| q.iter().any(|c| writes(c))),
        }
    }
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
    fn write_pause_holds_writes_scripts_publish_and_exec_of_writes() {
        let lookup = |n: &str| crate::commands::lookup(n.as_bytes()).unwrap();
        let mut p = ClientPause::default();
        p.pause(PauseKind::Write, i64::MAX);
        for held in ["set", "del", "eval", "evalsha", "fcall", "publish"] {
            assert!(p.holds(lookup(held), None), "{held}");
        }
        for free in ["get", "eval_ro", "fcall_ro", "ping", "client", "multi"] {
            assert!(!p.holds(lookup(free), None), "{free}");
        }
        let exec = lookup("exec");
        assert!(!p.holds(exec, Some(&[lookup("get")])));
        assert!(p.holds(exec, Some(&[lookup("get"), lookup("incr")])));
        p.pause(PauseKind::All, 0);
        assert!(p.holds(lookup("ping"), None));
    }
}
