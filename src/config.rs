//! Every setting in one struct, and the one table that names them.
//!
//! The table serves the config file (redis.conf syntax), CONFIG GET and
//! CONFIG SET alike, so a setting is declared once with its Redis name, its
//! parser and whether it may change at run time. `main` applies command-line
//! flags on top of the file.

use std::fmt;
use std::path::Path;

use crate::expire::Strategy;
use crate::protocol::request::PROTO_MAX_BULK_LEN_DEFAULT;

pub const DEFAULT_PORT: u16 = 7379;

#[derive(Debug, Clone)]
pub struct Config {
    pub port: u16,
    /// Addresses to listen on (Redis's `bind`, space separated).
    pub bind: Vec<String>,
    /// Cron frequency: active expiry slow cycles and other periodic work per second.
    pub hz: u32,
    pub databases: usize,
    pub loglevel: String,
    /// Valkey 8's `log-format` (`legacy`: Redis's lines; `logfmt`).
    pub log_format: String,
    /// Valkey 8's `log-timestamp-format` (`legacy`, `iso8601`,
    /// `milliseconds`).
    pub log_timestamp_format: String,
    /// 1..=10: how much work the active expire cycle does (Redis's setting).
    pub active_expire_effort: u32,
    /// How the active cycle picks candidates (`expire-strategy`, lapse's own).
    pub expire_strategy: Strategy,
    /// Longest single argument in bytes (`proto-max-bulk-len`).
    pub proto_max_bulk_len: i64,
    /// Largest query buffer one client may hold before it is closed.
    pub client_query_buffer_limit: u64,
    /// Most clients connected at once; the next one is refused.
    pub maxclients: usize,
    /// Close clients idle for this many seconds (0 = never).
    pub timeout: u64,
    /// The default user's password; empty = no authentication.
    pub requirepass: String,
    /// Refuse non-loopback clients while no password is set.
    pub protected_mode: bool,
    /// The `lazyfree-lazy-*` settings.
    pub lazyfree: LazyFreePolicy,
    /// Output limits for normal clients.
    pub output_limit_normal: OutputLimit,
    /// Output limits for replicas (kept for replication) and subscribers.
    pub output_limit_replica: OutputLimit,
    pub output_limit_pubsub: OutputLimit,
    /// `notify-keyspace-events` as event-class bits (see `notify`).
    pub notify_keyspace_events: u32,
    /// `busy-reply-threshold` (alias `lua-time-limit`), ms: a script that
    /// runs longer without writing is stopped (0: never).
    pub busy_reply_threshold_ms: u64,
    /// `hash-max-listpack-entries` (alias `hash-max-ziplist-entries`): a
    /// packed hash with more fields becomes a table.
    pub hash_max_listpack_entries: usize,
    /// `hash-max-listpack-value` (alias `hash-max-ziplist-value`): a packed
    /// hash given a longer field or value becomes a table.
    pub hash_max_listpack_value: usize,
    /// `set-max-intset-entries`: an integer set with more members becomes
    /// a table.
    pub set_max_intset_entries: usize,
    /// `set-max-listpack-entries` / `-value`: when a packed set of strings
    /// becomes a table.
    pub set_max_listpack_entries: usize,
    pub set_max_listpack_value: usize,
    /// A stream node's limits: bytes (as a Redis listpack) and entries
    /// (`stream-node-max-bytes`, `stream-node-max-entries`).
    pub stream_node_max_bytes: usize,
    pub stream_node_max_entries: usize,
    /// Largest sparse HyperLogLog in bytes (header included) before it
    /// turns dense (`hll-sparse-max-bytes`).
    pub hll_sparse_max_bytes: usize,
    /// `zset-max-listpack-entries` / `-value` (aliases `zset-max-ziplist-*`):
    /// when a packed sorted set becomes a tree.
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// `list-max-listpack-size` (alias `list-max-ziplist-size`): how full
    /// a list's blocks grow (`ListLimits`).
    pub list_max_listpack_size: i64,
    /// `enable-debug-command`: who may run DEBUG (see `ProtectedAction`).
    pub enable_debug_command: ProtectedAction,
    /// `enable-protected-configs`: who may CONFIG SET the settings that
    /// choose where files are written (`PROTECTED_SETTINGS`).
    pub enable_protected_configs: ProtectedAction,
    /// `maxmemory-clients` (Redis 7.0): what all clients' buffers together
    /// may hold before the biggest clients are disconnected; 0: no limit.
    pub maxmemory_clients: ClientMemoryLimit,
    /// `dir`: where RDB files go (absolute; the working directory at start).
    pub dir: String,
    /// `dbfilename`: the RDB file's name in `dir`.
    pub dbfilename: String,
    /// `rdbcompression`: LZF for long strings in RDB files.
    pub rdbcompression: bool,
    /// `rdbchecksum`: a CRC-64 at the end of RDB files (else 0).
    pub rdbchecksum: bool,
    /// `save`: a background save starts when, for one of these, that many
    /// seconds have passed and that many changes were made since the last
    /// save. Empty: no automatic saves (and none at shutdown).
    pub save_points: Vec<SavePoint>,
    /// `stop-writes-on-bgsave-error`: refuse writes (MISCONF) while the
    /// last background save failed and save points are set.
    pub stop_writes_on_bgsave_error: bool,
    /// `rdb-key-save-delay` (hidden, for tests, as in Redis): a background
    /// save writes at most one key per this many microseconds (negative:
    /// nanoseconds).
    pub rdb_key_save_delay: i64,
    /// `appendonly`: every change also goes to the append-only file.
    pub appendonly: bool,
    /// `appendfsync`: when the append-only file is synced.
    pub appendfsync: FsyncPolicy,
    /// `appenddirname`: the AOF directory, in `dir`.
    pub appenddirname: String,
    /// `appendfilename`: the stem of the AOF files and manifest.
    pub appendfilename: String,
    /// `aof-use-rdb-preamble`: a rewrite's base file is an RDB file
    /// (`.base.rdb`) rather than commands (`.base.aof`).
    pub aof_use_rdb_preamble: bool,
    /// `aof-load-truncated`: a last AOF file cut mid-command loads up to
    /// its last whole command (and is truncated there) instead of failing.
    pub aof_load_truncated: bool,
    /// `auto-aof-rewrite-percentage` / `-min-size`: a rewrite starts when
    /// the AOF grew by this much over its size after the last rewrite and
    /// is at least this big (0 percent: never).
    pub auto_aof_rewrite_percentage: u32,
    pub auto_aof_rewrite_min_size: u64,
    /// `no-appendfsync-on-rewrite`: no fsync while a rewrite or save runs.
    pub no_appendfsync_on_rewrite: bool,
    /// `aof-rewrite-incremental-fsync` / `rdb-save-incremental-fsync`: the
    /// writer syncs every 4 MB of a rewrite / save, not all at the end.
    pub aof_rewrite_incremental_fsync: bool,
    pub rdb_save_incremental_fsync: bool,
    /// `replicaof host port`: start as a replica of that server.
    pub replicaof: Option<(String, u16)>,
    /// `masterauth` / `masteruser`: the password (and user) to
    /// authenticate to the primary with.
    pub masterauth: String,
    pub masteruser: String,
    /// `replica-read-only`: clients of a replica may not write.
    pub replica_read_only: bool,
    /// `replica-serve-stale-data`: a replica whose link is down still
    /// answers reads (else `-MASTERDOWN`).
    pub replica_serve_stale_data: bool,
    /// `repl-timeout`, seconds: a replica drops a link its primary has
    /// been silent on this long (the primary pings every
    /// `repl-ping-replica-period` seconds).
    pub repl_timeout: u64,
    pub repl_ping_replica_period: u64,
    /// `min-replicas-to-write` / `min-replicas-max-lag`: a primary refuses
    /// writes (`-NOREPLICAS`) unless this many replicas acknowledged
    /// within that many seconds (0: no minimum).
    pub min_replicas_to_write: u64,
    pub min_replicas_max_lag: u64,
    /// `repl-diskless-sync`: a full sync streams the RDB straight to the
    /// replicas' sockets (when they all can take it: `capa eof`) instead
    /// of writing `dbfilename` first; `-delay`: seconds to wait for more
    /// replicas to share it; `-max-replicas`: start as soon as this many
    /// wait (0: no such limit).
    pub repl_diskless_sync: bool,
    pub repl_diskless_sync_delay: u64,
    pub repl_diskless_sync_max_replicas: u64,
    /// `replica-priority` (alias `slave-priority`): how Sentinel ranks
    /// this replica for promotion (lower first; 0: never promoted).
    pub replica_priority: u64,
    /// `maxmemory`, bytes (0: no limit): keys are evicted by
    /// `maxmemory-policy` to stay under it (see `evict`).
    pub maxmemory: u64,
    pub maxmemory_policy: Policy,
    /// `maxmemory-samples`: keys sampled per database for LRU/LFU.
    pub maxmemory_samples: u32,
    /// `maxmemory-eviction-tenacity` (0..=100): how long one command may
    /// spend evicting.
    pub maxmemory_eviction_tenacity: u32,
    /// `lfu-log-factor`, `lfu-decay-time` (minutes): how the LFU counter
    /// grows and fades.
    pub lfu_log_factor: u32,
    pub lfu_decay_time: u32,
    /// `slowlog-log-slower-than`, µs (negative: no slow log; 0: every
    /// command) and `slowlog-max-len`, entries.
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: usize,
    /// `latency-tracking`: a latency histogram per command (INFO
    /// latencystats), and `latency-tracking-info-percentiles`, what it shows.
    pub latency_tracking: bool,
    /// `latency-monitor-threshold`, ms: events at least this slow are
    /// sampled for LATENCY (0: none).
    pub latency_monitor_threshold: u64,
    pub latency_tracking_info_percentiles: Vec<f64>,
    /// `daemonize`: fork at startup, the parent exits, the child runs
    /// detached with its standard streams on /dev/null.
    pub daemonize: bool,
    /// `pidfile`: written with the server's pid at startup (also when
    /// daemonized without one: `DEFAULT_PIDFILE`), removed at shutdown.
    pub pidfile: String,
    /// `logfile`: the log's file, opened for each line as Redis does (so
    /// log rotation needs no signal); empty: standard output.
    pub logfile: String,
    /// `unixsocket` (empty: none) and `unixsocketperm` (octal; 0: as the
    /// umask leaves it): a Unix domain socket listened on beside TCP.
    pub unixsocket: String,
    pub unixsocketperm: u32,
    /// `tcp-backlog`: the listen queue's length (the kernel caps it at
    /// `net.core.somaxconn`).
    pub tcp_backlog: u32,
    /// `tcp-keepalive`, seconds: TCP keepalive probes on client sockets
    /// after this much idleness (0: off).
    pub tcp_keepalive: u64,
    /// `repl-backlog-size`, bytes: the primary's stream history a
    /// reconnecting replica can resume from.
    pub repl_backlog_size: u64,
    /// `rename-command original new` pairs from the config file, in order
    /// (`commands::Renames`; not a setting CONFIG GET shows).
    pub renamed_commands: Vec<(String, String)>,
    /// `aclfile`: where ACL SAVE writes users and ACL LOAD (and startup)
    /// reads them; empty: users live in the config (`user` lines).
    pub aclfile: String,
    /// `acl-pubsub-default`: new users may use every channel.
    pub acl_pubsub_all: bool,
    /// `acllog-max-len`: ACL LOG entries kept.
    pub acllog_max_len: usize,
    /// `user` directives of the config file, each the rules after `user`.
    pub user_directives: Vec<Vec<String>>,
    /// `tracking-table-max-keys`: keys client-side caching remembers before
    /// it drops some, invalidating their holders (0: no limit).
    pub tracking_table_max_keys: usize,
    /// Values of the settings lapse keeps without acting on them
    /// (`Setting::ignored`), by name; absent: Redis's default.
    pub kept: std::collections::BTreeMap<&'static str, String>,
    /// The config file the server started from, absolute (INFO
    /// `config_file`; where CONFIG REWRITE writes). Not a setting.
    pub config_file: Option<std::path::PathBuf>,
}

/// `maxmemory-policy`: which keys eviction takes (`evict`) when memory
/// is over `maxmemory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

/// The policies by their Redis names.
pub const POLICIES: &[(&str, Policy)] = &[
    ("volatile-lru", Policy::VolatileLru),
    ("volatile-lfu", Policy::VolatileLfu),
    ("volatile-random", Policy::VolatileRandom),
    ("volatile-ttl", Policy::VolatileTtl),
    ("allkeys-lru", Policy::AllKeysLru),
    ("allkeys-lfu", Policy::AllKeysLfu),
    ("allkeys-random", Policy::AllKeysRandom),
    ("noeviction", Policy::NoEviction),
];

impl Policy {
    pub fn name(self) -> &'static str {
        POLICIES
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("noeviction", |(name, _)| name)
    }

    pub fn parse(name: &str) -> Option<Policy> {
        POLICIES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, p)| *p)
    }

    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    /// LRU or LFU: victims chosen by each key's access data (Redis's
    /// `MAXMEMORY_FLAG_NO_SHARED_INTEGERS`).
    pub fn uses_access_data(self) -> bool {
        self.is_lfu() || matches!(self, Policy::AllKeysLru | Policy::VolatileLru)
    }

    /// Victims only among keys with a TTL.
    pub fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }
}
/// The smallest replication backlog (Redis's
/// `CONFIG_REPL_BACKLOG_MIN_SIZE`): a smaller `repl-backlog-size` is
/// raised to it.
pub const REPL_BACKLOG_MIN_BYTES: u64 = 16 * 1024;
/// Where the pid is written when daemonized without a `pidfile`, as Redis.
pub const DEFAULT_PIDFILE: &str = "/var/run/redis.pid";

/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// Before replies go out, once per loop iteration.
    Always,
    /// On a background thread, about once a second.
    EverySec,
    /// Left to the OS.
    No,
}

impl FsyncPolicy {
    pub fn name(self) -> &'static str {
        match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::EverySec => "everysec",
            FsyncPolicy::No => "no",
        }
    }
}

/// One `save <seconds> <changes>` point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavePoint {
    pub seconds: u64,
    pub changes: u64,
}

/// Redis's save points when no config says otherwise.
pub const DEFAULT_SAVE_POINTS: [SavePoint; 3] = [
    SavePoint {
        seconds: 3600,
        changes: 1,
    },
    SavePoint {
        seconds: 300,
        changes: 100,
    },
    SavePoint {
        seconds: 60,
        changes: 10000,
    },
];

/// `save` as Redis parses it: pairs of integers (seconds ≥ 1, changes
/// ≥ 0), or one empty argument for none.
fn parse_save_points(args: &[String]) -> Result<Vec<SavePoint>, BadValue> {
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    let bad = || BadValue("Invalid save parameters".into());
    if !words.len().is_multiple_of(2) {
        return Err(bad());
    }
    words
        .chunks(2)
        .map(|pair| {
            let seconds: u64 = pair[0].parse().ok().filter(|&s| s >= 1).ok_or_else(bad)?;
            let changes: u64 = pair[1].parse().map_err(|_| bad())?;
            Ok(SavePoint { seconds, changes })
        })
        .collect()
}

/// `maxmemory-clients`: bytes, or a percentage of `maxmemory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMemoryLimit {
    Bytes(u64),
    Percent(u64),
}

impl ClientMemoryLimit {
    /// The limit in bytes (0: none); a percentage is of `maxmemory`
    /// (none without one), as in Redis.
    pub fn bytes(self, maxmemory: u64) -> u64 {
        match self {
            ClientMemoryLimit::Bytes(n) => n,
            ClientMemoryLimit::Percent(p) => maxmemory / 100 * p,
        }
    }
}

/// Who may run a protected command (Redis's `enable-debug-command`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtectedAction {
    No,
    Yes,
    /// Clients on the loopback address only.
    Local,
}

impl ProtectedAction {
    fn parse(args: &[String]) -> Result<ProtectedAction, BadValue> {
        Ok(match one_of(args, &["no", "yes", "local"])?.as_str() {
            "yes" => ProtectedAction::Yes,
            "local" => ProtectedAction::Local,
            _ => ProtectedAction::No,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ProtectedAction::No => "no",
            ProtectedAction::Yes => "yes",
            ProtectedAction::Local => "local",
        }
    }

    /// Whether a client connected from `peer` (`ip:port`) may.
    pub fn allows(self, peer: &str) -> bool {
        match self {
            ProtectedAction::No => false,
            ProtectedAction::Yes => true,
            // As Redis's `islocalClient`: exactly these two addresses, or
            // the Unix socket (whose clients' address is its path).
            ProtectedAction::Local => {
                peer.starts_with('/')
                    || peer.parse::<std::net::SocketAddr>().is_ok_and(|a| {
                        a.ip() == std::net::Ipv4Addr::LOCALHOST
                            || a.ip() == std::net::Ipv6Addr::LOCALHOST
                    })
            }
        }
    }
}

/// Which deletions may free big values on the lazyfree thread (all `no`
/// by default, as in Redis 7.0; UNLINK and FLUSH* ASYNC always may).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LazyFreePolicy {
    /// Evictions (kept for when eviction exists).
    pub eviction: bool,
    /// Keys removed because they expired.
    pub expire: bool,
    /// Values the server overwrites or deletes as a side effect (SET, RENAME).
    pub server_del: bool,
    /// DEL.
    pub user_del: bool,
    /// FLUSHDB / FLUSHALL without ASYNC or SYNC.
    pub user_flush: bool,
}

/// One class of `client-output-buffer-limit`: bytes, bytes, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimit {
    /// Unsent bytes that close the client at once (0 = no limit).
    pub hard_bytes: u64,
    /// Unsent bytes that close the client if held for `soft_seconds`.
    pub soft_bytes: u64,
    pub soft_seconds: u64,
}

impl OutputLimit {
    const fn new(hard_bytes: u64, soft_bytes: u64, soft_seconds: u64) -> Self {
        Self {
            hard_bytes,
            soft_bytes,
            soft_seconds,
        }
    }
}

/// lapse's default for normal clients. Redis has no limit there (`0 0 0`),
/// so a client that never reads grows the server without bound; lapse cuts
/// it at 1 GiB unsent, or 128 MiB held for a minute.
pub const DEFAULT_OUTPUT_LIMIT_NORMAL: OutputLimit =
    OutputLimit::new(1024 * 1024 * 1024, 128 * 1024 * 1024, 60);

impl Default for Config {
    fn default() -> Self {
        Self {
            port: DEFAULT_PORT,
            bind: vec!["127.0.0.1".into(), "-::1".into()],
            hz: 10,
            databases: 16,
            loglevel: "notice".into(),
            log_format: "legacy".into(),
            log_timestamp_format: "legacy".into(),
            active_expire_effort: 1,
            expire_strategy: Strategy::Deadline,
            proto_max_bulk_len: PROTO_MAX_BULK_LEN_DEFAULT,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            maxclients: 10_000,
            timeout: 0,
            requirepass: String::new(),
            protected_mode: true,
            lazyfree: LazyFreePolicy::default(),
            output_limit_normal: DEFAULT_OUTPUT_LIMIT_NORMAL,
            output_limit_replica: OutputLimit::new(256 * 1024 * 1024, 64 * 1024 * 1024, 60),
            output_limit_pubsub: OutputLimit::new(32 * 1024 * 1024, 8 * 1024 * 1024, 60),
            notify_keyspace_events: 0,
            busy_reply_threshold_ms: 5000,
            hash_max_listpack_entries: crate::value::PackLimits::HASH.entries,
            hash_max_listpack_value: crate::value::PackLimits::HASH.value,
            set_max_intset_entries: crate::value::SetLimits::DEFAULT.intset_entries,
            set_max_listpack_entries: crate::value::SetLimits::DEFAULT.listpack_entries,
            set_max_listpack_value: crate::value::SetLimits::DEFAULT.listpack_value,
            hll_sparse_max_bytes: 3000,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
            zset_max_listpack_entries: crate::value::ZLimits::DEFAULT.entries,
            zset_max_listpack_value: crate::value::ZLimits::DEFAULT.value,
            list_max_listpack_size: -2,
            // Redis's default is `no`; lapse lets loopback clients (the
            // operator's redis-cli, the test suite) run DEBUG: see README.
            enable_debug_command: ProtectedAction::Local,
            enable_protected_configs: ProtectedAction::Local,
            maxmemory_clients: ClientMemoryLimit::Bytes(0),
            dir: std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|_| ".".into()),
            dbfilename: "dump.rdb".into(),
            rdbcompression: true,
            rdbchecksum: true,
            save_points: DEFAULT_SAVE_POINTS.to_vec(),
            stop_writes_on_bgsave_error: true,
            rdb_key_save_delay: 0,
            appendonly: false,
            appendfsync: FsyncPolicy::EverySec,
            appenddirname: "appendonlydir".into(),
            appendfilename: "appendonly.aof".into(),
            aof_use_rdb_preamble: true,
            aof_load_truncated: true,
            auto_aof_rewrite_percentage: 100,
            auto_aof_rewrite_min_size: 64 * 1024 * 1024,
            no_appendfsync_on_rewrite: false,
            aof_rewrite_incremental_fsync: true,
            rdb_save_incremental_fsync: true,
            replicaof: None,
            masterauth: String::new(),
            masteruser: String::new(),
            replica_read_only: true,
            replica_serve_stale_data: true,
            repl_timeout: 60,
            repl_ping_replica_period: 10,
            min_replicas_to_write: 0,
            min_replicas_max_lag: 10,
            repl_diskless_sync: true,
            repl_diskless_sync_delay: 5,
            repl_diskless_sync_max_replicas: 0,
            replica_priority: 100,
            config_file: None,
            daemonize: false,
            pidfile: String::new(),
            logfile: String::new(),
            unixsocket: String::new(),
            unixsocketperm: 0,
            tcp_backlog: 511,
            tcp_keepalive: 300,
            repl_backlog_size: 1024 * 1024,
            kept: std::collections::BTreeMap::new(),
            renamed_commands: Vec::new(),
            tracking_table_max_keys: 1_000_000,
            aclfile: String::new(),
            acl_pubsub_all: false,
            acllog_max_len: 128,
            user_directives: Vec::new(),
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            latency_tracking: true,
            latency_monitor_threshold: 0,
            latency_tracking_info_percentiles: vec![50.0, 99.0, 99.9],
            maxmemory: 0,
            maxmemory_policy: Policy::NoEviction,
            maxmemory_samples: 5,
            maxmemory_eviction_tenacity: 10,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
        }
    }
}

/// Why a value was refused; the text follows Redis's CONFIG SET wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadValue(pub String);

/// A failure to read the config file: names the file, line and directive.
#[derive(Debug)]
pub struct ConfigFileError {
    pub path: String,
    pub line: usize,
    pub directive: String,
    pub reason: String,
}

impl fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "config file '{}', line {}, directive '{}': {}",
            self.path, self.line, self.directive, self.reason
        )
    }
}

impl std::error::Error for ConfigFileError {}

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

fn one_of(args: &[String], allowed: &[&str]) -> Result<String, BadValue> {
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
    ($name:literal, $field:ident) => {
        Setting {
            name: $name,
            get: |c| c.$field.clone(),
            set: |c, a| {
                c.$field = kept_text(a)?;
                Ok(())
            },
            mutable: false,
            ignored: None,
        }
    };
}

/// An integer setting in `min..=max` stored in `Config::$field`.
macro_rules! int_setting {
    ($name:literal, $field:ident, $min:expr, $max:expr, $mutable:expr) => {
        Setting {
            name: $name,
            get: |c| c.$field.to_string(),
            set: |c, a| {
                c.$field = int_in(a, $min, $max)?;
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
    kept!("cluster-enabled", "no", false, kept_yes_no,
        "no cluster mode: lapse runs standalone (use a proxy or Sentinel)"),
    kept!("cluster-config-file", "nodes.conf", false, kept_text, "no cluster mode"),
    kept!("cluster-port", "0", false, |a| kept_int(a, 0, 65535), "no cluster mode"),
    kept!("cluster-node-timeout", "15000", true, |a| kept_int(a, 0, i64::MAX), "no cluster mode"),
    kept!("cluster-announce-ip", "", true, kept_text, "no cluster mode"),
    kept!("cluster-announce-hostname", "", true, kept_text, "no cluster mode"),
    kept!("cluster-announce-port", "0", true, |a| kept_int(a, 0, 65535), "no cluster mode"),
    kept!("cluster-announce-bus-port", "0", true, |a| kept_int(a, 0, 65535), "no cluster mode"),
    kept!("cluster-announce-tls-port", "0", true, |a| kept_int(a, 0, 65535), "no cluster mode"),
    kept!("cluster-allow-pubsubshard-when-down", "yes", true, kept_yes_no, "no cluster mode"),
    kept!("cluster-allow-reads-when-down", "no", true, kept_yes_no, "no cluster mode"),
    kept!("cluster-allow-replica-migration", "yes", true, kept_yes_no, "no cluster mode"),
    kept!("cluster-link-sendbuf-limit", "0", true, |a| kept_int(a, 0, i64::MAX), "no cluster mode"),
    kept!("cluster-migration-barrier", "1", true, |a| kept_int(a, 0, i64::from(i32::MAX)),
        "no cluster mode"),
    kept!("cluster-preferred-endpoint-type", "ip", true,
        |a| one_of(a, &["ip", "hostname", "unknown-endpoint"]), "no cluster mode"),
    kept!("cluster-replica-no-failover", "no", true, kept_yes_no, "no cluster mode"),
    kept!("cluster-replica-validity-factor", "10", true, |a| kept_int(a, 0, i64::from(i32::MAX)),
        "no cluster mode"),
    kept!("cluster-require-full-coverage", "yes", true, kept_yes_no, "no cluster mode"),
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
    kept!("tls-port", "0", true, |a| kept_int(a, 0, 65535), "no TLS: put a TLS proxy in front"),
    kept!("tls-cert-file", "", true, kept_text, "no TLS"),
    kept!("tls-key-file", "", true, kept_text, "no TLS"),
    kept!("tls-key-file-pass", "", true, kept_text, "no TLS"),
    kept!("tls-client-cert-file", "", true, kept_text, "no TLS"),
    kept!("tls-client-key-file", "", true, kept_text, "no TLS"),
    kept!("tls-client-key-file-pass", "", true, kept_text, "no TLS"),
    kept!("tls-dh-params-file", "", true, kept_text, "no TLS"),
    kept!("tls-ca-cert-file", "", true, kept_text, "no TLS"),
    kept!("tls-ca-cert-dir", "", true, kept_text, "no TLS"),
    kept!("tls-protocols", "", true, kept_text, "no TLS"),
    kept!("tls-ciphers", "", true, kept_text, "no TLS"),
    kept!("tls-ciphersuites", "", true, kept_text, "no TLS"),
    kept!("tls-prefer-server-ciphers", "no", true, kept_yes_no, "no TLS"),
    kept!("tls-session-caching", "yes", true, kept_yes_no, "no TLS"),
    kept!("tls-session-cache-size", "20480", true, |a| kept_int(a, 0, i64::from(i32::MAX)),
        "no TLS"),
    kept!("tls-session-cache-timeout", "300", true, |a| kept_int(a, 0, i64::from(i32::MAX)),
        "no TLS"),
    kept!("tls-cluster", "no", true, kept_yes_no, "no TLS"),
    kept!("tls-replication", "no", true, kept_yes_no, "no TLS"),
    kept!("tls-auth-clients", "yes", true, |a| one_of(a, &["no", "yes", "optional"]), "no TLS"),
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

impl Setting {
    pub fn get(&self, config: &Config) -> String {
        (self.get)(config)
    }

    pub fn set(&self, config: &mut Config, args: &[String]) -> Result<(), BadValue> {
        (self.set)(config, args)
    }
}

impl Config {
    /// `acl-pubsub-default` is `allchannels`.
    pub fn acl_pubsub_all(&self) -> bool {
        self.acl_pubsub_all
    }

    /// The ACL file, when one is configured (relative to the directory
    /// the server started in, as Redis reads it).
    pub fn aclfile_path(&self) -> Option<std::path::PathBuf> {
        (!self.aclfile.is_empty()).then(|| std::path::PathBuf::from(&self.aclfile))
    }

    /// What keys' access history keeps (`maxmemory-policy`'s LRU or
    /// LFU, and the LFU's settings).
    pub fn access_policy(&self) -> crate::db::access::AccessPolicy {
        crate::db::access::AccessPolicy {
            lfu: self.maxmemory_policy.is_lfu(),
            lfu_log_factor: self.lfu_log_factor,
            lfu_decay_time: self.lfu_decay_time,
        }
    }

    /// When a packed hash becomes a table.
    pub fn hash_limits(&self) -> crate::value::PackLimits {
        crate::value::PackLimits {
            entries: self.hash_max_listpack_entries,
            value: self.hash_max_listpack_value,
        }
    }

    /// The representation limits a loaded value follows
    /// (`*-max-listpack-*`, `set-max-intset-entries`).
    pub fn load_limits(&self) -> crate::persistence::rdb_load::Limits {
        crate::persistence::rdb_load::Limits {
            hash: self.hash_limits(),
            set: self.set_limits(),
            zset: self.zset_limits(),
            list: self.list_limits(),
        }
    }

    /// How full a list's blocks grow.
    pub fn list_limits(&self) -> crate::value::ListLimits {
        crate::value::ListLimits {
            fill: self.list_max_listpack_size,
        }
    }

    /// When a packed sorted set becomes a tree.
    pub fn zset_limits(&self) -> crate::value::ZLimits {
        crate::value::ZLimits {
            entries: self.zset_max_listpack_entries,
            value: self.zset_max_listpack_value,
        }
    }

    /// When a set changes representation.
    pub fn set_limits(&self) -> crate::value::SetLimits {
        crate::value::SetLimits {
            intset_entries: self.set_max_intset_entries,
            listpack_entries: self.set_max_listpack_entries,
            listpack_value: self.set_max_listpack_value,
        }
    }

    /// Applies a redis.conf-style file on top of `self`.
    pub fn load_file(&mut self, path: &Path) -> Result<(), ConfigFileError> {
        Directives::new(self).load_file(path)
    }

    /// Applies config text; `origin` names it in errors.
    pub fn load_str(&mut self, text: &str, origin: &str) -> Result<(), ConfigFileError> {
        Directives::new(self).load_str(text, origin)
    }
}

/// Config-file directives that are not settings: CONFIG REWRITE keeps
/// their lines (Redis's list; `loadmodule` and `sentinel` are refused
/// when read, see `Directives::apply`; `user` lines are rewritten from
/// the ACL users).
const FILE_ONLY_DIRECTIVES: &[&str] = &["include", "rename-command", "loadmodule", "sentinel"];

/// The line CONFIG REWRITE puts before the first directive it appends.
const REWRITE_SIGNATURE: &str = "# Generated by CONFIG REWRITE";

/// The setting a config-file directive names (an alias names another).
fn canonical_name(name: &str) -> Option<&'static str> {
    find_setting(name).map(|s| s.name)
}

impl Config {
    /// The lines CONFIG REWRITE writes for `setting`, each with whether it
    /// must be written even where the old file does not name the setting
    /// (its value is not the default). No lines: the setting is removed.
    fn rewrite_lines(&self, setting: &Setting, default: &Config) -> Vec<(String, bool)> {
        let name = setting.name;
        let differs = setting.get(self) != setting.get(default);
        match name {
            // Always written, as Redis does: an empty list must not fall
            // back to the defaults at the next start.
            "save" if self.save_points.is_empty() => vec![("save \"\"".into(), true)],
            "save" => self
                .save_points
                .iter()
                .map(|p| (format!("save {} {}", p.seconds, p.changes), true))
                .collect(),
            "replicaof" => self
                .replicaof
                .iter()
                .map(|(host, port)| {
                    (
                        format!("replicaof {} {port}", crate::protocol::word_repr(host)),
                        true,
                    )
                })
                .collect(),
            "client-output-buffer-limit" => {
                let classes = [
                    (
                        "normal",
                        self.output_limit_normal,
                        default.output_limit_normal,
                    ),
                    (
                        "replica",
                        self.output_limit_replica,
                        default.output_limit_replica,
                    ),
                    (
                        "pubsub",
                        self.output_limit_pubsub,
                        default.output_limit_pubsub,
                    ),
                ];
                classes
                    .into_iter()
                    .map(|(class, l, d)| {
                        let line = format!(
                            "{name} {class} {} {} {}",
                            l.hard_bytes, l.soft_bytes, l.soft_seconds
                        );
                        (line, l != d)
                    })
                    .collect()
            }
            "bind" => {
                let words: Vec<String> = self
                    .bind
                    .iter()
                    .map(|w| crate::protocol::word_repr(w))
                    .collect();
                vec![(format!("bind {}", words.join(" ")), differs)]
            }
            // Redis always writes the working directory.
            "dir" => vec![(
                format!("dir {}", crate::protocol::word_repr(&self.dir)),
                true,
            )],
            _ => vec![(
                format!("{name} {}", crate::protocol::word_repr(&setting.get(self))),
                differs,
            )],
        }
    }

    /// CONFIG REWRITE's new text for the config file whose text is `old`,
    /// as Redis makes it: comments and blank lines stay; each setting's
    /// lines are replaced in place by its current value; settings not at
    /// their default that the file did not name are appended after
    /// `# Generated by CONFIG REWRITE`; lines left over (a `replicaof`
    /// after a promotion, extra `save` lines) are blanked; runs of blank
    /// lines become one; an alias's line is written under the real name.
    ///
    /// `users`: the `user` lines to write (every ACL user, as Redis does
    /// when there is no `aclfile`; none with one, which drops the file's).
    pub fn rewrite_file_text(&self, old: &str, users: &[String]) -> String {
        let mut lines: Vec<String> = Vec::new();
        let mut uses: Vec<(&'static str, std::collections::VecDeque<usize>)> = Vec::new();
        let mut needs_signature = true;
        for raw in old.lines() {
            let line = raw.trim_matches(|c| matches!(c, '\r' | '\n' | '\t' | ' '));
            if line.is_empty() || line.starts_with('#') {
                needs_signature &= line != REWRITE_SIGNATURE;
                lines.push(line.to_string());
                continue;
            }
            let first = crate::protocol::request::split_line(line.as_bytes())
                .ok()
                .and_then(|words| {
                    words
                        .first()
                        .map(|w| String::from_utf8_lossy(w).into_owned())
                });
            // Directives that are not settings stay as they are.
            if first.as_deref().is_some_and(|w| {
                FILE_ONLY_DIRECTIVES
                    .iter()
                    .any(|d| d.eq_ignore_ascii_case(w))
            }) {
                lines.push(line.to_string());
                continue;
            }
            let name = match first.as_deref() {
                Some(w) if w.eq_ignore_ascii_case("user") => Some("user"),
                _ => first.and_then(|w| canonical_name(&w)),
            };
            let Some(name) = name else {
                lines.push(format!("# ??? {line}"));
                continue;
            };
            match uses.iter_mut().find(|(n, _)| *n == name) {
                Some((_, at)) => at.push_back(lines.len()),
                None => uses.push((name, [lines.len()].into())),
            }
            lines.push(line.to_string());
        }
        let default = Config::default();
        let user_lines: Vec<(String, bool)> = users.iter().map(|l| (l.clone(), true)).collect();
        let options = SETTINGS
            .iter()
            .map(|s| (s.name, self.rewrite_lines(s, &default)))
            .chain(std::iter::once(("user", user_lines)));
        for (option, mut rendered) in options {
            let mut old_lines = uses
                .iter_mut()
                .find(|(n, _)| *n == option)
                .map(|(_, at)| std::mem::take(at))
                .unwrap_or_default();
            // Lines that must be written take the old lines first, so a
            // second rewrite writes the same file.
            rendered.sort_by_key(|(_, force)| !force);
            for (line, force) in rendered {
                if let Some(at) = old_lines.pop_front() {
                    lines[at] = line;
                } else if force {
                    if needs_signature {
                        lines.push(REWRITE_SIGNATURE.into());
                        needs_signature = false;
                    }
                    lines.push(line);
                }
            }
            for at in old_lines {
                lines[at].clear();
            }
        }
        let mut text = String::new();
        let mut was_empty = false;
        for line in lines {
            if line.is_empty() && was_empty {
                continue;
            }
            was_empty = line.is_empty();
            text.push_str(&line);
            text.push('\n');
        }
        text
    }
}

/// Applies directives (`name args...`) to a config in order, from a file
/// and then from command-line flags, as Redis appends its flags to the
/// file's text: each `save` adds a point, the first one replacing the
/// defaults.
pub struct Directives<'a> {
    config: &'a mut Config,
    saw_save: bool,
    /// Files being read through `include` (a file including itself
    /// must not recurse for ever).
    include_depth: usize,
    /// Checks a `user` directive (the name, then the rules) with
    /// `acl-pubsub-default`'s `allchannels`: `acl`'s, handed in by whoever
    /// reads the server's config (none: not checked).
    check_user: UserCheck,
}

/// See `Directives::check_users`.
pub type UserCheck = fn(&[String], bool) -> Result<(), String>;

/// How deep `include`s may nest.
const MAX_INCLUDE_DEPTH: usize = 16;

impl<'a> Directives<'a> {
    pub fn new(config: &'a mut Config) -> Directives<'a> {
        Directives {
            config,
            saw_save: false,
            include_depth: 0,
            check_user: |_, _| Ok(()),
        }
    }

    /// One directive; the error is the reason, in Redis's words.
    pub fn apply(&mut self, name: &str, args: &[String]) -> Result<(), String> {
        if name.eq_ignore_ascii_case("rename-command") {
            let [original, new] = args else {
                return Err("wrong number of arguments".into());
            };
            let mut pairs = self.config.renamed_commands.clone();
            pairs.push((original.clone(), new.clone()));
            crate::command_table::Renames::new(&pairs)?;
            self.config.renamed_commands = pairs;
            return Ok(());
        }
        if name.eq_ignore_ascii_case("user") {
            // Checked as ACL SETUSER checks (by `check_user`), applied at
            // startup.
            if args.is_empty() {
                return Err("wrong number of arguments".into());
            }
            (self.check_user)(args, self.config.acl_pubsub_all)?;
            self.config.user_directives.push(args.to_vec());
            return Ok(());
        }
        let refusal = match name.to_ascii_lowercase().as_str() {
            "loadmodule" => "lapse cannot load Redis modules",
            "sentinel" => "a Sentinel directive: run redis-sentinel for Sentinel",
            _ => "Bad directive or wrong number of arguments",
        };
        let setting = find_setting(name).ok_or_else(|| refusal.to_string())?;
        let earlier_points = if setting.name == "save" && self.saw_save {
            self.config.save_points.clone()
        } else {
            Vec::new()
        };
        setting
            .set(self.config, args)
            .map_err(|BadValue(reason)| reason)?;
        if setting.name == "save" {
            self.saw_save = true;
            let added = std::mem::replace(&mut self.config.save_points, earlier_points);
            self.config.save_points.extend(added);
        }
        Ok(())
    }

    /// `user` directives are checked by `check`, as ACL SETUSER checks
    /// rules, so that a bad one stops the server as the file is read.
    pub fn check_users(mut self, check: UserCheck) -> Self {
        self.check_user = check;
        self
    }

    pub fn load_file(&mut self, path: &Path) -> Result<(), ConfigFileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigFileError {
            path: shown.clone(),
            line: 0,
            directive: String::new(),
            reason: format!("cannot read file: {e}"),
        })?;
        self.load_str(&text, &shown)
    }

    pub fn load_str(&mut self, text: &str, origin: &str) -> Result<(), ConfigFileError> {
        for (n, raw) in text.lines().enumerate() {
            let fail = |directive: &str, reason: String| ConfigFileError {
                path: origin.to_string(),
                line: n + 1,
                directive: directive.to_string(),
                reason,
            };
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words = crate::protocol::request::split_line(line.as_bytes())
                .map_err(|_| fail(line, "unbalanced quotes".into()))?;
            let words: Vec<String> = words
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            let Some((name, args)) = words.split_first() else {
                continue;
            };
            if name.eq_ignore_ascii_case("include") {
                // Read in place, as Redis splices included files.
                let [file] = args else {
                    return Err(fail(name, "wrong number of arguments".into()));
                };
                if self.include_depth >= MAX_INCLUDE_DEPTH {
                    return Err(fail(name, "includes nested too deep".into()));
                }
                self.include_depth += 1;
                let included = self.load_file(Path::new(file));
                self.include_depth -= 1;
                included?;
                continue;
            }
            self.apply(name, args)
                .map_err(|reason| fail(name, reason))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod protected_tests {
    use super::ProtectedAction;

    #[test]
    fn local_means_exactly_the_loopback_addresses() {
        let local = ProtectedAction::Local;
        assert!(local.allows("127.0.0.1:5000") && local.allows("[::1]:5000"));
        for peer in ["127.0.0.2:5000", "10.0.0.1:5000", "[::2]:1", "", "garbage"] {
            assert!(!local.allows(peer), "{peer}");
        }
        assert!(ProtectedAction::Yes.allows("10.0.0.1:5000"));
        assert!(!ProtectedAction::No.allows("127.0.0.1:5000"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_policies_by_their_redis_names() {
        assert_eq!(Policy::parse("ALLKEYS-LFU"), Some(Policy::AllKeysLfu));
        assert_eq!(Policy::VolatileTtl.name(), "volatile-ttl");
    }

    /// Loads `text` as a server started from it would.
    fn loaded(text: &str) -> Config {
        let mut c = Config::default();
        Directives::new(&mut c).load_str(text, "t.conf").unwrap();
        c
    }

    #[test]
    fn rewrite_keeps_comments_replaces_in_place_and_appends_the_rest() {
        let old = "# my server\nport 7000\n\n\n# replication\nreplicaof 10.0.0.1 6379\nlua-time-limit 100\nsave 900 1\nsave 300 10\nhz 10\n";
        let mut c = loaded(old);
        c.replicaof = None;
        c.hz = 50;
        c.save_points.truncate(1);
        c.requirepass = "two words".into();
        c.output_limit_pubsub = OutputLimit::new(1, 2, 3);
        let text = c.rewrite_file_text(old, &[]);
        let lines: Vec<&str> = text.lines().collect();
        // In place, the order kept; the alias under its real name; the
        // promoted replica's line and the extra save point blanked; runs
        // of blank lines folded; the rest appended after the signature.
        assert_eq!(
            &lines[..8],
            [
                "# my server",
                "port 7000",
                "",
                "# replication",
                "",
                "busy-reply-threshold 100",
                "save 900 1",
                "",
            ],
            "{text}"
        );
        assert_eq!(lines[8], "hz 50");
        assert_eq!(lines[9], REWRITE_SIGNATURE);
        assert!(lines.contains(&"requirepass \"two words\""), "{text}");
        assert!(
            lines.contains(&"client-output-buffer-limit pubsub 1 2 3"),
            "{text}"
        );
        assert!(
            !text.contains("client-output-buffer-limit normal"),
            "{text}"
        );
        assert!(lines.iter().any(|l| l.starts_with("dir ")), "{text}");
        // What it wrote loads back to the same settings.
        let back = loaded(&text);
        for setting in SETTINGS {
            assert_eq!(setting.get(&back), setting.get(&c), "{}", setting.name);
        }
        // A second rewrite changes nothing and adds no second signature.
        assert_eq!(back.rewrite_file_text(&text, &[]), text);
    }

    #[test]
    fn rewrite_of_an_empty_file_writes_what_differs_from_the_defaults() {
        let c = Config {
            replicaof: Some(("127.0.0.1".into(), 6380)),
            save_points: Vec::new(),
            ..Config::default()
        };
        let text = c.rewrite_file_text("", &[]);
        assert!(text.starts_with(REWRITE_SIGNATURE), "{text}");
        assert!(text.contains("\nreplicaof 127.0.0.1 6380\n"), "{text}");
        assert!(text.contains("\nsave \"\"\n"), "{text}");
        assert!(!text.contains("hz "), "{text}");
        assert_eq!(loaded(&text).replicaof, c.replicaof);
        assert!(loaded(&text).save_points.is_empty());
    }

    #[test]
    fn file_sets_values_and_reports_errors() {
        let mut c = Config::default();
        c.load_str(
            "# comment\nport 7000\n\nhz 50\nbind 0.0.0.0 ::1\n",
            "t.conf",
        )
        .unwrap();
        assert_eq!((c.port, c.hz), (7000, 50));
        assert_eq!(c.bind, vec!["0.0.0.0", "::1"]);
        let err = c.load_str("hz 10\nfrobnicate yes\n", "t.conf").unwrap_err();
        assert_eq!((err.line, err.directive.as_str()), (2, "frobnicate"));
        let err = c
            .load_str("active-expire-effort 11\n", "t.conf")
            .unwrap_err();
        assert!(err.to_string().contains("between 1 and 10"), "{err}");
        assert!(err.to_string().contains("t.conf"));
    }

    #[test]
    fn save_lines_accumulate_and_the_first_replaces_the_defaults() {
        let mut c = Config::default();
        assert_eq!(c.save_points, DEFAULT_SAVE_POINTS);
        let mut d = Directives::new(&mut c);
        d.load_str("save 900 1\nsave 300 10\n", "t.conf").unwrap();
        d.apply("save", &["60".into(), "10000".into()]).unwrap();
        let points: Vec<(u64, u64)> = c
            .save_points
            .iter()
            .map(|p| (p.seconds, p.changes))
            .collect();
        assert_eq!(points, [(900, 1), (300, 10), (60, 10000)]);
        c.load_str("save \"\"\n", "t.conf").unwrap();
        assert!(c.save_points.is_empty());
    }

    #[test]
    fn hz_is_clamped_like_redis() {
        let mut c = Config::default();
        find_setting("hz")
            .unwrap()
            .set(&mut c, &["1000".into()])
            .unwrap();
        assert_eq!(c.hz, 500);
        find_setting("HZ")
            .unwrap()
            .set(&mut c, &["0".into()])
            .unwrap();
        assert_eq!(c.hz, 1);
    }

    /// Every directive of redis-server 7.0's own redis.conf is
    /// understood: the lines in force, and each example commented out
    /// (`# maxmemory <bytes>` placeholders aside), read one at a time.
    #[test]
    fn every_directive_of_the_stock_redis_conf_is_understood() {
        let text = include_str!("../tests/fixtures/redis-7.0.conf");
        let mut config = Config::default();
        Directives::new(&mut config)
            .load_str(text, "redis.conf")
            .expect("the lines in force load");
        let mut tried = 0;
        for line in text.lines() {
            // Indented comment lines are prose (lists of a setting's values).
            let Some(example) = line.strip_prefix("# ").filter(|e| !e.starts_with(' ')) else {
                continue;
            };
            let Some(name) = example.split_whitespace().next() else {
                continue;
            };
            let lowercase = name.bytes().all(|b| !b.is_ascii_uppercase());
            let known = lowercase
                && (find_setting(name).is_some() || matches!(name, "rename-command" | "user"));
            // Placeholders (`<bytes>`), and examples naming files or
            // listen addresses that do not exist here.
            let prose = [". ", ", ", "'"].iter().any(|p| example.contains(p))
                || example.ends_with(['.', ':']);
            if !known || prose || example.contains('<') || name == "include" {
                continue;
            }
            let mut config = Config::default();
            let result = Directives::new(&mut config).load_str(example, "example");
            assert!(result.is_ok(), "{example}: {result:?}");
            tried += 1;
        }
        assert!(tried > 100, "only {tried} examples found");
    }

    #[test]
    fn include_reads_the_other_file_in_place_and_refuses_a_loop() {
        let dir = std::env::temp_dir().join(format!("lapse-include-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let inner = dir.join("inner.conf");
        std::fs::write(&inner, "hz 20\nmaxclients 77\n").unwrap();
        let outer = format!("hz 5\ninclude {}\nmaxclients 99\n", inner.display());
        let config = loaded(&outer);
        assert_eq!((config.hz, config.maxclients), (20, 99));
        let looping = dir.join("loop.conf");
        std::fs::write(&looping, format!("include {}\n", looping.display())).unwrap();
        let err = Config::default().load_file(&looping).unwrap_err();
        assert!(err.to_string().contains("nested too deep"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn aliases_and_kept_settings() {
        let config = loaded("slaveof 10.0.0.1 6380\nmin-slaves-to-write 2\nio-threads 4\n");
        assert_eq!(config.replicaof, Some(("10.0.0.1".into(), 6380)));
        assert_eq!(config.min_replicas_to_write, 2);
        assert_eq!(find_setting("io-threads").unwrap().get(&config), "4");
        assert_eq!(
            config.ignored_settings().len(),
            1,
            "{:?}",
            config.ignored_settings()
        );
        assert!(config.ignored_settings()[0].starts_with("io-threads '4': one thread"));
        // Checked as Redis checks them.
        let mut c = Config::default();
        let err = Directives::new(&mut c).apply("io-threads", &["0".into()]);
        assert_eq!(
            err.unwrap_err(),
            "argument must be between 1 and 128 inclusive"
        );
        let err = Directives::new(&mut c).apply("oom-score-adj", &["maybe".into()]);
        assert!(err.unwrap_err().starts_with("argument(s) must be one of"));
        // CONFIG REWRITE keeps directives that are not settings, writes an
        // alias under its real name.
        let text = loaded("io-threads 2\n").rewrite_file_text(
            "rename-command FLUSHALL \"\"\nslave-read-only no\nio-threads 1\nuser old on nopass\n",
            &["user default on nopass ~* &* +@all".into()],
        );
        assert!(
            text.starts_with(
                "rename-command FLUSHALL \"\"\nreplica-read-only yes\nio-threads 2\nuser default on nopass ~* &* +@all\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn rename_command_renames_and_removes_with_redis_errors() {
        let config = loaded("rename-command get fetch\nrename-command flushall \"\"\n");
        let renames = crate::command_table::Renames::new(&config.renamed_commands).unwrap();
        assert!(renames.lookup(b"GET").is_none() && renames.lookup(b"flushall").is_none());
        assert_eq!(renames.lookup(b"FETCH").map(|c| c.name), Some("get"));
        assert_eq!(renames.lookup(b"set").map(|c| c.name), Some("set"));
        let mut c = Config::default();
        let mut d = Directives::new(&mut c);
        let bad = |d: &mut Directives, a: &str, b: &str| {
            d.apply("rename-command", &[a.into(), b.into()])
                .unwrap_err()
        };
        assert_eq!(
            bad(&mut d, "nosuch", "x"),
            "No such command in rename-command"
        );
        assert_eq!(
            bad(&mut d, "get", "set"),
            "Target command name already exists"
        );
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("10mb"), Some(10 * 1024 * 1024));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("x"), None);
    }
}
