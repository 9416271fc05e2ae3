//! Server commands: COMMAND, INFO, CONFIG, TIME, SHUTDOWN (DEBUG is in `debug`).

use super::{is, CmdError, CmdResult, Command, Ctx, Handler};
use crate::config::{find_setting, BadValue};
use crate::glob;
use crate::protocol::{Args, Reply};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("command", command_all),
    ("command|help", command_help),
    ("command|getkeysandflags", command_getkeys),
    ("command|getkeys", command_getkeys),
    ("command|count", command_count),
    ("command|info", command_info),
    ("command|docs", command_docs),
    ("command|list", command_list),
    ("info", info),
    ("monitor", monitor),
    ("latency|latest", latency_latest),
    ("latency|history", latency_history),
    ("latency|reset", latency_reset),
    ("latency|histogram", latency_histogram),
    ("latency|graph", latency_graph),
    ("latency|doctor", latency_doctor),
    ("latency|help", latency_help),
    ("slowlog|get", slowlog_get),
    ("slowlog|len", slowlog_len),
    ("slowlog|reset", slowlog_reset),
    ("slowlog|help", slowlog_help),
    ("memory|usage", memory_usage),
    ("memory|stats", memory_stats),
    ("memory|doctor", memory_doctor),
    ("memory|purge", memory_purge),
    ("memory|malloc-stats", memory_malloc_stats),
    ("memory|help", memory_help),
    ("config|get", config_get),
    ("config|set", config_set),
    ("config|rewrite", config_rewrite),
    ("config|resetstat", config_resetstat),
    ("config|help", config_help),
    ("time", time),
    ("save", save),
    ("bgsave", bgsave),
    ("bgrewriteaof", bgrewriteaof),
    ("lastsave", lastsave),
    ("shutdown", shutdown),
];

/// SLOWLOG GET [count]: the newest `count` entries (10; -1: all), each
/// id, unix time, microseconds, arguments, client address, client name.
fn slowlog_get(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::with_arg(
            "ERR unknown subcommand or wrong number of arguments for '",
            &args[1],
            "'. Try SLOWLOG HELP.",
        ));
    }
    let count = match (args.len() == 3).then(|| &args[2]) {
        None => 10,
        Some(arg) => match super::int_arg(arg) {
            Ok(-1) => usize::MAX,
            Ok(n) if n >= 0 => n as usize,
            _ => {
                return Err(CmdError::Static(
                    "ERR count should be greater than or equal to -1",
                ))
            }
        },
    };
    let log = &ctx.server.slowlog;
    let entries: Vec<_> = log.newest(count).collect();
    let out = &mut ctx.session.reply;
    out.array(entries.len());
    for e in entries {
        out.array(6);
        out.int(e.id as i64);
        out.int(e.time_s);
        out.int(e.duration_us as i64);
        out.array(e.args.len());
        for arg in &e.args {
            out.bulk(arg);
        }
        out.bulk(e.addr.as_bytes());
        out.bulk(e.name.as_bytes());
    }
    Ok(())
}

fn slowlog_len(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let len = ctx.server.slowlog.len();
    ctx.out().int(len as i64);
    Ok(())
}

fn slowlog_reset(ctx: &mut Ctx, _args: Args) -> CmdResult {
    ctx.server.slowlog.reset();
    ctx.out().ok();
    Ok(())
}

fn slowlog_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    );
    Ok(())
}

/// LATENCY LATEST: [event, time of the latest sample, its ms, worst ms].
fn latency_latest(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let latest: Vec<_> = ctx.server.latency.latest().collect();
    let out = ctx.out();
    out.array(latest.len());
    for (event, (time, ms), max_ms) in latest {
        out.array(4);
        out.bulk(event.as_bytes());
        out.int(time);
        out.int(ms as i64);
        out.int(max_ms as i64);
    }
    Ok(())
}

/// LATENCY HISTORY <event>: [time, ms] pairs, oldest first.
fn latency_history(ctx: &mut Ctx, args: Args) -> CmdResult {
    let samples = ctx.server.latency.history(&args[2]);
    let out = ctx.out();
    out.array(samples.len());
    for (time, ms) in samples {
        out.array(2);
        out.int(time);
        out.int(ms as i64);
    }
    Ok(())
}

/// LATENCY RESET [event ...]: how many events were forgotten.
fn latency_reset(ctx: &mut Ctx, args: Args) -> CmdResult {
    let latency = &mut ctx.server.latency;
    let reset = if args.len() == 2 {
        latency.reset(None)
    } else {
        args.iter().skip(2).map(|e| latency.reset(Some(e))).sum()
    };
    ctx.out().int(reset as i64);
    Ok(())
}

/// LATENCY HISTOGRAM [command ...]: per command, its calls and the
/// cumulative distribution of its latencies (see `cmdstats`).
fn latency_histogram(ctx: &mut Ctx, args: Args) -> CmdResult {
    let names: Vec<&[u8]> = args.iter().skip(2).collect();
    let distributions = ctx.server.cmdstats.distributions(&names);
    let out = &mut ctx.session.reply;
    out.map(distributions.len());
    for (name, calls, steps) in distributions {
        out.bulk(name.as_bytes());
        out.map(2);
        out.bulk(b"calls");
        out.int(calls as i64);
        out.bulk(b"histogram_usec");
        out.map(steps.len());
        for (us, count) in steps {
            out.int(us as i64);
            out.int(count as i64);
        }
    }
    Ok(())
}

/// LATENCY HELP: Redis's text, less DOCTOR and GRAPH (not in lapse).
fn latency_graph(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_s = ctx.now_ms / 1000;
    match ctx.server.latency.graph(&args[2], now_s) {
        Some(graph) => {
            ctx.out().verbatim(graph.as_bytes());
            Ok(())
        }
        None => Err(CmdError::with_arg(
            "ERR No samples available for event '",
            &args[2],
            "'",
        )),
    }
}

fn latency_doctor(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let report = ctx
        .server
        .latency
        .doctor(ctx.server.config.latency_monitor_threshold);
    ctx.out().verbatim(report.as_bytes());
    Ok(())
}

fn latency_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    );
    Ok(())
}

/// MEMORY USAGE key [SAMPLES count]: about how many bytes the key takes
/// (see `Db::memory_usage`); SAMPLES 0 sizes every element (default 5).
fn memory_usage(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut samples = 5usize;
    let mut i = 3;
    while i < args.len() {
        if super::is(&args[i], "SAMPLES") && i + 1 < args.len() {
            let n = super::int_arg(&args[i + 1])?;
            samples = usize::try_from(n).map_err(|_| CmdError::Syntax)?;
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    match ctx.db().memory_usage(&args[2], samples) {
        Some(bytes) => ctx.out().int(bytes as i64),
        None => ctx.out().null(),
    }
    Ok(())
}

/// MEMORY STATS: where the memory goes, under Redis's names.
fn memory_stats(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let m = crate::info::MemoryStats::gather(ctx.server, ctx.peers);
    let keys = m.keys.max(1);
    let net = m.total.saturating_sub(m.startup).max(1);
    let ints: [(&str, usize); 10] = [
        ("peak.allocated", m.peak),
        ("total.allocated", m.total),
        ("startup.allocated", m.startup),
        ("replication.backlog", m.replication_backlog),
        ("clients.slaves", m.clients_replicas),
        ("clients.normal", m.clients_normal),
        ("aof.buffer", m.aof_buffer),
        ("lua.caches", m.lua_caches),
        ("overhead.total", m.overhead()),
        ("keys.count", m.keys),
    ];
    let out = ctx.out();
    out.map(ints.len() + m.tables.len() + 6);
    for (name, value) in ints {
        out.bulk(name.as_bytes());
        out.int(value as i64);
    }
    for (db, main, expires) in &m.tables {
        out.bulk(format!("db.{db}").as_bytes());
        out.map(2);
        out.bulk(b"overhead.hashtable.main");
        out.int(*main as i64);
        out.bulk(b"overhead.hashtable.expires");
        out.int(*expires as i64);
    }
    out.bulk(b"keys.bytes-per-key");
    out.int((net / keys) as i64);
    out.bulk(b"dataset.bytes");
    out.int(m.dataset() as i64);
    out.bulk(b"dataset.percentage");
    out.double(m.dataset_percentage());
    out.bulk(b"peak.percentage");
    out.double(m.peak_percentage());
    out.bulk(b"fragmentation");
    out.double(m.fragmentation());
    out.bulk(b"fragmentation.bytes");
    out.int(m.rss as i64 - m.total as i64);
    Ok(())
}

/// MEMORY DOCTOR: Redis's words for an instance too small to judge, else
/// what looks wrong (fragmentation, a peak far above the use now, big
/// client buffers), or that nothing does.
fn memory_doctor(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let m = crate::info::MemoryStats::gather(ctx.server, ctx.peers);
    let text = if m.total < 5 * 1024 * 1024 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.".to_string()
    } else {
        let mut issues = Vec::new();
        if m.fragmentation() > 1.4 {
            issues.push(format!(" * High fragmentation: RSS is {:.2} times what is allocated; MEMORY PURGE may give some back.", m.fragmentation()));
        }
        if m.peak as f64 > m.total as f64 * 1.5 {
            issues.push(" * Peak memory: in the past this instance used more than 150% the memory that is currently using.".to_string());
        }
        if m.clients_normal > 200 * 1024 * 1024 {
            issues.push(" * Big client buffers: the clients' output and query buffers hold more than 200 MB.".to_string());
        }
        if issues.is_empty() {
            "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.".to_string()
        } else {
            format!(
                "Sam, I detected a few issues in this Redis instance memory implants:\n\n{}\n",
                issues.join("\n\n")
            )
        }
    };
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

/// MEMORY PURGE: gives the allocator's free pages back to the OS.
/// MONITOR: the client sees every command the server runs from now on
/// (see `monitor`), until RESET or it leaves. A replica's link cannot.
fn monitor(ctx: &mut Ctx, _args: Args) -> CmdResult {
    if ctx.session.replica.is_some() {
        return Ok(());
    }
    ctx.server.monitors.add(crate::pubsub::Subscriber {
        client: ctx.session.id,
        token: ctx.session.token,
    });
    ctx.out().ok();
    Ok(())
}

fn memory_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
    Ok(())
}

fn config_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
    Ok(())
}

fn memory_purge(ctx: &mut Ctx, _args: Args) -> CmdResult {
    crate::lazyfree::return_free_memory();
    ctx.out().ok();
    Ok(())
}

fn memory_malloc_stats(ctx: &mut Ctx, _args: Args) -> CmdResult {
    ctx.out()
        .verbatim(b"Stats not supported for the current allocator");
    Ok(())
}

/// BGREWRITEAOF: a new base for the AOF, written in the background (see
/// `aof`); scheduled while a save or a transaction runs.
fn bgrewriteaof(ctx: &mut Ctx, _args: Args) -> CmdResult {
    if ctx.server.persist.job() == Some(crate::persistence::jobs::Job::AofRewrite) {
        return Err(CmdError::Static(
            "ERR Background append only file rewriting already in progress",
        ));
    }
    let now_ms = ctx.now_ms;
    match crate::persistence::aof::request_rewrite(ctx.server, now_ms) {
        Ok(crate::persistence::aof::Requested::Started) => {
            ctx.out().simple("Background append only file rewriting started")
        }
        Ok(crate::persistence::aof::Requested::Scheduled) => {
            ctx.out().simple("Background append only file rewriting scheduled")
        }
        Err(_) => {
            return Err(CmdError::Static(
                "ERR Can't execute an AOF background rewriting. Please check the server logs for more information.",
            ))
        }
    }
    Ok(())
}

/// COMMAND INFO's entry for one command (Redis 7's ten fields).
fn write_command_info(out: &mut Reply, c: &Command, parent: Option<&Command>, full_name: &str) {
    out.array(10);
    out.bulk(full_name.as_bytes());
    out.int(i64::from(c.arity));
    let mut flags: Vec<&str> = c.flags.names().collect();
    if c.numkeys_at.is_some()
        || super::docs::lookup(full_name).is_some_and(super::docs::movable_keys)
    {
        flags.push("movablekeys");
    }
    out.set(flags.len());
    for flag in flags {
        out.simple(flag);
    }
    out.int(i64::from(c.keys.0));
    out.int(i64::from(c.keys.1));
    out.int(i64::from(c.keys.2));
    let categories: Vec<&str> = crate::acl::categories(c, parent).names().collect();
    out.set(categories.len());
    for category in categories {
        out.simple(&format!("@{category}"));
    }
    let doc = super::docs::lookup(full_name);
    super::docs::write_tips(out, doc);
    super::docs::write_key_specs(out, doc.map_or(&[][..], |d| d.key_specs));
    out.array(c.subcommands.len());
    for sub in c.subcommands {
        write_command_info(out, sub, Some(c), &format!("{}|{}", c.name, sub.name));
    }
}

/// COMMAND DOCS's entry for one command: enough for redis-cli's hints.
fn write_command_docs(out: &mut Reply, c: &Command, full_name: &str) {
    out.bulk(full_name.as_bytes());
    let subs = c.subcommands.len();
    match super::docs::lookup(full_name) {
        Some(doc) => super::docs::write_docs(out, doc, subs),
        // lapse's own (and newer Redis's) commands: what the table knows.
        None => {
            out.map(3 + usize::from(subs > 0));
            out.bulk(b"summary");
            out.bulk(c.summary.as_bytes());
            out.bulk(b"since");
            out.bulk(newer_since(full_name).as_bytes());
            out.bulk(b"group");
            out.bulk(c.group.as_bytes());
            if subs > 0 {
                out.bulk(b"subcommands");
            }
        }
    }
    if subs > 0 {
        out.map(subs);
        for sub in c.subcommands {
            write_command_docs(out, sub, &format!("{}|{}", c.name, sub.name));
        }
    }
}

/// The version that brought a command Redis 7.0 has no page for: Redis
/// 7.4's hash-field expiry, 8.0's HGETDEL/HGETEX/HSETEX and 8.12's set
/// member expiry; lapse's sorted-set member expiry and leases.
fn newer_since(name: &str) -> &'static str {
    match name {
        "hgetdel" | "hgetex" | "hsetex" => "8.0.0",
        "sexpire" | "spexpire" | "sexpireat" | "spexpireat" | "sttl" | "spttl" | "sexpiretime"
        | "spexpiretime" | "spersist" => "8.12.0",
        // lapse's own (sorted-set member expiry): lapse's version.
        "zexpire" | "zpexpire" | "zexpireat" | "zpexpireat" | "zttl" | "zpttl" | "zexpiretime"
        | "zpexpiretime" | "zpersist" | "expiremember" | "expirememberat" | "pexpirememberat"
        | "getlease" | "lease" | "lease|release" => crate::LAPSE_VERSION,
        n if n.starts_with("hexpire")
            || n.starts_with("hpexpire")
            || matches!(n, "httl" | "hpttl" | "hpersist") =>
        {
            "7.4.0"
        }
        _ => "1.0.0",
    }
}

fn command_all(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 1 {
        return Err(CmdError::wrong_arity("command"));
    }
    let all: Vec<&Command> = crate::command_table::all().collect();
    let out = ctx.out();
    out.array(all.len());
    for c in all {
        write_command_info(out, c, None, c.name);
    }
    Ok(())
}

/// COMMAND GETKEYS command arg...: the keys the command's key spec finds.
/// COMMAND GETKEYS / GETKEYSANDFLAGS command [arg...]: the keys the
/// command would use (by its key specs, as Redis), and their flags.
fn command_getkeys(ctx: &mut Ctx, args: Args) -> CmdResult {
    let with_flags = is(&args[1], "getkeysandflags");
    let Some(top) = super::lookup(&args[2]) else {
        return Err(CmdError::Static("ERR Invalid command specified"));
    };
    let target = args.skip(2);
    let (cmd, parent) = match top.subcommands.is_empty() || target.len() < 2 {
        true => (top, None),
        false => match top.subcommand(target.get(1)) {
            Some(sub) => (sub, Some(top)),
            None => return Err(CmdError::Static("ERR Invalid command specified")),
        },
    };
    if !cmd.has_keys() {
        return Err(CmdError::Static("ERR The command has no key arguments"));
    }
    if !cmd.arity_ok(target.len()) {
        return Err(CmdError::Static(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let keys = crate::command_table::keys_with_flags(cmd, parent, &target).ok_or(
        CmdError::Static("ERR Invalid arguments specified for command"),
    )?;
    let out = ctx.out();
    out.array(keys.len());
    for k in keys {
        if !with_flags {
            out.bulk(k.key);
            continue;
        }
        out.array(2);
        out.bulk(k.key);
        super::docs::write_key_flags(out, k.flags);
    }
    Ok(())
}

fn command_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    );
    Ok(())
}

fn command_count(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let n = crate::command_table::all().count();
    ctx.out().int(n as i64);
    Ok(())
}

fn command_info(ctx: &mut Ctx, args: Args) -> CmdResult {
    let out = ctx.out();
    if args.len() == 2 {
        let all: Vec<&Command> = crate::command_table::all().collect();
        out.array(all.len());
        for c in all {
            write_command_info(out, c, None, c.name);
        }
        return Ok(());
    }
    out.array(args.len() - 2);
    for name in args.iter().skip(2) {
        match lookup_full_name(name) {
            Some((c, parent)) => write_command_info(out, c, parent, &super::full_name(c, parent)),
            None => out.null_array(),
        }
    }
    Ok(())
}

/// A command or, as `parent|sub`, a subcommand (COMMAND INFO / DOCS take
/// both, as Redis's `lookupCommandBySds`).
fn lookup_full_name(name: &[u8]) -> Option<(&'static Command, Option<&'static Command>)> {
    match name.iter().position(|&b| b == b'|') {
        None => super::lookup(name).map(|c| (c, None)),
        Some(at) => {
            let parent = super::lookup(&name[..at])?;
            let sub = parent.subcommand(&name[at + 1..])?;
            Some((sub, Some(parent)))
        }
    }
}

fn command_docs(ctx: &mut Ctx, args: Args) -> CmdResult {
    let wanted: Vec<(&Command, Option<&Command>)> = if args.len() == 2 {
        crate::command_table::all().map(|c| (c, None)).collect()
    } else {
        args.iter().skip(2).filter_map(lookup_full_name).collect()
    };
    let out = ctx.out();
    out.map(wanted.len());
    for (c, parent) in wanted {
        write_command_docs(out, c, &super::full_name(c, parent));
    }
    Ok(())
}

fn command_list(ctx: &mut Ctx, args: Args) -> CmdResult {
    /// FILTERBY's kinds.
    enum Filter<'a> {
        All,
        Pattern(&'a [u8]),
        AclCat(String),
        /// Commands of a module: lapse has none.
        Module,
    }
    let filter = match args.len() {
        2 => Filter::All,
        5 if is(&args[2], "FILTERBY") && is(&args[3], "PATTERN") => Filter::Pattern(args.get(4)),
        5 if is(&args[2], "FILTERBY") && is(&args[3], "ACLCAT") => {
            Filter::AclCat(String::from_utf8_lossy(&args[4]).to_ascii_lowercase())
        }
        5 if is(&args[2], "FILTERBY") && is(&args[3], "MODULE") => Filter::Module,
        _ => return Err(CmdError::Syntax),
    };
    let mut names = Vec::new();
    for (cmd, parent) in crate::command_table::all_with_subcommands() {
        let name = super::full_name(cmd, parent);
        let keep = match &filter {
            Filter::All => true,
            Filter::Pattern(p) => glob::matches(p, name.as_bytes(), true),
            Filter::AclCat(cat) => crate::acl::categories(cmd, parent).has(cat),
            Filter::Module => false,
        };
        if keep {
            names.push(name);
        }
    }
    let out = ctx.out();
    out.array(names.len());
    for n in names {
        out.bulk(n.as_bytes());
    }
    Ok(())
}

fn info(ctx: &mut Ctx, args: Args) -> CmdResult {
    let sections: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let text = crate::info::render(ctx.server, ctx.peers, &sections, ctx.now_ms);
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

fn config_get(ctx: &mut Ctx, args: Args) -> CmdResult {
    let config = &ctx.server.config;
    let hidden = |name: &str| crate::config::HIDDEN_SETTINGS.contains(&name);
    let matched: Vec<(&str, String)> = crate::config::all_names()
        .filter(|(name, _)| {
            args.iter().skip(2).any(|p| match hidden(name) {
                true => p.eq_ignore_ascii_case(name.as_bytes()),
                false => glob::matches(p, name.as_bytes(), true),
            })
        })
        .map(|(name, s)| (name, s.get(config)))
        .collect();
    let out = ctx.out();
    out.map(matched.len());
    for (name, value) in matched {
        out.bulk(name.as_bytes());
        out.bulk(value.as_bytes());
    }
    Ok(())
}

/// Valkey's log line settings, which lapse fixes at startup (the logger's
/// format): CONFIG SET takes only their current value (README).
const FIXED_UNTIL_RESTART: &[&str] = &[
    "port",
    "bind",
    "loglevel",
    "log-format",
    "log-timestamp-format",
];

/// CONFIG SET name value [name value ...]: all or nothing.
fn config_set(ctx: &mut Ctx, args: Args) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return Err(CmdError::wrong_arity("config|set"));
    }
    let mut next = ctx.server.config.clone();
    let mut seen: Vec<String> = Vec::new();
    for i in (2..args.len()).step_by(2) {
        let name = String::from_utf8_lossy(&args[i]).into_owned();
        let failed = |reason: &str| {
            CmdError::with_arg(
                "ERR CONFIG SET failed (possibly related to argument '",
                &args[i],
                &format!("') - {reason}"),
            )
        };
        let Some(setting) = find_setting(&name) else {
            return Err(CmdError::with_arg(
                "ERR Unknown option or number of arguments for CONFIG SET - '",
                &args[i],
                "'",
            ));
        };
        // As Redis 7.0: a name and its alias are two parameters.
        let given = name.to_ascii_lowercase();
        if seen.contains(&given) {
            return Err(failed("duplicate parameter"));
        }
        seen.push(given);
        // Settings Redis changes at run time and lapse does not yet take
        // their current value (Redis's suite sets every setting to itself),
        // and refuse a change.
        let unchanged = || setting.get(&ctx.server.config).as_bytes() == &args[i + 1][..];
        let fixed_here = FIXED_UNTIL_RESTART.contains(&setting.name);
        let takes_current = fixed_here && unchanged();
        if !setting.mutable && !takes_current {
            // Redis changes these at run time: a bad value gets its own
            // error first, as there.
            let words = [String::from_utf8_lossy(&args[i + 1]).into_owned()];
            if let (true, Err(BadValue(reason))) =
                (fixed_here, setting.set(&mut next.clone(), &words))
            {
                return Err(failed(&reason));
            }
            return Err(failed("can't set immutable config"));
        }
        if crate::config::PROTECTED_SETTINGS.contains(&setting.name)
            && !ctx
                .server
                .config
                .enable_protected_configs
                .allows(&ctx.session.addr)
        {
            return Err(failed("can't set protected config"));
        }
        let value = String::from_utf8_lossy(&args[i + 1]).into_owned();
        let whole_value = [
            "bind",
            "save",
            "requirepass",
            "client-output-buffer-limit",
            "notify-keyspace-events",
        ];
        let words: Vec<String> = if whole_value.contains(&setting.name) {
            vec![value.clone()]
        } else {
            value.split_whitespace().map(String::from).collect()
        };
        // A value of no words or several may be one string's (`''`,
        // `proc-title-template`'s): tried whole when the words fail.
        let set = match setting.set(&mut next, &words) {
            Err(e) if words.len() != 1 => match setting.set(&mut next, &[value]) {
                // The setting's own word for the whole value, as Redis
                // hands a one-value setting the whole of it.
                Err(whole) if whole.0 != "wrong number of arguments" => Err(whole),
                Err(_) => Err(e),
                Ok(()) => Ok(()),
            },
            other => other,
        };
        set.map_err(|BadValue(reason)| failed(&reason))?;
        // More clients than open files allow would wedge the listener:
        // refused as Redis refuses it.
        if setting.name == "maxclients" && next.maxclients > ctx.server.config.maxclients {
            let fits = crate::fdlimit::fit_maxclients(next.maxclients);
            if fits < next.maxclients {
                return Err(failed(&format!(
                    "The operating system is not able to handle the specified number of clients, try with {fits}"
                )));
            }
        }
    }
    // A new port or bind list is bound now, so that a failure refuses the
    // whole CONFIG SET (Redis's rollback); the loop switches to them.
    // (Kept aside until the TLS listeners are bound too.)
    let current = &ctx.server.config;
    let mut new_listeners = None;
    if next.port != current.port || next.bind != current.bind {
        let (name, why) = match next.port != current.port {
            true => ("port", "Unable to listen on this port. Check server logs."),
            false => ("bind", "Failed to bind to specified addresses."),
        };
        match crate::net::tcp_listeners(&next.bind, next.port, next.tcp_backlog) {
            Ok(bound) => new_listeners = Some(bound),
            Err(e) => {
                tracing::warn!("CONFIG SET {name}: {e}");
                return Err(CmdError::owned(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
                )));
            }
        }
    }
    // TLS: the configuration new connections get (existing ones keep
    // theirs) is built once, where TLS serves and a setting changed, and
    // new TLS listeners (a new tls-port, or bind) are bound with it, both
    // before anything changes: a failure refuses the whole CONFIG SET.
    // The loop switches listeners.
    let tls_changed = next.tls != ctx.server.config.tls;
    let current = &ctx.server.config;
    let rebind_tls =
        next.tls.port != current.tls.port || (next.tls.port != 0 && next.bind != current.bind);
    if tls_changed || rebind_tls {
        let had_tls = ctx.server.tls.is_some();
        let bind_changed = next.bind != current.bind;
        let refused = |e: String, listening: bool| {
            tracing::warn!("Failed to update TLS configuration: {e}");
            let (name, why) = match listening {
                true if bind_changed => ("bind", "Failed to bind to specified addresses"),
                true => ("tls-port", "Unable to listen on this port"),
                false => (
                    seen.iter()
                        .find(|n| n.starts_with("tls-"))
                        .map_or("tls-cert-file", String::as_str),
                    "Unable to update TLS configuration",
                ),
            };
            CmdError::owned(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}. Check server logs."
            ))
        };
        // What new connections are to get, and the handle the TLS
        // listeners, the bus and MIGRATE share (a new one where TLS did
        // not serve; an existing one is given the new configurations
        // once nothing can fail).
        let serving = match next.tls.in_use() {
            false => None,
            true => {
                let configs = match tls_changed || !had_tls {
                    true => Some(crate::tls::configs(&next.tls).map_err(|e| refused(e, !had_tls))?),
                    false => None,
                };
                match (ctx.server.tls.clone(), configs) {
                    (Some(handle), configs) => Some((handle, configs)),
                    (None, Some(configs)) => Some((crate::tls::TlsContext::new(configs), None)),
                    (None, None) => None,
                }
            }
        };
        if rebind_tls {
            let listeners = match (&serving, next.tls.port) {
                (Some((handle, _)), port @ 1..) => {
                    crate::net::tls_listeners(&next.bind, port, next.tcp_backlog, handle)
                        .map_err(|e| refused(e.to_string(), true))?
                }
                _ => Vec::new(),
            };
            ctx.server.new_tls_listeners = Some(listeners);
        }
        ctx.server.tls = serving.map(|(handle, configs)| {
            if let Some(configs) = configs {
                handle.replace(configs);
            }
            handle
        });
    }
    if new_listeners.is_some() {
        ctx.server.new_listeners = new_listeners;
    }
    if next.loglevel != ctx.server.config.loglevel {
        crate::log::set_level(&next.loglevel);
    }
    let password_changed = next.requirepass != ctx.server.config.requirepass;
    let was_appendonly = ctx.server.config.appendonly;
    let ignored_before = ctx.server.config.ignored_settings();
    for ignored in next.ignored_settings() {
        if !ignored_before.contains(&ignored) {
            tracing::warn!("CONFIG SET {ignored} (lapse keeps the value, ignores it)");
        }
    }
    ctx.server.config = next;
    ctx.server.apply_config();
    // `requirepass` is the default user's password.
    if password_changed {
        let password = ctx.server.config.requirepass.clone();
        ctx.server.acl.set_default_password(&password);
    }
    if ctx.server.config.appendonly != was_appendonly {
        let now_ms = ctx.now_ms;
        let on = ctx.server.config.appendonly;
        if crate::persistence::aof::set_enabled(ctx.server, on, now_ms).is_err() {
            ctx.server.config.appendonly = was_appendonly;
            return Err(CmdError::Static(
                "ERR CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. Check server logs.",
            ));
        }
    }

    ctx.out().ok();
    Ok(())
}

/// CONFIG REWRITE: the config file the server started from gets the
/// current settings (`Config::rewrite_file_text`), replaced whole so a
/// crash leaves the old file or the new one.
fn config_rewrite(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let Some(path) = ctx.server.config.config_file.clone() else {
        return Err(CmdError::Static(
            "ERR The server is running without a config file",
        ));
    };
    let failed = |e: std::io::Error| {
        tracing::warn!("CONFIG REWRITE failed: {e}");
        CmdError::owned(format!(
            "ERR Rewriting config file: {}",
            crate::persistence::jobs::error_text(&e)
        ))
    };
    let old = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(failed(e)),
    };
    // Users live in the config file unless there is an ACL file.
    let users: Vec<String> = match ctx.server.config.aclfile_path() {
        Some(_) => Vec::new(),
        None => ctx
            .server
            .acl
            .users()
            .map(|u| format!("user {} {}", u.name, u.describe()))
            .collect(),
    };
    let text = ctx.server.config.rewrite_file_text(&old, &users);
    let mut temp = path.clone().into_os_string();
    temp.push(format!(".tmp-{}", std::process::id()));
    crate::files::replace_file(&path, std::path::Path::new(&temp), text.as_bytes())
        .map_err(failed)?;
    tracing::info!("CONFIG REWRITE executed with success.");
    ctx.out().ok();
    Ok(())
}

fn config_resetstat(ctx: &mut Ctx, _args: Args) -> CmdResult {
    ctx.server.stats = Default::default();
    ctx.server.cmdstats.reset();
    for db in &mut ctx.server.dbs {
        db.stats = Default::default();
    }
    let expire = &mut ctx.server.expire;
    expire.stale_perc = 0.0;
    expire.time_cap_reached_count = 0;
    expire.time_used_us = 0;
    ctx.server.lazyfree.reset_stats();
    let repl = &mut ctx.server.repl;
    (repl.sync_full, repl.sync_partial_ok, repl.sync_partial_err) = (0, 0, 0);
    ctx.out().ok();
    Ok(())
}

/// A save's failure as its command answers it: Redis's words when a
/// background save runs, else its bare `ERR` (the log says why).
pub(super) fn save_error(e: crate::persistence::jobs::SaveError) -> CmdError {
    match e {
        crate::persistence::jobs::SaveError::InProgress => {
            CmdError::Static("ERR Background save already in progress")
        }
        crate::persistence::jobs::SaveError::RewriteInProgress => CmdError::Static(
            "ERR An AOF log rewriting in progress: can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.",
        ),
        crate::persistence::jobs::SaveError::Io(e) => {
            tracing::warn!("Failed opening the temp RDB file or writing it: {e}");
            CmdError::Static("ERR")
        }
    }
}

/// SAVE: the dataset to `dir`/`dbfilename` now, as an RDB file.
fn save(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    crate::persistence::save::save(ctx.server, now_ms).map_err(save_error)?;
    ctx.out().ok();
    Ok(())
}

/// BGSAVE [SCHEDULE]: the same file, written while the server goes on
/// serving (see `persistence::save`). While an AOF rewrite runs, SCHEDULE starts
/// it when that ends.
fn bgsave(ctx: &mut Ctx, args: Args) -> CmdResult {
    let schedule = match args.len() {
        1 => false,
        2 if is(&args[1], "SCHEDULE") => true,
        _ => return Err(CmdError::Syntax),
    };
    let now_ms = ctx.now_ms;
    let started =
        crate::persistence::save::bgsave(ctx.server, now_ms, schedule).map_err(save_error)?;
    ctx.out().simple(if started {
        "Background saving started"
    } else {
        "Background saving scheduled"
    });
    Ok(())
}

fn lastsave(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let at = ctx.server.persist.lastsave_s;
    ctx.out().int(at);
    Ok(())
}

fn time(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let out = ctx.out();
    out.array(2);
    out.bulk_int(now.as_secs() as i64);
    out.bulk_int(i64::from(now.subsec_micros()));
    Ok(())
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT], as Redis 7.0 parses it.
/// The RDB file is written first with SAVE, or without either when save
/// points are set; if that fails the server stays up
/// (`-ERR Errors trying to SHUTDOWN. Check logs.`) unless FORCE. There is
/// never a shutdown in progress to ABORT (lapse waits for no replicas).
fn shutdown(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (mut nosave, mut save, mut force, mut abort, mut other) =
        (false, false, false, false, false);
    for arg in args.iter().skip(1) {
        if is(arg, "NOSAVE") {
            nosave = true;
        } else if is(arg, "SAVE") {
            save = true;
        } else if is(arg, "FORCE") {
            force = true;
            other = true;
        } else if is(arg, "NOW") {
            other = true;
        } else if is(arg, "ABORT") {
            abort = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if (abort && (nosave || save || other)) || (nosave && save) {
        return Err(CmdError::Syntax);
    }
    if abort {
        return Err(CmdError::Static("ERR No shutdown in progress."));
    }
    let explicit = (save || nosave).then_some(save);
    let now_ms = ctx.now_ms;
    if let Err(e) =
        crate::persistence::shutdown::save_for_shutdown(ctx.server, explicit, force, now_ms)
    {
        tracing::warn!("Error trying to save the DB, can't exit: {e}");
        if !force {
            return Err(CmdError::Static(
                "ERR Errors trying to SHUTDOWN. Check logs.",
            ));
        }
    }
    // Stop after this iteration; the client sees the close.
    ctx.server.shutdown_requested = true;
    Ok(())
}
