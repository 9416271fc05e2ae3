//! The state the event loop owns apart from sockets: databases, settings,
//! counters, the random source, the active expire cycle's state.
//!
//! Commands get `&mut ServerState` through their context; only `server`
//! creates it and only the loop thread ever touches it.

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::blocking::Blocking;
use crate::config::Config;
use crate::db::keylog::KeyEvent;
use crate::db::{Db, EventClass, KeyLog};
use crate::expire::ExpireCycle;
use crate::lazyfree::LazyFree;
use crate::multi::WatchTable;
use crate::notify;
use crate::pause::{PauseKind, PausePurpose};
use crate::propagate::Propagator;
use crate::pubsub::PubSub;

/// What a client refused by protected mode is told (Redis's text).
const PROTECTED_MODE_ERROR: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Settings only DEBUG changes, for tests and tools.
#[derive(Debug, Default)]
pub struct DebugSettings {
    /// DEBUG SET-DISABLE-DENY-SCRIPTS 1: scripts may call commands
    /// flagged `noscript` (Redis's test suite calls DEBUG from Lua).
    pub allow_noscript_in_scripts: bool,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION 1: RESTORE and RDB loads do not
    /// check CRC-64 (Redis's `skip_checksum_validation`).
    pub skip_checksum_validation: bool,
}

pub struct ServerState {
    pub dbs: Vec<Db>,
    /// What the databases share: the change count, and whether any has
    /// events or changed values waiting (`process_key_events`).
    activity: std::rc::Rc<crate::db::Activity>,
    pub config: Config,
    pub stats: Stats,
    /// Random source for sampling and RANDOMKEY (seeded from the OS).
    pub rng: SmallRng,
    /// When the server started (uptime, CPU budgets).
    pub started: Instant,
    /// Saves: the last one's time and outcome, a background save under way.
    pub persist: crate::persistence::jobs::Persistence<ServerState>,
    /// The active expire cycle's state and statistics.
    pub expire: ExpireCycle,
    /// Clients connected right now.
    pub connected_clients: usize,
    /// The port actually bound (differs from `config.port` when that is 0).
    pub bound_port: u16,
    /// Set by SHUTDOWN; the loop stops after this iteration.
    pub shutdown_requested: bool,
    /// DEBUG PAUSE-CRON 1: the cron does nothing until it is 0 again.
    pub cron_paused: bool,
    /// What other DEBUG subcommands set (see `commands::debug`).
    pub debug: DebugSettings,
    /// The background freer for big values.
    pub lazyfree: LazyFree,
    /// The effect stream's consumers (the propagation point).
    pub propagate: Propagator,
    /// Watched keys and the clients whose transaction they doomed.
    pub watches: WatchTable,
    /// Subscriptions and the messages waiting for delivery.
    pub pubsub: PubSub,
    /// Clients blocked on keys (BLPOP and friends).
    pub blocking: Blocking,
    /// Fill and refresh leases (GETLEASE), on the primary only.
    pub leases: crate::lease::Leases,
    /// The Lua interpreter and script cache, made on first use.
    pub scripting: Option<crate::scripting::Scripting>,
    /// The other clients while a script is busy.
    pub busy: crate::busy::Busy,
    /// CONFIG SET port/bind bound these: the loop listens on them (and
    /// closes the old TCP listeners) once the command is done.
    pub new_listeners: Option<(Vec<crate::net::Listener>, u16)>,
    /// The TLS listeners CONFIG SET tls-port made (none for port 0), for
    /// the loop to switch to.
    pub new_tls_listeners: Option<Vec<crate::net::Listener>>,
    /// What new TLS connections get (the TLS listeners', the cluster
    /// bus's and MIGRATE's), when `tls-port` or `tls-cluster` is set:
    /// CONFIG SET of a `tls-*` setting puts new configurations here.
    pub tls: Option<crate::tls::TlsContext>,
    /// The append-only file: its files, the writes not yet on disk, the
    /// rewrite's bookkeeping.
    pub aof: crate::persistence::aof_files::Aof,
    /// An AOF is being replayed, or the primary's stream applied: nothing
    /// expires (see `freeze_expiry`).
    pub loading: bool,
    /// The replica's side of replication: role, link, offsets.
    pub repl: crate::replication::Replication,
    /// Cluster mode's state (`cluster-enabled yes`), made when the loop
    /// binds the bus port.
    pub cluster: Option<crate::cluster::Cluster>,
    /// MIGRATE's connections to its targets, kept 10 s for the next call.
    pub migrate_conns: crate::net::KeptConns,
    /// Clients CLIENT KILL named, closed by the loop after the command.
    pub kill_requests: Vec<u64>,
    /// The running command found the server over `maxmemory` with nothing
    /// left to evict: a script's commands that may grow memory are refused.
    pub out_of_memory: bool,
    /// Commands that ran long (SLOWLOG).
    pub slowlog: crate::slowlog::SlowLog,
    /// Calls, time and latency per command (INFO commandstats and
    /// latencystats).
    pub cmdstats: crate::cmdstats::CommandStats,
    /// Clients in MONITOR and the lines waiting for them.
    pub monitors: crate::monitor::Monitors,
    /// Slow events (LATENCY LATEST / HISTORY).
    pub latency: crate::latency::LatencyMonitor,
    /// What was allocated before any data (INFO `used_memory_startup`).
    pub startup_memory: usize,
    /// Eviction's candidates between calls (the memory limit).
    pub evict: crate::evict::pool::Evictor,
    /// This process's random identity (INFO `run_id`): Sentinel tells a
    /// restarted server from one that stayed up by it.
    pub run_id: String,
    /// Users and the ACL log (`acl`).
    pub acl: crate::acl::Acl,
    /// Client-side caching: who may hold which keys (`tracking`).
    pub tracking: crate::tracking::Tracking,
    /// CLIENT PAUSE: what waits, until when (`pause`).
    pub pause: crate::pause::ClientPause,
    /// The command table as clients see it (`rename-command`).
    pub commands: crate::command_table::Renames,
    /// Changes to the data outside the keyspace (function libraries).
    changes_outside_keys: u64,
}

impl ServerState {
    pub fn new(config: Config) -> Self {
        // Checked when the config was read.
        let commands =
            crate::command_table::Renames::new(&config.renamed_commands).unwrap_or_default();
        let mut acl = crate::acl::Acl::default();
        acl.set_default_password(&config.requirepass);
        for line in &config.user_directives {
            if let Some((name, rules)) = line.split_first() {
                // Checked when main read the config
                // (`acl::check_user_directive`).
                let _ = acl.set_user(name, rules, config.acl_pubsub_all);
            }
        }
        let mut state = Self {
            dbs: (0..config.databases).map(Db::new).collect(),
            activity: Default::default(),
            expire: ExpireCycle::default(),
            config,
            stats: Stats::default(),
            rng: SmallRng::from_entropy(),
            started: Instant::now(),
            persist: crate::persistence::jobs::Persistence::new(crate::clock::unix_time_ms()),
            connected_clients: 0,
            bound_port: 0,
            shutdown_requested: false,
            cron_paused: false,
            debug: DebugSettings::default(),
            lazyfree: LazyFree::start(),
            commands,
            pause: crate::pause::ClientPause::default(),
            tracking: crate::tracking::Tracking::default(),
            acl,
            propagate: Propagator::default(),
            watches: WatchTable::default(),
            pubsub: PubSub::default(),
            blocking: Blocking::default(),
            leases: Default::default(),
            scripting: None,
            busy: Default::default(),
            new_listeners: None,
            new_tls_listeners: None,
            tls: None,
            aof: crate::persistence::aof_files::Aof::default(),
            loading: false,
            repl: Default::default(),
            cluster: None,
            migrate_conns: Default::default(),
            kill_requests: Vec::new(),
            run_id: crate::replication::random_replid(),
            evict: Default::default(),
            startup_memory: 0,
            slowlog: Default::default(),
            cmdstats: Default::default(),
            monitors: Default::default(),
            latency: Default::default(),
            out_of_memory: false,
            changes_outside_keys: 0,
        };
        for db in &mut state.dbs {
            db.share_activity(&state.activity);
        }
        state.startup_memory = crate::memory::used_memory();
        // Calibrates the command timer now, not on the first command.
        crate::clock::ticks();
        state.repl.master = state.config.replicaof.clone();
        state.apply_config();
        state
    }

    /// Pushes settings that the databases keep a copy of into each of them
    /// (at startup and after CONFIG SET).
    /// Makes this server a replica of `target`, or (None) a primary
    /// (REPLICAOF, and a cluster node that follows or replaces its
    /// master). Blocked clients are woken to be refused; the loop drops
    /// the old link and makes the new one (`Replication::epoch`).
    pub fn set_primary(&mut self, target: Option<(String, u16)>) {
        let promote = target.is_none();
        if target.is_some() {
            self.blocking
                .request_unblock_all(crate::blocking::Unblock::StateChanged);
        }
        let repl = &mut self.repl;
        repl.master = target.clone();
        repl.epoch += 1;
        repl.link_down();
        // Another primary's stream does not continue this data; a promoted
        // replica serves its own history from here.
        repl.resumable = false;
        if promote {
            repl.replid = crate::replication::random_replid();
        }
        // What CONFIG GET and CONFIG REWRITE show.
        self.config.replicaof = target;
        self.apply_config();
    }

    pub fn apply_config(&mut self) {
        let policy = self.config.lazyfree;
        let side_events = crate::notify::side_events(self.config.notify_keyspace_events);
        let replica = self.repl.is_replica();
        let access_policy = self.config.access_policy();
        for db in &mut self.dbs {
            db.set_replica(replica);
            db.access_policy = access_policy;
            db.lazy_expire = policy.expire;
            db.lazy_server_del = policy.server_del;
            db.side_events = side_events;
        }
        let backlog_bytes = crate::replication::backlog_bytes(&self.config);
        if let Some(feed) = &mut self.repl.feed {
            if feed.backlog.capacity() != backlog_bytes {
                feed.backlog.resize(backlog_bytes);
            }
        }
        self.refresh_event_recording();
        if let Some(cluster) = &mut self.cluster {
            cluster.refresh_myself(&self.config.cluster, self.config.tls.cluster);
        }
    }

    /// Tells the databases which events anything reads from their
    /// key-change log: all of them for a WATCH, keyspace notifications,
    /// tracking or a lease out (any write ends it),
    /// expiries for a consumer of the effect stream, list, sorted-set,
    /// stream and generic changes for blocked clients (every write while
    /// an XREADGROUP waits). Call after any of those changes.
    pub fn refresh_event_recording(&mut self) {
        let mut classes = 0;
        if self.watches.any()
            || self.config.notify_keyspace_events != 0
            || self.tracking.any()
            || !self.leases.is_empty()
        {
            classes = u32::MAX;
        }
        if self.propagate.active() {
            classes |= EventClass::EXPIRED.0 | EventClass::EVICTED.0;
        }
        if self.blocking.any() {
            classes |= EventClass::LIST.0
                | EventClass::ZSET.0
                | EventClass::STREAM.0
                | EventClass::GENERIC.0;
        }
        if self.blocking.any_overwrite_waiter() {
            // A waited key overwritten with another type (SET over a
            // stream) ends a blocked XREADGROUP.
            classes |= EventClass::STRING.0 | EventClass::SET.0 | EventClass::HASH.0;
        }
        let stale_events = EventClass::EXPIRED.intersects(self.config.notify_keyspace_events);
        for db in &mut self.dbs {
            db.recorded_classes = classes;
            db.set_stale_events(stale_events);
        }
    }

    /// Makes the primary's side of replication (the feed and the backlog)
    /// when the first replica asks for it.
    pub fn start_replication_feed(&mut self) {
        let backlog_bytes = crate::replication::backlog_bytes(&self.config);
        if self.repl.start_feed(&mut self.propagate, backlog_bytes) {
            self.refresh_event_recording();
        }
    }

    /// Enters or leaves loading (an AOF being replayed):
    /// nothing expires and nothing is propagated meanwhile, as in Redis.
    pub fn set_loading(&mut self, loading: bool) {
        self.freeze_expiry(loading);
        self.propagate.suspend(loading);
    }

    /// Stops (or restarts) expiry of every kind: while an AOF loads, and
    /// while a replica applies its primary's commands (the primary's DELs
    /// are what remove keys there, as in Redis).
    pub fn freeze_expiry(&mut self, frozen: bool) {
        self.loading = frozen;
        for db in &mut self.dbs {
            db.loading = frozen;
        }
    }

    /// CLIENT PAUSE (or a manual failover's): commands of `kind` wait
    /// until `end_ms` (or the purpose's unpause), and meanwhile no key
    /// expires or is evicted.
    pub fn pause_clients(&mut self, purpose: PausePurpose, kind: PauseKind, end_ms: i64) {
        self.pause.pause(purpose, kind, end_ms);
        self.set_expiry_paused(true);
    }

    /// CLIENT UNPAUSE, or the end of a manual failover: once no purpose
    /// pauses, the server reads the waiting clients' requests again.
    pub fn unpause_clients(&mut self, purpose: PausePurpose) {
        self.pause.unpause(purpose);
        if !self.pause.is_on() {
            self.set_expiry_paused(false);
        }
    }

    /// Ends the pauses whose time has come; true while one is on.
    pub fn check_pause(&mut self, now_ms: i64) -> bool {
        if self.pause.is_on() && !self.pause.check(now_ms) {
            self.set_expiry_paused(false);
        }
        self.pause.is_on()
    }

    fn set_expiry_paused(&mut self, paused: bool) {
        for db in &mut self.dbs {
            db.expiry_paused = paused;
        }
    }

    /// Whether a deadline given to a command (EXPIRE, GETEX, RESTORE) is
    /// already past, so the key goes at once (Redis's
    /// `checkAlreadyExpired`): never while loading, which keeps it.
    pub fn already_expired(&self, at_ms: i64, now_ms: i64) -> bool {
        at_ms <= now_ms && !self.loading
    }

    /// Changes signalled in all databases since startup (`server.dirty`).
    pub fn dirty(&self) -> u64 {
        self.changes_outside_keys + self.activity.dirty()
    }

    /// Counts a change to the data that is not a key's (FUNCTION LOAD):
    /// the command is then propagated like any write.
    pub fn mark_changed(&mut self) {
        self.changes_outside_keys += 1;
    }

    /// Deletes this node's keys in a hash slot another node now serves
    /// (Redis's `delKeysInSlot`): each one's DEL propagated; how many.
    pub fn delete_keys_in_slot(&mut self, slot: u16, now_ms: i64) -> usize {
        let keys: Vec<Vec<u8>> = self.dbs[0]
            .slot_keys(slot, usize::MAX)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect();
        let lazy = self.config.lazyfree.server_del;
        for key in &keys {
            if self.dbs[0].delete(key, now_ms, lazy) {
                self.propagate.deleted_by_server(0, key, lazy);
                self.dbs[0].signal(EventClass::GENERIC, "del", key);
            }
        }
        self.process_key_events();
        keys.len()
    }

    /// Hands every key-change event recorded since the last call to its
    /// readers: an expired key's deletion goes to the propagation point.
    /// Called after each command and after the active expire cycle, so
    /// it is also where small values a command unpacked to change go
    /// back inline and changed hashes' field deadlines are noted
    /// (`Db::settle_changed`).
    #[inline]
    pub fn process_key_events(&mut self) {
        // Most commands log nothing (no one reads their events) and
        // unpack nothing: one check, not a visit to every database.
        if self.activity.take_pending() {
            self.process_pending_key_events();
        }
    }

    #[inline(never)]
    fn process_pending_key_events(&mut self) {
        // One pass over the databases: settle, and find the busy ones.
        let (mut first, mut more) = (None, false);
        for db in &mut self.dbs {
            db.settle_changed();
            if db.has_events() {
                more |= first.is_some();
                first = first.or(Some(db.index));
            }
        }
        let Some(first) = first else {
            return;
        };
        if !more {
            // The common case: one database, no allocation.
            let log = self.dbs[first].take_events();
            for (event, key) in log.iter() {
                self.handle_key_event(first, event, key);
            }
            self.dbs[first].restore_events(log);
            return;
        }
        // Several databases changed (MOVE, COPY ... DB, SWAPDB): merge
        // their logs back into the order things happened.
        let logs: Vec<(usize, KeyLog)> = self
            .dbs
            .iter_mut()
            .filter(|db| db.has_events())
            .map(|db| (db.index, db.take_events()))
            .collect();
        let mut merged: Vec<(u64, usize, &KeyEvent, &[u8])> = logs
            .iter()
            .flat_map(|(db, log)| log.iter().map(move |(e, k)| (e.seq, *db, e, k)))
            .collect();
        merged.sort_by_key(|m| m.0);
        for (_, db, event, key) in merged {
            self.handle_key_event(db, event, key);
        }
        for (db, log) in logs {
            self.dbs[db].restore_events(log);
        }
    }

    /// One key-change event to its readers: WATCH, the propagation of an
    /// expired key's deletion, keyspace notifications.
    fn handle_key_event(&mut self, db: usize, event: &KeyEvent, key: &[u8]) {
        let flags = self.config.notify_keyspace_events;
        if event.name == "stale" {
            // A soft deadline reached (issue 42): nothing changed.
            notify::notify(&mut self.pubsub, flags, event.class, event.name, key, db);
            return;
        }
        let expired = event.class == EventClass::EXPIRED;
        let evicted = event.class == EventClass::EVICTED;
        // Any write of a key ends its lease (issue 42), its deletion too;
        // its waiters (GETLEASE WAIT) try again: the earliest may fill.
        if !self.leases.is_empty() && (event.class.is_write() || expired || evicted) {
            let deleted = expired || evicted || event.name == "del";
            let now_ms = crate::clock::unix_time_ms();
            if self.leases.key_changed(db, key, deleted, now_ms) {
                self.blocking.key_changed(db, key);
            }
        }
        if self.watches.watches_in(db) && (event.class.is_write() || expired || evicted) {
            self.watches
                .touch(db, key, expired || evicted || event.name == "del");
        }
        // Redis's signalModifiedKey: tracking knows keys, not databases.
        if self.tracking.any() && (event.class.is_write() || expired) {
            self.tracking.key_changed(key);
        }
        if expired {
            self.propagate
                .deleted_by_server(db, key, self.config.lazyfree.expire);
        } else if let Some(deletion) = crate::db::member_expiry_deletion(event.class, event.name) {
            let fields = self.dbs[db].take_expired_elements();
            self.propagate.by_server(db, || {
                let mut args: Vec<&[u8]> = vec![deletion, key];
                args.extend(fields.iter().map(Vec::as_slice));
                crate::protocol::OwnedArgs::from_slices(args)
            });
            self.blocking.key_changed(db, key);
        } else if evicted {
            self.propagate
                .deleted_by_server(db, key, self.config.lazyfree.eviction);
        } else if event.class.is_write() || event.class == EventClass::NEW {
            self.blocking.key_changed(db, key);
        }
        notify::notify(&mut self.pubsub, flags, event.class, event.name, key, db);
    }

    /// A connection just accepted: gives its socket the settings clients
    /// get (no Nagle delay, `tcp-keepalive`), and turns it away (too many
    /// clients, protected mode) with Redis's error line, or counts it in.
    /// `true`: the server takes it as a client.
    pub fn welcome(&mut self, socket: &crate::net::Stream, peer: &crate::net::Peer) -> bool {
        socket.set_nodelay();
        if self.config.tcp_keepalive > 0 {
            let _ = crate::net::set_keepalive(socket, self.config.tcp_keepalive);
        }
        if let Some(refusal) = self.refusal(peer) {
            // Best effort: the socket is fresh, so the short error fits
            // in its send buffer; the client is closed either way.
            let _ = std::io::Write::write(&mut &*socket, refusal.as_bytes());
            self.stats.rejected_connections += 1;
            tracing::debug!("refused {}", peer.addr);
            return false;
        }
        self.connected_clients += 1;
        self.stats.total_connections_received += 1;
        true
    }

    /// Why a new client from `peer` must be turned away, as the error line
    /// to send it: too many clients, or protected mode.
    fn refusal(&self, peer: &crate::net::Peer) -> Option<&'static str> {
        let config = &self.config;
        if self.connected_clients >= config.maxclients {
            return Some("-ERR max number of clients reached\r\n");
        }
        if config.protected_mode && self.acl.default_nopass() && !peer.local {
            return Some(PROTECTED_MODE_ERROR);
        }
        None
    }

    /// Drops what the rooms keep for a client that disconnected.
    pub fn forget_client(&mut self, client: u64) {
        self.unwatch_all(client);
        self.set_tracking(client, None);
        self.monitors.remove(client);
        self.pubsub.forget(client);
        self.blocking.unblock(client);
    }

    /// Messages wait for other clients: pub/sub (and keyspace events),
    /// MONITOR lines, invalidations.
    pub fn has_deliveries(&self) -> bool {
        self.pubsub.has_outbox() || self.monitors.has_pending() || self.tracking.has_outbox()
    }

    /// CLIENT TRACKING ON (`Some`, options checked) or OFF for `client`.
    pub fn set_tracking(&mut self, client: u64, options: Option<crate::tracking::Tracker>) {
        let was = self.tracking.any();
        match options {
            Some(options) => self.tracking.enable(client, options),
            None => self.tracking.disable(client),
        }
        if self.tracking.any() != was {
            self.refresh_event_recording();
        }
    }

    /// Forgets `client`'s watched keys (UNWATCH, EXEC, DISCARD).
    pub fn unwatch_all(&mut self, client: u64) {
        let watched = self.watches.count(client) > 0;
        self.watches.unwatch_all(client);
        if watched {
            self.refresh_event_recording();
        }
    }

    /// WATCH's view of a database emptied (FLUSHDB, FLUSHALL) or swapped
    /// (`replaced_with`, SWAPDB): call before the change.
    pub fn touch_watched_in_db(&mut self, db: usize, replaced_with: Option<usize>, now_ms: i64) {
        let replacement = replaced_with.map(|r| &self.dbs[r]);
        self.watches
            .touch_all_in_db(&self.dbs[db], replacement, now_ms);
    }

    /// SWAPDB: the databases trade contents; WATCH sees both change, and
    /// each keeps its own number.
    pub fn swap_dbs(&mut self, a: usize, b: usize, now_ms: i64) {
        self.touch_watched_in_db(a, Some(b), now_ms);
        self.touch_watched_in_db(b, Some(a), now_ms);
        // A save in progress moves with the data it is writing (it knows
        // the number it began in).
        self.dbs.swap(a, b);
        self.dbs[a].index = a;
        self.dbs[b].index = b;
        self.blocking.db_changed(a);
        self.blocking.db_changed(b);
    }

    /// Hands the big values the databases removed to the lazyfree thread.
    pub fn free_garbage(&mut self) {
        for db in 0..self.dbs.len() {
            self.free_garbage_of(db);
        }
    }

    /// `free_garbage` for one database (an eviction's value, at once).
    pub fn free_garbage_of(&mut self, db: usize) {
        let db = &mut self.dbs[db];
        for value in db.take_garbage() {
            self.lazyfree.free_value(value);
        }
        for table in db.take_retired() {
            let count = table.0.len() as u64;
            self.lazyfree.free_async_counted(table, count);
        }
    }
}

/// Distinct error codes INFO errorstats counts (Redis's
/// `ERRORSTATS_LIMIT`): a client cannot grow the table without bound.
const ERROR_CODES_KEPT: usize = 128;

impl Stats {
    /// The cron's sampling of the instantaneous rates.
    pub fn sample_rates(&mut self, now_ms: i64) {
        self.ops_rate.sample(self.total_commands_processed, now_ms);
        self.input_rate.sample(self.total_net_input_bytes, now_ms);
        self.output_rate.sample(self.total_net_output_bytes, now_ms);
        self.repl_input_rate
            .sample(self.total_net_repl_input_bytes, now_ms);
        self.repl_output_rate
            .sample(self.total_net_repl_output_bytes, now_ms);
    }

    /// Bytes read from a client, or (`replication`) from the primary.
    pub fn read_bytes(&mut self, n: usize, replication: bool) {
        self.total_reads_processed += 1;
        if replication {
            self.total_net_repl_input_bytes += n as u64;
        } else {
            self.total_net_input_bytes += n as u64;
        }
    }

    /// Bytes written to a client, or (`replication`) to a replica.
    pub fn wrote_bytes(&mut self, n: usize, replication: bool) {
        self.total_writes_processed += 1;
        if replication {
            self.total_net_repl_output_bytes += n as u64;
        } else {
            self.total_net_output_bytes += n as u64;
        }
    }

    /// Counts an error reply (`total_error_replies`, and by its code).
    pub fn error_replied(&mut self, message: &[u8]) {
        self.total_error_replies += 1;
        let code = message.split(|&b| b == b' ').next().unwrap_or_default();
        let code = String::from_utf8_lossy(code);
        if let Some(count) = self.error_codes.get_mut(code.as_ref()) {
            *count += 1;
        } else if self.error_codes.len() < ERROR_CODES_KEPT {
            self.error_codes.insert(code.into_owned(), 1);
        }
    }
}

/// A rate as Redis's instantaneous metrics show it: the growth of a
/// counter per second, sampled at most every `EVERY_MS`, the mean of the
/// last `SAMPLES` samples (Redis's `STATS_METRIC_SAMPLES`).
#[derive(Debug, Default)]
pub struct RateSampler {
    last: Option<(u64, i64)>,
    samples: [f64; RateSampler::SAMPLES],
    next: usize,
}

impl RateSampler {
    const SAMPLES: usize = 16;
    const EVERY_MS: i64 = 100;

    /// Takes a sample of `counter` at `now_ms` (the cron calls this).
    pub fn sample(&mut self, counter: u64, now_ms: i64) {
        let Some((value, at_ms)) = self.last else {
            self.last = Some((counter, now_ms));
            return;
        };
        let elapsed_ms = now_ms - at_ms;
        if elapsed_ms < Self::EVERY_MS {
            return;
        }
        let per_second = counter.saturating_sub(value) as f64 * 1000.0 / elapsed_ms as f64;
        self.samples[self.next] = per_second;
        self.next = (self.next + 1) % Self::SAMPLES;
        self.last = Some((counter, now_ms));
    }

    /// The mean of the samples, per second.
    pub fn per_second(&self) -> f64 {
        self.samples.iter().sum::<f64>() / Self::SAMPLES as f64
    }
}

/// Server-wide counters (the keyspace keeps its own, in `DbStats`).
#[derive(Debug, Default)]
pub struct Stats {
    /// INFO `instantaneous_ops_per_sec`, `_input_kbps`, `_output_kbps`:
    /// commands and network bytes, sampled by the cron.
    pub ops_rate: RateSampler,
    pub input_rate: RateSampler,
    pub output_rate: RateSampler,
    /// The same for the replication stream (`_repl_kbps`).
    pub repl_input_rate: RateSampler,
    pub repl_output_rate: RateSampler,
    /// Bytes of the replication stream, in from the primary and out to
    /// replicas (Redis 7.0 keeps them apart from clients' bytes).
    pub total_net_repl_input_bytes: u64,
    pub total_net_repl_output_bytes: u64,
    /// Reads from and writes to sockets (`total_reads_processed` /
    /// `total_writes_processed`).
    pub total_reads_processed: u64,
    pub total_writes_processed: u64,
    /// Milliseconds spent over `maxmemory` (finished spells), and when the
    /// present one began (`total_/current_eviction_exceeded_time`).
    pub eviction_exceeded_ms: u64,
    pub eviction_exceeded_since: Option<std::time::Instant>,
    /// RESTORE payloads checked whole (all of them here).
    pub dump_payload_sanitizations: u64,
    /// Errors the primary's commands met here (a replica diverging).
    pub unexpected_error_replies: u64,
    pub total_connections_received: u64,
    pub total_commands_processed: u64,
    pub total_error_replies: u64,
    /// Error replies by their code, the first word (INFO errorstats), at
    /// most `ERROR_CODES_KEPT` codes.
    pub error_codes: std::collections::BTreeMap<String, u64>,
    pub total_net_input_bytes: u64,
    pub total_net_output_bytes: u64,
    pub rejected_connections: u64,
    /// AUTH (and HELLO AUTH) attempts with wrong credentials (Redis 7.2's
    /// `acl_access_denied_auth`).
    pub acl_access_denied_auth: u64,
    /// Clients disconnected by `maxmemory-clients`.
    pub evicted_clients: u64,
    /// The last RDB loaded at startup: keys loaded, and keys skipped
    /// because their deadline had passed (INFO persistence).
    pub rdb_last_load_keys_loaded: u64,
    pub rdb_last_load_keys_expired: u64,
    /// What all clients' buffers held at the last cron (INFO memory
    /// `mem_clients_normal`).
    pub mem_clients_normal: u64,
    /// Clients closed for holding too much unread input / unsent output.
    pub client_query_buffer_limit_disconnections: u64,
    pub client_output_buffer_limit_disconnections: u64,
}
