//! The slow log (SLOWLOG): commands that ran at least
//! `slowlog-log-slower-than` microseconds (negative: none, 0: all), the
//! newest first, at most `slowlog-max-len` of them. Each entry keeps what
//! Redis's keeps: an id, the unix time, the duration, the arguments (at
//! most 32, the last then saying how many more there were; each at most
//! 128 bytes, then how many more bytes), the client's address and name.
//! Secrets are redacted as Redis redacts them (`redacted_args`).
//!
//! The loop's dispatcher times each command it runs (and each command of
//! an EXEC; EXEC itself, and a script's commands, are not logged, as in
//! Redis) and hands it here.

use std::collections::VecDeque;

/// Arguments kept per entry (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
const MAX_ARGC: usize = 32;
/// Bytes kept per argument (Redis's `SLOWLOG_ENTRY_MAX_STRING`).
const MAX_STRING: usize = 128;
/// What stands for a secret (Redis's `shared.redacted`).
const REDACTED: &[u8] = b"(redacted)";

/// One logged command.
pub struct Entry {
    pub id: u64,
    pub time_s: i64,
    pub duration_us: u64,
    pub args: Vec<Vec<u8>>,
    pub addr: String,
    pub name: String,
}

#[derive(Default)]
pub struct SlowLog {
    /// Newest first.
    entries: VecDeque<Entry>,
    next_id: u64,
}

impl SlowLog {
    /// Logs a command that took `duration_us` if that is at least
    /// `threshold_us` (negative: the log is off), then trims to `max_len`.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        threshold_us: i64,
        max_len: usize,
        duration_us: u64,
        args: &[&[u8]],
        addr: &str,
        name: &str,
        now_s: i64,
    ) {
        if threshold_us < 0 {
            return;
        }
        if duration_us >= threshold_us as u64 {
            let entry = Entry {
                id: self.next_id,
                time_s: now_s,
                duration_us,
                args: kept_args(args),
                addr: addr.to_string(),
                name: name.to_string(),
            };
            self.next_id += 1;
            self.entries.push_front(entry);
        }
        self.entries.truncate(max_len);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// The newest `count` entries.
    pub fn newest(&self, count: usize) -> impl Iterator<Item = &Entry> {
        self.entries.iter().take(count)
    }
}

/// The arguments as an entry keeps them (see the module doc).
fn kept_args(args: &[&[u8]]) -> Vec<Vec<u8>> {
    let kept = args.len().min(MAX_ARGC);
    let mut out = Vec::with_capacity(kept);
    for (i, arg) in args.iter().take(kept).enumerate() {
        if kept != args.len() && i == kept - 1 {
            out.push(format!("... ({} more arguments)", args.len() - kept + 1).into_bytes());
        } else if arg.len() > MAX_STRING {
            let mut cut = arg[..MAX_STRING].to_vec();
            cut.extend_from_slice(
                format!("... ({} more bytes)", arg.len() - MAX_STRING).as_bytes(),
            );
            out.push(cut);
        } else {
            out.push(arg.to_vec());
        }
    }
    out
}

/// Settings whose values CONFIG SET must not show (Redis's
/// `SENSITIVE_CONFIG`).
const SENSITIVE_SETTINGS: &[&str] = &["requirepass", "masterauth"];

/// `args` with the secrets replaced by `(redacted)`, as Redis shows them
/// in the slow log (and MONITOR): AUTH's arguments, HELLO's after AUTH,
/// ACL SETUSER's, MIGRATE's AUTH/AUTH2, CONFIG SET's values of sensitive
/// settings.
pub fn redacted_args<'a>(args: impl IntoIterator<Item = &'a [u8]>) -> Vec<&'a [u8]> {
    let mut out: Vec<&[u8]> = args.into_iter().collect();
    let is = |arg: &[u8], word: &str| arg.eq_ignore_ascii_case(word.as_bytes());
    match out.first() {
        Some(name) if is(name, "auth") => {
            for arg in out.iter_mut().skip(1) {
                *arg = REDACTED;
            }
        }
        Some(name) if is(name, "hello") => {
            let mut i = 2;
            while i < out.len() {
                if is(out[i], "auth") && i + 2 < out.len() {
                    out[i + 1] = REDACTED;
                    out[i + 2] = REDACTED;
                    i += 3;
                } else {
                    i += 1;
                }
            }
        }
        // MIGRATE's AUTH password, AUTH2 username password.
        Some(name) if is(name, "migrate") => {
            let mut i = 6;
            while i < out.len() {
                if is(out[i], "auth") && i + 1 < out.len() {
                    out[i + 1] = REDACTED;
                    i += 2;
                } else if is(out[i], "auth2") && i + 2 < out.len() {
                    out[i + 1] = REDACTED;
                    out[i + 2] = REDACTED;
                    i += 3;
                } else if is(out[i], "keys") {
                    break;
                } else {
                    i += 1;
                }
            }
        }
        // ACL SETUSER: the user and every rule (passwords among them).
        Some(name) if is(name, "acl") && out.len() > 2 && is(out[1], "setuser") => {
            for arg in out.iter_mut().skip(2) {
                *arg = REDACTED;
            }
        }
        Some(name) if is(name, "config") && out.len() > 1 && is(out[1], "set") => {
            let mut i = 2;
            while i + 1 < out.len() {
                if SENSITIVE_SETTINGS.iter().any(|s| is(out[i], s)) {
                    out[i + 1] = REDACTED;
                }
                i += 2;
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_commands_are_cut_as_redis_cuts_them() {
        let long = vec![b'x'; 200];
        let many: Vec<Vec<u8>> = (0..40).map(|i| i.to_string().into_bytes()).collect();
        let mut args: Vec<&[u8]> = vec![b"SET", &long];
        args.extend(many.iter().map(Vec::as_slice));
        let kept = kept_args(&args);
        assert_eq!(kept.len(), 32);
        assert_eq!(
            kept[1],
            [vec![b'x'; 128], b"... (72 more bytes)".to_vec()].concat()
        );
        assert_eq!(kept[31], b"... (11 more arguments)");
    }

    #[test]
    fn the_log_keeps_the_newest_and_honours_the_threshold() {
        let mut log = SlowLog::default();
        for i in 0..5u64 {
            log.push(10, 3, i * 10, &[b"GET", b"k"], "127.0.0.1:1", "", 1);
        }
        assert_eq!(log.len(), 3);
        let ids: Vec<u64> = log.newest(10).map(|e| e.id).collect();
        assert_eq!(ids, [3, 2, 1]);
        log.push(-1, 3, 1_000_000, &[b"GET"], "", "", 1);
        assert_eq!(log.newest(1).next().unwrap().id, 3);
    }

    #[test]
    fn secrets_are_redacted() {
        let r = |args: &[&[u8]]| -> Vec<Vec<u8>> {
            redacted_args(args.iter().copied())
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect()
        };
        assert_eq!(
            r(&[b"AUTH", b"user", b"pw"]),
            [b"AUTH".to_vec(), REDACTED.to_vec(), REDACTED.to_vec()]
        );
        assert_eq!(
            r(&[b"HELLO", b"3", b"AUTH", b"u", b"p", b"SETNAME", b"n"])[3..5],
            [REDACTED.to_vec(), REDACTED.to_vec()]
        );
        assert_eq!(
            r(&[b"CONFIG", b"SET", b"hz", b"10", b"requirepass", b"pw"]),
            [
                &b"CONFIG"[..],
                b"SET",
                b"hz",
                b"10",
                b"requirepass",
                REDACTED
            ]
            .map(<[u8]>::to_vec)
        );
    }
}
