//! The command handlers and dispatch.
//!
//! Each family file binds its handlers to the command table's entries by
//! full name (`HANDLERS`); `handler` finds one from an entry's id. Arity is
//! checked here, centrally, from the table. Handlers are small functions
//! `(ctx, args) -> Result<(), CmdError>` that append their reply to the
//! session's output; on `Err` the dispatcher writes the error, so a
//! handler validates before it replies.

pub mod acl;
pub mod aggregate;
pub mod bits;
pub mod blocking;
pub mod cluster;
pub mod connection;
pub mod debug;
pub mod expire;
pub mod geo;
pub mod handlers;
pub mod hashes;
pub mod hll;
pub mod keys;
pub mod lease;
pub mod lists;
pub mod member_ttl;
pub mod migrate;
pub mod pubsub;
pub mod refusals;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod sort;
pub mod stream_groups;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod zsets;

use std::borrow::Cow;

pub use crate::command_table::{docs, full_name, lookup, Command, Flags};
pub use crate::protocol::c_str;

use crate::connection::{Session, Sessions};
use crate::db::{Db, EventClass};
use crate::protocol::request::parse_i64;
use crate::protocol::{Args, OwnedArgs, Reply};
use crate::state::ServerState;

/// Everything a handler may use: the clock snapshot, its client, the server.
pub struct Ctx<'a> {
    /// The one time snapshot of this command, unix ms (all lookups use it).
    pub now_ms: i64,
    pub session: &'a mut Session,
    pub server: &'a mut ServerState,
    /// The other clients, for CLIENT LIST.
    pub peers: &'a dyn Sessions,
    /// How EXEC and a script run a command: the dispatcher's
    /// `call_and_reply`, handed down so that no handler imports the
    /// dispatcher.
    pub call: NestedCall,
    /// How DEBUG LOADAOF replays the AOF's commands (the dispatcher's
    /// `replay`), handed down for the same reason.
    pub replay: crate::persistence::aof_load::Replay,
}

/// Runs a command inside EXEC (`true`: slow-logged one by one) or a
/// script, its error written as its reply.
pub type NestedCall = fn(&mut Ctx, &'static Command, Args, bool);

impl Ctx<'_> {
    /// The selected database.
    pub fn db(&mut self) -> &mut Db {
        &mut self.server.dbs[self.session.db]
    }

    /// The key-change signal for `key` in the selected database (Redis's
    /// `signalModifiedKey` + `notifyKeyspaceEvent`): every command that
    /// changes a key calls it once per change, with Redis's event name.
    pub fn signal(&mut self, class: EventClass, event: &'static str, key: &[u8]) {
        self.db().signal(class, event, key);
    }

    /// Propagates `args` instead of the command's own arguments (each call
    /// adds one effect). Builds nothing while nothing consumes the stream.
    pub fn propagate_as(&mut self, args: &[&[u8]]) {
        let propagate = &mut self.server.propagate;
        if propagate.active() {
            propagate.rewrite(OwnedArgs::from_slices(args.iter().copied()));
        }
    }

    /// Whether the command comes from the primary or a file being loaded,
    /// which are obeyed past the limits put on clients (Redis's
    /// `mustObeyClient`).
    pub fn obeys_client(&self) -> bool {
        self.session.master || self.server.loading
    }

    pub fn out(&mut self) -> &mut Reply {
        &mut self.session.reply
    }

    /// Writes a push (a pub/sub confirmation or message) with `write`: one
    /// that CLIENT REPLY OFF / SKIP does not silence.
    pub fn push_out(&mut self, write: impl FnOnce(&mut Reply)) {
        let start = self.session.reply.buf.len();
        write(&mut self.session.reply);
        if self.session.reply_mode.drops() {
            let end = self.session.reply.buf.len();
            self.session.pushed.push(start..end);
        }
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
    /// A complete message built at run time; bytes, because it may quote
    /// what the client sent exactly as sent.
    Owned(Vec<u8>),
    /// A script's error that its command already counted in the error
    /// statistics (Redis's `ERR_REPLY_FLAG_NO_STATS_UPDATE`): the script's
    /// command still counts as failed.
    Counted(Vec<u8>),
}

impl CmdError {
    pub fn message(&self) -> Cow<'static, [u8]> {
        let text: &'static str = match self {
            Self::Syntax => "ERR syntax error",
            Self::NotInteger => "ERR value is not an integer or out of range",
            Self::NotFloat => "ERR value is not a valid float",
            Self::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value",
            Self::Overflow => "ERR increment or decrement would overflow",
            Self::DbIndexOutOfRange => "ERR DB index is out of range",
            Self::NoSuchKey => "ERR no such key",
            Self::InvalidExpireTime(cmd) => {
                return format!("ERR invalid expire time in '{cmd}' command")
                    .into_bytes()
                    .into()
            }
            Self::Static(s) => s,
            Self::Owned(s) | Self::Counted(s) => return s.clone().into(),
        };
        text.as_bytes().into()
    }

    /// An error reply to count in the error statistics (INFO errorstats,
    /// `total_error_replies`): all but one counted already.
    pub fn is_uncounted(&self) -> bool {
        !matches!(self, Self::Counted(_))
    }

    pub fn wrong_arity(full_name: &str) -> Self {
        Self::owned(format!(
            "ERR wrong number of arguments for '{full_name}' command"
        ))
    }

    /// Redis's `addReplySubcommandSyntaxError`: the subcommand as typed
    /// (`%.128s`) and the container to ask for HELP.
    pub fn subcommand_syntax(args: &Args, container: &str) -> Self {
        Self::with_arg(
            "ERR unknown subcommand or wrong number of arguments for '",
            c_str(&args[1], 128),
            &format!("'. Try {container} HELP."),
        )
    }

    pub fn owned(text: String) -> Self {
        Self::Owned(text.into_bytes())
    }

    /// `prefix`, then a client's argument as Redis's `%s` prints it (the
    /// bytes as sent, up to a NUL), then `suffix`.
    pub fn with_arg(prefix: &str, arg: &[u8], suffix: &str) -> Self {
        let mut msg = prefix.as_bytes().to_vec();
        msg.extend_from_slice(c_str(arg, usize::MAX));
        msg.extend_from_slice(suffix.as_bytes());
        Self::Owned(msg)
    }
}

/// A container command's HELP, as Redis's `addReplyHelp` words it: a
/// header naming `command`, the `lines`, then HELP itself.
pub fn reply_help(ctx: &mut Ctx, command: &str, lines: &[&str]) {
    let out = ctx.out();
    out.array(lines.len() + 3);
    out.simple(&format!(
        "{command} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for line in lines {
        out.simple(line);
    }
    out.simple("HELP");
    out.simple("    Prints this help.");
}

/// A database index argument (SELECT, MOVE, COPY DB, SWAPDB): Redis's
/// `getIntFromObjectOrReply`, whose messages `bad` replaces when given,
/// then a check against the `dbs` databases.
pub fn db_index_arg(arg: &[u8], dbs: usize, bad: Option<&'static str>) -> Result<usize, CmdError> {
    let n = match (parse_i64(arg), bad) {
        (Some(n), _) if i32::try_from(n).is_ok() => n,
        (_, Some(msg)) => return Err(CmdError::Static(msg)),
        (Some(_), None) => {
            return Err(CmdError::Static(
                "ERR value is out of range, value must between -2147483648 and 2147483647",
            ))
        }
        (None, None) => return Err(CmdError::NotInteger),
    };
    usize::try_from(n)
        .ok()
        .filter(|&i| i < dbs)
        .ok_or(CmdError::DbIndexOutOfRange)
}

/// Parses an integer argument (`value is not an integer or out of range`).
pub fn int_arg(arg: &[u8]) -> Result<i64, CmdError> {
    parse_i64(arg).ok_or(CmdError::NotInteger)
}

/// Parses a float argument the way Redis's `getDoubleFromObject` does
/// (see `float::parse_f64`: strtod's forms, hex included, whole argument).
pub fn float_arg(arg: &[u8]) -> Result<f64, CmdError> {
    crate::float::parse_f64(arg).ok_or(CmdError::NotFloat)
}

/// Whether an option argument equals `name`, ignoring ASCII case.
pub fn is(arg: &[u8], name: &str) -> bool {
    crate::protocol::is_word(arg, name.as_bytes())
}

/// DEBUG parses its own arguments in Redis: an unknown subcommand and a
/// wrong count get one message (`addReplySubcommandSyntaxError`).
pub(super) fn debug_syntax_error(args: Args) -> CmdError {
    CmdError::with_arg(
        "ERR unknown subcommand or wrong number of arguments for '",
        c_str(&args[1], 128),
        "'. Try DEBUG HELP.",
    )
}
