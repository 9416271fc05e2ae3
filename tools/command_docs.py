#!/usr/bin/env python3
"""Generates src/command_table/docs_data.rs: what COMMAND DOCS and COMMAND INFO
answer about each command beyond lapse's own table (summary, since,
complexity, history, doc flags, arguments, key specs, tips), taken from
redis-server 7.0's command reference files (src/commands/*.json of the
redis repository), spelled as redis-server's generated command table
spells them (argument names in lowercase, tokens in capitals, groups
with dashes).

The fields it reads are kept in tools/redis-commands.json, so that the
docs can be regenerated (and tests/command_docs.rs can check they are
current) without a Redis checkout:

    tools/command_docs.py tools/redis-commands.json tools/lapse-commands.json \
        > src/command_table/docs_data.rs

(tools/lapse-commands.json: lapse's own commands, written by hand in the
same shape.)

To take them from another Redis tag (a clone of redis/redis at REPO):

    tools/command_docs.py extract REPO 7.0.15 > tools/redis-commands.json
"""
import json
import subprocess
import sys


def rust_str(s):
    if s is None:
        return "None"
    return "Some(%s)" % lit(s)


def c_token(token):
    """A token as redis-server's table holds it: Redis's generator pastes
    it into a C string literal, where MIGRATE's `""` token becomes two
    adjacent empty literals, an empty string."""
    return "" if token == '""' else token.upper()


def lit(s):
    return json.dumps(s, ensure_ascii=False)


def arg(a, indent):
    pad = " " * indent
    flags = [f for f in ("optional", "multiple", "multiple_token") if a.get(f)]
    sub = "".join(arg(x, indent + 4) for x in a.get("arguments", []))
    return (
        f"{pad}ArgDoc {{ name: {lit(a['name'].lower())}, kind: {lit(a['type'])}, "
        f"key_spec_index: {a.get('key_spec_index', -1)}, "
        f"token: {rust_str(c_token(a['token']) if 'token' in a else None)}, "
        f"summary: {rust_str(a.get('summary'))}, since: {rust_str(a.get('since'))}, "
        f"deprecated_since: {rust_str(a.get('deprecated_since'))}, "
        f"flags: &[{', '.join(lit(f) for f in flags)}], args: &[\n{sub}{pad}] }},\n"
    )


def key_spec(k):
    flags = ", ".join(lit(f) for f in k.get("flags", []))
    bs = k.get("begin_search", {})
    if "index" in bs:
        begin = f"BeginSearch::Index({bs['index']['pos']})"
    elif "keyword" in bs:
        begin = f"BeginSearch::Keyword({lit(bs['keyword']['keyword'])}, {bs['keyword']['startfrom']})"
    else:
        begin = "BeginSearch::Unknown"
    fk = k.get("find_keys", {})
    if "range" in fk:
        r = fk["range"]
        find = f"FindKeys::Range({r['lastkey']}, {r['step']}, {r['limit']})"
    elif "keynum" in fk:
        r = fk["keynum"]
        find = f"FindKeys::Keynum({r['keynumidx']}, {r['firstkey']}, {r['step']})"
    else:
        find = "FindKeys::Unknown"
    return (
        f"        KeySpecDoc {{ notes: {rust_str(k.get('notes'))}, flags: &[{flags}], "
        f"begin_search: {begin}, find_keys: {find} }},\n"
    )


ARG_FIELDS = ["name", "type", "key_spec_index", "token", "summary", "since",
              "deprecated_since", "optional", "multiple", "multiple_token", "arguments"]
COMMAND_FIELDS = ["container", "summary", "since", "group", "complexity", "doc_flags",
                  "deprecated_since", "replaced_by", "history", "command_tips",
                  "key_specs", "arguments"]
KEY_SPEC_FIELDS = ["notes", "flags", "begin_search", "find_keys"]


def kept_arg(a):
    kept = {k: a[k] for k in ARG_FIELDS if k in a}
    if "arguments" in kept:
        kept["arguments"] = [kept_arg(x) for x in kept["arguments"]]
    return kept


def extract(repo, tag):
    """The fields the generator reads, by full command name, from the
    reference files of `repo` at `tag`."""
    names = subprocess.run(
        ["git", "-C", repo, "ls-tree", "--name-only", tag, "src/commands/"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    commands = {}
    for path in names:
        if not path.endswith(".json"):
            continue
        data = json.loads(subprocess.run(
            ["git", "-C", repo, "show", f"{tag}:{path}"],
            capture_output=True, text=True, check=True,
        ).stdout)
        for name, d in data.items():
            full = name.lower()
            if "container" in d:
                full = d["container"].lower() + "|" + full
            kept = {k: d[k] for k in COMMAND_FIELDS if k in d}
            if "arguments" in kept:
                kept["arguments"] = [kept_arg(a) for a in kept["arguments"]]
            if "key_specs" in kept:
                kept["key_specs"] = [
                    {k: ks[k] for k in KEY_SPEC_FIELDS if k in ks} for ks in kept["key_specs"]
                ]
            commands[full] = kept
    return {"tag": tag, "commands": commands}


def main():
    if sys.argv[1] == "extract":
        json.dump(extract(sys.argv[2], sys.argv[3]), sys.stdout, indent=1,
                  sort_keys=True, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    with open(sys.argv[1], encoding="utf-8") as f:
        extracted = json.load(f)
    tag = extracted["tag"]
    commands = dict(extracted["commands"])
    # lapse's own commands (tools/lapse-commands.json), in the same shape.
    for extra in sys.argv[2:]:
        with open(extra, encoding="utf-8") as f:
            commands.update(json.load(f)["commands"])
    entries = list(commands.items())
    entries.sort()
    out = sys.stdout
    out.write("//! What COMMAND DOCS and COMMAND INFO say about each command beyond the\n")
    out.write(f"//! command table: generated by tools/command_docs.py from Redis {tag}'s\n")
    out.write("//! command reference files and lapse's own (tools/lapse-commands.json).\n")
    out.write("//! Do not edit by hand.\n\n")
    out.write("use super::docs::{ArgDoc, BeginSearch, CommandDoc, FindKeys, KeySpecDoc};\n\n")
    out.write("pub static DOCS: &[CommandDoc] = &[\n")
    for full, d in entries:
        history = "".join(f"        ({lit(v)}, {lit(t)}),\n" for v, t in d.get("history", []))
        doc_flags = ", ".join(lit(f.lower()) for f in d.get("doc_flags", []))
        tips = ", ".join(lit(t.lower()) for t in d.get("command_tips", []))
        args = "".join(arg(a, 8) for a in d.get("arguments", []))
        specs = "".join(key_spec(k) for k in d.get("key_specs", []))
        out.write(
            f"    CommandDoc {{\n        name: {lit(full)},\n        summary: {lit(d.get('summary', ''))},\n"
            f"        since: {lit(d.get('since', ''))},\n        group: {lit(d.get('group', '').replace('_', '-'))},\n"
            f"        complexity: {rust_str(d.get('complexity'))},\n        doc_flags: &[{doc_flags}],\n"
            f"        deprecated_since: {rust_str(d.get('deprecated_since'))},\n"
            f"        replaced_by: {rust_str(d.get('replaced_by'))},\n"
            f"        history: &[\n{history}        ],\n        tips: &[{tips}],\n"
            f"        key_specs: &[\n{specs}        ],\n        args: &[\n{args}        ],\n    }},\n"
        )
    out.write("];\n")


if __name__ == "__main__":
    main()
