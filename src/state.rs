//! The state the event loop owns apart from sockets: databases, settings,
//! counters, the random source, the active expire cycle's state.
//!
//! Commands get `&mut ServerState` through their context; only `server`
//! creates it and only the loop thread ever touches it.

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::config::Config;
use crate::db::Db;
use crate::expire::ExpireCycle;
use crate::info::Stats;
use crate::lazyfree::LazyFree;

pub struct ServerState {
    pub dbs: Vec<Db>,
    pub config: Config,
    pub stats: Stats,
    /// Random source for sampling and RANDOMKEY (seeded from the OS).
    pub rng: SmallRng,
    /// When the server started (uptime, CPU budgets).
    pub started: Instant,
    /// The active expire cycle's state and statistics.
    pub expire: ExpireCycle,
    /// Clients connected right now.
    pub connected_clients: usize,
    /// The port actually bound (differs from `config.port` when that is 0).
    pub bound_port: u16,
    /// Set by SHUTDOWN; the loop stops after this iteration.
    pub shutdown_requested: bool,
    /// The background freer for big values.
    pub lazyfree: LazyFree,
}

impl ServerState {
    pub fn new(config: Config) -> Self {
        let mut state = Self {
            dbs: (0..config.databases).map(|_| Db::default()).collect(),
            expire: ExpireCycle::default(),
            config,
            stats: Stats::default(),
            rng: SmallRng::from_entropy(),
            started: Instant::now(),
            connected_clients: 0,
            bound_port: 0,
            shutdown_requested: false,
            lazyfree: LazyFree::start(),
        };
        state.apply_config();
        state
    }

    /// Pushes settings that the databases keep a copy of into each of them
    /// (at startup and after CONFIG SET).
    pub fn apply_config(&mut self) {
        let policy = self.config.lazyfree;
        for db in &mut self.dbs {
            db.lazy_expire = policy.expire;
            db.lazy_server_del = policy.server_del;
        }
    }

    /// Hands the big values the databases removed to the lazyfree thread.
    pub fn free_garbage(&mut self) {
        for db in &mut self.dbs {
            for value in db.take_garbage() {
                self.lazyfree.free_async(value);
            }
        }
    }
}
