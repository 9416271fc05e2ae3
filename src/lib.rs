//! lapse: a Redis-compatible in-memory key-value server built around key expiry.
//!
//! Rooms, their layers and the direction of their imports:
//! docs/ARCHITECTURE.md (tests/architecture.rs holds the code to it).
//! Modules are private unless main, the tests or the benches use them.

#![deny(unsafe_op_in_unsafe_fn)]

/// The Redis version lapse reports to clients (they gate features on it).
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";
pub const LAPSE_VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod acl;
mod blocking;
mod busy;
mod clock;
mod cluster;
mod cmdstats;
pub mod command_table;
mod commands;
pub mod config;
pub mod connection;
pub mod db;
mod deadlines;
mod dict;
mod digest;
pub mod dispatch;
mod evict;
mod expire;
mod fdlimit;
mod files;
mod float;
mod geohash;
mod glob;
pub mod harness;
mod histogram;
mod hll;
mod info;
mod latency;
mod lazyfree;
mod lease;
pub mod log;
mod lzf;
pub mod memory;
mod monitor;
mod multi;
mod net;
mod notify;
pub mod pause;
pub mod persistence;
mod propagate;
pub mod protocol;
mod pubsub;
mod replication;
pub mod scripting;
pub mod server;
mod slowlog;
pub mod state;
mod tls;
mod tracking;
mod value;
mod words;
