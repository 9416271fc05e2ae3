//! ACL command categories (`@read`, `@string`, `@dangerous`, ...): which
//! categories each command is in, derived once from the command table
//! (its flags and its group, as Redis 7.0 derives the implicit ones and
//! lists the explicit ones in its command files), for COMMAND INFO and
//! ACL CAT. Users and permissions will build on this.

use crate::commands::{Command, Flags};

/// Redis 7.0's categories, in its order (ACL CAT lists them so, COMMAND
/// INFO gives a command's in this order).
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// A set of categories, bit `i` for `CATEGORIES[i]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Categories(u32);

impl Categories {
    fn with(self, name: &str) -> Categories {
        match CATEGORIES.iter().position(|c| *c == name) {
            Some(i) => Categories(self.0 | 1 << i),
            None => self,
        }
    }

    pub fn has(self, name: &str) -> bool {
        CATEGORIES
            .iter()
            .position(|c| *c == name)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }

    /// The names, in Redis's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        CATEGORIES
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, c)| *c)
    }
}

/// The category a command group stands for (none for `server`, `pubsub`
/// and `cluster`: their commands are categorised by flags or by name).
fn group_category(group: &str) -> Option<&'static str> {
    Some(match group {
        "generic" => "keyspace",
        "string" => "string",
        "list" => "list",
        "set" => "set",
        "sorted-set" | "sorted_set" => "sortedset",
        "hash" => "hash",
        "bitmap" => "bitmap",
        "hyperloglog" => "hyperloglog",
        "geo" => "geo",
        "stream" => "stream",
        "transactions" => "transaction",
        "scripting" => "scripting",
        "connection" => "connection",
        _ => return None,
    })
}

/// Commands whose categories Redis lists beyond (or instead of) their
/// group's: full name (`parent|sub` for subcommands), categories, and
/// whether the group's category is replaced.
const EXCEPTIONS: &[(&str, &[&str], bool)] = &[
    ("command", &["connection"], true),
    ("flushall", &["keyspace", "dangerous"], true),
    ("flushdb", &["keyspace", "dangerous"], true),
    ("swapdb", &["keyspace", "dangerous"], true),
    ("restore-asking", &["keyspace", "dangerous"], true),
    ("lastsave", &["admin", "dangerous"], true),
    ("role", &["admin", "dangerous"], true),
    ("dbsize", &["keyspace"], true),
    ("info", &["dangerous"], true),
    ("keys", &["dangerous"], false),
    ("migrate", &["dangerous"], false),
    ("restore", &["dangerous"], false),
    ("sort", &["list", "set", "sortedset", "dangerous"], true),
    ("sort_ro", &["list", "set", "sortedset", "dangerous"], true),
    ("wait", &["connection"], true),
    ("asking", &["connection"], true),
    ("readonly", &["connection"], true),
    ("readwrite", &["connection"], true),
];

/// The categories of `cmd` (`parent` given for a subcommand): its
/// group's (a container itself has none), the exceptions', then the
/// implicit ones from its flags, as Redis's `setImplicitACLCategories`.
pub fn categories(cmd: &Command, parent: Option<&Command>) -> Categories {
    let mut cats = Categories::default();
    let top = parent.unwrap_or(cmd);
    let exception = EXCEPTIONS.iter().find(|(name, _, _)| *name == top.name);
    let replaced = exception.is_some_and(|(_, _, replaces)| *replaces);
    if cmd.subcommands.is_empty() && !replaced {
        if let Some(c) = group_category(cmd.group) {
            cats = cats.with(c);
        }
    }
    if let Some((_, extra, _)) = exception {
        for c in *extra {
            cats = cats.with(c);
        }
    }
    let f = cmd.flags;
    if f.has(Flags::WRITE) {
        cats = cats.with("write");
    }
    // Scripts are not @read, even the read-only ones.
    if f.has(Flags::READONLY) && !cats.has("scripting") {
        cats = cats.with("read");
    }
    if f.has(Flags::ADMIN) {
        cats = cats.with("admin").with("dangerous");
    }
    if f.has(Flags::PUBSUB) {
        cats = cats.with("pubsub");
    }
    if f.has(Flags::FAST) {
        cats = cats.with("fast");
    }
    if f.has(Flags::BLOCKING) {
        cats = cats.with("blocking");
    }
    if !cats.has("fast") {
        cats = cats.with("slow");
    }
    cats
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(name: &str) -> Vec<&'static str> {
        let cmd = crate::commands::lookup(name.as_bytes()).unwrap();
        categories(cmd, None).names().collect()
    }

    #[test]
    fn categories_as_redis_lists_them() {
        assert_eq!(of("get"), ["read", "string", "fast"]);
        assert_eq!(of("keys"), ["keyspace", "read", "slow", "dangerous"]);
        assert_eq!(of("flushall"), ["keyspace", "write", "slow", "dangerous"]);
        assert_eq!(of("client"), ["slow"]);
        assert_eq!(of("blpop"), ["write", "list", "slow", "blocking"]);
    }
}
