//! The command table and dispatch.
//!
//! Each family file declares its commands once (name, arity, flags, key
//! positions, handler) beside their handlers; `table()` joins them. Arity is
//! checked here, centrally, from the table, and COMMAND answers from the same
//! entries. Handlers are small functions `(ctx, args) -> Result<(), CmdError>`
//! that append their reply to the session's output; on `Err` the dispatcher
//! writes the error, so a handler validates before it replies.

pub mod aggregate;
pub mod connection;
pub mod expire;
pub mod hashes;
pub mod keys;
pub mod lists;
pub mod server;
pub mod sets;
pub mod strings;
pub mod zsets;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use crate::connection::{Session, Sessions};
use crate::db::Db;
use crate::protocol::request::parse_i64;
use crate::protocol::{Args, Reply};
use crate::state::ServerState;

/// Everything a handler may use: the clock snapshot, its client, the server.
pub struct Ctx<'a> {
    /// The one time snapshot of this command, unix ms (all lookups use it).
    pub now_ms: i64,
    pub session: &'a mut Session,
    pub server: &'a mut ServerState,
    /// The other clients, for CLIENT LIST.
    pub peers: &'a dyn Sessions,
}

impl Ctx<'_> {
    /// The selected database.
    pub fn db(&mut self) -> &mut Db {
        &mut self.server.dbs[self.session.db]
    }

    pub fn out(&mut self) -> &mut Reply {
        &mut self.session.reply
    }
}

pub type CmdResult = Result<(), CmdError>;
pub type Handler = fn(&mut Ctx, Args) -> CmdResult;

/// A command error reply. The text is Redis's own, defined once here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdError {
    Syntax,
    NotInteger,
    NotFloat,
    WrongType,
    Overflow,
    DbIndexOutOfRange,
    NoSuchKey,
    /// `invalid expire time in '<command>' command`.
    InvalidExpireTime(&'static str),
    /// A complete message, code included (`ERR ...`).
    Static(&'static str),
    Owned(String),
}

impl CmdError {
    pub fn message(&self) -> Cow<'static, str> {
        match self {
            Self::Syntax => "ERR syntax error".into(),
            Self::NotInteger => "ERR value is not an integer or out of range".into(),
            Self::NotFloat => "ERR value is not a valid float".into(),
            Self::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value".into()
            }
            Self::Overflow => "ERR increment or decrement would overflow".into(),
            Self::DbIndexOutOfRange => "ERR DB index is out of range".into(),
            Self::NoSuchKey => "ERR no such key".into(),
            Self::InvalidExpireTime(cmd) => {
                format!("ERR invalid expire time in '{cmd}' command").into()
            }
            Self::Static(s) => (*s).into(),
            Self::Owned(s) => s.clone().into(),
        }
    }

    pub fn wrong_arity(full_name: &str) -> Self {
        Self::Owned(format!(
            "ERR wrong number of arguments for '{full_name}' command"
        ))
    }
}

/// One entry of the command table.
pub struct Command {
    /// Lower-case name (`config|get` style for subcommands is built from the parent).
    pub name: &'static str,
    /// Redis's convention: positive = exact argument count including the
    /// name, negative = at least that many.
    pub arity: i32,
    pub flags: &'static [&'static str],
    /// First key, last key (negative counts from the end), step; 0 0 0 if none.
    pub keys: (i32, i32, i32),
    pub handler: Handler,
    /// Subcommands (CONFIG GET, CLIENT ID, ...); empty for plain commands.
    pub subcommands: &'static [Command],
    /// One line for COMMAND DOCS.
    pub summary: &'static str,
    pub group: &'static str,
}

impl Command {
    fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }
}

/// Families whose commands make up the table.
const FAMILIES: &[&[Command]] = &[
    connection::COMMANDS,
    strings::COMMANDS,
    keys::COMMANDS,
    expire::COMMANDS,
    hashes::COMMANDS,
    lists::COMMANDS,
    sets::COMMANDS,
    zsets::COMMANDS,
    server::COMMANDS,
];

/// Every top-level command, in table order.
pub fn all() -> impl Iterator<Item = &'static Command> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// The command named `name`, case-insensitively.
pub fn lookup(name: &[u8]) -> Option<&'static Command> {
    type Index = HashMap<Vec<u8>, &'static Command, foldhash::fast::RandomState>;
    static INDEX: OnceLock<Index> = OnceLock::new();
    let index = INDEX.get_or_init(|| all().map(|c| (c.name.as_bytes().to_vec(), c)).collect());
    let mut lower = [0u8; 32];
    let lower = lower.get_mut(..name.len())?;
    for (l, c) in lower.iter_mut().zip(name) {
        *l = c.to_ascii_lowercase();
    }
    index.get(&*lower).copied()
}

/// Quotes user input for an error message the way Redis does: at most
/// `max` bytes, lossy UTF-8 (CR/LF are replaced when the error is encoded).
fn quoted(arg: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&arg[..arg.len().min(max)]).into_owned()
}

/// Runs one request (`args` non-empty), appending its reply to the session.
pub fn execute(ctx: &mut Ctx, args: Args) {
    ctx.server.stats.total_commands_processed += 1;
    ctx.session.last_interaction_ms = ctx.now_ms;
    if let Err(err) = dispatch(ctx, args) {
        ctx.server.stats.total_error_replies += 1;
        let msg = err.message();
        ctx.out().error(&msg);
    }
}

fn dispatch(ctx: &mut Ctx, args: Args) -> CmdResult {
    let Some(cmd) = lookup(&args[0]) else {
        return Err(unknown_command(args));
    };
    if !ctx.session.authenticated && !cmd.flags.contains(&"noauth") {
        return Err(CmdError::Static("NOAUTH Authentication required."));
    }
    if !cmd.subcommands.is_empty() && args.len() >= 2 {
        let sub = cmd
            .subcommands
            .iter()
            .find(|s| s.name.as_bytes().eq_ignore_ascii_case(&args[1]));
        let Some(sub) = sub else {
            return Err(CmdError::Owned(format!(
                "ERR unknown subcommand '{}'. Try {} HELP.",
                quoted(&args[1], 128),
                cmd.name.to_ascii_uppercase()
            )));
        };
        if !sub.arity_ok(args.len()) {
            return Err(CmdError::wrong_arity(&format!("{}|{}", cmd.name, sub.name)));
        }
        ctx.session.last_cmd = (cmd.name, Some(sub.name));
        return (sub.handler)(ctx, args);
    }
    if !cmd.arity_ok(args.len()) {
        return Err(CmdError::wrong_arity(cmd.name));
    }
    ctx.session.last_cmd = (cmd.name, None);
    (cmd.handler)(ctx, args)
}

fn unknown_command(args: Args) -> CmdError {
    let mut listed = String::new();
    for arg in args.iter().skip(1) {
        if listed.len() >= 128 {
            break;
        }
        let room = 128 - listed.len();
        listed.push('\'');
        listed.push_str(&quoted(arg, room));
        listed.push_str("' ");
    }
    CmdError::Owned(format!(
        "ERR unknown command '{}', with args beginning with: {}",
        quoted(&args[0], 128),
        listed
    ))
}

/// Parses an integer argument (`value is not an integer or out of range`).
pub fn int_arg(arg: &[u8]) -> Result<i64, CmdError> {
    parse_i64(arg).ok_or(CmdError::NotInteger)
}

/// Parses a float argument the way Redis's `getDoubleFromObject` does: no
/// leading space, the whole argument consumed, no NaN, and (like `strtod`'s
/// ERANGE) no overflow to infinity or underflow to zero; `inf` itself is
/// fine.
pub fn float_arg(arg: &[u8]) -> Result<f64, CmdError> {
    let s = std::str::from_utf8(arg).map_err(|_| CmdError::NotFloat)?;
    if s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return Err(CmdError::NotFloat);
    }
    let v = parse_strtod(s).ok_or(CmdError::NotFloat)?;
    // Every spelling of infinity the parser takes has an `i`; a number
    // that became infinite without one overflowed. Checked only in the
    // rare cases, so a plain score costs no extra pass.
    let overflow = || !s.bytes().any(|c| c.eq_ignore_ascii_case(&b'i'));
    let underflow = || {
        let digits = s.split(['e', 'E']).next().unwrap_or("");
        digits.bytes().any(|c| (b'1'..=b'9').contains(&c))
    };
    if s.is_empty() || (v.is_infinite() && overflow()) || (v == 0.0 && underflow()) {
        return Err(CmdError::NotFloat);
    }
    Ok(v)
}

/// C's `strtod` on a whole string as Redis's range parsers use it: leading
/// space skipped, an empty string is 0, overflow is infinity. `None` for
/// anything else `strtod` would not consume entirely, and for NaN.
pub fn parse_strtod(s: &str) -> Option<f64> {
    let t = s.trim_start_matches(|c: char| c.is_ascii_whitespace());
    if t.is_empty() {
        return Some(0.0);
    }
    t.parse::<f64>().ok().filter(|v| !v.is_nan())
}

/// Whether an option argument equals `name`, ignoring ASCII case.
pub fn is(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// Shorthand for a table entry with no subcommands.
macro_rules! cmd {
    ($name:literal, $arity:expr, [$($flag:literal),*], ($f:expr, $l:expr, $s:expr), $handler:expr, $group:literal, $summary:literal) => {
        $crate::commands::Command {
            name: $name,
            arity: $arity,
            flags: &[$($flag),*],
            keys: ($f, $l, $s),
            handler: $handler,
            subcommands: &[],
            summary: $summary,
            group: $group,
        }
    };
}
pub(crate) use cmd;

#[cfg(test)]
pub mod test_support {
    //! In-process command execution with a hand-set clock.
    use super::*;
    use crate::config::Config;
    use crate::protocol::{Parsed, RequestParser};

    pub struct Harness {
        pub server: ServerState,
        pub session: Session,
        pub now_ms: i64,
    }

    impl Default for Harness {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Harness {
        pub fn new() -> Self {
            Self {
                server: ServerState::new(Config::default()),
                session: Session {
                    authenticated: true,
                    ..Session::default()
                },
                now_ms: 1_700_000_000_000,
            }
        }

        /// Runs one inline command and returns the raw reply bytes as text.
        pub fn run(&mut self, line: &str) -> String {
            let input = format!("{line}\r\n");
            let mut parser = RequestParser::default();
            let Ok(Parsed::Complete { .. }) = parser.parse(input.as_bytes()) else {
                panic!("bad test command {line:?}");
            };
            let args = parser.args(input.as_bytes());
            let mut ctx = Ctx {
                now_ms: self.now_ms,
                session: &mut self.session,
                server: &mut self.server,
                peers: &(),
            };
            execute(&mut ctx, args);
            let out = String::from_utf8_lossy(&self.session.reply.buf).into_owned();
            self.session.reply.buf.clear();
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::Harness;

    #[test]
    fn names_are_unique_and_lowercase() {
        let mut seen = std::collections::HashSet::new();
        for c in super::all() {
            assert!(seen.insert(c.name), "duplicate {}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert_ne!(c.arity, 0);
        }
    }

    #[test]
    fn unknown_command_and_arity_errors() {
        let mut h = Harness::new();
        assert_eq!(
            h.run("foo a \"b\\r\\nc\""),
            "-ERR unknown command 'foo', with args beginning with: 'a' 'b  c' \r\n"
        );
        assert_eq!(
            h.run("GET"),
            "-ERR wrong number of arguments for 'get' command\r\n"
        );
        assert_eq!(
            h.run("config foo"),
            "-ERR unknown subcommand 'foo'. Try CONFIG HELP.\r\n"
        );
        assert_eq!(
            h.run("config get"),
            "-ERR wrong number of arguments for 'config|get' command\r\n"
        );
    }
}
