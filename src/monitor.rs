//! MONITOR: clients that watch every command the server runs, in Redis's
//! line format (`+<unix s>.<µs> [<db> <address>] "arg" ...`). Owns who is
//! watching and the lines not yet delivered; the loop copies those into
//! the watchers' output buffers, as it delivers pub/sub messages. The
//! dispatcher feeds it; nothing is formatted while nobody watches.

use crate::pubsub::Subscriber;

/// Who ran a command, as the line names it.
#[derive(Clone, Copy)]
pub enum Origin<'a> {
    /// A client, by `ip:port`.
    Client(&'a str),
    /// A script's `redis.call` (Redis prints `lua`).
    Script,
}

#[derive(Default)]
pub struct Monitors {
    watchers: Vec<Subscriber>,
    /// Lines fed since the loop last delivered them.
    pending: Vec<u8>,
}

impl Monitors {
    /// Whether nobody watches (the dispatcher's one check a command).
    pub fn is_empty(&self) -> bool {
        self.watchers.is_empty()
    }

    /// MONITOR: `who` sees every command from now on.
    pub fn add(&mut self, who: Subscriber) {
        if !self.watchers.iter().any(|w| w.client == who.client) {
            self.watchers.push(who);
        }
    }

    /// A watcher that left, or RESET.
    pub fn remove(&mut self, client: u64) {
        self.watchers.retain(|w| w.client != client);
    }

    /// One command as watchers see it: `args` already redacted where
    /// Redis redacts (AUTH, HELLO AUTH, CONFIG SET of passwords).
    pub fn feed(&mut self, db: usize, origin: Origin, args: &[&[u8]]) {
        if self.watchers.is_empty() {
            return;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut line = format!("+{}.{:06} ", now.as_secs(), now.subsec_micros());
        match origin {
            Origin::Client(addr) => line.push_str(&format!("[{db} {addr}] ")),
            Origin::Script => line.push_str(&format!("[{db} lua] ")),
        }
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            crate::protocol::repr(arg, &mut line);
        }
        line.push_str("\r\n");
        self.pending.extend_from_slice(line.as_bytes());
    }

    /// Whether lines wait for the loop to deliver them.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The lines to deliver and to whom; empty when none are waiting.
    pub fn take(&mut self) -> (Vec<u8>, &[Subscriber]) {
        (std::mem::take(&mut self.pending), &self.watchers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_fed_only_while_someone_watches() {
        let mut m = Monitors::default();
        m.feed(0, Origin::Client("127.0.0.1:1"), &[b"SET", b"k", b"v"]);
        assert!(m.take().0.is_empty());
        m.add(Subscriber {
            client: 7,
            token: 3,
        });
        m.feed(
            2,
            Origin::Client("127.0.0.1:5000"),
            &[b"SET", b"k", b"a b\"\n"],
        );
        m.feed(2, Origin::Script, &[b"get", b"k"]);
        let (lines, to) = m.take();
        let text = String::from_utf8(lines).unwrap();
        let shape: Vec<&str> = text.lines().map(|l| l.split_once(' ').unwrap().1).collect();
        assert_eq!(
            shape,
            [
                "[2 127.0.0.1:5000] \"SET\" \"k\" \"a b\\\"\\n\"",
                "[2 lua] \"get\" \"k\""
            ]
        );
        assert!(text.starts_with('+') && text.ends_with("\r\n"));
        assert_eq!(to.len(), 1);
        m.remove(7);
        assert!(m.is_empty());
    }
}
