//! Persistence: writing the dataset to an RDB file that redis-server and
//! `redis-check-rdb` read (the format is `rdb::snapshot`'s). Owns the
//! file handling: a save goes to a temporary file in `dir`, is synced,
//! and only then renamed over `dbfilename`, so a crash mid-save never
//! destroys the previous file.
//!
//! At startup the file at `dir`/`dbfilename`, if there is one, is loaded
//! (`load_at_startup`): keys whose deadline has passed are skipped and
//! counted, as a Redis primary does.
//!
//! So far: SAVE, LASTSAVE, loading at startup. BGSAVE without a fork
//! stall, save points, saving at shutdown and the AOF come next.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::rdb_load::{self, Limits};
use crate::state::ServerState;

/// Where a save of `state` goes: `dir`/`dbfilename`.
pub fn rdb_path(state: &ServerState) -> PathBuf {
    Path::new(&state.config.dir).join(&state.config.dbfilename)
}

/// SAVE: writes the whole dataset (and the function libraries) as an RDB
/// file, atomically; records the time in `lastsave`.
pub fn save(state: &mut ServerState, now_ms: i64) -> io::Result<()> {
    let mut functions = Vec::new();
    if let Some(scripting) = &state.scripting {
        scripting.write_functions(&mut functions);
    }
    let options = crate::rdb::SaveOptions {
        compress: state.config.rdbcompression,
        checksum: state.config.rdbchecksum,
    };
    let bytes = crate::rdb::snapshot(
        &state.dbs,
        &functions,
        now_ms,
        crate::info::used_memory() as u64,
        options,
    );
    write_atomically(&rdb_path(state), &bytes)?;
    state.lastsave_s = now_ms / 1000;
    Ok(())
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, renames it
/// over `path` and syncs the directory (Redis's `temp-<pid>.rdb` dance).
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = dir.join(format!("temp-{}.rdb", std::process::id()));
    let written = (|| {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    std::fs::rename(&temp, path)?;
    // The rename itself survives a crash once the directory is synced.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Loads `dir`/`dbfilename` into the (empty) databases if the file exists
/// (INFO persistence counts the keys). An unreadable or damaged file is an
/// error (the server must not start with half a dataset), as in Redis.
pub fn load_at_startup(state: &mut ServerState, now_ms: i64) -> io::Result<()> {
    let path = rdb_path(state);
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let limits = Limits {
        hash: state.config.hash_limits(),
        set: state.config.set_limits(),
        zset: state.config.zset_limits(),
    };
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
    let loaded = rdb_load::load(&data, limits).map_err(invalid)?;
    if !loaded.functions.is_empty() {
        let mut scripting = match state.scripting.take() {
            Some(s) => s,
            None => crate::scripting::Scripting::new().map_err(|e| invalid(format!("Lua: {e}")))?,
        };
        let restored =
            scripting.restore_codes(&loaded.functions, crate::scripting::Restore::Append);
        state.scripting = Some(scripting);
        restored.map_err(invalid)?;
    }
    let (mut keys, mut expired) = (0, 0);
    for (index, entries) in loaded.dbs {
        let db = state.dbs.get_mut(index).ok_or_else(|| {
            invalid(format!(
                "FATAL: Data file was created with a Redis server configured to handle more than {} databases. Exiting",
                state.config.databases
            ))
        })?;
        for (key, value, at_ms) in entries {
            if at_ms.is_some_and(|at| at < now_ms) {
                expired += 1;
                continue;
            }
            let ttl = at_ms.map_or(crate::db::Ttl::Clear, crate::db::Ttl::At);
            db.set(&key, value, ttl, now_ms);
            keys += 1;
        }
    }
    state.stats.rdb_last_load_keys_expired = expired;
    state.stats.rdb_last_load_keys_loaded = keys as u64;
    tracing::info!("Done loading RDB, keys loaded: {keys}, keys expired: {expired}.");
    Ok(())
}
