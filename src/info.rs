//! Counters and the INFO text, in one place.
//!
//! Field names are Redis's, so tools that parse INFO keep working; lapse's
//! own additions carry names Redis does not use.

use std::fmt::Write;

use crate::histogram::Histogram;
use crate::memory::{rss_bytes, sample_peak_memory, system_memory, used_memory};
use crate::state::ServerState;
use crate::{LAPSE_VERSION, REDIS_COMPAT_VERSION};

fn human_bytes(n: u64) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{n}B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.2}K", n / 1024.0)
    } else if n < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", n / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", n / 1024.0 / 1024.0 / 1024.0)
    }
}

/// Every section (`all`, `everything`), in Redis 7.0's order.
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

/// Sections only `all` and `everything` (or their names) show: the rest
/// is what INFO with no argument, or `default`, shows (Redis 7.0's).
const NOT_DEFAULT: &[&str] = &["commandstats", "latencystats"];

fn default_sections() -> impl Iterator<Item = &'static str> {
    ALL_SECTIONS
        .iter()
        .copied()
        .filter(|s| !NOT_DEFAULT.contains(s))
}

/// The INFO text for the requested sections (none = the default set).
pub fn render(
    state: &ServerState,
    peers: &dyn crate::connection::Sessions,
    requested: &[String],
    now_ms: i64,
) -> String {
    let mut wanted: Vec<&str> = Vec::new();
    for section in requested {
        match section.as_str() {
            "default" => default_sections().for_each(|s| wanted.push(s)),
            "all" | "everything" => wanted.extend(ALL_SECTIONS),
            other => wanted.push(other),
        }
    }
    if requested.is_empty() {
        default_sections().for_each(|s| wanted.push(s));
    }
    let mut out = String::new();
    for section in ALL_SECTIONS {
        if !wanted.contains(section) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        match *section {
            "server" => server_section(state, now_ms, &mut out),
            "clients" => clients_section(state, peers, &mut out),
            "memory" => memory_section(state, peers, &mut out),
            "persistence" => persistence_section(state, &mut out),
            "stats" => stats_section(state, &mut out),
            "replication" => replication_section(state, peers, &mut out),
            "errorstats" => errorstats_section(state, &mut out),
            "commandstats" => {
                out.push_str("# Commandstats\r\n");
                state.cmdstats.write_commandstats(&mut out);
            }
            "latencystats" => {
                out.push_str("# Latencystats\r\n");
                // Shown only while tracking, as Redis shows them.
                if state.config.latency_tracking {
                    let percentiles = &state.config.latency_tracking_info_percentiles;
                    state.cmdstats.write_latencystats(&mut out, percentiles);
                }
            }
            "cpu" => cpu_section(&mut out),
            // No modules: the section says so, as Redis's does.
            "modules" => out.push_str("# Modules\r\n"),
            "cluster" => {
                let enabled = u8::from(state.cluster.is_some());
                let _ = write!(out, "# Cluster\r\ncluster_enabled:{enabled}\r\n");
            }
            _ => keyspace_section(state, &mut out),
        }
    }
    out
}

macro_rules! field {
    ($out:expr, $name:literal, $value:expr) => {
        let _ = write!($out, concat!($name, ":{}\r\n"), $value);
    };
}

/// CPU time used, as Redis's INFO cpu reports it (seconds with
/// microseconds): the process, its children (none: lapse never forks),
/// and the loop's own thread (INFO runs on it).
fn cpu_section(out: &mut String) {
    let usage = |who: libc::c_int| -> (String, String) {
        // SAFETY: getrusage only writes the struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return ("0.000000".into(), "0.000000".into());
        }
        let time = |t: libc::timeval| format!("{}.{:06}", t.tv_sec, t.tv_usec);
        (time(ru.ru_stime), time(ru.ru_utime))
    };
    out.push_str("# CPU\r\n");
    let (sys, user) = usage(libc::RUSAGE_SELF);
    field!(out, "used_cpu_sys", sys);
    field!(out, "used_cpu_user", user);
    let (sys, user) = usage(libc::RUSAGE_CHILDREN);
    field!(out, "used_cpu_sys_children", sys);
    field!(out, "used_cpu_user_children", user);
    #[cfg(target_os = "linux")]
    {
        let (sys, user) = usage(libc::RUSAGE_THREAD);
        field!(out, "used_cpu_sys_main_thread", sys);
        field!(out, "used_cpu_user_main_thread", user);
    }
}

/// Error replies by code, as Redis's INFO errorstats lists them.
fn errorstats_section(state: &ServerState, out: &mut String) {
    out.push_str("# Errorstats\r\n");
    for (code, count) in &state.stats.error_codes {
        let _ = write!(out, "errorstat_{code}:count={count}\r\n");
    }
}

fn server_section(state: &ServerState, now_ms: i64, out: &mut String) {
    let uptime = state.started.elapsed().as_secs();
    out.push_str("# Server\r\n");
    // Redis 7.0's fields in its order (a build of lapse has no git or C
    // compiler identity: Redis's own placeholders), lapse's version last.
    field!(out, "redis_version", REDIS_COMPAT_VERSION);
    field!(out, "redis_git_sha1", "00000000");
    field!(out, "redis_git_dirty", 0);
    field!(out, "redis_build_id", build_id());
    let mode = if state.cluster.is_some() {
        "cluster"
    } else {
        "standalone"
    };
    field!(out, "redis_mode", mode);
    field!(out, "os", os_name());
    field!(out, "arch_bits", usize::BITS);
    field!(out, "monotonic_clock", crate::clock::timer_name());
    let api = if cfg!(target_os = "linux") {
        "epoll"
    } else {
        "kqueue"
    };
    field!(out, "multiplexing_api", api);
    field!(out, "gcc_version", "0.0.0");
    field!(out, "process_id", std::process::id());
    field!(out, "process_supervised", "no");
    field!(out, "run_id", state.run_id);
    field!(out, "tcp_port", state.bound_port);
    field!(out, "server_time_usec", now_ms * 1000);
    field!(out, "uptime_in_seconds", uptime);
    field!(out, "uptime_in_days", uptime / 86_400);
    field!(out, "hz", state.config.hz);
    field!(out, "configured_hz", state.config.hz);
    field!(out, "lru_clock", crate::db::access::lru_clock(now_ms));
    let executable = std::env::current_exe().map(|p| p.display().to_string());
    field!(out, "executable", executable.unwrap_or_default());
    let config_file = state
        .config
        .config_file
        .as_ref()
        .map(|p| p.display().to_string());
    field!(out, "config_file", config_file.unwrap_or_default());
    field!(out, "io_threads_active", 0);
    field!(out, "lapse_version", LAPSE_VERSION);
}

/// What identifies this build (Redis's `redis_build_id`, a hash of its
/// build): lapse's version and target, hashed.
fn build_id() -> String {
    let what = format!(
        "lapse-{LAPSE_VERSION}-{}-{}",
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    sha1_smol::Sha1::from(what).digest().to_string()[..16].to_string()
}

/// The kernel as Redis shows it: `uname`'s system, release and machine.
fn os_name() -> String {
    // SAFETY: uname only fills the struct it is given.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return std::env::consts::OS.to_string();
    }
    let text = |field: &[libc::c_char]| {
        let bytes: Vec<u8> = field
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {}",
        text(&u.sysname),
        text(&u.release),
        text(&u.machine)
    )
}

/// Redis 7.0's clients fields. The biggest buffers are those of the
/// clients now (Redis keeps the peak of the last seconds).
fn clients_section(state: &ServerState, peers: &dyn crate::connection::Sessions, out: &mut String) {
    let (mut max_in, mut max_out) = (0, 0);
    peers.for_each_session(&mut |s| {
        max_in = max_in.max(s.query.capacity());
        max_out = max_out.max(s.reply.buf.capacity());
    });
    out.push_str("# Clients\r\n");
    field!(out, "connected_clients", state.connected_clients);
    // Redis counts two links per other node it knows.
    let cluster_links = state
        .cluster
        .as_ref()
        .map_or(0, |c| c.known_nodes().saturating_sub(1) * 2);
    field!(out, "cluster_connections", cluster_links);
    field!(out, "maxclients", state.config.maxclients);
    field!(out, "client_recent_max_input_buffer", max_in);
    field!(out, "client_recent_max_output_buffer", max_out);
    // Clients held by CLIENT PAUSE count as blocked, as in Redis.
    let blocked = state.blocking.blocked_count() + state.pause.held_count();
    field!(out, "blocked_clients", blocked);
    field!(out, "tracking_clients", state.tracking.totals().0);
    field!(
        out,
        "clients_in_timeout_table",
        state.blocking.with_timeout_count()
    );
}

fn persistence_section(state: &ServerState, out: &mut String) {
    let p = &state.persist;
    let ok_or_err = |ok: bool| if ok { "ok" } else { "err" };
    let (keys_done, keys_total) = p.current_save_keys(&state.dbs);
    out.push_str("# Persistence\r\n");
    field!(out, "loading", 0);
    field!(out, "async_loading", 0);
    // No fork, so no copy-on-write: the save's extra memory is its
    // encoded output, counted in used_memory.
    field!(out, "current_cow_peak", 0);
    field!(out, "current_cow_size", 0);
    field!(out, "current_cow_size_age", 0);
    field!(out, "current_fork_perc", "0.00");
    field!(out, "current_save_keys_processed", keys_done);
    field!(out, "current_save_keys_total", keys_total);
    field!(
        out,
        "rdb_changes_since_last_save",
        crate::persistence::save::changes_since_save(state)
    );
    field!(
        out,
        "rdb_bgsave_in_progress",
        u8::from(p.bgsave_in_progress())
    );
    field!(out, "rdb_last_save_time", p.lastsave_s);
    field!(out, "rdb_last_bgsave_status", ok_or_err(p.last_bgsave_ok));
    field!(out, "rdb_last_bgsave_time_sec", p.last_bgsave_time_s);
    field!(
        out,
        "rdb_current_bgsave_time_sec",
        p.current_job_time_s(crate::persistence::jobs::Job::Rdb)
    );
    field!(out, "rdb_saves", p.rdb_saves);
    field!(out, "rdb_last_cow_size", 0);
    field!(
        out,
        "rdb_last_load_keys_expired",
        state.stats.rdb_last_load_keys_expired
    );
    field!(
        out,
        "rdb_last_load_keys_loaded",
        state.stats.rdb_last_load_keys_loaded
    );
    let aof = &state.aof;
    let rewriting = p.job() == Some(crate::persistence::jobs::Job::AofRewrite);
    field!(
        out,
        "aof_enabled",
        u8::from(aof.state != crate::persistence::aof_files::AofState::Off)
    );
    field!(out, "aof_rewrite_in_progress", u8::from(rewriting));
    field!(
        out,
        "aof_rewrite_scheduled",
        u8::from(aof.rewrite_scheduled)
    );
    field!(out, "aof_last_rewrite_time_sec", aof.last_rewrite_time_s);
    field!(
        out,
        "aof_current_rewrite_time_sec",
        crate::persistence::aof::current_rewrite_time_s(state)
    );
    field!(
        out,
        "aof_last_bgrewrite_status",
        ok_or_err(aof.last_rewrite_ok)
    );
    field!(out, "aof_rewrites", aof.rewrites);
    field!(
        out,
        "aof_rewrites_consecutive_failures",
        aof.consecutive_failures
    );
    field!(
        out,
        "aof_last_write_status",
        ok_or_err(aof.write_error.is_none())
    );
    field!(out, "aof_last_cow_size", 0);
    field!(out, "module_fork_in_progress", 0);
    field!(out, "module_fork_last_cow_size", 0);
    if aof.state != crate::persistence::aof_files::AofState::Off {
        field!(out, "aof_current_size", aof.current_size);
        field!(out, "aof_base_size", aof.base_size);
        field!(out, "aof_pending_rewrite", u8::from(aof.rewrite_scheduled));
        field!(out, "aof_buffer_length", aof.buffer_len());
        field!(
            out,
            "aof_pending_bio_fsync",
            u8::from(aof.sync_in_progress())
        );
        field!(out, "aof_delayed_fsync", aof.delayed_fsync);
    }
}

/// INFO replication with Redis 7.0's fields (a replica's; a primary has
/// no replicas yet).
fn replication_section(
    state: &ServerState,
    peers: &dyn crate::connection::Sessions,
    out: &mut String,
) {
    use crate::replication::Link;
    let repl = &state.repl;
    out.push_str("# Replication\r\n");
    match &repl.master {
        Some((host, port)) => {
            field!(out, "role", "slave");
            field!(out, "master_host", host);
            field!(out, "master_port", port);
            let up = repl.link == Link::Connected;
            field!(out, "master_link_status", if up { "up" } else { "down" });
            field!(
                out,
                "master_last_io_seconds_ago",
                if up {
                    repl.last_io.elapsed().as_secs() as i64
                } else {
                    -1
                }
            );
            field!(
                out,
                "master_sync_in_progress",
                u8::from(repl.link == Link::Sync)
            );
            field!(out, "slave_read_repl_offset", repl.offset);
            field!(out, "slave_repl_offset", repl.offset);
            if !up {
                field!(
                    out,
                    "master_link_down_since_seconds",
                    repl.down_since.elapsed().as_secs()
                );
            }
            field!(out, "slave_priority", state.config.replica_priority);
            field!(
                out,
                "slave_read_only",
                u8::from(state.config.replica_read_only)
            );
            field!(out, "replica_announced", 1);
            field!(out, "connected_slaves", 0);
            field!(out, "master_failover_state", "no-failover");
            field!(out, "master_replid", repl.master_replid);
        }
        None => {
            field!(out, "role", "master");
            if state.config.min_replicas_to_write > 0 {
                field!(out, "min_slaves_good_slaves", repl.good_replicas);
            }
            let mut lines = Vec::new();
            peers.for_each_session(&mut |s| {
                if let Some(link) = &s.replica {
                    let ip = s.addr.rsplit_once(':').map_or("", |(ip, _)| ip);
                    lines.push(format!(
                        "ip={ip},port={},state={},offset={},lag={}",
                        s.replica_port,
                        link.state.name(),
                        link.ack_offset,
                        link.last_ack.elapsed().as_secs()
                    ));
                }
            });
            field!(out, "connected_slaves", lines.len());
            for (i, line) in lines.iter().enumerate() {
                let _ = write!(out, "slave{i}:{line}\r\n");
            }
            field!(out, "master_failover_state", "no-failover");
            field!(out, "master_replid", repl.replid);
        }
    }
    field!(
        out,
        "master_replid2",
        "0000000000000000000000000000000000000000"
    );
    field!(out, "master_repl_offset", repl.offset);
    field!(out, "second_repl_offset", -1);
    let backlog = repl.feed.as_ref().map(|f| &f.backlog);
    field!(out, "repl_backlog_active", u8::from(backlog.is_some()));
    field!(out, "repl_backlog_size", state.config.repl_backlog_size);
    field!(
        out,
        "repl_backlog_first_byte_offset",
        backlog.map_or(0, |b| b.first_offset)
    );
    field!(out, "repl_backlog_histlen", backlog.map_or(0, |b| b.len()));
}

/// Where the memory goes, as MEMORY STATS and INFO memory name it.
pub struct MemoryStats {
    pub peak: usize,
    pub total: usize,
    pub rss: usize,
    /// Allocated before any data (`used_memory_startup`).
    pub startup: usize,
    pub replication_backlog: usize,
    pub clients_replicas: usize,
    pub clients_normal: usize,
    pub aof_buffer: usize,
    pub lua_caches: usize,
    /// Each database's main table and expires side (entry storage and
    /// bucket arrays), for the non-empty ones.
    pub tables: Vec<(usize, usize, usize)>,
    pub keys: usize,
}

impl MemoryStats {
    pub fn gather(state: &ServerState, peers: &dyn crate::connection::Sessions) -> MemoryStats {
        let mut clients_replicas = 0;
        peers.for_each_session(&mut |s| {
            if let Some(link) = &s.replica {
                clients_replicas += s.memory() + link.held.len();
            }
        });
        let tables = state
            .dbs
            .iter()
            .filter(|db| !db.is_empty())
            .map(|db| {
                let (main, expires) = db.table_bytes();
                (db.index, main, expires)
            })
            .collect();
        MemoryStats {
            peak: sample_peak_memory(),
            total: used_memory(),
            rss: rss_bytes() as usize,
            startup: state.startup_memory,
            replication_backlog: state
                .repl
                .feed
                .as_ref()
                .map_or(0, |feed| feed.backlog.capacity()),
            clients_replicas,
            clients_normal: state.stats.mem_clients_normal as usize,
            aof_buffer: state.aof.buffer_len(),
            lua_caches: state.scripting.as_ref().map_or(0, |s| s.cache_stats().1),
            tables,
            keys: state.dbs.iter().map(|db| db.len()).sum(),
        }
    }

    /// What is not the data (Redis's `overhead.total`).
    pub fn overhead(&self) -> usize {
        self.startup
            + self.replication_backlog
            + self.clients_replicas
            + self.clients_normal
            + self.aof_buffer
            + self.lua_caches
            + self.tables.iter().map(|(_, m, e)| m + e).sum::<usize>()
    }

    /// The data: what is allocated beyond the overhead.
    pub fn dataset(&self) -> usize {
        self.total.saturating_sub(self.overhead())
    }

    /// The data's share of what was allocated after startup, percent.
    pub fn dataset_percentage(&self) -> f64 {
        self.dataset() as f64 * 100.0 / self.total.saturating_sub(self.startup).max(1) as f64
    }

    /// What is allocated now as a share of the peak, percent.
    pub fn peak_percentage(&self) -> f64 {
        self.total as f64 * 100.0 / self.peak.max(1) as f64
    }

    /// Resident memory over allocated memory.
    pub fn fragmentation(&self) -> f64 {
        self.rss as f64 / self.total.max(1) as f64
    }
}

fn memory_section(state: &ServerState, peers: &dyn crate::connection::Sessions, out: &mut String) {
    let stats = MemoryStats::gather(state, peers);
    let (used, rss, peak) = (stats.total as u64, stats.rss as u64, stats.peak as u64);
    out.push_str("# Memory\r\n");
    field!(out, "used_memory", used);
    field!(out, "used_memory_human", human_bytes(used));
    field!(out, "used_memory_rss", rss);
    field!(out, "used_memory_rss_human", human_bytes(rss));
    field!(out, "used_memory_peak", peak);
    field!(out, "used_memory_peak_human", human_bytes(peak));
    field!(
        out,
        "used_memory_peak_perc",
        format!("{:.2}%", stats.peak_percentage())
    );
    field!(out, "used_memory_overhead", stats.overhead());
    field!(out, "used_memory_startup", stats.startup);
    field!(out, "used_memory_dataset", stats.dataset());
    field!(
        out,
        "used_memory_dataset_perc",
        format!("{:.2}%", stats.dataset_percentage())
    );
    let allocator = allocator_stats();
    field!(out, "allocator_allocated", allocator.allocated);
    field!(out, "allocator_active", allocator.active);
    field!(out, "allocator_resident", allocator.resident);
    let system = system_memory().unwrap_or(0);
    field!(out, "total_system_memory", system);
    field!(out, "total_system_memory_human", human_bytes(system));
    // One Lua VM serves EVAL and functions here (Redis has two): its
    // memory is reported as the eval VM's.
    let scripting = state.scripting.as_ref();
    let (scripts, script_bytes) = scripting.map_or((0, 0), |s| s.cache_stats());
    let vm = scripting.map_or(0, |s| s.vm_memory()) as u64;
    let functions = scripting.map_or(0, |s| s.function_count());
    let libraries = scripting.map_or(0, |s| s.library_count());
    let library_bytes: usize = scripting.map_or(0, |s| s.libraries().map(|l| l.code.len()).sum());
    field!(out, "used_memory_lua", vm);
    field!(out, "used_memory_vm_eval", vm);
    field!(out, "used_memory_lua_human", human_bytes(vm));
    field!(out, "used_memory_scripts_eval", script_bytes);
    field!(out, "number_of_cached_scripts", scripts);
    field!(out, "number_of_functions", functions);
    field!(out, "number_of_libraries", libraries);
    field!(out, "used_memory_vm_functions", 0);
    field!(out, "used_memory_vm_total", vm);
    field!(out, "used_memory_vm_total_human", human_bytes(vm));
    field!(out, "used_memory_functions", library_bytes);
    let scripts_total = (script_bytes + library_bytes) as u64;
    field!(out, "used_memory_scripts", scripts_total);
    field!(out, "used_memory_scripts_human", human_bytes(scripts_total));
    field!(out, "maxmemory", state.config.maxmemory);
    field!(out, "maxmemory_human", human_bytes(state.config.maxmemory));
    field!(
        out,
        "maxmemory_policy",
        state.config.maxmemory_policy.name()
    );
    let ratio = |a: u64, b: u64| format!("{:.2}", a as f64 / b.max(1) as f64);
    let diff = |a: u64, b: u64| a as i64 - b as i64;
    let (allocated, active, resident) = (allocator.allocated, allocator.active, allocator.resident);
    field!(out, "allocator_frag_ratio", ratio(active, allocated));
    field!(out, "allocator_frag_bytes", diff(active, allocated));
    field!(out, "allocator_rss_ratio", ratio(resident, active));
    field!(out, "allocator_rss_bytes", diff(resident, active));
    field!(out, "rss_overhead_ratio", ratio(rss, resident));
    field!(out, "rss_overhead_bytes", diff(rss, resident));
    field!(
        out,
        "mem_fragmentation_ratio",
        format!("{:.2}", stats.fragmentation())
    );
    field!(out, "mem_fragmentation_bytes", diff(rss, used));
    field!(
        out,
        "mem_not_counted_for_evict",
        crate::evict::not_counted(state, peers)
    );
    field!(out, "mem_replication_backlog", stats.replication_backlog);
    field!(out, "mem_total_replication_buffers", stats.clients_replicas);
    field!(out, "mem_clients_slaves", stats.clients_replicas);
    field!(out, "mem_clients_normal", state.stats.mem_clients_normal);
    let cluster_links = state.cluster.as_ref().map_or(0, |c| c.links_memory());
    field!(out, "mem_cluster_links", cluster_links);
    field!(out, "mem_aof_buffer", stats.aof_buffer);
    field!(out, "mem_allocator", "libc");
    field!(out, "active_defrag_running", 0);
    field!(
        out,
        "lazyfree_pending_objects",
        state.lazyfree.pending_objects()
    );
    field!(out, "lazyfreed_objects", state.lazyfree.freed_objects());
}

/// glibc's view of the heap (`mallinfo2`), in Redis's allocator terms:
/// bytes in use, bytes the allocator holds from the OS (its arenas and
/// mapped chunks), and of those the resident ones (glibc cannot tell
/// untouched pages apart: the same figure).
struct AllocatorStats {
    allocated: u64,
    active: u64,
    resident: u64,
}

fn allocator_stats() -> AllocatorStats {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    let active = (info.arena + info.hblkhd) as u64;
    AllocatorStats {
        allocated: (info.uordblks + info.hblkhd) as u64,
        active,
        resident: active,
    }
}

fn stats_section(state: &ServerState, out: &mut String) {
    let s = &state.stats;
    let (mut expired, mut expired_active, mut hits, mut misses) = (0, 0, 0, 0);
    let mut expired_subkeys = 0;
    let (mut lag_active, mut lag_passive) = (Histogram::default(), Histogram::default());
    for db in &state.dbs {
        expired += db.stats.expired_keys;
        expired_active += db.stats.expired_keys_active;
        expired_subkeys += db.stats.expired_subkeys;
        hits += db.stats.keyspace_hits;
        misses += db.stats.keyspace_misses;
        lag_active.merge(&db.stats.lag_active);
        lag_passive.merge(&db.stats.lag_passive);
    }
    let e = &state.expire;
    out.push_str("# Stats\r\n");
    // Redis 7.0's fields, in its order, where lapse has them.
    field!(
        out,
        "total_connections_received",
        s.total_connections_received
    );
    field!(out, "total_commands_processed", s.total_commands_processed);
    let ops = s.ops_rate.per_second().round() as u64;
    field!(out, "instantaneous_ops_per_sec", ops);
    field!(out, "total_net_input_bytes", s.total_net_input_bytes);
    field!(out, "total_net_output_bytes", s.total_net_output_bytes);
    let kbps = |rate: &crate::state::RateSampler| format!("{:.2}", rate.per_second() / 1024.0);
    field!(
        out,
        "total_net_repl_input_bytes",
        s.total_net_repl_input_bytes
    );
    field!(
        out,
        "total_net_repl_output_bytes",
        s.total_net_repl_output_bytes
    );
    field!(out, "instantaneous_input_kbps", kbps(&s.input_rate));
    field!(out, "instantaneous_output_kbps", kbps(&s.output_rate));
    field!(
        out,
        "instantaneous_input_repl_kbps",
        kbps(&s.repl_input_rate)
    );
    field!(
        out,
        "instantaneous_output_repl_kbps",
        kbps(&s.repl_output_rate)
    );
    field!(out, "rejected_connections", s.rejected_connections);
    field!(out, "sync_full", state.repl.sync_full);
    field!(out, "sync_partial_ok", state.repl.sync_partial_ok);
    field!(out, "sync_partial_err", state.repl.sync_partial_err);
    field!(out, "expired_keys", expired);
    field!(
        out,
        "expired_stale_perc",
        format!("{:.2}", e.stale_perc * 100.0)
    );
    field!(
        out,
        "expired_time_cap_reached_count",
        e.time_cap_reached_count
    );
    field!(out, "expire_cycle_cpu_milliseconds", e.time_used_us / 1000);
    let evicted: u64 = state.dbs.iter().map(|db| db.stats.evicted_keys).sum();
    field!(out, "evicted_keys", evicted);
    field!(out, "evicted_clients", s.evicted_clients);
    let current_ms = s
        .eviction_exceeded_since
        .map_or(0, |since| since.elapsed().as_millis() as u64);
    field!(
        out,
        "total_eviction_exceeded_time",
        s.eviction_exceeded_ms + current_ms
    );
    field!(out, "current_eviction_exceeded_time", current_ms);
    field!(out, "keyspace_hits", hits);
    field!(out, "keyspace_misses", misses);
    let (channels, patterns, shard) = state.pubsub.totals();
    field!(out, "pubsub_channels", channels);
    field!(out, "pubsub_patterns", patterns);
    field!(out, "pubsubshard_channels", shard);
    // lapse never forks (saves are fork-less) and has no defragmenter.
    field!(out, "latest_fork_usec", 0);
    field!(out, "total_forks", 0);
    field!(out, "migrate_cached_sockets", 0);
    let tracked: usize = state.dbs.iter().map(|db| db.replica_ttls_tracked()).sum();
    field!(out, "slave_expires_tracked_keys", tracked);
    let (_, keys, items, prefixes) = state.tracking.totals();
    for defrag in [
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
    ] {
        let _ = write!(out, "{defrag}:0\r\n");
    }
    field!(out, "tracking_total_keys", keys);
    field!(out, "tracking_total_items", items);
    field!(out, "tracking_total_prefixes", prefixes);
    field!(out, "unexpected_error_replies", s.unexpected_error_replies);
    field!(out, "total_error_replies", s.total_error_replies);
    field!(
        out,
        "dump_payload_sanitizations",
        s.dump_payload_sanitizations
    );
    field!(out, "total_reads_processed", s.total_reads_processed);
    field!(out, "total_writes_processed", s.total_writes_processed);
    field!(out, "io_threaded_reads_processed", 0);
    field!(out, "io_threaded_writes_processed", 0);
    // Redis 7.2's and 7.4's, then lapse's own.
    field!(
        out,
        "client_query_buffer_limit_disconnections",
        s.client_query_buffer_limit_disconnections
    );
    field!(
        out,
        "client_output_buffer_limit_disconnections",
        s.client_output_buffer_limit_disconnections
    );
    field!(out, "acl_access_denied_auth", s.acl_access_denied_auth);
    // Redis 7.4's: hash fields removed past their deadline.
    field!(out, "expired_subkeys", expired_subkeys);
    field!(out, "expired_keys_active", expired_active);
    // Stampede protection (issue 42).
    let leases = state.leases.stats;
    field!(out, "stale_hits", leases.stale_hits);
    field!(out, "leases_granted", leases.leases_granted);
    field!(out, "lease_fills", leases.lease_fills);
    field!(out, "lease_waits", leases.lease_waits);
    field!(out, "lease_wait_timeouts", leases.lease_wait_timeouts);
    field!(out, "early_refreshes", leases.early_refreshes);
    field!(out, "expired_keys_passive", expired - expired_active);
    // How late expired keys were removed, by mechanism.
    for (name, h) in [("active", &lag_active), ("passive", &lag_passive)] {
        let _ = write!(
            out,
            "expire_lag_{name}_p50_ms:{}\r\nexpire_lag_{name}_p99_ms:{}\r\nexpire_lag_{name}_max_ms:{}\r\n",
            h.percentile(50.0),
            h.percentile(99.0),
            h.max()
        );
    }
    field!(out, "expire_strategy", state.config.expire_strategy.name());
}

fn keyspace_section(state: &ServerState, out: &mut String) {
    out.push_str("# Keyspace\r\n");
    for (i, db) in state.dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "db{i}:keys={},expires={},avg_ttl={}",
            db.len(),
            db.expires_len(),
            db.avg_ttl_ms
        );
        // Redis 7.4's count of hashes with field deadlines, shown only
        // where there are some: 7.0's clients parse the line as 7.0 wrote it.
        let hashes = db.keys_with_element_ttls();
        if hashes > 0 {
            let _ = write!(out, ",subexpiry={hashes}");
        }
        out.push_str("\r\n");
    }
}
