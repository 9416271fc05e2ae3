//! Saves: the dataset in an RDB file that redis-server and
//! `redis-check-rdb` read (the pieces of the format are `rdb`'s, the
//! encoder and files `jobs`'). SAVE, BGSAVE, the save points, the
//! background job's slices, the diskless sync's bytes, the save at
//! shutdown.
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

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::jobs::*;
use super::rdb::SaveOptions;
use crate::state::ServerState;

/// How long one `tick` encodes keys: the longest a background save holds
/// the loop at a time.
const SLICE: Duration = Duration::from_millis(1);

/// Keys encoded between clock checks within a slice.
const KEYS_PER_STEP: usize = 64;

/// After a failed background save, the save points wait this long before
/// trying again (Redis's `CONFIG_BGSAVE_RETRY_DELAY`), seconds.
const BGSAVE_RETRY_DELAY_S: i64 = 5;

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
    let temp = rdb_temp_name();
    start_background(state, now_ms, (Job::Rdb, rdb_done), &target, &temp, format)
        .map_err(SaveError::Io)?;
    state.persist.bgsaves_started += 1;
    tracing::info!("Background saving started");
    Ok(true)
}

/// Starts a background job writing the dataset as it is now into
/// `target`, through `temp` (nothing else may be running); `done` is
/// called when it ends.
pub fn start_background(
    state: &mut ServerState,
    now_ms: i64,
    job: (Job, JobDone<ServerState>),
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
        crc: super::rdb::CRC64.digest(),
        checksum: state.config.rdbchecksum,
        complete: false,
    });
    let format = rdb_format(state);
    begin_background(state, now_ms, (Job::Rdb, rdb_done), format, output);
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
    (job, done): (Job, JobDone<ServerState>),
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
        done,
        encoder,
        started: Instant::now(),
        dirty_at_start,
        output,
        key_delay_ns,
    });
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

/// Ends the background job: its owner is told how it went.
fn finish_background(state: &mut ServerState, outcome: io::Result<()>) {
    let Some(bg) = state.persist.background.take() else {
        return;
    };
    bg.encoder.abandon(&mut state.dbs);
    let end = JobEnd {
        outcome,
        elapsed_s: bg.started.elapsed().as_secs() as i64,
        dirty_at_start: bg.dirty_at_start,
        to_replicas: matches!(bg.output, Output::Replicas(_)),
    };
    (bg.done)(state, end);
}

/// A background RDB save's end: LASTSAVE and the save's status (a
/// diskless sync's save wrote no file, so it changes neither).
fn rdb_done(state: &mut ServerState, end: JobEnd) {
    let p = &mut state.persist;
    p.bgsaves_ended = p.bgsaves_started;
    if end.to_replicas {
        p.last_bgsave_wrote_file = false;
        tracing::info!("Background RDB transfer terminated with success");
        return;
    }
    p.last_bgsave_time_s = end.elapsed_s;
    p.last_bgsave_ok = end.outcome.is_ok();
    p.last_bgsave_wrote_file = end.outcome.is_ok();
    match end.outcome {
        Ok(()) => {
            saved(state, end.dirty_at_start);
            tracing::info!("Background saving terminated with success");
        }
        Err(e) => tracing::warn!("Background saving error: {e}"),
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
        assert!(
            crate::persistence::rdb::crc64(&got[..got.len() - 8]).to_le_bytes()
                == got[got.len() - 8..]
        );
        let mut copy = Harness::new();
        let path = std::path::Path::new("diskless");
        let used = crate::persistence::load::load_rdb(
            &mut copy.server,
            &got,
            path,
            now_ms,
            crate::persistence::load::Load::KeepAll,
        );
        assert_eq!(used.unwrap(), got.len());
        assert_eq!(copy.digest(), expected);
    }
}
