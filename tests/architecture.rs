//! The import graph keeps the shape docs/ARCHITECTURE.md documents: this
//! test reads every `src/` file's paths into other modules (`use crate::`,
//! `super::`, `self::`, a child module's name), then checks the circles
//! (modules that import each other), the arrows that run from a lower
//! layer up to a higher one, and the size of the source files, against
//! limits that only go down. Each failure names the files to look at.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom first: a module may import its own layer and those
/// below. A module is placed by the longest prefix listed (`commands`
/// holds every `commands/` file). Kept in step with docs/ARCHITECTURE.md.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "base: pure helpers, the wire protocol, clocks and memory",
        &[
            "clock",
            "cluster/message",
            "cluster/slot",
            "deadlines",
            "dict",
            "float",
            "glob",
            "histogram",
            "hll",
            "geohash",
            "lzf",
            "fdlimit",
            "files",
            "latency",
            "net",
            "log",
            "protocol",
            "memory",
            "slowlog",
            "tls",
            "words",
        ],
    ),
    ("values and the command table", &["value", "command_table"]),
    (
        "the keyspace and file formats",
        &[
            "db",
            "lazyfree",
            "persistence",
            "persistence/rdb",
            "persistence/rdb_load",
            "persistence/rdb_check",
            "persistence/aof_commands",
            "digest",
            "expire",
        ],
    ),
    (
        "what the server state owns",
        &[
            "acl",
            "persistence/aof_files",
            "persistence/jobs",
            "blocking",
            "busy",
            "cluster",
            "cmdstats",
            "config",
            "connection",
            "evict/pool",
            "lease",
            "monitor",
            "multi",
            "notify",
            "pause",
            "propagate",
            "pubsub",
            "replication",
            "scripting",
            "tracking",
        ],
    ),
    ("the server state", &["state"]),
    (
        "functions over the whole state",
        &[
            "info",
            "evict",
            "persistence/save",
            "persistence/load",
            "persistence/aof",
            "persistence/aof_load",
            "persistence/shutdown",
        ],
    ),
    ("the command families", &["commands"]),
    ("the dispatcher", &["dispatch"]),
    ("the event loop", &["server", "harness"]),
];

/// The largest circle allowed (files that import each other in a loop:
/// a parent module and a child that uses its types, the generated docs
/// and their types); no import may run up the layers.
const MAX_CIRCLE: usize = 3;
/// No source file is longer (generated data aside): split it by job.
const MAX_LINES: usize = 1500;
const GENERATED: &[&str] = &["command_table/docs_data.rs"];

/// A module's path (`["commands", "strings"]`) by its file under src/.
type Module = Vec<String>;

fn modules(src: &Path) -> BTreeMap<Module, String> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let Some(stem) = rel.strip_suffix(".rs") else {
                continue;
            };
            let mut parts: Module = stem.split('/').map(str::to_string).collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            // A file of unit tests (`#[cfg(test)] mod tests;`) is no room.
            if parts == ["lib"] || parts == ["main"] || parts.last().is_some_and(|p| p == "tests") {
                continue;
            }
            found.insert(parts, rel);
        }
    }
    found
}

/// The code of a file without comments, string contents and its unit
/// tests (a `#[cfg(test)] mod tests` at the end).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') || bytes.get(i + 1) == Some(&b'\\') => {
                // A char literal ('"', '\n'): skipped whole.
                let end = text[i + 1..].find('\'').map_or(bytes.len(), |e| i + 2 + e);
                i = end;
            }
            c => {
                out.push(char::from(c));
                i += 1;
            }
        }
    }
    out
}

/// Every path a `use` tree names: `a::{b, c::{d}}` gives `a::b`, `a::c::d`.
fn expand_use(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::").trim();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let base = join(prefix, head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&base, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(&base, &inner[start..], out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(join(prefix, path));
    }
}

fn join(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (_, true) => prefix.to_string(),
        _ => format!("{prefix}::{path}"),
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a file's code names: its `use` trees, and every `a::b`
/// path in the code that starts at `crate`, `super`, `self` or a child.
fn paths_in(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before_ok = at == 0 || !is_ident(rest[..at].chars().last().unwrap_or(' '));
        let tail = &rest[at + 4..];
        if before_ok {
            if let Some(end) = tail.find(';') {
                expand_use("", &tail[..end], &mut paths);
            }
        }
        rest = tail;
    }
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if is_ident(chars[i]) && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            let mut j = i;
            let mut path = String::new();
            loop {
                let start = j;
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                path.extend(&chars[start..j]);
                if j + 2 < chars.len()
                    && chars[j] == ':'
                    && chars[j + 1] == ':'
                    && is_ident(chars[j + 2])
                {
                    path.push_str("::");
                    j += 2;
                } else {
                    break;
                }
            }
            if path.contains("::") {
                paths.push(path);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    paths
}

/// The module a path in `from` leads to, if it is one of the crate's.
fn target(from: &Module, path: &str, all: &BTreeMap<Module, String>) -> Option<Module> {
    let parts: Vec<&str> = path.split("::").collect();
    // A file's own module: `src/a/b.rs` is `a::b`; `super` is `a`.
    let here = from.clone();
    let mut full: Module = match parts[0] {
        "crate" => Vec::new(),
        "super" => {
            let mut m = here.clone();
            m.pop();
            m
        }
        "self" => here.clone(),
        child => {
            let mut m = here.clone();
            m.push(child.to_string());
            if !all.contains_key(&m) {
                return None;
            }
            here.clone()
        }
    };
    let skip = usize::from(matches!(parts[0], "crate" | "super" | "self"));
    let mut rest = &parts[skip..];
    while rest.first() == Some(&"super") {
        full.pop();
        rest = &rest[1..];
    }
    full.extend(rest.iter().map(|s| s.to_string()));
    (1..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|m| all.contains_key(m))
}

fn layer_of(module: &Module) -> usize {
    let name = module.join("/");
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, mods))| mods.iter().map(move |m| (i, *m)))
        .filter(|(_, m)| name == *m || name.starts_with(&format!("{m}/")))
        .max_by_key(|(_, m)| m.len())
        .map(|(i, _)| i)
        .unwrap_or_else(|| {
            panic!("src/{name} is in no layer: add it to LAYERS and docs/ARCHITECTURE.md")
        })
}

/// The circles (strongly connected components of more than one module).
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        stack: Vec<Module>,
        on_stack: BTreeSet<Module>,
        found: Vec<Vec<Module>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: &Module) {
            let n = self.index.len();
            self.index.insert(v.clone(), n);
            self.low.insert(v.clone(), n);
            self.stack.push(v.clone());
            self.on_stack.insert(v.clone());
            let next: Vec<Module> = self.edges.get(v).into_iter().flatten().cloned().collect();
            for w in next {
                if !self.index.contains_key(&w) {
                    self.visit(&w);
                    let low = self.low[v].min(self.low[&w]);
                    self.low.insert(v.clone(), low);
                } else if self.on_stack.contains(&w) {
                    let low = self.low[v].min(self.index[&w]);
                    self.low.insert(v.clone(), low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(&w);
                    let done = &w == v;
                    component.push(w);
                    if done {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found
}

fn graph() -> (BTreeMap<Module, String>, BTreeMap<Module, BTreeSet<Module>>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let all = modules(&src);
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, file) in &all {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        let entry = edges.entry(module.clone()).or_default();
        let paths = paths_in(&code_of(&text));
        // Modules a `use` names (`use crate::commands::{self, ...}`,
        // `use crate::value::hash`): code reaches into them by that name.
        let mut aliases: BTreeMap<String, Module> = BTreeMap::new();
        for path in &paths {
            let (path, name) = match path.strip_suffix("::self") {
                Some(p) => (p, p.rsplit("::").next().unwrap_or(p)),
                None => (path.as_str(), path.rsplit("::").next().unwrap_or(path)),
            };
            if let Some(to) = target(module, path, &all) {
                if to.last().is_some_and(|last| last == name) {
                    aliases.insert(name.to_string(), to);
                }
            }
        }
        for path in &paths {
            let first = path.split("::").next().unwrap_or_default();
            let path = match aliases.get(first) {
                Some(alias) if !matches!(first, "crate" | "super" | "self") => {
                    format!("crate::{}{}", alias.join("::"), &path[first.len()..])
                }
                _ => path.clone(),
            };
            if let Some(to) = target(module, &path, &all) {
                if &to != module {
                    entry.insert(to);
                }
            }
        }
    }
    (all, edges)
}

#[test]
fn no_circle_grows_past_its_limit() {
    let (_, edges) = graph();
    let mut found = circles(&edges);
    found.sort_by_key(|c| std::cmp::Reverse(c.len()));
    let largest = found.first().map_or(0, Vec::len);
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let names: Vec<String> = c.iter().map(|m| m.join("/")).collect();
            format!("{} files: {}", c.len(), names.join(", "))
        })
        .collect();
    assert!(
        largest <= MAX_CIRCLE,
        "a circle of {largest} files (limit {MAX_CIRCLE}):\n{}",
        shown.join("\n")
    );
}

#[test]
fn no_import_runs_up_the_layers() {
    let (_, edges) = graph();
    let up: Vec<String> = edges
        .iter()
        .flat_map(|(from, tos)| tos.iter().map(move |to| (from, to)))
        .filter(|(from, to)| layer_of(from) < layer_of(to))
        .map(|(from, to)| format!("{} -> {}", from.join("/"), to.join("/")))
        .collect();
    assert!(
        up.is_empty(),
        "{} imports run from a lower layer up (see LAYERS and docs/ARCHITECTURE.md):\n{}",
        up.len(),
        up.join("\n")
    );
}

#[test]
fn every_module_has_a_layer_and_no_file_grows_too_long() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (module, file) in modules(&src) {
        layer_of(&module);
        if GENERATED.contains(&file.as_str()) {
            continue;
        }
        let lines = std::fs::read_to_string(src.join(&file))
            .unwrap()
            .lines()
            .count();
        assert!(
            lines <= MAX_LINES,
            "src/{file} has {lines} lines (limit {MAX_LINES}): split it"
        );
    }
}

/// The reader finds what it should: a grouped `use`, a path in code, a
/// child module's name, and nothing inside strings or comments.
#[test]
fn the_reader_sees_imports_only() {
    let code = code_of(
        "use crate::{a::{b, c}, d};\n// use crate::e;\nfn f() { let s = \"crate::g::h\"; let q = '\"'; crate::i::j(); k::l(); }",
    );
    let paths = paths_in(&code);
    for want in [
        "crate::a::b",
        "crate::a::c",
        "crate::d",
        "crate::i::j",
        "k::l",
    ] {
        assert!(paths.iter().any(|p| p == want), "{want} in {paths:?}");
    }
    assert!(!paths
        .iter()
        .any(|p| p.contains('e') && p.starts_with("crate::e")));
    assert!(!paths.iter().any(|p| p.contains("crate::g")));
}
