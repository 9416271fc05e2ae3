//! Every setting in one struct, and the one table that names them.
//!
//! The table serves the config file (redis.conf syntax), CONFIG GET and
//! CONFIG SET alike, so a setting is declared once with its Redis name, its
//! parser and whether it may change at run time. `main` applies command-line
//! flags on top of the file.

//!
//! `settings` holds the table; `file` reads redis.conf-style text and
//! writes it back (CONFIG REWRITE). Settings are plain values here:
//! the subsystems that use one check and apply it.

use std::path::Path;

use crate::expire::Strategy;
use crate::protocol::request::PROTO_MAX_BULK_LEN_DEFAULT;

pub mod file;
pub mod settings;

pub use file::{ConfigFileError, Directives, UserCheck};
pub use settings::{
    all_names, find_setting, parse_memory, BadValue, Setting, HIDDEN_SETTINGS, PROTECTED_SETTINGS,
};

pub const DEFAULT_PORT: u16 = 7379;

/// Where CLUSTER SLOTS and redirections point clients
/// (`cluster-preferred-endpoint-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Ip,
    Hostname,
    Unknown,
}

impl Endpoint {
    pub const NAMES: &'static [&'static str] = &["ip", "hostname", "unknown-endpoint"];

    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Ip => "ip",
            Endpoint::Hostname => "hostname",
            Endpoint::Unknown => "unknown-endpoint",
        }
    }

    /// One of `NAMES` (anything else reads as `ip`).
    pub fn parse(name: &str) -> Endpoint {
        match name {
            "hostname" => Endpoint::Hostname,
            "unknown-endpoint" => Endpoint::Unknown,
            _ => Endpoint::Ip,
        }
    }
}

/// The `cluster-*` settings (Redis 7.0's names and defaults).
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    pub enabled: bool,
    /// `nodes.conf`, in `dir`.
    pub config_file: String,
    /// The bus port; 0: the client port + 10000.
    pub port: u16,
    /// Milliseconds without an answer before a node is suspected.
    pub node_timeout: i64,
    pub announce_ip: String,
    pub announce_hostname: String,
    pub announce_port: u16,
    pub announce_bus_port: u16,
    /// `cluster-announce-tls-port` (with `tls-cluster`).
    pub announce_tls_port: u16,
    pub require_full_coverage: bool,
    pub replica_validity_factor: i64,
    pub migration_barrier: i64,
    pub allow_reads_when_down: bool,
    pub allow_replica_migration: bool,
    pub allow_pubsubshard_when_down: bool,
    pub link_sendbuf_limit: u64,
    pub replica_no_failover: bool,
    pub preferred_endpoint: Endpoint,
    /// The longest bus message read (2 × `proto-max-bulk-len` plus a
    /// header: a PUBLISH of two values a client could send).
    pub max_bus_frame: usize,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            enabled: false,
            config_file: "nodes.conf".into(),
            port: 0,
            node_timeout: 15000,
            announce_ip: String::new(),
            announce_hostname: String::new(),
            announce_port: 0,
            announce_bus_port: 0,
            announce_tls_port: 0,
            require_full_coverage: true,
            replica_validity_factor: 10,
            migration_barrier: 1,
            allow_reads_when_down: false,
            allow_replica_migration: true,
            allow_pubsubshard_when_down: true,
            link_sendbuf_limit: 0,
            replica_no_failover: false,
            preferred_endpoint: Endpoint::Ip,
            max_bus_frame: 2 * 512 * 1024 * 1024 + 4352,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    /// Cluster mode's settings.
    pub cluster: ClusterConfig,
    /// The `tls-*` settings.
    pub tls: crate::tls::TlsSettings,
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
        Ok(
            match settings::one_of(args, &["no", "yes", "local"])?.as_str() {
                "yes" => ProtectedAction::Yes,
                "local" => ProtectedAction::Local,
                _ => ProtectedAction::No,
            },
        )
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

    /// The fewest unsent bytes either limit can act on (no limit: none).
    #[inline]
    pub fn smallest_bytes(&self) -> u64 {
        let set = |bytes: u64| if bytes == 0 { u64::MAX } else { bytes };
        set(self.hard_bytes).min(set(self.soft_bytes))
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
            cluster: ClusterConfig::default(),
            tls: crate::tls::TlsSettings::default(),
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
