//! What the server state keeps for saves (`Persistence`) and the pieces
//! of a save: the encoder that writes the whole dataset from the
//! databases' point-in-time snapshots a few keys at a time (`Encoder`),
//! the file it goes to (`SaveFile`: a temporary file, synced, renamed over
//! the target), and a background job's writer thread or diskless bytes.
//! When saves run is `save`'s.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use super::rdb::SaveOptions;
use crate::db::snapshot::EntryFormat;
use crate::db::Db;
use crate::protocol::encode_request;

/// Encoded bytes handed to the writer thread at a time.
pub(super) const CHUNK_BYTES: usize = 256 * 1024;

/// Encoded bytes the writer may be behind before the loop stops encoding
/// and waits for the disk (memory a save holds beyond the dataset).
pub(super) const MAX_IN_FLIGHT_BYTES: usize = 16 * 1024 * 1024;

/// What persistence keeps between saves. `S` is the server state, whose
/// function a background job calls when it ends (see `JobDone`).
pub struct Persistence<S> {
    /// Unix seconds of the last successful save (LASTSAVE); the start
    /// time until there is one, as in Redis.
    pub lastsave_s: i64,
    /// `ServerState::dirty()` as of the data in the last file written.
    pub(super) dirty_at_save: u64,
    /// Whether the last background save succeeded (`rdb_last_bgsave_status`).
    pub last_bgsave_ok: bool,
    /// When the last background save started, unix seconds (for the retry
    /// delay after a failure).
    pub(super) last_bgsave_try_s: i64,
    /// How long the last background save took, seconds (-1: none yet).
    pub last_bgsave_time_s: i64,
    /// Saves started, foreground and background (`rdb_saves`).
    pub rdb_saves: u64,
    /// A background job under way (a save or an AOF rewrite).
    pub(super) background: Option<Background<S>>,
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

impl<S> Persistence<S> {
    pub fn new(now_ms: i64) -> Persistence<S> {
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
pub(super) struct Encoder {
    pub(super) format: FileFormat,
    /// The databases to write, in order, with their sizes at the start
    /// (for RESIZEDB).
    pub(super) dbs: Vec<(usize, usize, usize)>,
    /// Position in `dbs` of the database being written.
    pub(super) next: usize,
    /// Whether the current database's SELECTDB is out.
    pub(super) db_started: bool,
    /// Bytes encoded and not yet taken.
    pub(super) out: Vec<u8>,
    /// EOF is in `out` (or gone): nothing more to encode.
    pub(super) done: bool,
    /// Keys in all databases at the start.
    pub(super) keys_total: usize,
}

impl Encoder {
    /// Starts a save of everything as it is now: the header and the
    /// function libraries are encoded at once, and every database starts
    /// its point-in-time snapshot.
    pub(super) fn begin(
        all: &mut [Db],
        scripting: Option<&crate::scripting::Scripting>,
        now_ms: i64,
        format: FileFormat,
    ) -> Encoder {
        let mut out = Vec::new();
        let entries = match format {
            FileFormat::Rdb { options, aof_base } => {
                super::rdb::write_header(
                    &mut out,
                    now_ms,
                    crate::memory::used_memory() as u64,
                    aof_base,
                );
                if let Some(scripting) = scripting {
                    scripting.write_functions(&mut out);
                }
                Arc::new(super::rdb::RdbEntries(options)) as Arc<dyn EntryFormat>
            }
            FileFormat::Commands => {
                if let Some(scripting) = scripting {
                    for code in scripting.library_codes() {
                        encode_request(&[&b"FUNCTION"[..], b"LOAD", code], &mut out);
                    }
                }
                Arc::new(super::aof_commands::CommandEntries)
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
    pub(super) fn step(&mut self, dbs: &mut [Db], max_keys: usize) -> bool {
        let mut budget = max_keys;
        while !self.done && budget > 0 {
            let Some(&(index, keys, expires)) = self.dbs.get(self.next) else {
                if let FileFormat::Rdb { .. } = self.format {
                    self.out.push(super::rdb::OPCODE_EOF);
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
                        super::rdb::write_db_start(&mut self.out, index, keys, expires)
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
    pub(super) fn keys_written(&self, dbs: &[Db]) -> usize {
        let left: usize = dbs.iter().map(Db::snapshot_remaining).sum();
        self.keys_total.saturating_sub(left)
    }

    /// Abandons the save: the databases stop preserving for it.
    pub(super) fn abandon(self, dbs: &mut [Db]) {
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
pub(super) const AUTOSYNC_BYTES: usize = 4 * 1024 * 1024;

/// The file a save is writing: a temporary file beside the target, with
/// the running CRC-64 of what went in when it is an RDB file. Removed on
/// drop unless committed.
pub(super) struct SaveFile {
    pub(super) temp: PathBuf,
    pub(super) target: PathBuf,
    pub(super) file: BufWriter<File>,
    /// The CRC-64 of the RDB written so far; `None`: no trailer (commands).
    pub(super) crc: Option<crc::Digest<'static, u64, crc::Table<16>>>,
    /// Sync every `AUTOSYNC_BYTES`.
    pub(super) incremental_fsync: bool,
    pub(super) unsynced: usize,
    pub(super) committed: bool,
}

impl SaveFile {
    /// `temp`'s name in the target's directory.
    pub(super) fn create(
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
            crc: matches!(format, FileFormat::Rdb { .. }).then(|| super::rdb::CRC64.digest()),
            incremental_fsync,
            unsynced: 0,
            committed: false,
        })
    }

    pub(super) fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
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
    pub(super) fn commit(mut self, checksum: bool) -> io::Result<()> {
        if let Some(crc) = self.crc.take() {
            let crc = if checksum { crc.finalize() } else { 0 };
            self.file.write_all(&crc.to_le_bytes())?;
        }
        self.file.flush()?;
        self.file.get_ref().sync_all()?;
        std::fs::rename(&self.temp, &self.target)?;
        self.committed = true;
        crate::files::sync_dir_of(&self.target);
        Ok(())
    }
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

impl Drop for SaveFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
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

impl<S> Persistence<S> {
    /// The background job under way, if any.
    pub fn job(&self) -> Option<Job> {
        self.background.as_ref().map(|b| b.job)
    }
}

/// A background job: the encoder the loop feeds a slice at a time, and
/// where its bytes go.
pub(super) struct Background<S> {
    pub(super) job: Job,
    /// Called with the server state when the job ends (its owner's
    /// bookkeeping: the save's, or the AOF rewrite's).
    pub(super) done: JobDone<S>,
    pub(super) encoder: Encoder,
    pub(super) started: Instant,
    /// `dirty()` at the start: the file holds the data as of then.
    pub(super) dirty_at_start: u64,
    pub(super) output: Output,
    /// `rdb-key-save-delay`, as nanoseconds per key (0: no delay).
    pub(super) key_delay_ns: u64,
}

/// What a background job's owner is told when it ends.
pub type JobDone<S> = fn(&mut S, JobEnd);

/// How a background job ended.
pub struct JobEnd {
    pub outcome: io::Result<()>,
    /// How long it ran, seconds.
    pub elapsed_s: i64,
    /// `dirty()` when it started: the file holds the data as of then.
    pub dirty_at_start: u64,
    /// It was a diskless sync's (no file).
    pub to_replicas: bool,
}

/// Where a background job's bytes go.
pub(super) enum Output {
    /// A thread writes them to a file.
    File(FileWriter),
    /// The loop hands them to the replicas of a diskless sync
    /// (`take_replica_bytes`).
    Replicas(ReplicaBytes),
}

/// The writer thread of a save to a file.
pub(super) struct FileWriter {
    /// Chunks to the writer; `None` ends the file. Dropped (disconnected)
    /// to abandon it.
    pub(super) to_writer: Option<mpsc::Sender<Option<Vec<u8>>>>,
    /// Bytes sent and not yet written by the thread.
    pub(super) in_flight: Arc<AtomicUsize>,
    /// The writer's outcome.
    pub(super) result: mpsc::Receiver<io::Result<()>>,
}

/// A diskless sync's RDB on its way to the replicas' sockets.
pub(super) struct ReplicaBytes {
    /// Encoded bytes the loop has not taken yet.
    pub(super) ready: Vec<u8>,
    /// The CRC-64 of everything encoded so far (the RDB's trailer).
    pub(super) crc: crc::Digest<'static, u64, crc::Table<16>>,
    pub(super) checksum: bool,
    /// The trailer is in `ready`: the RDB is whole.
    pub(super) complete: bool,
}

impl ReplicaBytes {
    /// Moves encoded bytes to `ready`, counting them into the checksum.
    pub(super) fn take_from(&mut self, out: &mut Vec<u8>) {
        self.crc.update(out);
        self.ready.append(out);
    }
}

/// The writer thread: chunks into the file until `None` commits it; a
/// closed channel abandons it (the temporary file is removed).
pub(super) fn write_chunks(
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

impl<S> Background<S> {
    /// Hands what was encoded to the output (the writer thread a chunk
    /// at a time, or the replicas' bytes), the end too when the encoder is
    /// done. True: encode no more now — all of it is out, or the output
    /// is `MAX_IN_FLIGHT_BYTES` behind (`behind`: the slowest replica's
    /// unsent bytes, for a diskless sync).
    pub(super) fn hand_over(&mut self, behind: usize) -> bool {
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
        super::rdb::crc64(&bytes)
    } else {
        0
    };
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}
