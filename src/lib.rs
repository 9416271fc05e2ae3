//! lapse: a Redis-compatible in-memory key-value server built around key expiry.
//!
//! Rooms (see ARCHITECTURE.md): `server` (the loop and sockets),
//! `connection` (one client's state), `protocol` (pure RESP), `db` (the
//! keyspace and passive expiry), `expire` (the active cycle), `commands`
//! (the table and handlers), `config`, `info`.

/// The Redis version lapse reports to clients (they gate features on it).
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";
pub const LAPSE_VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod acl;
pub mod blocking;
pub mod busy;
pub mod clock;
pub mod cmdstats;
pub mod command_table;
pub mod commands;
pub mod config;
pub mod connection;
pub mod db;
pub mod deadlines;
pub mod dict;
pub mod digest;
pub mod dispatch;
pub mod evict;
pub mod expire;
pub mod fdlimit;
pub mod float;
pub mod geohash;
pub mod glob;
pub mod harness;
pub mod histogram;
pub mod hll;
pub mod info;
pub mod latency;
pub mod lazyfree;
pub mod log;
pub mod lzf;
pub mod memory;
pub mod monitor;
pub mod multi;
pub mod net;
pub mod notify;
pub mod pause;
pub mod persistence;
pub mod propagate;
pub mod protocol;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod slowlog;
pub mod state;
pub mod tracking;
pub mod value;
