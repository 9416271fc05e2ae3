//! Persistence: the dataset in an RDB file that redis-server and
//! `redis-check-rdb` read (the pieces of the format are `rdb`'s; the
//! order they go in is here). Owns the save points, the last save's
//! outcome, the background save and the file handling.
//!
//! **Saves.** SAVE writes the file from the loop. BGSAVE (and the save
//! points, and what the cron starts) write it without a fork and without
//! stalling the loop: each database takes a point-in-time snapshot
//! (`db::snapshot`: a change to a key the save has not written yet writes
//! that key first), the loop encodes keys for about a millisecond per
//! iteration (`tick`), and a thread writes the bytes to the file. Why not
//! fork: a fork copies the page tables in one stall (milliseconds at
//! gigabytes) and, under writes, copy-on-write duplicates every page a
//! write touches, up to doubling memory; here a write during the save
//! costs one value's encoding, and the extra memory is the encoded bytes
//! waiting for the writer (bounded by `MAX_IN_FLIGHT_BYTES` plus what the
//! writes themselves preserved).
//!
//! **Files.** A save goes to `temp-<pid>.rdb` in `dir`, is synced, and
//! only then renamed over `dbfilename` and the directory synced, so a
//! crash mid-save never destroys the previous file.
//!
//! **Loading.** At startup the file at `dir`/`dbfilename`, if there is
//! one, is loaded (`load_at_startup`): keys whose deadline has passed are
//! skipped and counted, as a Redis primary does.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::db::snapshot::EntryFormat;
use crate::db::Db;
use crate::protocol::encode_request;
use crate::rdb::{self, SaveOptions};
use crate::rdb_load;
use crate::state::ServerState;

/// How long one `tick` encodes keys: the longest a background save holds
/// the loop at a time.
const SLICE: Duration = Duration::from_millis(1);
/// Keys encoded between clock checks within a slice.
const KEYS_PER_STEP: usize = 64;
/// Encoded bytes handed to the writer thread at a time.
const CHUNK_BYTES: usize = 256 * 1024;
/// Encoded bytes the writer may be behind before the loop stops encoding
/// and waits for the disk (memory a save holds beyond the dataset).
const MAX_IN_FLIGHT_BYTES: usize = 16 * 1024 * 1024;
/// After a failed background save, the save points wait this long before
/// trying again (Redis's `CONFIG_BGSAVE_RETRY_DELAY`), seconds.
const BGSAVE_RETRY_DELAY_S: i64 = 5;

/// What persistence keeps between saves.
pub struct Persistence {
    /// Unix seconds of the last successful save (LASTSAVE); the start
    /// time until there is one, as in Redis.
    pub lastsave_s: i64,
    /// `ServerState::dirty()` as of the data in the last file written.
    dirty_at_save: u64,
    /// Whether the last background save succeeded (`rdb_last_bgsave_status`).
    pub last_bgsave_ok: bool,
    /// When the last background save started, unix seconds (for the retry
    /// delay after a failure).
    last_bgsave_try_s: i64,
    /// How long the last background save took, seconds (-1: none yet).
    pub last_bgsave_time_s: i64,
    /// Saves started, foreground and background (`rdb_saves`).
    pub rdb_saves: u64,
    /// A background job under way (a save or an AOF rewrite).
    background: Option<Background>,
    /// BGSAVE SCHEDULE asked for a save while an AOF rewrite ran.
    pub bgsave_scheduled: bool,
    /// Background saves started and ended (abandoned ones included), and
    /// whether the last one that ended wrote its file: replicas waiting
    /// for the file of a given save read these.
    pub bgsaves_started: u64,
    pub bgsaves_ended: u64,
    pub last_bgsave_wrote_file: bool,
    /// During a diskless sync, the most bytes of it one replica has not
    /// been sent yet (set by the loop): encoding waits while it is high.
    pub replica_output_behind: usize,
}

impl Persistence {
    pub fn new(now_ms: i64) -> Persistence {
        Persistence {
            lastsave_s: now_ms / 1000,
            dirty_at_save: 0,
            last_bgsave_ok: true,
            last_bgsave_try_s: 0,
            last_bgsave_time_s: -1,
            rdb_saves: 0,
            background: None,
            bgsave_scheduled: false,
            bgsaves_started: 0,
            bgsaves_ended: 0,
            last_bgsave_wrote_file: false,
            replica_output_behind: 0,
        }
    }

    pub fn bgsave_in_progress(&self) -> bool {
        self.job() == Some(Job::Rdb)
    }

    /// (INFO) seconds the current background `job` has run, or -1.
    pub fn current_job_time_s(&self, job: Job) -> i64 {
        self.background
            .as_ref()
            .filter(|b| b.job == job)
            .map_or(-1, |b| b.started.elapsed().as_secs() as i64)
    }

    /// (INFO) keys the current save has written and will write in all.
    pub fn current_save_keys(&self, dbs: &[Db]) -> (u64, u64) {
        self.background.as_ref().map_or((0, 0), |b| {
            (
                b.encoder.keys_written(dbs) as u64,
                b.encoder.keys_total as u64,
            )
        })
    }
}

/// Changes since the data last matched the file
/// (`rdb_changes_since_last_save`).
pub fn changes_since_save(state: &ServerState) -> u64 {
    state.dirty().saturating_sub(state.persist.dirty_at_save)
}

/// Where a save of `state` goes: `dir`/`dbfilename`.
pub fn rdb_path(state: &ServerState) -> PathBuf {
    Path::new(&state.config.dir).join(&state.config.dbfilename)
}

/// How files are written (`rdbcompression`, `rdbchecksum`): `dbfilename`
/// and an AOF's RDB base alike.
pub fn save_options(state: &ServerState) -> SaveOptions {
    SaveOptions {
        compress: state.config.rdbcompression,
        checksum: state.config.rdbchecksum,
    }
}

/// What a save writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// An RDB file; `aof_base`: as an AOF's base (the `aof-base` field).
    Rdb {
        options: SaveOptions,
        aof_base: bool,
    },
    /// Commands that rebuild the dataset: an AOF base without the RDB
    /// preamble (`aof-use-rdb-preamble no`).
    Commands,
}

/// Writes one whole file from the databases' snapshots, a few keys at a
/// time, in file order: header and function libraries, then each database
/// that had keys when the save began, then the end. An RDB file's
/// checksum is the file writer's (`SaveFile`).
struct Encoder {
    format: FileFormat,
    /// The databases to write, in order, with their sizes at the start
    /// (for RESIZEDB).
    dbs: Vec<(usize, usize, usize)>,
    /// Position in `dbs` of the database being written.
    next: usize,
    /// Whether the current database's SELECTDB is out.
    db_started: bool,
    /// Bytes encoded and not yet taken.
    out: Vec<u8>,
    /// EOF is in `out` (or gone): nothing more to encode.
    done: bool,
    /// Keys in all databases at the start.
    keys_total: usize,
}

impl Encoder {
    /// Starts a save of everything as it is now: the header and the
    /// function libraries are encoded at once, and every database starts
    /// its point-in-time snapshot.
    fn begin(
        all: &mut [Db],
        scripting: Option<&crate::scripting::Scripting>,
        now_ms: i64,
        format: FileFormat,
    ) -> Encoder {
        let mut out = Vec::new();
        let entries = match format {
            FileFormat::Rdb { options, aof_base } => {
                rdb::write_header(
                    &mut out,
                    now_ms,
                    crate::memory::used_memory() as u64,
                    aof_base,
                );
                if let Some(scripting) = scripting {
                    scripting.write_functions(&mut out);
                }
                Arc::new(rdb::RdbEntries(options)) as Arc<dyn EntryFormat>
            }
            FileFormat::Commands => {
                if let Some(scripting) = scripting {
                    for code in scripting.library_codes() {
                        encode_request(&[&b"FUNCTION"[..], b"LOAD", code], &mut out);
                    }
                }
                Arc::new(crate::aof::CommandEntries)
            }
        };
        let mut dbs = Vec::new();
        let mut keys_total = 0;
        for db in all {
            if !db.is_empty() {
                dbs.push((db.index, db.len(), db.expires_len()));
                keys_total += db.len();
                db.begin_snapshot(now_ms, entries.clone());
            }
        }
        Encoder {
            format,
            dbs,
            next: 0,
            db_started: false,
            out,
            done: false,
            keys_total,
        }
    }

    /// Encodes up to `max_keys` more keys into `out` (databases are
    /// finished in order); returns whether the file is complete.
    fn step(&mut self, dbs: &mut [Db], max_keys: usize) -> bool {
        let mut budget = max_keys;
        while !self.done && budget > 0 {
            let Some(&(index, keys, expires)) = self.dbs.get(self.next) else {
                if let FileFormat::Rdb { .. } = self.format {
                    self.out.push(rdb::OPCODE_EOF);
                }
                self.done = true;
                break;
            };
            // The database holding this save's snapshot (SWAPDB moves it).
            let Some(db) = dbs.iter_mut().find(|d| d.snapshot_origin() == Some(index)) else {
                self.next += 1;
                self.db_started = false;
                continue;
            };
            if !self.db_started {
                match self.format {
                    FileFormat::Rdb { .. } => {
                        rdb::write_db_start(&mut self.out, index, keys, expires)
                    }
                    FileFormat::Commands => {
                        let index = index.to_string();
                        encode_request(&[&b"SELECT"[..], index.as_bytes()], &mut self.out);
                    }
                }
                self.db_started = true;
            }
            let before = db.snapshot_remaining();
            let left = db.snapshot_step(budget);
            // A step stops early only when its database is done; a big
            // value's pieces use the budget as keys do.
            budget = if left == 0 {
                budget.saturating_sub((before - left).max(1))
            } else {
                0
            };
            db.take_snapshot_output(&mut self.out);
            if left == 0 {
                db.end_snapshot();
                self.next += 1;
                self.db_started = false;
            }
        }
        self.done
    }

    /// Keys written so far (by the saver or before a change).
    fn keys_written(&self, dbs: &[Db]) -> usize {
        let left: usize = dbs.iter().map(Db::snapshot_remaining).sum();
        self.keys_total.saturating_sub(left)
    }

    /// Abandons the save: the databases stop preserving for it.
    fn abandon(self, dbs: &mut [Db]) {
        for &(index, _, _) in &self.dbs[self.next.min(self.dbs.len())..] {
            if let Some(db) = dbs.iter_mut().find(|d| d.snapshot_origin() == Some(index)) {
                db.end_snapshot();
            }
        }
    }
}

/// Bytes a save writes between syncs with `*-incremental-fsync` (Redis's
/// `REDIS_AUTOSYNC_BYTES`): the dirty pages never pile up into one long
/// sync at the end.
const AUTOSYNC_BYTES: usize = 4 * 1024 * 1024;

/// The file a save is writing: a temporary file beside the target, with
/// the running CRC-64 of what went in when it is an RDB file. Removed on
/// drop unless committed.
struct SaveFile {
    temp: PathBuf,
    target: PathBuf,
    file: BufWriter<File>,
    /// The CRC-64 of the RDB written so far; `None`: no trailer (commands).
    crc: Option<crc::Digest<'static, u64, crc::Table<16>>>,
    /// Sync every `AUTOSYNC_BYTES`.
    incremental_fsync: bool,
    unsynced: usize,
    committed: bool,
}

impl SaveFile {
    /// `temp`'s name in the target's directory.
    fn create(
        target: &Path,
        temp: &str,
        format: FileFormat,
        incremental_fsync: bool,
    ) -> io::Result<SaveFile> {
        let dir = target.parent().unwrap_or(Path::new("."));
        let temp = dir.join(temp);
        let file = File::create(&temp)?;
        Ok(SaveFile {
            temp,
            target: target.to_path_buf(),
            file: BufWriter::with_capacity(1 << 20, file),
            crc: matches!(format, FileFormat::Rdb { .. }).then(|| rdb::CRC64.digest()),
            incremental_fsync,
            unsynced: 0,
            committed: false,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(crc) = &mut self.crc {
            crc.update(bytes);
        }
        self.file.write_all(bytes)?;
        self.unsynced += bytes.len();
        if self.incremental_fsync && self.unsynced >= AUTOSYNC_BYTES {
            self.file.flush()?;
            self.file.get_ref().sync_data()?;
            self.unsynced = 0;
        }
        Ok(())
    }

    /// Appends an RDB file's checksum (0 when `checksum` is off: not
    /// checked on load), syncs, renames over the target and syncs the
    /// directory.
    fn commit(mut self, checksum: bool) -> io::Result<()> {
        if let Some(crc) = self.crc.take() {
            let crc = if checksum { crc.finalize() } else { 0 };
            self.file.write_all(&crc.to_le_bytes())?;
        }
        self.file.flush()?;
        self.file.get_ref().sync_all()?;
        std::fs::rename(&self.temp, &self.target)?;
        self.committed = true;
        sync_dir_of(&self.target);
        Ok(())
    }
}

/// Replaces the file at `path` with `bytes` so that a crash leaves the
/// old file or the new one, never a mix: written to `temp` (beside it),
/// synced, renamed over it, the directory synced. `temp` is removed on
/// failure.
pub fn replace_file(path: &Path, temp: &Path, bytes: &[u8]) -> io::Result<()> {
    let written = (|| {
        let mut file = File::create(temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    written?;
    sync_dir_of(path);
    Ok(())
}

/// An I/O error as `strerror` words it (without Rust's "(os error N)"),
/// for error replies that carry Redis's text.
pub fn error_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Syncs the directory holding `path`, so that a rename into it survives
/// a crash (best effort: some file systems refuse).
pub fn sync_dir_of(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

impl Drop for SaveFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// An encoder of the whole dataset (and function libraries) as it is now.
fn begin_encoder(state: &mut ServerState, now_ms: i64, format: FileFormat) -> Encoder {
    Encoder::begin(&mut state.dbs, state.scripting.as_ref(), now_ms, format)
}

/// The format of `dbfilename`.
fn rdb_format(state: &ServerState) -> FileFormat {
    FileFormat::Rdb {
        options: save_options(state),
        aof_base: false,
    }
}

/// The temporary file of a save into `dbfilename`.
fn rdb_temp_name() -> String {
    format!("temp-{}.rdb", std::process::id())
}

/// SAVE: writes the whole dataset now, from the loop. Refused while a
/// background save runs (Redis's error); an AOF rewrite under way is
/// finished first (the databases hold one snapshot at a time).
pub fn save(state: &mut ServerState, now_ms: i64) -> Result<(), SaveError> {
    match state.persist.job() {
        Some(Job::Rdb) => return Err(SaveError::InProgress),
        Some(Job::AofRewrite) => complete_background(state),
        None => {}
    }
    state.persist.rdb_saves += 1;
    let dirty = state.dirty();
    let (target, format) = (rdb_path(state), rdb_format(state));
    write_now(state, now_ms, &target, &rdb_temp_name(), format).map_err(SaveError::Io)?;
    saved(state, dirty);
    Ok(())
}

/// Writes the whole dataset to `target` now, from the loop (SAVE, an
/// AOF's first base): through `temp`, synced and renamed.
pub fn write_now(
    state: &mut ServerState,
    now_ms: i64,
    target: &Path,
    temp: &str,
    format: FileFormat,
) -> io::Result<()> {
    let mut encoder = begin_encoder(state, now_ms, format);
    let written = (|| {
        let mut file = SaveFile::create(target, temp, format, incremental_fsync(state, format))?;
        loop {
            let done = encoder.step(&mut state.dbs, 1024);
            file.write(&encoder.out)?;
            encoder.out.clear();
            if done {
                return file.commit(state.config.rdbchecksum);
            }
        }
    })();
    encoder.abandon(&mut state.dbs);
    written
}

/// Whether a save in `format` syncs as it goes: `rdb-save-incremental-fsync`
/// for `dbfilename`, `aof-rewrite-incremental-fsync` for an AOF base.
fn incremental_fsync(state: &ServerState, format: FileFormat) -> bool {
    match format {
        FileFormat::Rdb {
            aof_base: false, ..
        } => state.config.rdb_save_incremental_fsync,
        _ => state.config.aof_rewrite_incremental_fsync,
    }
}

/// The data now matches the files (just loaded): no changes to save.
pub fn mark_saved_state(state: &mut ServerState) {
    state.persist.dirty_at_save = state.dirty();
}

/// After a file was written with the data as of `dirty`.
fn saved(state: &mut ServerState, dirty: u64) {
    let p = &mut state.persist;
    p.lastsave_s = crate::clock::unix_time_ms() / 1000;
    p.dirty_at_save = dirty;
    tracing::info!("DB saved on disk");
}

/// Why a save did not happen.
#[derive(Debug)]
pub enum SaveError {
    /// A background save is running.
    InProgress,
    /// An AOF rewrite is running (BGSAVE without SCHEDULE).
    RewriteInProgress,
    Io(io::Error),
}

impl std::fmt::Display for SaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaveError::InProgress => f.write_str("Background save already in progress"),
            SaveError::RewriteInProgress => f.write_str("An AOF log rewriting in progress"),
            SaveError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// What a background job writes: `dbfilename`, or an AOF's new base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    Rdb,
    AofRewrite,
}

impl Persistence {
    /// The background job under way, if any.
    pub fn job(&self) -> Option<Job> {
        self.background.as_ref().map(|b| b.job)
    }
}

/// A background job: the encoder the loop feeds a slice at a time, and
/// where its bytes go.
struct Background {
    job: Job,
    encoder: Encoder,
    started: Instant,
    /// `dirty()` at the start: the file holds the data as of then.
    dirty_at_start: u64,
    output: Output,
    /// `rdb-key-save-delay`, as nanoseconds per key (0: no delay).
    key_delay_ns: u64,
}

/// Where a background job's bytes go.
enum Output {
    /// A thread writes them to a file.
    File(FileWriter),
    /// The loop hands them to the replicas of a diskless sync
    /// (`take_replica_bytes`).
    Replicas(ReplicaBytes),
}

/// The writer thread of a save to a file.
struct FileWriter {
    /// Chunks to the writer; `None` ends the file. Dropped (disconnected)
    /// to abandon it.
    to_writer: Option<mpsc::Sender<Option<Vec<u8>>>>,
    /// Bytes sent and not yet written by the thread.
    in_flight: Arc<AtomicUsize>,
    /// The writer's outcome.
    result: mpsc::Receiver<io::Result<()>>,
}

/// A diskless sync's RDB on its way to the replicas' sockets.
struct ReplicaBytes {
    /// Encoded bytes the loop has not taken yet.
    ready: Vec<u8>,
    /// The CRC-64 of everything encoded so far (the RDB's trailer).
    crc: crc::Digest<'static, u64, crc::Table<16>>,
    checksum: bool,
    /// The trailer is in `ready`: the RDB is whole.
    complete: bool,
}

impl ReplicaBytes {
    /// Moves encoded bytes to `ready`, counting them into the checksum.
    fn take_from(&mut self, out: &mut Vec<u8>) {
        self.crc.update(out);
        self.ready.append(out);
    }
}

/// BGSAVE: starts a background save. Refused while one runs, and while
/// an AOF rewrite runs unless `schedule` (then it starts when that ends:
/// `Ok(false)`).
pub fn bgsave(state: &mut ServerState, now_ms: i64, schedule: bool) -> Result<bool, SaveError> {
    match state.persist.job() {
        Some(Job::Rdb) => return Err(SaveError::InProgress),
        Some(Job::AofRewrite) if schedule => {
            state.persist.bgsave_scheduled = true;
            return Ok(false);
        }
        Some(Job::AofRewrite) => return Err(SaveError::RewriteInProgress),
        None => {}
    }
    let (target, format) = (rdb_path(state), rdb_format(state));
    state.persist.rdb_saves += 1;
    state.persist.last_bgsave_try_s = now_ms / 1000;
    start_background(state, now_ms, Job::Rdb, &target, &rdb_temp_name(), format)
        .map_err(SaveError::Io)?;
    state.persist.bgsaves_started += 1;
    tracing::info!("Background saving started");
    Ok(true)
}

/// Starts a background job writing the dataset as it is now into
/// `target`, through `temp` (nothing else may be running).
pub fn start_background(
    state: &mut ServerState,
    now_ms: i64,
    job: Job,
    target: &Path,
    temp: &str,
    format: FileFormat,
) -> io::Result<()> {
    let file = SaveFile::create(target, temp, format, incremental_fsync(state, format))?;
    let (to_writer, chunks) = mpsc::channel::<Option<Vec<u8>>>();
    let (report, result) = mpsc::sync_channel(1);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let written = Arc::clone(&in_flight);
    let checksum = state.config.rdbchecksum;
    std::thread::Builder::new()
        .name("lapse-save".into())
        .spawn(move || {
            let _ = report.send(write_chunks(file, chunks, &written, checksum));
        })?;
    let output = Output::File(FileWriter {
        to_writer: Some(to_writer),
        in_flight,
        result,
    });
    begin_background(state, now_ms, job, format, output);
    Ok(())
}

/// Starts a diskless sync's save: the RDB of the dataset as it is now,
/// checksum included, for the loop to hand to replicas' sockets as it is
/// encoded (`take_replica_bytes`). A background save to the replicas is
/// a save like another (BGSAVE answers that one is in progress). Nothing
/// else may be running.
pub fn bgsave_to_replicas(state: &mut ServerState, now_ms: i64) {
    state.persist.rdb_saves += 1;
    state.persist.replica_output_behind = 0;
    let output = Output::Replicas(ReplicaBytes {
        ready: Vec::new(),
        crc: rdb::CRC64.digest(),
        checksum: state.config.rdbchecksum,
        complete: false,
    });
    begin_background(state, now_ms, Job::Rdb, rdb_format(state), output);
    state.persist.bgsaves_started += 1;
}

/// The diskless sync's RDB bytes encoded since the last call, and
/// whether they end it (the job is then over). `None`: no such job.
pub fn take_replica_bytes(state: &mut ServerState) -> Option<(Vec<u8>, bool)> {
    let bg = state.persist.background.as_mut()?;
    let Output::Replicas(bytes) = &mut bg.output else {
        return None;
    };
    let taken = (std::mem::take(&mut bytes.ready), bytes.complete);
    if taken.1 {
        finish_background(state, Ok(()));
    }
    Some(taken)
}

/// The encoder of a background job and its bookkeeping.
fn begin_background(
    state: &mut ServerState,
    now_ms: i64,
    job: Job,
    format: FileFormat,
    output: Output,
) {
    let dirty_at_start = state.dirty();
    let encoder = begin_encoder(state, now_ms, format);
    let delay = state.config.rdb_key_save_delay;
    let key_delay_ns = if delay >= 0 {
        delay as u64 * 1000
    } else {
        delay.unsigned_abs()
    };
    state.persist.background = Some(Background {
        job,
        encoder,
        started: Instant::now(),
        dirty_at_start,
        output,
        key_delay_ns,
    });
}

/// The writer thread: chunks into the file until `None` commits it; a
/// closed channel abandons it (the temporary file is removed).
fn write_chunks(
    mut file: SaveFile,
    chunks: mpsc::Receiver<Option<Vec<u8>>>,
    in_flight: &AtomicUsize,
    checksum: bool,
) -> io::Result<()> {
    while let Ok(chunk) = chunks.recv() {
        let Some(bytes) = chunk else {
            return file.commit(checksum);
        };
        let written = file.write(&bytes);
        in_flight.fetch_sub(bytes.len(), Ordering::Relaxed);
        written?;
    }
    Err(io::Error::other("background save abandoned"))
}

/// What the loop should do about a background save before it sleeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Nothing to do.
    Idle,
    /// More keys to encode now: don't sleep.
    Busy,
    /// Waiting (for the writer, or `rdb-key-save-delay`): wake soon.
    Waiting,
}

/// One slice of the background job (about `SLICE` of encoding), and its
/// completion when the writer reports. Called once per loop iteration.
pub fn tick(state: &mut ServerState) -> Pace {
    tick_for(state, SLICE)
}

/// Runs the background job to its end now (SAVE while an AOF rewrite runs).
fn complete_background(state: &mut ServerState) {
    while state.persist.background.is_some() {
        if tick_for(state, Duration::from_secs(3600)) == Pace::Waiting {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

fn tick_for(state: &mut ServerState, slice: Duration) -> Pace {
    let persist = &mut state.persist;
    let behind = persist.replica_output_behind;
    let Some(bg) = persist.background.as_mut() else {
        return Pace::Idle;
    };
    if let Output::File(writer) = &bg.output {
        let outcome = match writer.result.try_recv() {
            Ok(outcome) => Some(outcome),
            Err(mpsc::TryRecvError::Disconnected) => {
                Some(Err(io::Error::other("the save's writer thread died")))
            }
            Err(mpsc::TryRecvError::Empty) => None,
        };
        if let Some(outcome) = outcome {
            finish_background(state, outcome);
            return Pace::Idle;
        }
    }
    let slice_end = Instant::now() + slice;
    loop {
        if bg.hand_over(behind) {
            return Pace::Waiting;
        }
        let mut keys = KEYS_PER_STEP;
        if bg.key_delay_ns > 0 {
            let allowed = bg.started.elapsed().as_nanos() / u128::from(bg.key_delay_ns);
            let written = bg.encoder.keys_written(&state.dbs);
            keys = keys.min((allowed as usize).saturating_sub(written));
            if keys == 0 && written < bg.encoder.keys_total {
                return Pace::Waiting;
            }
        }
        bg.encoder.step(&mut state.dbs, keys.max(1));
        if Instant::now() >= slice_end {
            return Pace::Busy;
        }
    }
}

impl Background {
    /// Hands what was encoded to the output (the writer thread a chunk
    /// at a time, or the replicas' bytes), the end too when the encoder is
    /// done. True: encode no more now — all of it is out, or the output
    /// is `MAX_IN_FLIGHT_BYTES` behind (`behind`: the slowest replica's
    /// unsent bytes, for a diskless sync).
    fn hand_over(&mut self, behind: usize) -> bool {
        let encoder = &mut self.encoder;
        match &mut self.output {
            Output::File(writer) => {
                // Everything sent: the writer is syncing.
                let Some(to_writer) = &writer.to_writer else {
                    return true;
                };
                if encoder.out.len() >= CHUNK_BYTES || encoder.done {
                    let chunk = std::mem::take(&mut encoder.out);
                    writer.in_flight.fetch_add(chunk.len(), Ordering::Relaxed);
                    // A closed channel means the writer failed: its report says why.
                    let _ = to_writer.send(Some(chunk));
                    if encoder.done {
                        let _ = to_writer.send(None);
                        writer.to_writer = None;
                        return true;
                    }
                }
                writer.in_flight.load(Ordering::Relaxed) >= MAX_IN_FLIGHT_BYTES
            }
            Output::Replicas(bytes) => {
                if bytes.complete {
                    return true;
                }
                if encoder.out.len() >= CHUNK_BYTES || encoder.done {
                    bytes.take_from(&mut encoder.out);
                }
                if encoder.done {
                    let crc = if bytes.checksum {
                        bytes.crc.clone().finalize()
                    } else {
                        0
                    };
                    bytes.ready.extend_from_slice(&crc.to_le_bytes());
                    bytes.complete = true;
                    return true;
                }
                bytes.ready.len() + behind >= MAX_IN_FLIGHT_BYTES
            }
        }
    }
}

/// Records a background job's outcome.
fn finish_background(state: &mut ServerState, outcome: io::Result<()>) {
    let Some(bg) = state.persist.background.take() else {
        return;
    };
    bg.encoder.abandon(&mut state.dbs);
    let elapsed_s = bg.started.elapsed().as_secs() as i64;
    match bg.job {
        Job::AofRewrite => crate::aof::rewrite_done(state, outcome, elapsed_s),
        // A diskless sync's save: no file, so no saved state.
        Job::Rdb if matches!(bg.output, Output::Replicas(_)) => {
            state.persist.bgsaves_ended = state.persist.bgsaves_started;
            state.persist.last_bgsave_wrote_file = false;
            tracing::info!("Background RDB transfer terminated with success");
        }
        Job::Rdb => {
            state.persist.last_bgsave_time_s = elapsed_s;
            state.persist.last_bgsave_ok = outcome.is_ok();
            state.persist.bgsaves_ended = state.persist.bgsaves_started;
            state.persist.last_bgsave_wrote_file = outcome.is_ok();
            match outcome {
                Ok(()) => {
                    saved(state, bg.dirty_at_start);
                    tracing::info!("Background saving terminated with success");
                }
                Err(e) => tracing::warn!("Background saving error: {e}"),
            }
        }
    }
}

/// Abandons the background job `job`, if it is the one in progress
/// (SHUTDOWN, FLUSHALL a save; turning the AOF off a rewrite): its
/// temporary file is removed; the last file stays as it was.
pub fn abandon(state: &mut ServerState, job: Job) {
    if state.persist.job() != Some(job) {
        return;
    }
    if let Some(bg) = state.persist.background.take() {
        bg.encoder.abandon(&mut state.dbs);
        if job == Job::Rdb {
            state.persist.bgsaves_ended = state.persist.bgsaves_started;
            state.persist.last_bgsave_wrote_file = false;
        }
        tracing::warn!("Background {job:?} job abandoned");
        // Dropping the sender ends the writer, which removes the file.
    }
}

/// The cron's part: starts a background save when a save point is
/// reached (`save <seconds> <changes>`), as Redis's `serverCron` does;
/// after a failure, not again before `BGSAVE_RETRY_DELAY_S`. A save
/// scheduled behind an AOF rewrite starts once that is done.
pub fn cron(state: &mut ServerState, now_ms: i64) {
    // (A background save's slices and completion are the loop's `tick`.)
    if state.persist.background.is_some() {
        return;
    }
    let now_s = now_ms / 1000;
    let p = &state.persist;
    let changes = changes_since_save(state);
    let retry_ok = p.last_bgsave_ok || now_s - p.last_bgsave_try_s > BGSAVE_RETRY_DELAY_S;
    let due = state
        .config
        .save_points
        .iter()
        .find(|sp| changes >= sp.changes && now_s - p.lastsave_s > sp.seconds as i64);
    let scheduled = std::mem::take(&mut state.persist.bgsave_scheduled);
    if let (Some(sp), true) = (due, retry_ok) {
        tracing::info!(
            "{} changes in {} seconds. Saving...",
            sp.changes,
            sp.seconds
        );
    } else if !scheduled {
        return;
    }
    if let Err(e) = bgsave(state, now_ms, false) {
        state.persist.last_bgsave_ok = false;
        state.persist.last_bgsave_try_s = now_s;
        tracing::warn!("Can't save in background: {e}");
    }
}

/// Whether writes are refused because the last background save failed
/// (`stop-writes-on-bgsave-error`, with save points set): Redis's MISCONF.
pub fn writes_refused(state: &ServerState) -> bool {
    state.config.stop_writes_on_bgsave_error
        && !state.config.save_points.is_empty()
        && !state.persist.last_bgsave_ok
}

/// The save before the server stops (SHUTDOWN, SIGTERM): `explicit` is
/// SHUTDOWN's SAVE (`Some(true)`) or NOSAVE (`Some(false)`); without one,
/// the server saves if save points are set. A background save in
/// progress is abandoned first, as Redis kills its child; the AOF is
/// written and synced (`aof::before_shutdown`, which `force` overrides).
pub fn save_for_shutdown(
    state: &mut ServerState,
    explicit: Option<bool>,
    force: bool,
    now_ms: i64,
) -> Result<(), SaveError> {
    crate::aof::before_shutdown(state, force).map_err(SaveError::Io)?;
    abandon(state, Job::Rdb);
    let wanted = explicit.unwrap_or(!state.config.save_points.is_empty());
    if !wanted {
        return Ok(());
    }
    tracing::info!("Saving the final RDB snapshot before exiting.");
    save(state, now_ms)
}

/// FLUSHALL's part (Redis's `flushAllDataAndResetRDB`; a background save
/// of the old data was abandoned first): with save points set, the now
/// empty dataset is saved at once.
pub fn after_flushall(state: &mut ServerState, now_ms: i64) {
    if !state.config.save_points.is_empty() {
        if let Err(e) = save(state, now_ms) {
            tracing::warn!("Saving after FLUSHALL failed: {e}");
        }
    }
}

/// A whole RDB file of `dbs` in memory (no function libraries).
pub fn encode_to_vec(dbs: &mut [Db], now_ms: i64, options: SaveOptions) -> Vec<u8> {
    let format = FileFormat::Rdb {
        options,
        aof_base: false,
    };
    let mut encoder = Encoder::begin(dbs, None, now_ms, format);
    while !encoder.step(dbs, usize::MAX) {}
    let mut bytes = std::mem::take(&mut encoder.out);
    let crc = if options.checksum {
        rdb::crc64(&bytes)
    } else {
        0
    };
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

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
    let consumed = rdb_load::load_into(data, limits, &mut sink).map_err(invalid)?;
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

impl rdb_load::LoadSink for StartupSink<'_> {
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
}

#[cfg(test)]
mod tests {
    use crate::harness::Harness;

    /// A diskless sync's bytes are the RDB of the moment it started, its
    /// checksum included, whatever is written while they go out.
    #[test]
    fn replica_bytes_are_the_rdb_of_the_start() {
        let mut h = Harness::new();
        for i in 0..5000 {
            h.run(&format!("RPUSH list:{} {}", i % 7, "x".repeat(i % 90)));
            h.run(&format!("SET k{i} v{i}"));
        }
        let now_ms = h.now_ms;
        let expected = h.digest();
        // 2 µs a key: the save takes several slices.
        h.run("CONFIG SET rdb-key-save-delay -2000");
        super::bgsave_to_replicas(&mut h.server, now_ms);
        assert_eq!(
            h.run("BGSAVE"),
            "-ERR Background save already in progress\r\n"
        );
        let mut got = Vec::new();
        let mut writes = 0;
        loop {
            super::tick(&mut h.server);
            let (bytes, complete) = super::take_replica_bytes(&mut h.server).unwrap();
            got.extend_from_slice(&bytes);
            if complete {
                break;
            }
            // The loop runs commands between slices.
            h.run(&format!("SET k{writes} changed"));
            h.run(&format!("DEL list:{}", writes % 7));
            writes += 1;
        }
        assert!(writes > 0, "the save ended in one slice: nothing tested");
        assert!(super::take_replica_bytes(&mut h.server).is_none());
        assert!(crate::rdb::crc64(&got[..got.len() - 8]).to_le_bytes() == got[got.len() - 8..]);
        let mut copy = Harness::new();
        let path = std::path::Path::new("diskless");
        let used = super::load_rdb(&mut copy.server, &got, path, now_ms, super::Load::KeepAll);
        assert_eq!(used.unwrap(), got.len());
        assert_eq!(copy.digest(), expected);
    }
}
