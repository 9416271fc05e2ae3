//! The one table of settings: each with its Redis name, how CONFIG GET
//! shows it, how the config file and CONFIG SET parse it, and whether it
//! may change at run time.

use super::*;

/// Why a value was refused; the text follows Redis's CONFIG SET wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue(pub String);

type Getter = fn(&Config) -> String;
type Setter = fn(&mut Config, &[String]) -> Result<(), BadValue>;

/// One named setting.
pub struct Setting {
    pub name: &'static str,
    get: Getter,
    set: Setter,
    /// False for settings fixed at startup (CONFIG SET refuses them).
    pub mutable: bool,
    /// `Some(why)`: a Redis setting lapse understands, checks and reports
    /// but does not act on (`kept!`); a value other than Redis's default
    /// is warned about at startup and at CONFIG SET, saying why.
    pub ignored: Option<&'static str>,
}

fn int_in<T>(args: &[String], min: i64, max: i64) -> Result<T, BadValue>
where
    T: TryFrom<i64>,
{
    let [arg] = args else {
        return Err(BadValue("wrong number of arguments".into()));
    };
    let n: i64 = parse_memory(arg)
        .ok_or_else(|| BadValue("argument couldn't be parsed into an integer".into()))?;
    if !(min..=max).contains(&n) {
        return Err(BadValue(format!(
            "argument must be between {min} and {max} inclusive"
        )));
    }
    T::try_from(n).map_err(|_| BadValue("argument out of range".into()))
}

/// Parses an integer with an optional memory unit (`1k`, `10mb`, `1gb`), as
/// redis.conf allows for byte sizes.
pub fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let units: [(&str, i64); 7] = [
        ("kb", 1024),
        ("mb", 1024 * 1024),
        ("gb", 1024 * 1024 * 1024),
        ("k", 1000),
        ("m", 1000 * 1000),
        ("g", 1000 * 1000 * 1000),
        ("b", 1),
    ];
    for (suffix, mult) in units {
        if let Some(num) = lower.strip_suffix(suffix) {
            return num.parse::<i64>().ok()?.checked_mul(mult);
        }
    }
    lower.parse().ok()
}

/// A file or directory name without a path (`dbfilename`,
/// `appendfilename`, `appenddirname`), else Redis's error `path_error`.
fn base_name(args: &[String], path_error: &str) -> Result<String, BadValue> {
    match args {
        [name] if name.contains('/') => Err(BadValue(path_error.into())),
        [name] => Ok(name.clone()),
        _ => Err(BadValue("wrong number of arguments".into())),
    }
}

/// `latency-tracking-info-percentiles`: numbers in 0..=100 (one empty
/// argument: none), with Redis's errors.
fn set_latency_percentiles(c: &mut Config, args: &[String]) -> Result<(), BadValue> {
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    let mut percentiles = Vec::with_capacity(words.len());
    for word in words {
        let p: f64 = word
            .parse()
            .ok()
            .filter(|p: &f64| !p.is_nan())
            .ok_or_else(|| {
                BadValue("Invalid latency-tracking-info-percentiles parameters".into())
            })?;
        if !(0.0..=100.0).contains(&p) {
            return Err(BadValue(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .into(),
            ));
        }
        percentiles.push(p);
    }
    c.latency_tracking_info_percentiles = percentiles;
    Ok(())
}

fn yes_no(args: &[String]) -> Result<bool, BadValue> {
    match args {
        [arg] if arg.eq_ignore_ascii_case("yes") => Ok(true),
        [arg] if arg.eq_ignore_ascii_case("no") => Ok(false),
        _ => Err(BadValue("argument must be 'yes' or 'no'".into())),
    }
}

fn show_yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.into()
}

/// Parses `client-output-buffer-limit` (`<class> <hard> <soft> <seconds>`
/// repeated; classes not named keep their limits).
fn set_output_limits(c: &mut Config, args: &[String]) -> Result<(), BadValue> {
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    if words.is_empty() || !words.len().is_multiple_of(4) {
        return Err(BadValue(
            "Wrong number of arguments in buffer limit configuration.".into(),
        ));
    }
    let mut next = c.clone();
    for group in words.chunks(4) {
        let value = |s: &str| {
            parse_memory(s)
                .filter(|&n| n >= 0)
                .map(|n| n as u64)
                .ok_or_else(|| BadValue("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into()))
        };
        let limit = OutputLimit::new(value(group[1])?, value(group[2])?, value(group[3])?);
        match group[0].to_ascii_lowercase().as_str() {
            "normal" => next.output_limit_normal = limit,
            "replica" | "slave" => next.output_limit_replica = limit,
            "pubsub" => next.output_limit_pubsub = limit,
            _ => {
                return Err(BadValue(
                    "Invalid client class specified in buffer limit configuration.".into(),
                ))
            }
        }
    }
    *c = next;
    Ok(())
}

fn show_output_limits(c: &Config) -> String {
    let show = |name: &str, l: &OutputLimit| {
        format!(
            "{name} {} {} {}",
            l.hard_bytes, l.soft_bytes, l.soft_seconds
        )
    };
    [
        show("normal", &c.output_limit_normal),
        show("slave", &c.output_limit_replica),
        show("pubsub", &c.output_limit_pubsub),
    ]
    .join(" ")
}

pub(super) fn one_of(args: &[String], allowed: &[&str]) -> Result<String, BadValue> {
    match args {
        [arg] if allowed.contains(&arg.to_ascii_lowercase().as_str()) => {
            Ok(arg.to_ascii_lowercase())
        }
        _ => Err(BadValue(format!(
            "argument(s) must be one of the following: {}",
            allowed.join(", ")
        ))),
    }
}

/// A run-time `yes`/`no` setting stored in `Config::$($field).+`.
macro_rules! yes_no_setting {
    ($name:literal, $($field:ident).+) => {
        Setting {
            name: $name,
            get: |c| show_yes_no(c.$($field).+),
            set: |c, a| {
                c.$($field).+ = yes_no(a)?;
                Ok(())
            },
            mutable: true,
            ignored: None,
        }
    };
}

/// A string setting fixed at startup, stored in `Config::$field`.
macro_rules! text_setting {
    ($name:literal, $($field:ident).+) => {
        text_setting!($name, $($field).+, false)
    };
    ($name:literal, $($field:ident).+, $mutable:expr) => {
        Setting {
            name: $name,
            get: |c| c.$($field).+.clone(),
            set: |c, a| {
                c.$($field).+ = kept_text(a)?;
                Ok(())
            },
            mutable: $mutable,
            ignored: None,
        }
    };
}

/// An integer setting in `min..=max` stored in `Config::$field`.
macro_rules! int_setting {
    ($name:literal, $($field:ident).+, $min:expr, $max:expr, $mutable:expr) => {
        Setting {
            name: $name,
            get: |c| c.$($field).+.to_string(),
            set: |c, a| {
                c.$($field).+ = int_in(a, $min, $max)?;
                Ok(())
            },
            mutable: $mutable,
            ignored: None,
        }
    };
}

/// A setting lapse keeps without acting on it (see `Setting::ignored`):
/// `$check` turns the arguments into the value CONFIG GET shows (Redis's
/// own checks: a `kept!` value Redis would refuse is refused).
macro_rules! kept {
    ($name:literal, $default:literal, $mutable:expr, $check:expr, $why:literal) => {
        Setting {
            name: $name,
            get: |c| {
                c.kept
                    .get($name)
                    .map_or_else(|| $default.to_string(), String::clone)
            },
            set: |c, a| {
                let value: String = ($check)(a)?;
                c.kept.insert($name, value);
                Ok(())
            },
            mutable: $mutable,
            ignored: Some($why),
        }
    };
}

fn kept_yes_no(args: &[String]) -> Result<String, BadValue> {
    yes_no(args).map(show_yes_no)
}

fn kept_int(args: &[String], min: i64, max: i64) -> Result<String, BadValue> {
    int_in::<i64>(args, min, max).map(|n| n.to_string())
}

/// A string setting: one argument, kept as given.
fn kept_text(args: &[String]) -> Result<String, BadValue> {
    match args {
        [arg] => Ok(arg.clone()),
        _ => Err(BadValue("wrong number of arguments".into())),
    }
}

/// A flags setting (`shutdown-on-sigterm nosave now`): words from
/// `allowed`, shown space separated.
fn kept_flags(args: &[String], allowed: &[&str]) -> Result<String, BadValue> {
    let words: Vec<String> = args
        .iter()
        .flat_map(|a| a.split_whitespace())
        .map(str::to_ascii_lowercase)
        .collect();
    if words.is_empty() || words.iter().any(|w| !allowed.contains(&w.as_str())) {
        return Err(BadValue(format!(
            "argument(s) must be one of the following: {}",
            allowed.join(", ")
        )));
    }
    Ok(words.join(" "))
}

/// `oom-score-adj-values`: three integers in -2000..=2000.
fn kept_oom_values(args: &[String]) -> Result<String, BadValue> {
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    if words.len() != 3 {
        return Err(BadValue("wrong number of arguments".into()));
    }
    let fits = |w: &&str| w.parse::<i64>().is_ok_and(|n| (-2000..=2000).contains(&n));
    if !words.iter().all(fits) {
        return Err(BadValue(
            "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into(),
        ));
    }
    Ok(words.join(" "))
}

/// The settings table: Redis's names, in the order CONFIG GET * lists them.
pub static SETTINGS: &[Setting] = &[
    int_setting!("port", port, 0, 65535, true),
    Setting {
        name: "bind",
        get: |c| c.bind.join(" "),
        set: |c, a| {
            if a.is_empty() {
                return Err(BadValue("wrong number of arguments".into()));
            }
            c.bind = a
                .iter()
                .flat_map(|s| s.split_whitespace())
                .map(String::from)
                .collect();
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    Setting {
        name: "hz",
        get: |c| c.hz.to_string(),
        // Redis clamps hz into 1..=500 rather than refusing.
        set: |c, a| {
            c.hz = int_in::<i64>(a, 0, i64::from(i32::MAX))?.clamp(1, 500) as u32;
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    int_setting!("databases", databases, 1, i64::from(i32::MAX), false),
    Setting {
        name: "loglevel",
        get: |c| c.loglevel.clone(),
        set: |c, a| {
            c.loglevel = one_of(a, &["debug", "verbose", "notice", "warning", "nothing"])?;
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    Setting {
        name: "log-format",
        get: |c| c.log_format.clone(),
        set: |c, a| {
            c.log_format = one_of(a, &["legacy", "logfmt"])?;
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    Setting {
        name: "log-timestamp-format",
        get: |c| c.log_timestamp_format.clone(),
        set: |c, a| {
            c.log_timestamp_format = one_of(a, &["legacy", "iso8601", "milliseconds"])?;
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    int_setting!("active-expire-effort", active_expire_effort, 1, 10, true),
    Setting {
        name: "expire-strategy",
        get: |c| c.expire_strategy.name().into(),
        set: |c, a| {
            c.expire_strategy = match one_of(a, &["deadline", "uniform"])?.as_str() {
                "uniform" => Strategy::Uniform,
                _ => Strategy::Deadline,
            };
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    int_setting!(
        "proto-max-bulk-len",
        proto_max_bulk_len,
        1024 * 1024,
        i64::MAX,
        true
    ),
    int_setting!(
        "client-query-buffer-limit",
        client_query_buffer_limit,
        1024 * 1024,
        i64::MAX,
        true
    ),
    int_setting!("maxclients", maxclients, 1, i64::from(i32::MAX), true),
    int_setting!("timeout", timeout, 0, i64::from(i32::MAX), true),
    Setting {
        name: "requirepass",
        get: |c| c.requirepass.clone(),
        set: |c, a| match a {
            [pass] => {
                c.requirepass = pass.clone();
                Ok(())
            }
            _ => Err(BadValue("wrong number of arguments".into())),
        },
        mutable: true,
        ignored: None,
    },
    yes_no_setting!("protected-mode", protected_mode),
    yes_no_setting!("rdbcompression", rdbcompression),
    // Fixed at startup, as in Redis.
    Setting {
        mutable: false,
        ignored: None,
        ..yes_no_setting!("rdbchecksum", rdbchecksum)
    },
    yes_no_setting!("stop-writes-on-bgsave-error", stop_writes_on_bgsave_error),
    int_setting!(
        "rdb-key-save-delay",
        rdb_key_save_delay,
        i64::from(i32::MIN),
        i64::from(i32::MAX),
        true
    ),
    yes_no_setting!("lazyfree-lazy-eviction", lazyfree.eviction),
    yes_no_setting!("lazyfree-lazy-expire", lazyfree.expire),
    yes_no_setting!("lazyfree-lazy-server-del", lazyfree.server_del),
    yes_no_setting!("lazyfree-lazy-user-del", lazyfree.user_del),
    yes_no_setting!("lazyfree-lazy-user-flush", lazyfree.user_flush),
    int_setting!(
        "busy-reply-threshold",
        busy_reply_threshold_ms,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "hash-max-listpack-entries",
        hash_max_listpack_entries,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "hash-max-listpack-value",
        hash_max_listpack_value,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "set-max-intset-entries",
        set_max_intset_entries,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "set-max-listpack-entries",
        set_max_listpack_entries,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "set-max-listpack-value",
        set_max_listpack_value,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "list-max-listpack-size",
        list_max_listpack_size,
        i32::MIN.into(),
        i32::MAX.into(),
        true
    ),
    int_setting!(
        "stream-node-max-bytes",
        stream_node_max_bytes,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "stream-node-max-entries",
        stream_node_max_entries,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "hll-sparse-max-bytes",
        hll_sparse_max_bytes,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "zset-max-listpack-entries",
        zset_max_listpack_entries,
        0,
        i64::MAX,
        true
    ),
    int_setting!(
        "zset-max-listpack-value",
        zset_max_listpack_value,
        0,
        i64::MAX,
        true
    ),
    Setting {
        name: "dir",
        get: |c| c.dir.clone(),
        set: |c, a| {
            let [dir] = a else {
                return Err(BadValue("wrong number of arguments".into()));
            };
            let path = std::path::Path::new(dir);
            let absolute = std::fs::canonicalize(path)
                .ok()
                .filter(|p| p.is_dir())
                .ok_or_else(|| BadValue("No such file or directory".into()))?;
            c.dir = absolute.display().to_string();
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    Setting {
        name: "dbfilename",
        get: |c| c.dbfilename.clone(),
        set: |c, a| {
            c.dbfilename = base_name(a, "dbfilename can't be a path, just a filename")?;
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    int_setting!(
        "slowlog-log-slower-than",
        slowlog_log_slower_than,
        -1,
        i64::MAX,
        true
    ),
    int_setting!("slowlog-max-len", slowlog_max_len, 0, i64::MAX, true),
    yes_no_setting!("latency-tracking", latency_tracking),
    int_setting!(
        "latency-monitor-threshold",
        latency_monitor_threshold,
        0,
        i64::MAX,
        true
    ),
    Setting {
        name: "latency-tracking-info-percentiles",
        get: |c| {
            let shown: Vec<String> = c
                .latency_tracking_info_percentiles
                .iter()
                .map(|&p| crate::histogram::format_percentile(p))
                .collect();
            shown.join(" ")
        },
        set: set_latency_percentiles,
        mutable: true,
        ignored: None,
    },
    int_setting!("maxmemory", maxmemory, 0, i64::MAX, true),
    Setting {
        name: "maxmemory-policy",
        get: |c| c.maxmemory_policy.name().into(),
        set: |c, a| {
            let names: Vec<&str> = POLICIES.iter().map(|(n, _)| *n).collect();
            c.maxmemory_policy = Policy::parse(&one_of(a, &names)?)
                .unwrap_or(Policy::NoEviction);
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    int_setting!("maxmemory-samples", maxmemory_samples, 1, 64, true),
    int_setting!(
        "maxmemory-eviction-tenacity",
        maxmemory_eviction_tenacity,
        0,
        100,
        true
    ),
    int_setting!(
        "lfu-log-factor",
        lfu_log_factor,
        0,
        i64::from(i32::MAX),
        true
    ),
    int_setting!(
        "lfu-decay-time",
        lfu_decay_time,
        0,
        i64::from(i32::MAX),
        true
    ),
    Setting {
        name: "maxmemory-clients",
        get: |c| match c.maxmemory_clients {
            ClientMemoryLimit::Bytes(n) => n.to_string(),
            ClientMemoryLimit::Percent(p) => format!("{p}%"),
        },
        set: |c, a| {
            // Redis's words for each way the value can be wrong.
            let bad = || BadValue("argument must be a memory or percent value".into());
            c.maxmemory_clients = match a {
                [v] if v.ends_with('%') => {
                    let p: u64 = v[..v.len() - 1].parse().map_err(|_| bad())?;
                    if p > 100 {
                        return Err(BadValue(
                            "percentage argument must be less or equal to 100".into(),
                        ));
                    }
                    ClientMemoryLimit::Percent(p)
                }
                [v] => ClientMemoryLimit::Bytes(
                    parse_memory(v)
                        .and_then(|n| u64::try_from(n).ok())
                        .ok_or_else(bad)?,
                ),
                _ => return Err(BadValue("wrong number of arguments".into())),
            };
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    Setting {
        name: "enable-protected-configs",
        get: |c| c.enable_protected_configs.name().into(),
        set: |c, a| {
            c.enable_protected_configs = ProtectedAction::parse(a)?;
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    Setting {
        name: "enable-debug-command",
        get: |c| c.enable_debug_command.name().into(),
        set: |c, a| {
            c.enable_debug_command = ProtectedAction::parse(a)?;
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    Setting {
        name: "notify-keyspace-events",
        get: |c| crate::notify::format_flags(c.notify_keyspace_events),
        set: |c, a| {
            let text = a.join("");
            c.notify_keyspace_events = crate::notify::parse_flags(&text).ok_or_else(|| {
                BadValue("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into())
            })?;
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    Setting {
        name: "client-output-buffer-limit",
        get: show_output_limits,
        set: set_output_limits,
        mutable: true,
        ignored: None,
    },
    Setting {
        name: "save",
        get: |c| {
            let points: Vec<String> = c
                .save_points
                .iter()
                .map(|p| format!("{} {}", p.seconds, p.changes))
                .collect();
            points.join(" ")
        },
        set: |c, a| {
            c.save_points = parse_save_points(a)?;
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    yes_no_setting!("appendonly", appendonly),
    Setting {
        name: "appendfsync",
        get: |c| c.appendfsync.name().into(),
        set: |c, a| {
            c.appendfsync = match one_of(a, &["always", "everysec", "no"])?.as_str() {
                "always" => FsyncPolicy::Always,
                "no" => FsyncPolicy::No,
                _ => FsyncPolicy::EverySec,
            };
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    Setting {
        name: "appenddirname",
        get: |c| c.appenddirname.clone(),
        set: |c, a| {
            c.appenddirname = base_name(a, "appenddirname can't be a path, just a dirname")?;
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    Setting {
        name: "appendfilename",
        get: |c| c.appendfilename.clone(),
        set: |c, a| {
            c.appendfilename = base_name(a, "appendfilename can't be a path, just a filename")?;
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    yes_no_setting!("aof-use-rdb-preamble", aof_use_rdb_preamble),
    yes_no_setting!("aof-load-truncated", aof_load_truncated),
    int_setting!(
        "auto-aof-rewrite-percentage",
        auto_aof_rewrite_percentage,
        0,
        i64::from(i32::MAX),
        true
    ),
    int_setting!(
        "auto-aof-rewrite-min-size",
        auto_aof_rewrite_min_size,
        0,
        i64::MAX,
        true
    ),
    yes_no_setting!("no-appendfsync-on-rewrite", no_appendfsync_on_rewrite),
    yes_no_setting!(
        "aof-rewrite-incremental-fsync",
        aof_rewrite_incremental_fsync
    ),
    yes_no_setting!("rdb-save-incremental-fsync", rdb_save_incremental_fsync),
    Setting {
        name: "replicaof",
        get: |c| {
            c.replicaof
                .as_ref()
                .map_or_else(String::new, |(host, port)| format!("{host} {port}"))
        },
        set: |c, a| {
            let words: Vec<&str> = a.iter().flat_map(|w| w.split_whitespace()).collect();
            c.replicaof = match words.as_slice() {
                [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => {
                    None
                }
                [host, port] => Some((
                    host.to_string(),
                    port.parse()
                        .map_err(|_| BadValue("Invalid master port".into()))?,
                )),
                _ => return Err(BadValue("wrong number of arguments".into())),
            };
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    Setting {
        name: "masterauth",
        get: |c| c.masterauth.clone(),
        set: |c, a| {
            c.masterauth = a.join(" ");
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    Setting {
        name: "masteruser",
        get: |c| c.masteruser.clone(),
        set: |c, a| {
            c.masteruser = a.join(" ");
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    yes_no_setting!("replica-read-only", replica_read_only),
    yes_no_setting!("replica-serve-stale-data", replica_serve_stale_data),
    int_setting!("repl-timeout", repl_timeout, 1, i64::from(i32::MAX), true),
    int_setting!(
        "min-replicas-to-write",
        min_replicas_to_write,
        0,
        i64::from(i32::MAX),
        true
    ),
    int_setting!(
        "min-replicas-max-lag",
        min_replicas_max_lag,
        0,
        i64::from(i32::MAX),
        true
    ),
    yes_no_setting!("repl-diskless-sync", repl_diskless_sync),
    int_setting!(
        "repl-diskless-sync-delay",
        repl_diskless_sync_delay,
        0,
        i64::from(i32::MAX),
        true
    ),
    int_setting!(
        "repl-diskless-sync-max-replicas",
        repl_diskless_sync_max_replicas,
        0,
        i64::from(i32::MAX),
        true
    ),
    int_setting!(
        "replica-priority",
        replica_priority,
        0,
        i64::from(i32::MAX),
        true
    ),
    int_setting!(
        "repl-ping-replica-period",
        repl_ping_replica_period,
        1,
        i64::from(i32::MAX),
        true
    ),
    Setting {
        name: "daemonize",
        get: |c| show_yes_no(c.daemonize),
        set: |c, a| {
            c.daemonize = yes_no(a)?;
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    text_setting!("pidfile", pidfile),
    text_setting!("logfile", logfile),
    text_setting!("unixsocket", unixsocket),
    Setting {
        name: "unixsocketperm",
        get: |c| format!("{:o}", c.unixsocketperm),
        set: |c, a| {
            let [arg] = a else {
                return Err(BadValue("wrong number of arguments".into()));
            };
            c.unixsocketperm = u32::from_str_radix(arg, 8)
                .ok()
                .filter(|p| *p <= 0o777)
                .ok_or_else(|| BadValue("argument must be between 0 and 777 inclusive".into()))?;
            Ok(())
        },
        mutable: false,
        ignored: None,
    },
    int_setting!("tcp-backlog", tcp_backlog, 0, i64::from(i32::MAX), false),
    int_setting!("tcp-keepalive", tcp_keepalive, 0, i64::from(i32::MAX), true),
    Setting {
        name: "repl-backlog-size",
        get: |c| c.repl_backlog_size.to_string(),
        // Raised to Redis's minimum rather than refused.
        set: |c, a| {
            let bytes: u64 = int_in(a, 1, i64::MAX)?;
            c.repl_backlog_size = bytes.max(REPL_BACKLOG_MIN_BYTES);
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    // What lapse keeps without acting on, each with why (README's table).
    kept!("list-compress-depth", "0", true, |a| kept_int(a, 0, i32::MAX.into()),
        "list blocks are never compressed: lapse's lists lend their elements in place"),
    kept!("activedefrag", "no", true, kept_yes_no,
        "no active defragmentation: lapse uses glibc malloc and returns freed memory with malloc_trim"),
    kept!("active-defrag-cycle-max", "25", true, |a| kept_int(a, 1, 99),
        "no active defragmentation"),
    kept!("active-defrag-cycle-min", "1", true, |a| kept_int(a, 1, 99),
        "no active defragmentation"),
    kept!("active-defrag-ignore-bytes", "104857600", true, |a| kept_int(a, 1, i64::MAX),
        "no active defragmentation"),
    kept!("active-defrag-max-scan-fields", "1000", true, |a| kept_int(a, 1, i64::MAX),
        "no active defragmentation"),
    kept!("active-defrag-threshold-lower", "10", true, |a| kept_int(a, 0, 1000),
        "no active defragmentation"),
    kept!("active-defrag-threshold-upper", "100", true, |a| kept_int(a, 0, 1000),
        "no active defragmentation"),
    kept!("activerehashing", "yes", true, kept_yes_no,
        "lapse's tables always rehash incrementally, a step per access and a bounded step per cron"),
    kept!("always-show-logo", "no", false, kept_yes_no, "lapse prints no logo"),
    kept!("aof-disable-auto-gc", "no", true, kept_yes_no,
        "history AOF files are always deleted once a rewrite is done"),
    kept!("aof-timestamp-enabled", "no", true, kept_yes_no,
        "the AOF carries no timestamp annotations"),
    kept!("server_cpulist", "", false, kept_text, "no CPU affinity: the OS schedules lapse's threads"),
    kept!("bio_cpulist", "", false, kept_text, "no CPU affinity: the OS schedules lapse's threads"),
    kept!("aof_rewrite_cpulist", "", false, kept_text, "no CPU affinity: the OS schedules lapse's threads"),
    kept!("bgsave_cpulist", "", false, kept_text, "no CPU affinity: the OS schedules lapse's threads"),
    kept!("bind-source-addr", "", true, kept_text,
        "a replica connects to its primary from the address the OS picks"),
    yes_no_setting!("cluster-enabled", cluster.enabled).fixed(),
    text_setting!("cluster-config-file", cluster.config_file),
    int_setting!("cluster-port", cluster.port, 0, 65535, false),
    int_setting!("cluster-node-timeout", cluster.node_timeout, 0, i64::MAX, true),
    text_setting!("cluster-announce-ip", cluster.announce_ip, true),
    text_setting!("cluster-announce-hostname", cluster.announce_hostname, true),
    int_setting!("cluster-announce-port", cluster.announce_port, 0, 65535, true),
    int_setting!("cluster-announce-bus-port", cluster.announce_bus_port, 0, 65535, true),
    int_setting!("cluster-announce-tls-port", cluster.announce_tls_port, 0, 65535, true),
    yes_no_setting!("cluster-allow-pubsubshard-when-down", cluster.allow_pubsubshard_when_down),
    yes_no_setting!("cluster-allow-reads-when-down", cluster.allow_reads_when_down),
    yes_no_setting!("cluster-allow-replica-migration", cluster.allow_replica_migration),
    int_setting!("cluster-link-sendbuf-limit", cluster.link_sendbuf_limit, 0, i64::MAX, true),
    int_setting!("cluster-migration-barrier", cluster.migration_barrier, 0, i64::from(i32::MAX), true),
    Setting {
        name: "cluster-preferred-endpoint-type",
        get: |c| c.cluster.preferred_endpoint.name().into(),
        set: |c, a| {
            c.cluster.preferred_endpoint = Endpoint::parse(&one_of(a, Endpoint::NAMES)?);
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    yes_no_setting!("cluster-replica-no-failover", cluster.replica_no_failover),
    int_setting!("cluster-replica-validity-factor", cluster.replica_validity_factor, 0,
        i64::from(i32::MAX), true),
    yes_no_setting!("cluster-require-full-coverage", cluster.require_full_coverage),
    kept!("crash-log-enabled", "yes", true, kept_yes_no,
        "a crash is Rust's panic message and backtrace on the log"),
    kept!("crash-memcheck-enabled", "yes", true, kept_yes_no, "no memory test after a crash"),
    kept!("disable-thp", "yes", false, kept_yes_no,
        "lapse leaves transparent huge pages as the system sets them"),
    kept!("dynamic-hz", "yes", true, kept_yes_no,
        "the cron runs at `hz` whatever the number of clients"),
    kept!("enable-module-command", "no", false,
        |a| one_of(a, &["no", "yes", "local"]), "no modules"),
    kept!("ignore-warnings", "", true, kept_text, "lapse prints no kernel-bug warnings"),
    // Redis's hidden test settings (see HIDDEN_SETTINGS).
    kept!("key-load-delay", "0", true, |a| kept_int(a, i32::MIN.into(), i32::MAX.into()),
        "lapse does not slow its loading down for tests"),
    kept!("loading-process-events-interval-bytes", "2097152", true, |a| kept_int(a, 1024, i32::MAX.into()),
        "lapse serves clients while loading by its own measure"),
    kept!("watchdog-period", "0", true, |a| kept_int(a, 0, i32::MAX.into()),
        "lapse has no software watchdog"),
    kept!("use-exit-on-panic", "no", true, kept_yes_no,
        "lapse does not panic on purpose"),
    kept!("io-threads", "1", false, |a| kept_int(a, 1, 128),
        "one thread serves every client (the freer and the writer have their own)"),
    kept!("io-threads-do-reads", "no", false, kept_yes_no, "no I/O threads"),
    kept!("jemalloc-bg-thread", "yes", true, kept_yes_no, "lapse uses glibc malloc, not jemalloc"),
    kept!("oom-score-adj", "no", true,
        // `relative` is Redis's other name for `yes`.
        |a| one_of(a, &["no", "yes", "relative", "absolute"])
            .map(|v| if v == "relative" { "yes".into() } else { v }),
        "the OOM killer's score is left as the system sets it"),
    kept!("oom-score-adj-values", "0 200 800", true, kept_oom_values,
        "the OOM killer's score is left as the system sets it"),
    kept!("proc-title-template", "{title} {listen-addr} {server-mode}", true, kept_text,
        "the process title is not changed"),
    kept!("set-proc-title", "yes", false, kept_yes_no, "the process title is not changed"),
    kept!("propagation-error-behavior", "ignore", true,
        |a| one_of(a, &["ignore", "panic", "panic-on-replicas"]),
        "a replica logs a command of its primary that fails and goes on (Redis's default)"),
    kept!("rdb-del-sync-files", "no", true, kept_yes_no,
        "the RDB a replica sync wrote stays"),
    kept!("repl-backlog-ttl", "3600", true, |a| kept_int(a, 0, i64::MAX),
        "the backlog is kept while the server runs"),
    kept!("repl-disable-tcp-nodelay", "no", true, kept_yes_no,
        "the replication stream is sent with TCP_NODELAY"),
    kept!("repl-diskless-load", "disabled", true,
        |a| one_of(a, &["disabled", "on-empty-db", "swapdb"]),
        "a replica takes a full sync into memory, then loads it"),
    kept!("replica-announce-ip", "", true, kept_text,
        "a replica announces the address its primary sees"),
    kept!("replica-announce-port", "0", true, |a| kept_int(a, 0, 65535),
        "a replica announces its listening port"),
    kept!("replica-announced", "yes", true, kept_yes_no,
        "every replica is listed to Sentinel"),
    kept!("replica-ignore-disk-write-errors", "no", true, kept_yes_no,
        "a replica that cannot write its AOF stops as with this setting at no"),
    kept!("replica-ignore-maxmemory", "yes", true, kept_yes_no,
        "a replica never evicts: its primary's deletions keep it in step"),
    kept!("replica-lazy-flush", "no", true, kept_yes_no,
        "a replica's flush before a full sync hands values to the freer thread"),
    kept!("sanitize-dump-payload", "no", true,
        |a| one_of(a, &["no", "yes", "clients"]),
        "RESTORE payloads and RDB files are always checked whole as they are decoded"),
    kept!("shutdown-on-sigint", "default", true,
        |a| kept_flags(a, &["default", "save", "nosave", "now", "force"]),
        "SIGINT shuts down as SHUTDOWN does with the save points' default"),
    kept!("shutdown-on-sigterm", "default", true,
        |a| kept_flags(a, &["default", "save", "nosave", "now", "force"]),
        "SIGTERM shuts down as SHUTDOWN does with the save points' default"),
    kept!("shutdown-timeout", "10", true, |a| kept_int(a, 0, i64::from(i32::MAX)),
        "shutdown does not wait for replicas to catch up"),
    kept!("socket-mark-id", "0", false, |a| kept_int(a, 0, i64::from(u32::MAX)),
        "sockets are not marked"),
    kept!("supervised", "no", false,
        |a| one_of(a, &["upstart", "systemd", "auto", "no"]),
        "no upstart/systemd notification: use Type=simple (or forking with daemonize)"),
    kept!("syslog-enabled", "no", false, kept_yes_no,
        "logs go to `logfile` or standard output, not syslog"),
    kept!("syslog-ident", "redis", false, kept_text, "no syslog"),
    kept!("syslog-facility", "local0", false,
        |a| one_of(a, &["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"]),
        "no syslog"),
    int_setting!("tls-port", tls.port, 0, 65535, true),
    text_setting!("tls-cert-file", tls.cert_file, true),
    text_setting!("tls-key-file", tls.key_file, true),
    text_setting!("tls-key-file-pass", tls.key_file_pass, true),
    text_setting!("tls-client-cert-file", tls.client_cert_file, true),
    text_setting!("tls-client-key-file", tls.client_key_file, true),
    text_setting!("tls-client-key-file-pass", tls.client_key_file_pass, true),
    text_setting!("tls-dh-params-file", tls.dh_params_file, true),
    text_setting!("tls-ca-cert-file", tls.ca_cert_file, true),
    text_setting!("tls-ca-cert-dir", tls.ca_cert_dir, true),
    text_setting!("tls-protocols", tls.protocols, true),
    text_setting!("tls-ciphers", tls.ciphers, true),
    text_setting!("tls-ciphersuites", tls.ciphersuites, true),
    text_setting!("tls-groups", tls.groups, true),
    yes_no_setting!("tls-prefer-server-ciphers", tls.prefer_server_ciphers),
    yes_no_setting!("tls-session-caching", tls.session_caching),
    int_setting!("tls-session-cache-size", tls.session_cache_size, 0, i64::from(i32::MAX), true),
    int_setting!("tls-session-cache-timeout", tls.session_cache_timeout, 0, i64::from(i32::MAX), true),
    yes_no_setting!("tls-cluster", tls.cluster),
    yes_no_setting!("tls-replication", tls.replication),
    Setting {
        name: "tls-auth-clients",
        get: |c| c.tls.auth_clients.name().into(),
        set: |c, a| {
            use crate::tls::AuthClients;
            c.tls.auth_clients = match one_of(a, &["no", "yes", "optional"])?.as_str() {
                "no" => AuthClients::No,
                "optional" => AuthClients::Optional,
                _ => AuthClients::Yes,
            };
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    text_setting!("aclfile", aclfile),
    Setting {
        name: "acl-pubsub-default",
        get: |c| if c.acl_pubsub_all { "allchannels" } else { "resetchannels" }.into(),
        set: |c, a| {
            c.acl_pubsub_all = one_of(a, &["allchannels", "resetchannels"])? == "allchannels";
            Ok(())
        },
        mutable: true,
        ignored: None,
    },
    int_setting!("acllog-max-len", acllog_max_len, 0, i64::MAX, true),
    int_setting!(
        "tracking-table-max-keys",
        tracking_table_max_keys,
        0,
        i64::MAX,
        true
    ),
];

/// Other names of settings (`alias`, `name`): CONFIG GET lists both,
/// CONFIG REWRITE writes only the name.
pub const ALIASES: &[(&str, &str)] = &[
    ("lua-time-limit", "busy-reply-threshold"),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("slave-priority", "replica-priority"),
    ("slaveof", "replicaof"),
    ("slave-read-only", "replica-read-only"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
];

/// Settings CONFIG SET changes only for whom `enable-protected-configs`
/// allows (Redis 7.0's protected configs: where files are written).
pub const PROTECTED_SETTINGS: &[&str] = &["dir", "dbfilename"];

/// The setting `name` names, by its name or an alias.
pub fn find_setting(name: &str) -> Option<&'static Setting> {
    let real = ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map_or(name, |(_, real)| *real);
    SETTINGS.iter().find(|s| s.name.eq_ignore_ascii_case(real))
}

/// Every name CONFIG GET answers to, each with its setting: the table's
/// names, then the aliases.
/// Redis's hidden settings: CONFIG GET shows them only when asked by
/// name, never for a pattern (Redis's `HIDDEN_CONFIG`).
pub const HIDDEN_SETTINGS: &[&str] = &[
    "rdb-key-save-delay",
    "key-load-delay",
    "loading-process-events-interval-bytes",
    "watchdog-period",
    "use-exit-on-panic",
];

pub fn all_names() -> impl Iterator<Item = (&'static str, &'static Setting)> {
    let names = SETTINGS.iter().map(|s| (s.name, s));
    let aliases = ALIASES
        .iter()
        .filter_map(|(alias, _)| find_setting(alias).map(|s| (*alias, s)));
    names.chain(aliases)
}

impl Setting {
    /// The same setting, fixed at startup.
    const fn fixed(self) -> Setting {
        Setting {
            mutable: false,
            ..self
        }
    }

    pub fn get(&self, config: &Config) -> String {
        (self.get)(config)
    }

    pub fn set(&self, config: &mut Config, args: &[String]) -> Result<(), BadValue> {
        (self.set)(config, args)
    }
}

impl Config {
    /// The settings lapse keeps without acting on them that are not at
    /// Redis's default, each with why lapse ignores it: warned about at
    /// startup, so that no setting is silently without effect.
    pub fn ignored_settings(&self) -> Vec<String> {
        let default = Config::default();
        SETTINGS
            .iter()
            .filter_map(|s| {
                let why = s.ignored?;
                let value = s.get(self);
                (value != s.get(&default)).then(|| format!("{} '{value}': {why}", s.name))
            })
            .collect()
    }
}
