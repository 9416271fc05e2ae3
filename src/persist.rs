//! Persistence: writing the dataset to an RDB file that redis-server and
//! `redis-check-rdb` read (the format is `rdb::snapshot`'s). Owns the
//! file handling: a save goes to a temporary file in `dir`, is synced,
//! and only then renamed over `dbfilename`, so a crash mid-save never
//! destroys the previous file.
//!
//! First step of the persistence issue: SAVE and LASTSAVE. Loading at
//! startup, BGSAVE without a fork stall, save points and the AOF come next.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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
    let bytes = crate::rdb::snapshot(
        &state.dbs,
        &functions,
        now_ms,
        crate::info::used_memory() as u64,
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
