//! The append-only file's operations over the server (Redis's `aof.c`):
//! writing the buffer out and syncing (`flush`), rewriting, turning the
//! AOF on and off, the cron's automatic rewrite, the shutdown's last
//! write. The files themselves are `aof_files`'.
//!
//! **Rewriting** (BGREWRITEAOF, the automatic rewrite, turning the AOF on)
//! opens a new increment file for what comes next, then writes a new base
//! of the data as it is at that moment with the background job of
//! `save` (the fork-less point-in-time snapshot). When the base is
//! complete the manifest names it and the new increment; the old files
//! are deleted.

use std::io;
use std::path::PathBuf;
use std::rc::Rc;

use super::aof_files::{
    dir_path, file_len, open_for_append, temp_incr_path, write_fully, write_manifest, AofState,
    Syncer,
};
use super::jobs::{FileFormat, Job, JobEnd};
use crate::config::FsyncPolicy;
use crate::state::ServerState;

/// With `everysec`, a write waits at most this long for a sync still
/// running before it goes anyway (Redis's two seconds).
const MAX_POSTPONE_S: i64 = 2;

/// After this many rewrites failed in a row, automatic rewrites back off
/// (Redis's `AOF_REWRITE_LIMITE_THRESHOLD`), up to an hour apart.
const REWRITE_FAILURES_BEFORE_BACKOFF: u64 = 3;

const REWRITE_BACKOFF_MAX_MINUTES: i64 = 60;

/// The format of a new base file.
pub(super) fn base_format(state: &ServerState) -> FileFormat {
    if state.config.aof_use_rdb_preamble {
        FileFormat::Rdb {
            options: super::save::save_options(state),
            aof_base: true,
        }
    } else {
        FileFormat::Commands
    }
}

/// Writes the effects encoded so far to the increment file and syncs as
/// `appendfsync` says (Redis's `flushAppendOnlyFile`). Called before
/// replies leave, from the cron, and with `force` where the buffer must
/// go now (a rewrite starting, shutdown).
pub fn flush(state: &mut ServerState, force: bool) {
    let policy = state.config.appendfsync;
    let rewriting = state.persist.job().is_some();
    let no_sync_now = state.config.no_appendfsync_on_rewrite && rewriting;
    let threshold_ms = state.config.latency_monitor_threshold;
    let aof = &mut state.aof;
    let Some(file) = aof.file.clone() else {
        // Nothing to write to (off, or waiting for a rewrite to start).
        aof.pending.borrow_mut().buf.clear();
        return;
    };
    let now_s = crate::clock::unix_time_ms() / 1000;
    let sync_in_progress = policy == FsyncPolicy::EverySec && aof.sync_in_progress();
    let pending = Rc::clone(&aof.pending);
    let mut pending = pending.borrow_mut();
    if pending.buf.is_empty() {
        let unsynced = aof.incr_synced != aof.incr_size;
        let due = match policy {
            FsyncPolicy::EverySec => unsynced && now_s > aof.last_fsync_s && !sync_in_progress,
            FsyncPolicy::Always => unsynced,
            FsyncPolicy::No => false,
        };
        if !due {
            return;
        }
    } else {
        if sync_in_progress && !force {
            // On Linux a write waits for a sync of the same file anyway:
            // postpone it, up to two seconds.
            match aof.postponed_since_s {
                None => {
                    aof.postponed_since_s = Some(now_s);
                    return;
                }
                Some(since) if now_s - since < MAX_POSTPONE_S => return,
                Some(_) => {
                    aof.delayed_fsync += 1;
                    tracing::info!("Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF buffer without waiting for fsync to complete, this may slow down Redis.");
                }
            }
        }
        aof.postponed_since_s = None;
        let started = std::time::Instant::now();
        let (written, error) = write_fully(&file, &pending.buf);
        // Redis's latency events for AOF writes: by what ran beside
        // them, and all of them.
        let ms = started.elapsed().as_millis() as u64;
        let kind = if sync_in_progress {
            "aof-write-pending-fsync"
        } else if rewriting {
            "aof-write-active-child"
        } else {
            "aof-write-alone"
        };
        for event in [kind, "aof-write"] {
            state.latency.add_if_needed(threshold_ms, event, ms, now_s);
        }
        if let Some(e) = error {
            // Take a partial write back out, so the file ends on a
            // whole command.
            let undone = written > 0 && file.set_len(aof.incr_size).is_ok();
            let kept = if undone { 0 } else { written };
            if policy == FsyncPolicy::Always {
                // Replies of written and read data are already queued and
                // cannot be taken back: as Redis, stop rather than lie.
                tracing::error!("Can't recover from AOF write error when the AOF fsync policy is 'always': {e}. Exiting...");
                std::process::exit(1);
            }
            if aof.write_error.is_none() {
                tracing::warn!("Error writing to the AOF file: {e}");
            }
            aof.write_error = Some(e);
            pending.buf.drain(..kept);
            aof.incr_size += kept as u64;
            aof.current_size += kept as u64;
            return;
        }
        if aof.write_error.take().is_some() {
            tracing::warn!("AOF write error looks solved, Redis can write again.");
        }
        aof.incr_size += written as u64;
        aof.current_size += written as u64;
        pending.buf.clear();
        if pending.buf.capacity() > 1 << 20 {
            pending.buf = Vec::new();
        }
    }
    if no_sync_now {
        return;
    }
    match policy {
        FsyncPolicy::Always => {
            let started = std::time::Instant::now();
            let synced = file.sync_data();
            let ms = started.elapsed().as_millis() as u64;
            state
                .latency
                .add_if_needed(threshold_ms, "aof-fsync-always", ms, now_s);
            if let Err(e) = synced {
                tracing::error!("Can't persist AOF for fsync error when the AOF fsync policy is 'always': {}. Exiting...", super::jobs::error_text(&e));
                std::process::exit(1);
            }
            aof.incr_synced = aof.incr_size;
            aof.last_fsync_s = now_s;
        }
        FsyncPolicy::EverySec if now_s > aof.last_fsync_s => {
            if !sync_in_progress {
                if let Some(syncer) = &aof.syncer {
                    syncer.submit(file);
                }
                aof.incr_synced = aof.incr_size;
            }
            aof.last_fsync_s = now_s;
        }
        _ => {}
    }
}

/// Why a rewrite did not start.
#[derive(Debug)]
pub enum RewriteError {
    /// Another background job runs.
    Busy,
    Io(io::Error),
}

/// Starts a rewrite now (Redis's `rewriteAppendOnlyFileBackground`): the
/// buffer is written out, a new increment file opened for what follows
/// (a temporary one while the AOF waits for its first base), and the new
/// base written in the background from a snapshot of this moment.
pub fn start_rewrite(state: &mut ServerState, now_ms: i64) -> Result<(), RewriteError> {
    if state.persist.job().is_some() {
        return Err(RewriteError::Busy);
    }
    let dir = dir_path(&state.config);
    let failed = |state: &mut ServerState, e: io::Error| {
        tracing::warn!("Can't rewrite append only file in background: {e}");
        state.aof.last_rewrite_ok = false;
        RewriteError::Io(e)
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return Err(failed(state, e));
    }
    flush(state, true);
    if state.aof.buffer_len() > 0 {
        // The increment cannot be written: what it misses would be in no
        // file if this rewrite failed. Wait for the disk.
        let e = io::Error::other("the AOF buffer could not be written");
        return Err(failed(state, e));
    }
    let stem = state.config.appendfilename.clone();
    match state.aof.state {
        AofState::On => {
            let mut manifest = state.aof.manifest.clone();
            let name = manifest.add_incr(&stem);
            let opened = open_for_append(&dir.join(&name), true)
                .and_then(|file| write_manifest(&state.config, &manifest).map(|()| file));
            match opened {
                Ok(file) => {
                    tracing::info!("Creating AOF incr file {name} on background rewrite");
                    state.aof.manifest = manifest;
                    state.aof.switch_file(file);
                }
                Err(e) => return Err(failed(state, e)),
            }
        }
        AofState::WaitRewrite => match open_for_append(&temp_incr_path(&state.config), true) {
            Ok(file) => {
                state.aof.switch_file(file);
                state.aof.attach(&mut state.propagate);
                state.refresh_event_recording();
            }
            Err(e) => return Err(failed(state, e)),
        },
        AofState::Off => {}
    }
    let base = state
        .aof
        .manifest
        .next_base_name(&stem, state.config.aof_use_rdb_preamble);
    let temp = format!("temp-rewriteaof-bg-{}.aof", std::process::id());
    let format = base_format(state);
    if let Err(e) = super::save::start_background(
        state,
        now_ms,
        (Job::AofRewrite, rewrite_done),
        &dir.join(&base),
        &temp,
        format,
    ) {
        return Err(failed(state, e));
    }
    let aof = &mut state.aof;
    aof.rewrites += 1;
    aof.rewrite_scheduled = false;
    aof.rewrite_base = Some(base);
    tracing::info!("Background append only file rewriting started");
    Ok(())
}

/// A rewrite's end (its background job calls this when it ends):
/// on success the manifest names the new base (and, if the AOF was
/// waiting for it, the increment written meanwhile), and the files it
/// replaces are deleted (Redis's `backgroundRewriteDoneHandler`).
fn rewrite_done(state: &mut ServerState, end: JobEnd) {
    let (outcome, elapsed_s) = (end.outcome, end.elapsed_s);
    let aof = &mut state.aof;
    aof.last_rewrite_time_s = elapsed_s;
    let base = aof.rewrite_base.take();
    let installed = match (outcome, base) {
        (Ok(()), Some(base)) => install_rewrite(state, base),
        (Ok(()), None) => Err(io::Error::other("no base file name")),
        (Err(e), _) => Err(e),
    };
    let aof = &mut state.aof;
    match installed {
        Ok(()) => {
            aof.last_rewrite_ok = true;
            aof.consecutive_failures = 0;
            aof.backoff_minutes = 0;
            if aof.state == AofState::WaitRewrite {
                aof.state = AofState::On;
            }
            tracing::info!("Background AOF rewrite finished successfully");
        }
        Err(e) => {
            tracing::warn!("Background AOF rewrite terminated with error: {e}");
            aof.last_rewrite_ok = false;
            aof.consecutive_failures += 1;
            if aof.state == AofState::WaitRewrite {
                // What went to the temporary increment is in no base:
                // drop it and try again.
                aof.file = None;
                aof.detach(&mut state.propagate);
                let _ = std::fs::remove_file(temp_incr_path(&state.config));
                state.aof.rewrite_scheduled = true;
                state.refresh_event_recording();
            }
        }
    }
}

/// Names the new base (already renamed into place by the writer) in the
/// manifest, with the increments it replaces as history, then deletes
/// those.
fn install_rewrite(state: &mut ServerState, base: String) -> io::Result<()> {
    let dir = dir_path(&state.config);
    let base_path = dir.join(&base);
    let mut manifest = state.aof.manifest.clone();
    manifest.install_base(base);
    let waiting = state.aof.state == AofState::WaitRewrite;
    let mut new_incr = None;
    if waiting {
        let name = manifest.add_incr(&state.config.appendfilename);
        let path = dir.join(&name);
        if let Err(e) = std::fs::rename(temp_incr_path(&state.config), &path) {
            let _ = std::fs::remove_file(&base_path);
            return Err(e);
        }
        new_incr = Some(path);
    }
    manifest.retire_incrs(state.aof.state != AofState::Off);
    if let Err(e) = write_manifest(&state.config, &manifest) {
        let _ = std::fs::remove_file(&base_path);
        if let Some(path) = new_incr {
            let _ = std::fs::remove_file(path);
        }
        return Err(e);
    }
    let aof = &mut state.aof;
    aof.base_size = file_len(&base_path);
    if aof.state != AofState::Off {
        aof.current_size = aof.base_size + aof.incr_size;
        aof.rewrite_base_size = aof.current_size;
    }
    aof.manifest = manifest;
    delete_history(state);
    Ok(())
}

/// Deletes the files the manifest keeps as history (on a thread: a big
/// file's unlink can take a while), and writes the manifest without them.
fn delete_history(state: &mut ServerState) {
    let history = std::mem::take(&mut state.aof.manifest.history);
    if history.is_empty() {
        return;
    }
    let dir = dir_path(&state.config);
    let paths: Vec<PathBuf> = history.iter().map(|h| dir.join(&h.name)).collect();
    for h in &history {
        tracing::info!("Removing the history file {} in the background", h.name);
    }
    let removed = std::thread::Builder::new()
        .name("lapse-unlink".into())
        .spawn(move || {
            for path in paths {
                let _ = std::fs::remove_file(path);
            }
        });
    if removed.is_err() {
        tracing::warn!("Could not start a thread to remove the AOF history files");
    }
    let _ = write_manifest(&state.config, &state.aof.manifest);
}

/// BGREWRITEAOF: a rewrite now, or as soon as the running background
/// job or transaction allows.
pub enum Requested {
    Started,
    Scheduled,
}

pub fn request_rewrite(state: &mut ServerState, now_ms: i64) -> Result<Requested, RewriteError> {
    if state.persist.job().is_some() || state.propagate.in_transaction() {
        state.aof.rewrite_scheduled = true;
        // Asked for by hand: no back-off.
        state.aof.consecutive_failures = 0;
        return Ok(Requested::Scheduled);
    }
    start_rewrite(state, now_ms).map(|()| Requested::Started)
}

/// CONFIG SET appendonly: turns the AOF on (the first base is written in
/// the background; effects go to a temporary increment meanwhile) or off.
pub fn set_enabled(state: &mut ServerState, on: bool, now_ms: i64) -> Result<(), RewriteError> {
    match (on, state.aof.state) {
        (true, AofState::Off) => {
            if state.aof.syncer.is_none() {
                state.aof.syncer = Some(Syncer::start().map_err(RewriteError::Io)?);
            }
            state.aof.state = AofState::WaitRewrite;
            state.aof.write_error = None;
            state.aof.last_fsync_s = now_ms / 1000;
            // A rewrite of the AOF that was off does not collect effects:
            // start over.
            super::save::abandon(state, Job::AofRewrite);
            state.aof.rewrite_base = None;
            match request_rewrite(state, now_ms) {
                Ok(_) => Ok(()),
                Err(e) => {
                    state.aof.state = AofState::Off;
                    Err(e)
                }
            }
        }
        (false, AofState::On | AofState::WaitRewrite) => {
            stop(state);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Turns the AOF off (Redis's `stopAppendOnly`): what is buffered is
/// written and synced, a rewrite under way is abandoned.
fn stop(state: &mut ServerState) {
    flush(state, true);
    let aof = &mut state.aof;
    if let Some(file) = aof.file.take() {
        if let Err(e) = file.sync_data() {
            tracing::warn!("Fail to fsync the AOF file: {e}");
        }
    }
    let waiting = aof.state == AofState::WaitRewrite;
    aof.state = AofState::Off;
    aof.rewrite_scheduled = false;
    aof.write_error = None;
    aof.incr_size = 0;
    aof.incr_synced = 0;
    aof.detach(&mut state.propagate);
    super::save::abandon(state, Job::AofRewrite);
    state.aof.rewrite_base = None;
    if waiting {
        let _ = std::fs::remove_file(temp_incr_path(&state.config));
    }
    state.refresh_event_recording();
}

/// Before the server stops: a rewrite under way is abandoned (refused
/// while it writes the first base, unless `force`: the data would be in
/// no file), then the buffer is written and synced.
pub fn before_shutdown(state: &mut ServerState, force: bool) -> io::Result<()> {
    if state.persist.job() == Some(Job::AofRewrite) {
        if state.aof.state == AofState::WaitRewrite && !force {
            return Err(io::Error::other("Writing initial AOF, can't exit."));
        }
        tracing::warn!("There is a rewrite of the AOF under way. Abandoning it!");
        super::save::abandon(state, Job::AofRewrite);
        state.aof.rewrite_base = None;
    }
    if state.aof.state != AofState::Off {
        tracing::info!("Calling fsync() on the AOF file.");
        flush(state, true);
        if let Some(file) = &state.aof.file {
            if let Err(e) = file.sync_data() {
                tracing::warn!("Fail to fsync the AOF file: {e}");
            }
        }
    }
    Ok(())
}

/// The cron's part: syncs due with `everysec`, a postponed write or one
/// that failed tried again, a scheduled rewrite started, and the
/// automatic rewrite when the AOF has grown enough.
pub fn cron(state: &mut ServerState, now_ms: i64) {
    if state.aof.state == AofState::Off && !state.aof.rewrite_scheduled {
        return;
    }
    flush(state, false);
    if state.persist.job().is_some() || state.propagate.in_transaction() {
        return;
    }
    let aof = &state.aof;
    let growth_due = || {
        let percentage = u64::from(state.config.auto_aof_rewrite_percentage);
        if aof.state != AofState::On
            || percentage == 0
            || aof.current_size <= state.config.auto_aof_rewrite_min_size
        {
            return false;
        }
        let base = aof.rewrite_base_size.max(1);
        let growth = (aof.current_size * 100 / base).saturating_sub(100);
        growth >= percentage
    };
    let due = aof.rewrite_scheduled || growth_due();
    if !due || backing_off(state, now_ms / 1000) {
        return;
    }
    if !state.aof.rewrite_scheduled {
        tracing::info!(
            "Starting automatic rewriting of AOF on {}% growth",
            state.config.auto_aof_rewrite_percentage
        );
    }
    let _ = start_rewrite(state, now_ms);
}

/// Redis's `aofRewriteLimited`: after repeated failures, automatic
/// rewrites wait 1, 2, 4 … 60 minutes.
fn backing_off(state: &mut ServerState, now_s: i64) -> bool {
    let aof = &mut state.aof;
    if aof.consecutive_failures < REWRITE_FAILURES_BEFORE_BACKOFF {
        aof.backoff_until_s = 0;
        aof.backoff_minutes = 0;
        return false;
    }
    if aof.backoff_until_s != 0 {
        if now_s < aof.backoff_until_s {
            return true;
        }
        aof.backoff_until_s = 0;
        return false;
    }
    aof.backoff_minutes = (aof.backoff_minutes * 2).clamp(1, REWRITE_BACKOFF_MAX_MINUTES);
    aof.backoff_until_s = now_s + aof.backoff_minutes * 60;
    tracing::warn!(
        "Background AOF rewrite has repeatedly failed and triggered the limit, will retry in {} minutes",
        aof.backoff_minutes
    );
    true
}

/// (INFO) seconds the running rewrite has taken, or -1.
pub fn current_rewrite_time_s(state: &ServerState) -> i64 {
    state.persist.current_job_time_s(Job::AofRewrite)
}
