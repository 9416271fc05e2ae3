//! The command table: which commands exist and what the server knows of
//! each before running it (Redis's `redisCommand` without its `proc`):
//! name, arity, flags, key positions, subcommands, group, summary, and the
//! reference docs COMMAND answers from. Everything that holds "which
//! command is this" (a client's last command, a MULTI queue, a blocked
//! command, ACL rules, the slow log, command statistics, CLIENT PAUSE)
//! holds a `&'static Command` from here. The handlers live in `commands`,
//! found by each entry's `id`; nothing here knows them.

pub mod docs;
mod docs_data;
pub mod flags;
mod table;

use std::collections::HashMap;
use std::sync::OnceLock;

pub use flags::Flags;
pub use table::COUNT;

use crate::protocol::request::parse_i64;
use crate::protocol::Args;

/// One entry of the command table.
pub struct Command {
    /// Dense, in table order: how `commands` finds the handler.
    pub id: u16,
    /// Lower-case name (`config|get` style for subcommands is built from the parent).
    pub name: &'static str,
    /// Redis's convention: positive = exact argument count including the
    /// name, negative = at least that many.
    pub arity: i32,
    pub flags: Flags,
    /// First key, last key (negative counts from the end), step; 0 0 0 if none.
    pub keys: (i32, i32, i32),
    /// Where a `numkeys` argument sits, for commands whose keys follow it
    /// (ZUNIONSTORE, SINTERCARD, later EVAL): Redis's "movablekeys".
    pub numkeys_at: Option<u8>,
    /// Subcommands (CONFIG GET, CLIENT ID, ...); empty for plain commands.
    pub subcommands: &'static [Command],
    /// One line for COMMAND DOCS.
    pub summary: &'static str,
    pub group: &'static str,
}

impl Command {
    /// The same entry with its keys after a `numkeys` argument at `at`.
    pub const fn with_numkeys(self, at: u8) -> Command {
        Command {
            numkeys_at: Some(at),
            ..self
        }
    }

    /// Whether the command names keys at all.
    pub fn has_keys(&self) -> bool {
        self.keys.0 > 0
            || self.numkeys_at.is_some()
            // Keys found by a keyword only (XREAD's STREAMS).
            || docs::lookup(self.name).is_some_and(|d| !d.key_specs.is_empty())
    }

    /// The keys `args` names (the command's key spec applied): the fixed
    /// range, then the `numkeys` keys. `None` when the arguments don't
    /// hold what the spec says (a bad or too large `numkeys`).
    pub fn keys_of<'a>(&self, args: &Args<'a>) -> Option<Vec<&'a [u8]>> {
        let mut keys = Vec::new();
        let (first, last, step) = self.keys;
        if first > 0 {
            let len = args.len() as i64;
            let last = if last < 0 {
                len + i64::from(last)
            } else {
                i64::from(last)
            };
            let mut i = i64::from(first);
            while i <= last.min(len - 1) {
                keys.push(args.get(i as usize));
                i += i64::from(step.max(1));
            }
        }
        if let Some(at) = self.numkeys_at {
            let at = usize::from(at);
            let n = args.iter().nth(at).and_then(parse_i64)?;
            let n = usize::try_from(n).ok()?;
            if at + n >= args.len() {
                return None;
            }
            keys.extend((at + 1..=at + n).map(|i| args.get(i)));
        }
        Some(keys)
    }

    /// The subcommand `name` names (ASCII case ignored).
    pub fn subcommand(&self, name: &[u8]) -> Option<&'static Command> {
        self.subcommands
            .iter()
            .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }
}

/// Every top-level command, in table order.
pub fn all() -> impl Iterator<Item = &'static Command> {
    table::FAMILIES.iter().flat_map(|f| f.iter())
}

/// Every command and subcommand with its parent, in table order.
pub fn all_with_subcommands() -> impl Iterator<Item = (&'static Command, Option<&'static Command>)>
{
    all().flat_map(|c| {
        std::iter::once((c, None)).chain(c.subcommands.iter().map(move |s| (s, Some(c))))
    })
}

/// Where a command's keys are, for the cluster's routing of every
/// request: none, one range of positions (most commands: no allocation,
/// no search), or only by its key specs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyLayout {
    None,
    /// From `first` to `lastkey` (relative to `first`, or from the end if
    /// negative), every `step`.
    Range {
        first: i64,
        lastkey: i64,
        step: i64,
    },
    Specs,
}

impl KeyLayout {
    /// The keys of `args` laid out as a range (none when they do not fit,
    /// as a bad request's keys are none to Redis).
    pub fn range_keys<'a>(self, args: Args<'a>) -> impl Iterator<Item = &'a [u8]> {
        let argc = args.len() as i64;
        let (first, last, step) = match self {
            KeyLayout::Range {
                first,
                lastkey,
                step,
            } => {
                let last = if lastkey >= 0 {
                    first + lastkey
                } else {
                    argc + lastkey
                };
                if last >= argc || last < first || first >= argc {
                    (1, 0, 1)
                } else {
                    (first, last, step.max(1))
                }
            }
            _ => (1, 0, 1),
        };
        (first..=last)
            .step_by(step as usize)
            .map(move |i| args.get(i as usize))
    }
}

/// The key layout of a table entry (computed once for the whole table).
pub fn key_layout(cmd: &Command) -> KeyLayout {
    static BY_ID: OnceLock<Vec<KeyLayout>> = OnceLock::new();
    let table = BY_ID.get_or_init(|| {
        let mut by_id = vec![KeyLayout::Specs; COUNT];
        for (c, parent) in all_with_subcommands() {
            if let Some(slot) = by_id.get_mut(usize::from(c.id)) {
                *slot = layout_of(c, parent);
            }
        }
        by_id
    });
    table
        .get(usize::from(cmd.id))
        .copied()
        .unwrap_or(KeyLayout::Specs)
}

fn layout_of(cmd: &Command, parent: Option<&Command>) -> KeyLayout {
    let full = full_name(cmd, parent);
    // Their keys are found by code, not by position.
    if ["sort", "sort_ro", "migrate"].contains(&full.as_str()) {
        return KeyLayout::Specs;
    }
    let Some(doc) = docs::lookup(&full) else {
        return match (cmd.keys, cmd.numkeys_at) {
            ((0, _, _), None) => KeyLayout::None,
            ((first, last, step), None) => KeyLayout::Range {
                first: i64::from(first),
                lastkey: if last < 0 {
                    i64::from(last)
                } else {
                    i64::from(last - first)
                },
                step: i64::from(step),
            },
            _ => KeyLayout::Specs,
        };
    };
    match doc.key_specs {
        [] => KeyLayout::None,
        // (VARIABLE_FLAGS changes how a key is used, not where it is.)
        [spec] => match (&spec.begin_search, &spec.find_keys) {
            (docs::BeginSearch::Index(first), docs::FindKeys::Range(lastkey, step, 0)) => {
                KeyLayout::Range {
                    first: *first,
                    lastkey: *lastkey,
                    step: *step,
                }
            }
            _ => KeyLayout::Specs,
        },
        _ => KeyLayout::Specs,
    }
}

/// `name`, or `parent|sub` for a subcommand: how COMMAND, ACL and the
/// statistics name a command.
pub fn full_name(cmd: &Command, parent: Option<&Command>) -> String {
    match parent {
        Some(p) => format!("{}|{}", p.name, cmd.name),
        None => cmd.name.to_string(),
    }
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

/// The command table as clients and scripts see it after the config's
/// `rename-command`s: a renamed command answers only to its new name; an
/// empty new name removes it. The AOF and the replication stream are read
/// with `lookup` (the real names), as Redis keeps its original table.
#[derive(Debug, Default)]
pub struct Renames {
    /// New name (lowercase) → the command.
    by_new_name: HashMap<Vec<u8>, &'static Command>,
    /// Commands that no longer answer to their own name.
    renamed: Vec<&'static str>,
}

impl Renames {
    /// Applies `rename-command original new` pairs in order, with Redis's
    /// errors for an unknown command or a name already taken.
    pub fn new(pairs: &[(String, String)]) -> Result<Renames, &'static str> {
        let mut renames = Renames::default();
        for (original, new) in pairs {
            let cmd = renames
                .lookup(original.as_bytes())
                .ok_or("No such command in rename-command")?;
            renames.by_new_name.retain(|_, c| !std::ptr::eq(*c, cmd));
            renames.renamed.push(cmd.name);
            if new.is_empty() {
                continue;
            }
            if renames.lookup(new.as_bytes()).is_some() {
                return Err("Target command name already exists");
            }
            renames
                .by_new_name
                .insert(new.to_ascii_lowercase().into_bytes(), cmd);
        }
        Ok(renames)
    }

    /// The command a client means by `name`.
    pub fn lookup(&self, name: &[u8]) -> Option<&'static Command> {
        if self.renamed.is_empty() {
            return lookup(name);
        }
        if let Some(cmd) = self.by_new_name.get(&name.to_ascii_lowercase()) {
            return Some(cmd);
        }
        lookup(name).filter(|c| !self.renamed.contains(&c.name))
    }
}

/// The keys `args` names and how each is used: by the command's key
/// specs (Redis's reference data), SET's by its GET option (Redis's
/// `setGetKeys`), else by the table's key positions with flags from the
/// command's `write` flag. `None`: the arguments do not hold what the
/// specs say.
pub fn keys_with_flags<'a>(
    cmd: &Command,
    parent: Option<&Command>,
    args: &Args<'a>,
) -> Option<Vec<docs::KeyRef<'a>>> {
    let full = full_name(cmd, parent);
    if full == "set" {
        let get = args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
        let flags: &'static [&'static str] = if get {
            &["RW", "ACCESS", "UPDATE"]
        } else {
            &["OW", "UPDATE"]
        };
        return Some(vec![docs::KeyRef {
            key: args.get(1),
            flags,
        }]);
    }
    if full == "sort" {
        return Some(sort_keys(args));
    }
    if full == "migrate" {
        return Some(migrate_keys(args));
    }
    if let Some(keys) = docs::lookup(&full).and_then(|doc| docs::keys_by_specs(doc, args)) {
        return Some(keys);
    }
    let flags: &'static [&'static str] = if cmd.flags.has(Flags::WRITE) {
        &["RW", "ACCESS", "UPDATE"]
    } else {
        &["RO", "ACCESS"]
    };
    let keys = cmd.keys_of(args)?;
    Some(
        keys.into_iter()
            .map(|key| docs::KeyRef { key, flags })
            .collect(),
    )
}

/// SORT's keys as Redis's `sortGetKeys` finds them (its key specs leave
/// STORE's incomplete): the sorted key, and the last STORE's target,
/// skipping LIMIT's two arguments and GET's and BY's one.
fn sort_keys<'a>(args: &Args<'a>) -> Vec<docs::KeyRef<'a>> {
    let mut keys = vec![docs::KeyRef {
        key: args.get(1),
        flags: &["RO", "ACCESS"],
    }];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let arg = &args[i];
        if arg.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if arg.eq_ignore_ascii_case(b"store") && i + 1 < args.len() {
            store = Some(args.get(i + 1));
        } else if arg.eq_ignore_ascii_case(b"get") || arg.eq_ignore_ascii_case(b"by") {
            i += 1;
        }
        i += 1;
    }
    if let Some(key) = store {
        keys.push(docs::KeyRef {
            key,
            flags: &["OW", "UPDATE"],
        });
    }
    keys
}

/// MIGRATE's keys as Redis's `migrateGetKeys` finds them: the key
/// argument, or with KEYS (and an empty key argument) the keys after it.
fn migrate_keys<'a>(args: &Args<'a>) -> Vec<docs::KeyRef<'a>> {
    let flags: &'static [&'static str] = &["RW", "ACCESS", "DELETE"];
    let keys_at = (6..args.len())
        .find(|&i| args[i].eq_ignore_ascii_case(b"keys") && args[3].is_empty())
        .map(|i| i + 1);
    let range = match keys_at {
        Some(first) => first..args.len(),
        None => 3..4.min(args.len()),
    };
    range
        .map(|i| docs::KeyRef {
            key: args.get(i),
            flags,
        })
        .collect()
}

/// Shorthand for a table entry with no subcommands.
macro_rules! cmd {
    ($id:literal, $name:literal, $arity:expr, [$($flag:literal),*], ($f:expr, $l:expr, $s:expr), $group:literal, $summary:literal) => {
        $crate::command_table::Command {
            id: $id,
            name: $name,
            arity: $arity,
            flags: $crate::command_table::Flags::parse(&[$($flag),*]),
            keys: ($f, $l, $s),
            numkeys_at: None,
            subcommands: &[],
            summary: $summary,
            group: $group,
        }
    };
}
pub(crate) use cmd;

/// A container command (CONFIG, CLIENT, ...): any arity from 2, its
/// subcommands run (the dispatcher resolves them), it does nothing itself.
macro_rules! container {
    ($id:literal, $name:literal, $subcommands:expr, $group:literal, $summary:literal) => {
        $crate::command_table::Command {
            id: $id,
            name: $name,
            arity: -2,
            flags: $crate::command_table::Flags::NONE,
            keys: (0, 0, 0),
            numkeys_at: None,
            subcommands: $subcommands,
            summary: $summary,
            group: $group,
        }
    };
}
pub(crate) use container;

/// A container's HELP entry (its handler answers with `reply_help`).
macro_rules! help {
    ($id:literal, $group:literal) => {
        $crate::command_table::cmd!(
            $id,
            "help",
            2,
            ["loading", "stale"],
            (0, 0, 0),
            $group,
            "Show helpful text about the different subcommands"
        )
    };
}
pub(crate) use help;

/// The entry `full` names: `name`, or `parent|sub` for a subcommand.
pub fn lookup_full(full: &str) -> Option<&'static Command> {
    match full.split_once('|') {
        Some((parent, sub)) => lookup(parent.as_bytes())?.subcommand(sub.as_bytes()),
        None => lookup(full.as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique_and_lowercase() {
        let mut seen = std::collections::HashSet::new();
        for c in super::all() {
            assert!(seen.insert(c.name), "duplicate {}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert_ne!(c.arity, 0);
        }
    }

    /// Ids run 0, 1, 2... in table order (a command, then its
    /// subcommands), so a handler is found by indexing.
    #[test]
    fn ids_are_dense_in_table_order() {
        for (expected, (cmd, parent)) in super::all_with_subcommands().enumerate() {
            let full = super::full_name(cmd, parent);
            assert_eq!(
                usize::from(cmd.id),
                expected,
                "{full} should have id {expected}"
            );
        }
        assert_eq!(super::all_with_subcommands().count(), super::COUNT);
    }
}
