//! Access control: users (passwords, on/off, the commands, keys and
//! channels each may use) and the ACL log, as Redis 7.0 keeps them; and
//! the command categories (`@read`, `@string`, `@dangerous`, ...) that
//! rules name, derived from the command table (flags and group, as Redis
//! derives the implicit ones and lists the explicit ones in its command
//! files).
//!
//! Owns the users and the log. The dispatcher asks `check` before a
//! command runs; AUTH asks `authenticate`; ACL SETUSER applies rules
//! with `set_rule`. Sessions hold only their user's name.

use std::collections::{BTreeMap, VecDeque};

use crate::command_table::{full_name, Command, Flags};
use crate::glob;

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

/// Every command and subcommand with its parent, in table order: a
/// command's id is its place here.
fn command_list() -> &'static [(&'static Command, Option<&'static Command>)] {
    static LIST: std::sync::OnceLock<Vec<(&'static Command, Option<&'static Command>)>> =
        std::sync::OnceLock::new();
    LIST.get_or_init(|| crate::command_table::all_with_subcommands().collect())
}

/// The id of `cmd` (a table entry), by address: one hash, not a scan,
/// as a restricted user's every command asks it.
fn command_id(cmd: &Command) -> Option<usize> {
    type Ids = std::collections::HashMap<usize, usize, foldhash::fast::FixedState>;
    static IDS: std::sync::OnceLock<Ids> = std::sync::OnceLock::new();
    let ids = IDS.get_or_init(|| {
        command_list()
            .iter()
            .enumerate()
            .map(|(i, (c, _))| (*c as *const Command as usize, i))
            .collect()
    });
    ids.get(&(cmd as *const Command as usize)).copied()
}

fn lookup_full(name: &str) -> Option<usize> {
    let lower = name.to_ascii_lowercase();
    command_list()
        .iter()
        .position(|(c, p)| full_name(c, *p) == lower)
}

/// Why a rule was refused (Redis's `ACLSetUserStringError` texts).
pub const ERR_UNKNOWN_COMMAND: &str = "Unknown command or category name in ACL";
pub const ERR_SYNTAX: &str = "Syntax error";
const ERR_KEYS_AFTER_ALL: &str = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
const ERR_CHANNELS_AFTER_ALL: &str = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels";
const ERR_NO_SUCH_PASSWORD: &str =
    "The password you are trying to remove from the user does not exist";
const ERR_BAD_HASH: &str = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
const ERR_FIRST_ARG_OF_SUB: &str = "Allowing first-arg of a subcommand is not supported";

/// Key permissions of a pattern.
const READ: u8 = 1;
const WRITE: u8 = 2;

/// One user.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub enabled: bool,
    pub nopass: bool,
    /// `sanitize-payload` / `skip-sanitize-payload`, as set (shown only then).
    sanitize: Option<bool>,
    /// SHA-256 of each password, lowercase hex.
    passwords: Vec<String>,
    /// Allowed command ids (`command_list`).
    allowed: Vec<bool>,
    /// Set by `+@all`: commands added later would be allowed too (how
    /// the rules are described: from `+@all` down or from `-@all` up).
    all_commands: bool,
    all_keys: bool,
    /// Key patterns with their READ/WRITE permissions.
    keys: Vec<(String, u8)>,
    all_channels: bool,
    channels: Vec<String>,
    /// Every command, key and channel: the dispatcher skips the checks
    /// (kept up to date by `set_rule`).
    open: bool,
}

impl User {
    /// A new user as ACL SETUSER makes it: off, no password, no
    /// commands, no keys, channels as `acl-pubsub-default` says.
    pub fn new(name: &str, all_channels: bool) -> User {
        User {
            name: name.to_string(),
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            allowed: vec![false; command_list().len()],
            all_commands: false,
            all_keys: false,
            keys: Vec::new(),
            all_channels,
            channels: Vec::new(),
            open: false,
        }
    }

    /// `default`: on, no password, everything.
    fn default_user() -> User {
        let mut u = User::new("default", true);
        for rule in ["+@all", "~*", "&*", "on", "nopass"] {
            let _ = u.set_rule(rule, true);
        }
        u
    }

    fn refresh(&mut self) {
        self.open = self.all_commands
            && self.allowed.iter().all(|a| *a)
            && self.all_keys
            && self.all_channels;
    }

    fn set_command(&mut self, id: usize, allow: bool) {
        self.allowed[id] = allow;
        // A container's rule covers its subcommands.
        let (cmd, _) = command_list()[id];
        if !cmd.subcommands.is_empty() {
            for (i, (_, parent)) in command_list().iter().enumerate() {
                if parent.is_some_and(|p| std::ptr::eq(p, cmd)) {
                    self.allowed[i] = allow;
                }
            }
        }
    }

    fn set_category(&mut self, category: &str, allow: bool) -> Result<(), &'static str> {
        let category = category.to_ascii_lowercase();
        if category == "all" {
            self.allowed.iter_mut().for_each(|a| *a = allow);
            self.all_commands = allow;
            return Ok(());
        }
        if !CATEGORIES.contains(&category.as_str()) {
            return Err(ERR_UNKNOWN_COMMAND);
        }
        for (i, (c, p)) in command_list().iter().enumerate() {
            if categories(c, *p).has(&category) {
                self.allowed[i] = allow;
            }
        }
        Ok(())
    }

    /// One ACL SETUSER rule (Redis's `ACLSetUser`), with Redis's errors.
    /// `acl_pubsub_all`: `acl-pubsub-default` is `allchannels` (for `reset`).
    pub fn set_rule(&mut self, op: &str, acl_pubsub_all: bool) -> Result<(), &'static str> {
        let result = self.apply_rule(op, acl_pubsub_all);
        self.refresh();
        result
    }

    fn apply_rule(&mut self, op: &str, acl_pubsub_all: bool) -> Result<(), &'static str> {
        let lower = op.to_ascii_lowercase();
        match lower.as_str() {
            "" => {}
            "on" => self.enabled = true,
            "off" => self.enabled = false,
            "skip-sanitize-payload" => self.sanitize = Some(false),
            "sanitize-payload" => self.sanitize = Some(true),
            "nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            "resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            "allkeys" | "~*" => {
                self.all_keys = true;
                self.keys.clear();
            }
            "resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            "allchannels" | "&*" => {
                self.all_channels = true;
                self.channels.clear();
            }
            "resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            "allcommands" => self.set_category("all", true)?,
            "nocommands" => self.set_category("all", false)?,
            "clearselectors" => {}
            "reset" => {
                for rule in [
                    "resetpass",
                    "resetkeys",
                    "resetchannels",
                    "off",
                    "sanitize-payload",
                    "-@all",
                ] {
                    self.set_rule(rule, acl_pubsub_all)?;
                }
                if acl_pubsub_all {
                    self.set_rule("allchannels", acl_pubsub_all)?;
                }
            }
            _ => return self.set_pattern_or_command(op),
        }
        Ok(())
    }

    fn set_pattern_or_command(&mut self, op: &str) -> Result<(), &'static str> {
        let bytes = op.as_bytes();
        match bytes[0] {
            b'>' | b'<' | b'#' | b'!' => {
                let hash = match bytes[0] {
                    b'>' | b'<' => password_hash(&bytes[1..]),
                    _ => {
                        let given = &op[1..];
                        let valid = given.len() == 64
                            && given
                                .bytes()
                                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
                        if !valid {
                            return Err(ERR_BAD_HASH);
                        }
                        given.to_string()
                    }
                };
                if matches!(bytes[0], b'>' | b'#') {
                    if !self.passwords.contains(&hash) {
                        self.passwords.push(hash);
                    }
                    self.nopass = false;
                } else {
                    let at = self.passwords.iter().position(|p| *p == hash);
                    self.passwords.remove(at.ok_or(ERR_NO_SUCH_PASSWORD)?);
                }
            }
            b'~' | b'%' => {
                if self.all_keys {
                    return Err(ERR_KEYS_AFTER_ALL);
                }
                let (flags, pattern) = key_rule(op)?;
                match self.keys.iter_mut().find(|(p, _)| *p == pattern) {
                    Some((_, f)) => *f |= flags,
                    None => self.keys.push((pattern, flags)),
                }
            }
            b'&' => {
                if self.all_channels {
                    return Err(ERR_CHANNELS_AFTER_ALL);
                }
                let pattern = &op[1..];
                if pattern.contains(' ') {
                    return Err(ERR_SYNTAX);
                }
                if !self.channels.iter().any(|c| c == pattern) {
                    self.channels.push(pattern.to_string());
                }
            }
            b'+' | b'-' => {
                let allow = bytes[0] == b'+';
                let name = &op[1..];
                if let Some(category) = name.strip_prefix('@') {
                    return self.set_category(category, allow);
                }
                if allow && name.contains('|') {
                    let (parent, sub) = name.rsplit_once('|').unwrap_or((name, ""));
                    let id = lookup_full(parent).ok_or(ERR_UNKNOWN_COMMAND)?;
                    let (cmd, p) = command_list()[id];
                    if p.is_some() {
                        return Err(ERR_FIRST_ARG_OF_SUB);
                    }
                    if sub.is_empty() {
                        return Err(ERR_SYNTAX);
                    }
                    if cmd.subcommands.is_empty() {
                        // Redis's deprecated first-argument rules.
                        return Err(ERR_SYNTAX);
                    }
                }
                let id = lookup_full(name).ok_or(ERR_UNKNOWN_COMMAND)?;
                self.set_command(id, allow);
            }
            b'(' => return Err(ERR_SYNTAX),
            _ => return Err(ERR_SYNTAX),
        }
        Ok(())
    }

    /// Checks a password: the user must be on, and have it or `nopass`.
    fn accepts(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hash = password_hash(password);
        // Compared in time that does not depend on where they differ.
        self.passwords.iter().fold(false, |found, p| {
            let diff = p
                .bytes()
                .zip(hash.bytes())
                .fold(0u8, |d, (a, b)| d | (a ^ b));
            found | (diff == 0)
        })
    }

    /// The command rules as ACL LIST shows them (Redis's
    /// `ACLDescribeSelectorCommandRules`): from `+@all` or `-@all`, the
    /// categories that best fit, then single commands.
    fn describe_commands(&self) -> String {
        let additive = !self.all_commands;
        let mut rules = vec![if additive { "-@all" } else { "+@all" }.to_string()];
        let mut fake = User::new("", false);
        fake.set_category("all", !additive).ok();
        // What is left to explain: start from the user's bits.
        let mut temp = self.allowed.clone();
        let mut applied = [false; 21];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (usize::MAX, 0);
            for (j, category) in CATEGORIES.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (mut on, mut off) = (0, 0);
                for (i, (c, p)) in command_list().iter().enumerate() {
                    if categories(c, *p).has(category) {
                        if temp[i] {
                            on += 1;
                        } else {
                            off += 1;
                        }
                    }
                }
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(j);
                    min_diff = diff;
                    max_same = same;
                }
            }
            let Some(j) = best else {
                break;
            };
            let category = CATEGORIES[j];
            fake.set_category(category, additive).ok();
            for (i, (c, p)) in command_list().iter().enumerate() {
                if categories(c, *p).has(category) {
                    temp[i] = !additive;
                }
            }
            rules.push(format!("{}@{category}", if additive { '+' } else { '-' }));
            applied[j] = true;
        }
        for (i, (c, p)) in command_list().iter().enumerate() {
            if self.allowed[i] != fake.allowed[i] {
                let sign = if self.allowed[i] { '+' } else { '-' };
                rules.push(format!("{sign}{}", full_name(c, *p)));
                fake.set_command(i, self.allowed[i]);
            }
        }
        rules.join(" ")
    }

    fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let shown: Vec<String> = self
            .keys
            .iter()
            .map(|(p, f)| match *f {
                READ => format!("%R~{p}"),
                WRITE => format!("%W~{p}"),
                _ => format!("~{p}"),
            })
            .collect();
        shown.join(" ")
    }

    fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let shown: Vec<String> = self.channels.iter().map(|c| format!("&{c}")).collect();
        shown.join(" ")
    }

    /// The user as ACL LIST and the ACL file write it (`user` excluded).
    pub fn describe(&self) -> String {
        let mut parts = vec![if self.enabled { "on" } else { "off" }.to_string()];
        if self.nopass {
            parts.push("nopass".into());
        }
        match self.sanitize {
            Some(true) => parts.push("sanitize-payload".into()),
            Some(false) => parts.push("skip-sanitize-payload".into()),
            None => {}
        }
        parts.extend(self.passwords.iter().map(|p| format!("#{p}")));
        let keys = self.describe_keys();
        if !keys.is_empty() {
            parts.push(keys);
        }
        if !self.all_channels {
            parts.push("resetchannels".into());
        }
        let channels = self.describe_channels();
        if !channels.is_empty() {
            parts.push(channels);
        }
        parts.push(self.describe_commands());
        parts.join(" ")
    }

    /// ACL GETUSER's flags, in Redis's order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize {
            Some(true) => flags.push("sanitize-payload"),
            Some(false) => flags.push("skip-sanitize-payload"),
            None => {}
        }
        flags
    }

    pub fn passwords(&self) -> &[String] {
        &self.passwords
    }

    pub fn getuser_fields(&self) -> (String, String, String) {
        (
            self.describe_commands(),
            self.describe_keys(),
            self.describe_channels(),
        )
    }

    /// Whether this user may run `cmd` (`parent` for a subcommand) with
    /// `args`: the command, then each key (read or write as the command
    /// is), then each channel.
    pub fn check(
        &self,
        cmd: &Command,
        parent: Option<&Command>,
        args: &crate::protocol::Args,
    ) -> Result<(), Denied> {
        if !cmd.flags.has(Flags::NOAUTH) {
            let allowed = command_id(cmd).is_some_and(|id| self.allowed[id]);
            if !allowed {
                return Err(Denied::Command);
            }
        }
        let top = parent.unwrap_or(cmd);
        if !self.all_keys && cmd.has_keys() {
            let keys = crate::command_table::keys_with_flags(cmd, parent, args).unwrap_or_default();
            for (pos, k) in keys.into_iter().enumerate() {
                // What the key spec says the command does with the key.
                let (read, write) = crate::command_table::docs::reads_and_writes(k.flags);
                let need = if read { READ } else { 0 } | if write { WRITE } else { 0 };
                let ok = self
                    .keys
                    .iter()
                    .any(|(p, f)| f & need == need && glob::matches(p.as_bytes(), k.key, false));
                if !ok {
                    return Err(Denied::Key(pos, k.key.to_vec()));
                }
            }
        }
        if !self.all_channels && top.flags.has(Flags::PUBSUB) {
            let (channels, patterns): (Vec<&[u8]>, bool) = match top.name {
                "publish" | "spublish" => (args.iter().skip(1).take(1).collect(), false),
                "subscribe" | "ssubscribe" => (args.iter().skip(1).collect(), false),
                "psubscribe" => (args.iter().skip(1).collect(), true),
                _ => (Vec::new(), false),
            };
            for channel in channels {
                let ok = self.channels.iter().any(|p| {
                    if patterns {
                        p.as_bytes() == channel
                    } else {
                        glob::matches(p.as_bytes(), channel, false)
                    }
                });
                if !ok {
                    return Err(Denied::Channel(channel.to_vec()));
                }
            }
        }
        Ok(())
    }
}

/// `~pattern` or `%R~`, `%W~`, `%RW~pattern`: permissions and pattern.
fn key_rule(op: &str) -> Result<(u8, String), &'static str> {
    let bytes = op.as_bytes();
    let (flags, offset) = if bytes[0] == b'%' {
        let mut flags = 0;
        let mut i = 1;
        loop {
            match bytes.get(i).map(u8::to_ascii_uppercase) {
                Some(b'R') if flags & READ == 0 => flags |= READ,
                Some(b'W') if flags & WRITE == 0 => flags |= WRITE,
                Some(b'~') => break,
                _ => return Err(ERR_SYNTAX),
            }
            i += 1;
        }
        (flags, i + 1)
    } else {
        (READ | WRITE, 1)
    };
    let pattern = &op[offset..];
    if pattern.contains(' ') {
        return Err(ERR_SYNTAX);
    }
    Ok((flags, pattern.to_string()))
}

/// A config file's `user` directive (the name, then the rules), checked
/// as ACL SETUSER checks rules (`allchannels`: `acl-pubsub-default`).
pub fn check_user_directive(line: &[String], pubsub_all: bool) -> Result<(), String> {
    let mut user = User::new("", pubsub_all);
    for rule in line.iter().skip(1) {
        user.set_rule(rule, pubsub_all)
            .map_err(|e| format!("Error in user declaration '{rule}': {e}"))?;
    }
    Ok(())
}

/// SHA-256 of a password, lowercase hex (how users keep passwords).
pub fn password_hash(password: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(password);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    Command,
    /// The key's position among the command's keys, and the key.
    Key(usize, Vec<u8>),
    Channel(Vec<u8>),
}

impl Denied {
    /// ACL DRYRUN's answer (a string, Redis's words).
    pub fn dryrun_message(&self, cmd: &Command, parent: Option<&Command>) -> String {
        match self {
            Denied::Command => format!(
                "This user has no permissions to run the '{}' command",
                full_name(cmd, parent)
            ),
            Denied::Key(_, key) => format!(
                "This user has no permissions to access the '{}' key",
                String::from_utf8_lossy(key)
            ),
            Denied::Channel(channel) => format!(
                "This user has no permissions to access the '{}' channel",
                String::from_utf8_lossy(channel)
            ),
        }
    }

    /// ACL LOG's reason and object.
    pub fn log_reason(&self, cmd: &Command, parent: Option<&Command>) -> (&'static str, String) {
        match self {
            Denied::Command => ("command", full_name(cmd, parent)),
            Denied::Key(_, key) => ("key", String::from_utf8_lossy(key).into_owned()),
            Denied::Channel(channel) => ("channel", String::from_utf8_lossy(channel).into_owned()),
        }
    }

    /// Why EXEC refuses a queued command whose permission went away.
    pub fn exec_reason(&self) -> &'static str {
        match self {
            Denied::Command => "no permission to execute the command or subcommand",
            Denied::Key(..) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        }
    }

    /// A script's error (Redis's `scriptVerifyACL`).
    pub fn script_message(&self) -> &'static str {
        match self {
            Denied::Command => "ERR The user executing the script can't run this command or subcommand",
            Denied::Key(..) => "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments",
            Denied::Channel(_) => "ERR The user executing the script can't publish to the channel mentioned in the command",
        }
    }

    /// The `-NOPERM` error, as Redis 7.0 words it.
    pub fn message(&self, cmd: &Command, parent: Option<&Command>) -> String {
        match self {
            Denied::Command => format!(
                "NOPERM this user has no permissions to run the '{}' command",
                full_name(cmd, parent)
            ),
            Denied::Key(..) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments".into()
            }
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".into(),
        }
    }
}

/// One ACL LOG entry (equal denials within 60 s are counted on it).
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: String,
    pub username: String,
    pub created_ms: i64,
    pub client_info: String,
}

/// Redis's `ACL_LOG_GROUPING_MAX_TIME_DELTA`.
const LOG_GROUPING_MS: i64 = 60_000;

/// The users and the log.
#[derive(Debug)]
pub struct Acl {
    users: BTreeMap<String, User>,
    log: VecDeque<LogEntry>,
    /// `default` may do everything (the common case, checked first).
    default_open: bool,
}

impl Default for Acl {
    fn default() -> Self {
        let mut users = BTreeMap::new();
        users.insert("default".to_string(), User::default_user());
        Acl {
            users,
            log: VecDeque::new(),
            default_open: true,
        }
    }
}

impl Acl {
    fn refresh(&mut self) {
        self.default_open = self.users.get("default").is_some_and(|u| u.open);
    }

    pub fn user(&self, name: &str) -> Option<&User> {
        self.users.get(name)
    }

    pub fn users(&self) -> impl Iterator<Item = &User> {
        self.users.values()
    }

    /// `requirepass`: the default user's only password (empty: nopass).
    pub fn set_default_password(&mut self, password: &str) {
        if let Some(u) = self.users.get_mut("default") {
            let _ = u.set_rule("resetpass", false);
            let rule = if password.is_empty() {
                "nopass".to_string()
            } else {
                format!(">{password}")
            };
            let _ = u.set_rule(&rule, false);
        }
        self.refresh();
    }

    /// Protected mode applies while `default` has no password.
    pub fn default_nopass(&self) -> bool {
        self.users.get("default").is_some_and(|u| u.nopass)
    }

    /// New connections start authenticated as `default` when it is on
    /// and needs no password (Redis's `authRequired`).
    pub fn default_is_open(&self) -> bool {
        self.users
            .get("default")
            .is_some_and(|u| u.enabled && u.nopass)
    }

    /// AUTH: whether `name` exists, is on and takes `password`.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> bool {
        let name = String::from_utf8_lossy(name);
        self.users
            .get(name.as_ref())
            .is_some_and(|u| u.accepts(password))
    }

    /// ACL SETUSER: rules applied in order to a copy (the user is made if
    /// missing); all or nothing. The error names the failing rule.
    pub fn set_user(
        &mut self,
        name: &str,
        rules: &[String],
        pubsub_all: bool,
    ) -> Result<(), (String, &'static str)> {
        let mut user = self
            .users
            .get(name)
            .cloned()
            .unwrap_or_else(|| User::new(name, pubsub_all));
        for rule in rules {
            user.set_rule(rule, pubsub_all)
                .map_err(|e| (rule.clone(), e))?;
        }
        self.users.insert(name.to_string(), user);
        self.refresh();
        Ok(())
    }

    pub fn delete_user(&mut self, name: &str) -> bool {
        name != "default" && self.users.remove(name).is_some()
    }

    /// Replaces every user (ACL LOAD); `default` is made if absent.
    pub fn replace_users(&mut self, users: Vec<User>) {
        self.users = users.into_iter().map(|u| (u.name.clone(), u)).collect();
        self.users
            .entry("default".to_string())
            .or_insert_with(User::default_user);
        self.refresh();
    }

    /// Whether `user` ("" for `default`) may run the command; the
    /// dispatcher's check (for an unrestricted `default`, one load).
    pub fn check(
        &self,
        user: &str,
        cmd: &Command,
        parent: Option<&Command>,
        args: &crate::protocol::Args,
    ) -> Result<(), Denied> {
        if user.is_empty() && self.default_open {
            return Ok(());
        }
        let user = if user.is_empty() { "default" } else { user };
        match self.users.get(user) {
            Some(u) if u.open => Ok(()),
            Some(u) => u.check(cmd, parent, args),
            // Deleted while connected: nothing is allowed.
            None => Err(Denied::Command),
        }
    }

    /// Whether `user` ("" for `default`) may read every key (`allkeys`,
    /// or a `~*` pattern with read permission): what SORT's BY and GET
    /// need, since the keys they read come from the data (Redis's
    /// `ACLUserCheckCmdWithUnrestrictedKeyAccess`).
    pub fn unrestricted_key_read(&self, user: &str) -> bool {
        if user.is_empty() && self.default_open {
            return true;
        }
        let user = if user.is_empty() { "default" } else { user };
        self.users.get(user).is_some_and(|u| {
            u.open || u.all_keys || u.keys.iter().any(|(p, f)| p == "*" && f & READ != 0)
        })
    }

    /// Adds to the log (Redis's `addACLLogEntry`): an equal recent entry
    /// is counted again instead; at most `max_len` kept.
    #[allow(clippy::too_many_arguments)]
    pub fn log(
        &mut self,
        reason: &'static str,
        context: &'static str,
        object: String,
        username: String,
        client_info: String,
        now_ms: i64,
        max_len: usize,
    ) {
        // As Redis: only the 10 newest are looked at, and a match moves
        // to the front.
        let matched = self.log.iter().take(10).position(|e| {
            e.reason == reason
                && e.context == context
                && e.object == object
                && e.username == username
                && now_ms - e.created_ms < LOG_GROUPING_MS
        });
        if let Some(mut e) = matched.and_then(|at| self.log.remove(at)) {
            e.count += 1;
            e.created_ms = now_ms;
            e.client_info = client_info;
            self.log.push_front(e);
            return;
        }
        self.log.push_front(LogEntry {
            count: 1,
            reason,
            context,
            object,
            username,
            created_ms: now_ms,
            client_info,
        });
        self.log.truncate(max_len);
    }

    pub fn log_entries(&self) -> impl Iterator<Item = &LogEntry> {
        self.log.iter()
    }

    pub fn reset_log(&mut self) {
        self.log.clear();
    }
}

/// The users of `aclfile` at startup (none configured: `None`), with
/// Redis's refusal of an ACL file beside `user` lines.
pub fn users_at_startup(config: &crate::config::Config) -> std::io::Result<Option<Vec<User>>> {
    let Some(path) = config.aclfile_path() else {
        return Ok(None);
    };
    let refuse = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, msg);
    if !config.user_directives.is_empty() {
        return Err(refuse(
            "Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into(),
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        refuse(format!(
            "Error loading ACLs, opening file '{}': {e}",
            path.display()
        ))
    })?;
    parse_users(&text, config.acl_pubsub_all)
        .map(Some)
        .map_err(|e| refuse(format!("Aborting Redis startup because of ACL errors: {e}")))
}

/// Parses ACL file text (`user <name> <rules>...` lines) into users, with
/// Redis's errors naming the line.
pub fn parse_users(text: &str, pubsub_all: bool) -> Result<Vec<User>, String> {
    let mut users: Vec<User> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 2 || words[0] != "user" {
            return Err(format!("/line {}: should start with user keyword", n + 1));
        }
        let name = words[1];
        if users.iter().any(|u| u.name == name) {
            return Err(format!("/line {}: Duplicate user '{name}' found", n + 1));
        }
        let mut user = User::new(name, pubsub_all);
        for rule in &words[2..] {
            user.set_rule(rule, pubsub_all)
                .map_err(|e| format!("/line {}: {e}. ", n + 1))?;
        }
        users.push(user);
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(name: &str) -> Vec<&'static str> {
        let cmd = crate::command_table::lookup(name.as_bytes()).unwrap();
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

    fn user(rules: &[&str]) -> User {
        let mut u = User::new("u", false);
        for r in rules {
            u.set_rule(r, false).unwrap();
        }
        u
    }

    #[test]
    fn rules_are_described_as_redis_describes_them() {
        assert_eq!(User::default_user().describe(), "on nopass ~* &* +@all");
        let alice = user(&["on", ">pw", "~cache:*", "+get", "+@hash", "-hdel"]);
        // Single commands follow the categories (in table order here,
        // in its hash order in Redis).
        assert_eq!(
            alice.describe(),
            "on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~cache:* resetchannels -@all +@hash +get -hdel"
        );
        let bob = user(&["%R~r:*", "%W~w:*", "&ch*", "allcommands", "-@dangerous"]);
        assert_eq!(
            bob.describe(),
            "off %R~r:* %W~w:* resetchannels &ch* +@all -@dangerous"
        );
        assert_eq!(
            user(&["-@all", "+client|id"]).describe_commands(),
            "-@all +client|id"
        );
    }

    #[test]
    fn checks_commands_keys_and_channels() {
        use crate::protocol::OwnedArgs;
        let lookup = |n: &str| crate::command_table::lookup(n.as_bytes()).unwrap();
        let args = |a: &[&str]| OwnedArgs::from_slices(a.iter().map(|s| s.as_bytes()));
        let u = user(&[
            "on", "nopass", "+get", "+set", "+publish", "%R~r:*", "~rw:*", "&news.*",
        ]);
        let get_r = args(&["GET", "r:1"]);
        assert_eq!(u.check(lookup("get"), None, &get_r.as_args()), Ok(()));
        let set_r = args(&["SET", "r:1", "v"]);
        assert!(matches!(
            u.check(lookup("set"), None, &set_r.as_args()),
            Err(Denied::Key(0, _))
        ));
        let set_rw = args(&["SET", "rw:1", "v"]);
        assert_eq!(u.check(lookup("set"), None, &set_rw.as_args()), Ok(()));
        let del = args(&["DEL", "rw:1"]);
        assert_eq!(
            u.check(lookup("del"), None, &del.as_args()),
            Err(Denied::Command)
        );
        let publish = args(&["PUBLISH", "other", "m"]);
        assert!(matches!(
            u.check(lookup("publish"), None, &publish.as_args()),
            Err(Denied::Channel(_))
        ));
        assert!(u.accepts(b"anything"));
        let mut off = u.clone();
        off.enabled = false;
        assert!(!off.accepts(b"x"));
        assert_eq!(
            User::new("x", false).set_rule("+nosuch", false),
            Err(ERR_UNKNOWN_COMMAND)
        );
        assert_eq!(
            User::new("x", false).set_rule("foo", false),
            Err(ERR_SYNTAX)
        );
        assert_eq!(user(&["~*"]).set_rule("~a", false), Err(ERR_KEYS_AFTER_ALL));
    }
}
