//! The propagation point (Redis's `call()` + `alsoPropagate`): after a
//! command runs, the commands that reproduce its effect deterministically
//! go to every consumer of the effect stream (a recorder now; the AOF
//! writer and the replication stream later).
//!
//! Owns the consumers and the current command's pending effects. It never
//! looks at the keyspace: the dispatcher tells it what a command did, and
//! `Db`'s key-change log tells it which keys expired.
//!
//! The stream's rules, as Redis 7.0 writes it:
//! - a command that changed nothing propagates nothing;
//! - TTLs are absolute (`SET k v PXAT ms`, `PEXPIREAT k ms`), randomness is
//!   concrete (SPOP becomes SREM), floats are results (INCRBYFLOAT becomes
//!   `SET k v KEEPTTL`): handlers say so with a rewrite;
//! - several effects of one command or transaction are wrapped in
//!   `MULTI` ... `EXEC`;
//! - an expired key is deleted with its own `DEL` (`UNLINK` with
//!   `lazyfree-lazy-expire`), before the command whose lookup found it and
//!   never wrapped together with it; inside EXEC it takes its place in the
//!   transaction's unit, because a transaction can itself put a key with a
//!   past deadline in place (SET PXAT, SWAPDB) and only its own order
//!   replays right;
//! - `SELECT n` goes before an effect in another database than the last
//!   one (each consumer tracks that, see `StreamEncoder`).

use crate::protocol::{encode_request, OwnedArgs};

/// One command that reproduces an effect, and the database it applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    pub db: usize,
    pub args: OwnedArgs,
    /// For replicas, not the AOF (PUBLISH: a replica's subscribers hear
    /// it; a reload must not replay it). Redis's `PROPAGATE_REPL`.
    pub replicas_only: bool,
}

impl Effect {
    fn new(db: usize, args: OwnedArgs) -> Effect {
        Effect {
            db,
            args,
            replicas_only: false,
        }
    }
}

/// A consumer of the effect stream. Each call is one unit to apply
/// atomically: a single command, or a transaction already wrapped in
/// MULTI/EXEC.
pub trait Sink {
    fn feed(&mut self, effects: &[Effect]);
}

/// What the command being executed asked to propagate instead of its own
/// arguments.
#[derive(Debug, Default)]
struct Pending {
    /// Replaces the command's own arguments (Redis's
    /// `rewriteClientCommandVector`); `Some(empty)`: propagate nothing.
    rewritten: Option<Vec<OwnedArgs>>,
    /// Propagate even though nothing was signalled (FLUSHALL on an empty
    /// server, as Redis's `forceCommandPropagation`).
    force: bool,
    /// ... to replicas only.
    replicas_only: bool,
}

impl Pending {
    /// Nothing asked for: the command's own arguments go if it changed
    /// anything.
    #[inline]
    fn is_clear(&self) -> bool {
        self.rewritten.is_none() && !self.force && !self.replicas_only
    }
}

/// Names an attached sink, to detach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkId(u64);

#[derive(Default)]
pub struct Propagator {
    sinks: Vec<(SinkId, Box<dyn Sink>)>,
    next_id: u64,
    /// Loading (an AOF replays through the dispatcher): nothing is
    /// propagated, as Redis's loading client propagates nothing.
    suspended: bool,
    pending: Pending,
    /// Effects of the transaction being executed (EXEC, a script), flushed
    /// as one unit when the outermost one ends.
    transaction: Vec<Effect>,
    /// How many transactions are open (a script inside EXEC nests); 0:
    /// effects go out as they come.
    depth: usize,
}

impl Propagator {
    /// Whether anything consumes the stream; when not, handlers skip
    /// building rewrites and the dispatcher skips copying arguments.
    pub fn active(&self) -> bool {
        !self.sinks.is_empty() && !self.suspended
    }

    /// Adds a consumer; it sees every unit from the next one on.
    pub fn attach(&mut self, sink: Box<dyn Sink>) -> SinkId {
        self.next_id += 1;
        let id = SinkId(self.next_id);
        self.sinks.push((id, sink));
        id
    }

    pub fn detach(&mut self, id: SinkId) {
        self.sinks.retain(|(sink, _)| *sink != id);
    }

    /// Stops (`true`) or resumes propagation for a load.
    pub fn suspend(&mut self, suspended: bool) {
        self.suspended = suspended;
    }

    /// Whether a transaction (EXEC, a script) is executing: its effects
    /// are held until it ends.
    pub fn in_transaction(&self) -> bool {
        self.depth > 0
    }

    /// Replaces what the running command propagates; several calls give
    /// several effects (wrapped in MULTI/EXEC).
    pub fn rewrite(&mut self, args: OwnedArgs) {
        self.pending
            .rewritten
            .get_or_insert_with(Vec::new)
            .push(args);
    }

    /// The running command propagates nothing, whatever it changed.
    pub fn suppress(&mut self) {
        self.pending.rewritten = Some(Vec::new());
    }

    pub fn force(&mut self) {
        self.pending.force = true;
    }

    /// The running command goes to replicas, not the AOF, whatever it
    /// changed (PUBLISH).
    pub fn force_to_replicas(&mut self) {
        self.pending.force = true;
        self.pending.replicas_only = true;
    }

    /// The server deleted a key in `db` (it expired, or was evicted): its
    /// own DEL (or UNLINK), at once.
    pub fn deleted_by_server(&mut self, db: usize, key: &[u8], lazy: bool) {
        let name: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
        self.by_server(db, || OwnedArgs::from_slices([name, key]));
    }

    /// An effect of the server's own (an expired hash field's HDEL), in
    /// the stream where it happened.
    pub fn by_server(&mut self, db: usize, args: impl FnOnce() -> OwnedArgs) {
        if !self.active() {
            return;
        }
        let effect = Effect::new(db, args());
        if self.depth > 0 {
            self.transaction.push(effect);
        } else {
            self.feed(&[effect]);
        }
    }

    /// The end of a command run from `db` with arguments `args` that made
    /// `changes` signalled changes: propagates what it did, or nothing.
    #[inline]
    pub fn command_done(&mut self, db: usize, args: impl FnOnce() -> OwnedArgs, changes: u64) {
        // Nearly every read, and every write with no AOF and no replica:
        // nothing asked for, nothing to send.
        if self.pending.is_clear() && (changes == 0 || !self.active()) {
            return;
        }
        self.propagate_command(db, args, changes);
    }

    #[inline(never)]
    fn propagate_command(&mut self, db: usize, args: impl FnOnce() -> OwnedArgs, changes: u64) {
        let pending = std::mem::take(&mut self.pending);
        if !self.active() || (changes == 0 && !pending.force) {
            return;
        }
        let effect = |args| Effect {
            db,
            args,
            replicas_only: pending.replicas_only,
        };
        let effects: Vec<Effect> = match pending.rewritten {
            Some(rewritten) => rewritten.into_iter().map(effect).collect(),
            None => vec![effect(args())],
        };
        if self.depth > 0 {
            self.transaction.extend(effects);
        } else {
            self.feed_unit(effects);
        }
    }

    /// Effects from here to `end_transaction` go out as one unit.
    pub fn begin_transaction(&mut self) {
        self.depth += 1;
    }

    pub fn end_transaction(&mut self) {
        if self.depth == 0 {
            return;
        }
        self.depth -= 1;
        if self.depth == 0 {
            let effects = std::mem::take(&mut self.transaction);
            self.feed_unit(effects);
        }
    }

    /// Feeds one command's or transaction's effects, wrapped in MULTI/EXEC
    /// when there are several.
    fn feed_unit(&mut self, effects: Vec<Effect>) {
        match effects.len() {
            0 => {}
            1 => self.feed(&effects),
            _ => {
                // MULTI in the first effect's db, EXEC in the last's: no
                // SELECT is needed for either.
                let (first, last) = (effects[0].db, effects[effects.len() - 1].db);
                let mut unit = Vec::with_capacity(effects.len() + 2);
                unit.push(Effect::new(
                    first,
                    OwnedArgs::from_slices([b"MULTI".as_slice()]),
                ));
                unit.extend(effects);
                unit.push(Effect::new(
                    last,
                    OwnedArgs::from_slices([b"EXEC".as_slice()]),
                ));
                self.feed(&unit);
            }
        }
    }

    fn feed(&mut self, effects: &[Effect]) {
        for (_, sink) in &mut self.sinks {
            sink.feed(effects);
        }
    }
}

/// Encodes effects as the RESP command stream replicas and the AOF carry,
/// with `SELECT n` before an effect in another database than the last.
#[derive(Debug, Default)]
pub struct StreamEncoder {
    /// The database the stream last selected (`None`: nothing yet).
    selected: Option<usize>,
}

impl StreamEncoder {
    pub fn encode(&mut self, effects: &[Effect], out: &mut Vec<u8>) {
        for effect in effects {
            // MULTI and EXEC carry the db of their unit; a SELECT between
            // them and the first command would be inside the MULTI anyway.
            if self.selected != Some(effect.db) {
                let db = effect.db.to_string();
                encode_request(&[b"SELECT".as_slice(), db.as_bytes()], out);
                self.selected = Some(effect.db);
            }
            let args: Vec<&[u8]> = effect.args.as_args().iter().collect();
            encode_request(&args, out);
        }
    }

    /// The next effect selects its database whatever the last one was: a
    /// replica starting from a snapshot does not know it (Redis sets
    /// `slaveseldb` to -1 for a full sync).
    pub fn forget_selected(&mut self) {
        self.selected = None;
    }
}

/// A sink that keeps the encoded stream in memory (tests, DEBUG tooling).
#[derive(Default)]
pub struct Recorder {
    encoder: StreamEncoder,
    pub stream: std::rc::Rc<std::cell::RefCell<Vec<u8>>>,
}

impl Sink for Recorder {
    fn feed(&mut self, effects: &[Effect]) {
        let mut out = self.stream.borrow_mut();
        self.encoder.encode(effects, &mut out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(parts: &[&str]) -> OwnedArgs {
        OwnedArgs::from_slices(parts.iter().map(|p| p.as_bytes()))
    }

    #[test]
    fn units_select_and_wrap() {
        let recorder = Recorder::default();
        let stream = recorder.stream.clone();
        let mut p = Propagator::default();
        p.attach(Box::new(recorder));
        p.command_done(0, || args(&["SET", "a", "1"]), 1);
        p.command_done(0, || args(&["GET", "a"]), 0);
        p.deleted_by_server(1, b"old", false);
        p.rewrite(args(&["SREM", "s", "x"]));
        p.rewrite(args(&["SREM", "s", "y"]));
        p.command_done(1, || args(&["SPOP", "s", "2"]), 2);
        let text = String::from_utf8(stream.borrow().clone()).unwrap();
        let words: Vec<&str> = text
            .split("\r\n")
            .filter(|w| !w.starts_with(['*', '$']) && !w.is_empty())
            .collect();
        assert_eq!(
            words,
            [
                "SELECT", "0", "SET", "a", "1", "SELECT", "1", "DEL", "old", "MULTI", "SREM", "s",
                "x", "SREM", "s", "y", "EXEC"
            ]
        );
    }
}
