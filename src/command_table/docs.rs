//! COMMAND DOCS and the key specs and tips of COMMAND INFO: each
//! command's reference (arguments, history, key specs) as redis-server
//! 7.0 publishes it, from `docs_data` (generated), written in Redis's
//! reply shapes. redis-cli builds its hints and `HELP <command>` from it.

use crate::protocol::Reply;

/// One command's reference entry (`docs_data::DOCS`, by full name).
pub struct CommandDoc {
    pub name: &'static str,
    pub summary: &'static str,
    pub since: &'static str,
    pub group: &'static str,
    pub complexity: Option<&'static str>,
    pub doc_flags: &'static [&'static str],
    pub deprecated_since: Option<&'static str>,
    pub replaced_by: Option<&'static str>,
    pub history: &'static [(&'static str, &'static str)],
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpecDoc],
    pub args: &'static [ArgDoc],
}

pub struct ArgDoc {
    pub name: &'static str,
    pub kind: &'static str,
    /// -1: not a key.
    pub key_spec_index: i32,
    pub token: Option<&'static str>,
    pub summary: Option<&'static str>,
    pub since: Option<&'static str>,
    pub deprecated_since: Option<&'static str>,
    pub flags: &'static [&'static str],
    /// A block's or a choice's parts.
    pub args: &'static [ArgDoc],
}

pub struct KeySpecDoc {
    pub notes: Option<&'static str>,
    pub flags: &'static [&'static str],
    pub begin_search: BeginSearch,
    pub find_keys: FindKeys,
}

pub enum BeginSearch {
    Index(i64),
    /// The keyword, and where the search starts (negative: from the end).
    Keyword(&'static str, i64),
    Unknown,
}

pub enum FindKeys {
    /// Last key (relative), step, limit.
    Range(i64, i64, i64),
    /// Where the count is, the first key after it, step.
    Keynum(i64, i64, i64),
    Unknown,
}

/// The entry for `full_name` (`set`, `client|list`).
pub fn lookup(full_name: &str) -> Option<&'static CommandDoc> {
    let docs = super::docs_data::DOCS;
    docs.binary_search_by(|d| d.name.cmp(full_name))
        .ok()
        .map(|i| &docs[i])
}

/// COMMAND DOCS's map for one command (without its name), Redis's fields
/// in Redis's order; `subcommands` written by the caller when `subs` > 0.
pub fn write_docs(out: &mut Reply, doc: &CommandDoc, subs: usize) {
    let fields = 3
        + usize::from(doc.complexity.is_some())
        + usize::from(!doc.doc_flags.is_empty())
        + usize::from(doc.deprecated_since.is_some())
        + usize::from(doc.replaced_by.is_some())
        + usize::from(!doc.history.is_empty())
        + usize::from(!doc.args.is_empty())
        + usize::from(subs > 0);
    out.map(fields);
    out.bulk(b"summary");
    out.bulk(doc.summary.as_bytes());
    out.bulk(b"since");
    out.bulk(doc.since.as_bytes());
    out.bulk(b"group");
    out.bulk(doc.group.as_bytes());
    if let Some(complexity) = doc.complexity {
        out.bulk(b"complexity");
        out.bulk(complexity.as_bytes());
    }
    if !doc.doc_flags.is_empty() {
        out.bulk(b"doc_flags");
        out.set(doc.doc_flags.len());
        for flag in doc.doc_flags {
            out.simple(flag);
        }
    }
    for (field, value) in [
        ("deprecated_since", doc.deprecated_since),
        ("replaced_by", doc.replaced_by),
    ] {
        if let Some(value) = value {
            out.bulk(field.as_bytes());
            out.bulk(value.as_bytes());
        }
    }
    if !doc.history.is_empty() {
        out.bulk(b"history");
        out.array(doc.history.len());
        for (version, change) in doc.history {
            out.array(2);
            out.bulk(version.as_bytes());
            out.bulk(change.as_bytes());
        }
    }
    if !doc.args.is_empty() {
        out.bulk(b"arguments");
        write_args(out, doc.args);
    }
    if subs > 0 {
        out.bulk(b"subcommands");
    }
}

fn write_args(out: &mut Reply, args: &[ArgDoc]) {
    out.array(args.len());
    for a in args {
        let nested = matches!(a.kind, "oneof" | "block");
        let fields = 2
            + usize::from(a.key_spec_index >= 0)
            + usize::from(a.token.is_some())
            + usize::from(a.summary.is_some())
            + usize::from(a.since.is_some())
            + usize::from(a.deprecated_since.is_some())
            + usize::from(!a.flags.is_empty())
            + usize::from(nested);
        out.map(fields);
        out.bulk(b"name");
        out.bulk(a.name.as_bytes());
        out.bulk(b"type");
        out.bulk(a.kind.as_bytes());
        if a.key_spec_index >= 0 {
            out.bulk(b"key_spec_index");
            out.int(i64::from(a.key_spec_index));
        }
        for (field, value) in [
            ("token", a.token),
            ("summary", a.summary),
            ("since", a.since),
            ("deprecated_since", a.deprecated_since),
        ] {
            if let Some(value) = value {
                out.bulk(field.as_bytes());
                out.bulk(value.as_bytes());
            }
        }
        if !a.flags.is_empty() {
            out.bulk(b"flags");
            out.set(a.flags.len());
            for flag in a.flags {
                out.simple(flag);
            }
        }
        if nested {
            out.bulk(b"arguments");
            write_args(out, a.args);
        }
    }
}

/// Key spec flags in the order Redis lists them.
const KEY_FLAGS: &[&str] = &[
    "RO",
    "RW",
    "OW",
    "RM",
    "ACCESS",
    "UPDATE",
    "INSERT",
    "DELETE",
    "NOT_KEY",
    "INCOMPLETE",
    "VARIABLE_FLAGS",
];

/// A key spec's flags as Redis lists them: in its order, the access
/// types in capitals, the rest in lowercase.
pub fn write_key_flags(out: &mut Reply, flags: &[&str]) {
    let shown: Vec<&str> = KEY_FLAGS
        .iter()
        .filter(|f| flags.contains(f))
        .copied()
        .collect();
    out.set(shown.len());
    for flag in shown {
        if flag.len() == 2 {
            out.simple(flag);
        } else {
            out.simple(&flag.to_ascii_lowercase());
        }
    }
}

/// COMMAND INFO's key specs.
pub fn write_key_specs(out: &mut Reply, specs: &[KeySpecDoc]) {
    out.array(specs.len());
    for spec in specs {
        out.map(3 + usize::from(spec.notes.is_some()));
        if let Some(notes) = spec.notes {
            out.bulk(b"notes");
            out.bulk(notes.as_bytes());
        }
        out.bulk(b"flags");
        write_key_flags(out, spec.flags);
        out.bulk(b"begin_search");
        out.map(2);
        out.bulk(b"type");
        match spec.begin_search {
            BeginSearch::Index(index) => {
                out.bulk(b"index");
                out.bulk(b"spec");
                out.map(1);
                out.bulk(b"index");
                out.int(index);
            }
            BeginSearch::Keyword(keyword, startfrom) => {
                out.bulk(b"keyword");
                out.bulk(b"spec");
                out.map(2);
                out.bulk(b"keyword");
                out.bulk(keyword.as_bytes());
                out.bulk(b"startfrom");
                out.int(startfrom);
            }
            BeginSearch::Unknown => {
                out.bulk(b"unknown");
                out.bulk(b"spec");
                out.map(0);
            }
        }
        out.bulk(b"find_keys");
        out.map(2);
        out.bulk(b"type");
        let (kind, names, values) = match spec.find_keys {
            FindKeys::Range(last, step, limit) => (
                "range",
                ["lastkey", "keystep", "limit"],
                [last, step, limit],
            ),
            FindKeys::Keynum(idx, first, step) => (
                "keynum",
                ["keynumidx", "firstkey", "keystep"],
                [idx, first, step],
            ),
            FindKeys::Unknown => ("unknown", ["", "", ""], [0, 0, 0]),
        };
        out.bulk(kind.as_bytes());
        out.bulk(b"spec");
        if kind == "unknown" {
            out.map(0);
            continue;
        }
        out.map(3);
        for (name, value) in names.iter().zip(values) {
            out.bulk(name.as_bytes());
            out.int(value);
        }
    }
}

/// A key a command names, with its key spec's flags (`RW`, `access`...).
pub struct KeyRef<'a> {
    pub key: &'a [u8],
    pub flags: &'static [&'static str],
}

/// Whether the legacy (first, last, step) triple cannot name every key
/// (a keyword or a count finds some, a spec is incomplete, ranges do not
/// join up): Redis's `movablekeys`, by `populateCommandLegacyRangeSpec`.
pub fn movable_keys(doc: &CommandDoc) -> bool {
    let mut movable = false;
    let (mut joined, mut last) = (false, 0u32);
    for spec in doc.key_specs {
        let incomplete = spec.flags.contains(&"INCOMPLETE");
        let (BeginSearch::Index(pos), FindKeys::Range(lastkey, step, _)) =
            (&spec.begin_search, &spec.find_keys)
        else {
            movable = true;
            continue;
        };
        if doc.key_specs.len() == 1 {
            return incomplete;
        }
        if *step != 1 || (last != 0 && i64::from(last) != pos - 1) {
            movable = true;
            continue;
        }
        movable |= incomplete;
        // Redis compares as unsigned: a range to the end (negative) wins.
        let absolute = if *lastkey >= 0 {
            lastkey + pos
        } else {
            *lastkey
        };
        last = last.max(absolute as u32);
        joined = true;
    }
    movable || (!doc.key_specs.is_empty() && !joined)
}

/// The keys `args` names by `doc`'s key specs (Redis's
/// `getKeysUsingKeySpecs`): `None` when a spec cannot be followed (a bad
/// key count) or its flags vary with the arguments (SET, BITFIELD).
pub fn keys_by_specs<'a>(
    doc: &CommandDoc,
    args: &crate::protocol::Args<'a>,
) -> Option<Vec<KeyRef<'a>>> {
    if doc
        .key_specs
        .iter()
        .any(|s| s.flags.contains(&"VARIABLE_FLAGS"))
    {
        return None;
    }
    let argc = args.len() as i64;
    let mut keys = Vec::new();
    for spec in doc.key_specs {
        let first = match spec.begin_search {
            BeginSearch::Index(pos) if pos < argc => pos,
            BeginSearch::Index(_) => continue,
            BeginSearch::Keyword(keyword, startfrom) => {
                let (start, end) = if startfrom > 0 {
                    (startfrom, argc - 1)
                } else {
                    (argc + startfrom, 1)
                };
                let mut i = start;
                let mut found = None;
                loop {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if args
                        .get(i as usize)
                        .eq_ignore_ascii_case(keyword.as_bytes())
                    {
                        found = Some(i + 1);
                        break;
                    }
                    if i == end {
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                match found {
                    Some(first) => first,
                    None => continue,
                }
            }
            BeginSearch::Unknown => return None,
        };
        let (first, last, step) = match spec.find_keys {
            FindKeys::Range(lastkey, step, limit) => {
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, step)
            }
            FindKeys::Keynum(idx, firstkey, step) => {
                let at = first + idx;
                if at >= argc {
                    return None;
                }
                let n = crate::protocol::request::parse_i64(args.get(at as usize))
                    .filter(|n| *n >= 0)?;
                let first = first + firstkey;
                (first, first + n - 1, step)
            }
            FindKeys::Unknown => return None,
        };
        // Out of bounds: a syntax error (Redis's invalid spec).
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push(KeyRef {
                key: args.get(i as usize),
                flags: spec.flags,
            });
            i += step.max(1);
        }
    }
    Some(keys)
}

/// Whether a key spec's flags mean the key's data is read (`access`),
/// and whether it is written (`insert`, `delete`, `update`), as ACL
/// `%R~`/`%W~` judge them.
pub fn reads_and_writes(flags: &[&str]) -> (bool, bool) {
    let read = flags.contains(&"ACCESS");
    let write = flags
        .iter()
        .any(|f| matches!(*f, "INSERT" | "DELETE" | "UPDATE"));
    (read, write)
}

/// COMMAND INFO's tips.
pub fn write_tips(out: &mut Reply, doc: Option<&CommandDoc>) {
    let tips = doc.map_or(&[][..], |d| d.tips);
    out.set(tips.len());
    for tip in tips {
        out.bulk(tip.as_bytes());
    }
}
