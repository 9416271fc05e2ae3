//! Files on disk: the RDB format and the append-only file, and the jobs
//! that write and read them.
//!
//! Below the server state (it owns what they define): `rdb` and
//! `rdb_load` (the RDB format, both ways), `rdb_check` (`lapse
//! --check-rdb`: a file's contents and what redis-server cannot read in
//! it), `jobs` (`Persistence`, the
//! encoder of a whole dataset and the files it goes to), `aof_files`
//! (`Aof`: the manifest, the open increment file, the fsync thread) and
//! `aof_commands` (an AOF base as commands). Above it (functions over the
//! whole state): `save` (SAVE, BGSAVE, save points, diskless syncs),
//! `load` (an RDB file into the server), `aof` (flush, rewrite, on/off),
//! `aof_load` (replaying the AOF at startup and on DEBUG LOADAOF) and
//! `shutdown` (the AOF's last write, then the final save). A background
//! job is handed its owner's function for its end (`jobs::JobDone`), so
//! the save that runs an AOF rewrite does not import the AOF.

pub mod aof;
pub mod aof_commands;
pub mod aof_files;
pub mod aof_load;
pub mod jobs;
pub mod load;
pub mod rdb;
pub mod rdb_check;
pub mod rdb_load;
pub mod save;
pub mod shutdown;
