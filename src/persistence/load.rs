//! Loading an RDB file into the server: at startup (`dir`/`dbfilename`,
//! if there is one: keys whose deadline has passed are skipped and
//! counted, as a Redis primary does), DEBUG RELOAD, a replica's full
//! sync and an AOF's RDB base (`rdb_load` decodes; this puts what it
//! decodes in place).

use std::io;
use std::path::Path;

use super::jobs::{Job, SaveError};
use super::save::{abandon, rdb_path, save};
use crate::db::Db;
use crate::state::ServerState;

/// Loads `dir`/`dbfilename` into the (empty) databases if the file exists
/// (INFO persistence counts the keys). An unreadable or damaged file is an
/// error (the server must not start with half a dataset), as in Redis.
pub fn load_at_startup(state: &mut ServerState, now_ms: i64) -> io::Result<()> {
    let path = rdb_path(state);
    let started = std::time::Instant::now();
    match std::fs::read(&path) {
        Ok(data) => {
            load_rdb(state, &data, &path, now_ms, Load::Startup)?;
            let seconds = started.elapsed().as_secs_f64();
            tracing::info!("DB loaded from disk: {seconds:.3} seconds");
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE], as redis-server's test suite
/// uses it: save (unless NOSAVE), empty the databases and the function
/// libraries (unless NOFLUSH),
/// load the file back (with MERGE, a key already present is replaced
/// instead of being an error).
pub fn debug_reload(
    state: &mut ServerState,
    now_ms: i64,
    save_first: bool,
    flush: bool,
    merge: bool,
) -> Result<(), ReloadError> {
    if save_first {
        save(state, now_ms).map_err(ReloadError::Save)?;
    }
    if flush {
        empty_data(state);
    }
    let path = rdb_path(state);
    let data = std::fs::read(&path).map_err(ReloadError::Load)?;
    let how = if merge { Load::Merge } else { Load::Startup };
    load_rdb(state, &data, &path, now_ms, how)
        .map(drop)
        .map_err(ReloadError::Load)
}

/// Redis's `emptyData` (DEBUG RELOAD, DEBUG LOADAOF): the keys and the
/// function libraries go; a background save of them is abandoned.
pub fn empty_data(state: &mut ServerState) {
    abandon(state, Job::Rdb);
    for db in &mut state.dbs {
        drop(db.flush());
    }
    if let Some(scripting) = &mut state.scripting {
        scripting.flush_functions();
    }
}

/// Which half of DEBUG RELOAD failed.
#[derive(Debug)]
pub enum ReloadError {
    Save(SaveError),
    Load(io::Error),
}

/// How a load treats what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// As a primary at startup: keys past their deadline are skipped.
    Startup,
    /// DEBUG RELOAD MERGE: keys already present are replaced.
    Merge,
    /// Every key is kept, the deadlines decide later: an AOF's RDB
    /// preamble (the log's own DELs follow), a primary's RDB on a replica
    /// (the primary's DELs follow).
    KeepAll,
}

/// Loads RDB `data` (read from `path`) into the databases (see
/// `StartupSink`); returns the bytes the RDB took (an old-style AOF goes
/// on with commands after them).
pub fn load_rdb(
    state: &mut ServerState,
    data: &[u8],
    path: &Path,
    now_ms: i64,
    how: Load,
) -> io::Result<usize> {
    let limits = state.config.load_limits();
    let invalid = |message: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {message}", path.display()),
        )
    };
    let mut sink = StartupSink {
        dbs: &mut state.dbs,
        // Nothing is before the beginning of time.
        now_ms: if how == Load::KeepAll {
            i64::MIN
        } else {
            now_ms
        },
        merge: how == Load::Merge,
        functions: Vec::new(),
        loaded: 0,
        expired: 0,
    };
    let consumed = super::rdb_load::load_into(data, limits, &mut sink).map_err(invalid)?;
    let (functions, loaded, expired) = (sink.functions, sink.loaded, sink.expired);
    if !functions.is_empty() {
        let mut scripting = match state.scripting.take() {
            Some(s) => s,
            None => crate::scripting::Scripting::new().map_err(|e| invalid(format!("Lua: {e}")))?,
        };
        let restore = if how == Load::Merge {
            crate::scripting::Restore::Replace
        } else {
            crate::scripting::Restore::Append
        };
        let restored = scripting.restore_codes(&functions, restore);
        state.scripting = Some(scripting);
        restored.map_err(invalid)?;
    }
    state.stats.rdb_last_load_keys_expired = expired;
    state.stats.rdb_last_load_keys_loaded = loaded;
    tracing::info!("Done loading RDB, keys loaded: {loaded}, keys expired: {expired}.");
    Ok(consumed)
}

/// Loading at startup, as a Redis primary does: keys whose deadline has
/// passed are skipped and counted; a key already present is an error
/// (twice in the file), or replaced with `merge` (DEBUG RELOAD MERGE).
struct StartupSink<'a> {
    dbs: &'a mut [Db],
    now_ms: i64,
    merge: bool,
    functions: Vec<Vec<u8>>,
    loaded: u64,
    expired: u64,
}

impl StartupSink<'_> {
    fn add(
        &mut self,
        db: usize,
        key: &[u8],
        value: crate::db::NewValue<'_>,
        at_ms: Option<i64>,
    ) -> Result<(), String> {
        let databases = self.dbs.len();
        let target = self.dbs.get_mut(db).ok_or_else(|| {
            format!(
                "FATAL: Data file was created with a Redis server configured to handle more than {databases} databases. Exiting"
            )
        })?;
        if at_ms.is_some_and(|at| at < self.now_ms) {
            self.expired += 1;
            return Ok(());
        }
        if self.merge {
            target.delete(key, self.now_ms, false);
        }
        if !target.load_key(key, value, at_ms) {
            return Err(format!(
                "Duplicate key '{}' found in RDB file",
                String::from_utf8_lossy(key)
            ));
        }
        self.loaded += 1;
        Ok(())
    }
}

impl super::rdb_load::LoadSink for StartupSink<'_> {
    fn size_hint(&mut self, db: usize, keys: usize) {
        if let Some(target) = self.dbs.get_mut(db) {
            target.reserve(keys);
        }
    }

    fn string(
        &mut self,
        db: usize,
        key: &[u8],
        value: &[u8],
        at: Option<i64>,
    ) -> Result<(), String> {
        self.add(db, key, crate::db::NewValue::Str(value), at)
    }

    fn value(
        &mut self,
        db: usize,
        key: &[u8],
        value: crate::value::Value,
        at: Option<i64>,
    ) -> Result<(), String> {
        self.add(db, key, crate::db::NewValue::Value(value), at)
    }

    fn function(&mut self, code: Vec<u8>) -> Result<(), String> {
        self.functions.push(code);
        Ok(())
    }

    fn soft_deadline(&mut self, db: usize, key: &[u8], soft_ms: i64) {
        if let Some(target) = self.dbs.get_mut(db) {
            target.set_soft_deadline(key, soft_ms);
        }
    }
}
