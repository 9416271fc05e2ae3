//! The append-only file, as Redis 7.0 keeps it: a directory
//! (`appenddirname`, in `dir`) holding a base file (an RDB file with the
//! `aof-base` field, or commands), increment files with the effect stream
//! since the base was taken, and a manifest naming them in order. Owns the
//! manifest, the open increment file, the bytes not yet written, the
//! fsync thread and the rewrite's bookkeeping.
//!
//! **Writing.** The AOF is a consumer of the propagation point: each unit
//! of effects is encoded (with `SELECT` on database change) into a buffer.
//! The loop writes the buffer to the increment file before any reply
//! leaves (`flush`, from `before_sleep` and before any socket write), so
//! a client never sees a write the file has not got. `appendfsync always`
//! syncs there too — once per loop iteration for every command of the
//! iteration (group commit); `everysec` hands a sync to the fsync thread
//! at most once a second, and the loop never waits for the disk; `no`
//! leaves it to the OS.
//!
//! **Rewriting** (BGREWRITEAOF, the automatic rewrite, turning the AOF on)
//! opens a new increment file for what comes next, then writes a new base
//! of the data as it is at that moment with `persist`'s background job
//! (the fork-less point-in-time snapshot). When the base is complete the
//! manifest names it and the new increment; the old files are deleted.
//!
//! **Loading** replays the files through the dispatcher with a session of
//! its own, with nothing expiring and nothing propagated meanwhile
//! (`ServerState::set_loading`). A last file cut mid-command loads up to
//! its last whole command when `aof-load-truncated` allows, and is
//! truncated there; anything else wrong stops the server with the file,
//! the byte offset and what was wrong.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use crate::config::{Config, FsyncPolicy};
use crate::persist::{self, FileFormat, Job, Load};
use crate::propagate::{Effect, Sink, SinkId, StreamEncoder};
use crate::protocol::{encode_request, Parsed, RequestParser};
use crate::state::ServerState;

/// Items per command when a rewrite writes a big value as commands
/// (Redis's `AOF_REWRITE_ITEMS_PER_CMD`).
const ITEMS_PER_COMMAND: usize = 64;
/// Bytes read from an AOF file at a time while loading.
const READ_CHUNK: usize = 1 << 20;
/// A manifest line longer than this is refused (Redis's
/// `MANIFEST_MAX_LINE`).
const MANIFEST_MAX_LINE: usize = 1024;
/// With `everysec`, a write waits at most this long for a sync still
/// running before it goes anyway (Redis's two seconds).
const MAX_POSTPONE_S: i64 = 2;
/// After this many rewrites failed in a row, automatic rewrites back off
/// (Redis's `AOF_REWRITE_LIMITE_THRESHOLD`), up to an hour apart.
const REWRITE_FAILURES_BEFORE_BACKOFF: u64 = 3;
const REWRITE_BACKOFF_MAX_MINUTES: i64 = 60;

/// Whether the AOF is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AofState {
    Off,
    /// Turned on at run time: the first base is being written; effects
    /// go to a temporary increment file until it is complete.
    WaitRewrite,
    On,
}

/// The kind of a file the manifest names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Base,
    /// A base or increment replaced by a rewrite, to be deleted.
    History,
    Incr,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Base => 'b',
            Kind::History => 'h',
            Kind::Incr => 'i',
        }
    }
}

/// One file the manifest names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: String,
    seq: u64,
    kind: Kind,
}

/// The manifest: which files make the AOF, in order (Redis's
/// `aofManifest`, same text format).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    base: Option<Entry>,
    incrs: Vec<Entry>,
    history: Vec<Entry>,
    /// The sequence numbers of the newest base and increment.
    base_seq: u64,
    incr_seq: u64,
}

/// What is wrong with a manifest, as Redis reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// 1-based line number, and the line, when a line is at fault.
    pub line: Option<(usize, String)>,
    pub message: &'static str,
}

impl Manifest {
    /// Parses a manifest as Redis's `aofLoadManifestFromFile` does: `#`
    /// lines skipped, `file <name> seq <n> type <b|h|i>` (more pairs
    /// allowed), at most one base, increments in rising order.
    pub fn parse(text: &[u8]) -> Result<Manifest, ManifestError> {
        let mut manifest = Manifest::default();
        let mut max_incr_seq = 0;
        let mut lines = 0;
        let mut rest = text;
        while !rest.is_empty() {
            lines += 1;
            let (line, terminated) = match crate::protocol::request::memchr(b'\n', rest) {
                Some(at) if at <= MANIFEST_MAX_LINE => (&rest[..at], true),
                _ => (&rest[..rest.len().min(MANIFEST_MAX_LINE)], false),
            };
            rest = &rest[(line.len() + usize::from(terminated)).min(rest.len())..];
            if line.first() == Some(&b'#') {
                continue;
            }
            let shown = String::from_utf8_lossy(line).trim().to_string();
            let fail = |message| ManifestError {
                line: Some((lines, shown.clone())),
                message,
            };
            if !terminated {
                return Err(fail("The AOF manifest file contains too long line"));
            }
            let words = crate::protocol::request::split_line(line.trim_ascii())
                .map_err(|_| fail("Invalid AOF manifest file format"))?;
            if words.len() < 6 || words.len() % 2 != 0 {
                return Err(fail("Invalid AOF manifest file format"));
            }
            let (mut name, mut seq, mut kind) = (None, 0, None);
            for pair in words.chunks(2) {
                let value = &pair[1];
                if pair[0].eq_ignore_ascii_case(b"file") {
                    if value.contains(&b'/') {
                        return Err(fail("File can't be a path, just a filename"));
                    }
                    name = Some(String::from_utf8_lossy(value).into_owned());
                } else if pair[0].eq_ignore_ascii_case(b"seq") {
                    seq = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0);
                } else if pair[0].eq_ignore_ascii_case(b"type") {
                    kind = value.first().copied();
                }
            }
            let (Some(name), true, Some(kind)) = (name, seq != 0, kind) else {
                return Err(fail("Invalid AOF manifest file format"));
            };
            match kind {
                b'b' => {
                    if manifest.base.is_some() {
                        return Err(fail("Found duplicate base file information"));
                    }
                    manifest.base_seq = seq;
                    manifest.base = Some(Entry {
                        name,
                        seq,
                        kind: Kind::Base,
                    });
                }
                b'h' => manifest.history.push(Entry {
                    name,
                    seq,
                    kind: Kind::History,
                }),
                b'i' => {
                    if seq <= max_incr_seq {
                        return Err(fail("Found a non-monotonic sequence number"));
                    }
                    max_incr_seq = seq;
                    manifest.incr_seq = seq;
                    manifest.incrs.push(Entry {
                        name,
                        seq,
                        kind: Kind::Incr,
                    });
                }
                _ => return Err(fail("Unknown AOF file type")),
            }
        }
        if lines == 0 {
            return Err(ManifestError {
                line: None,
                message: "Found an empty AOF manifest",
            });
        }
        Ok(manifest)
    }

    /// The manifest's text: base, history, increments, one line each.
    pub fn format(&self) -> String {
        let mut out = String::new();
        let all = self.base.iter().chain(&self.history).chain(&self.incrs);
        for entry in all {
            out.push_str(&format!(
                "file {} seq {} type {}\n",
                crate::protocol::word_repr(&entry.name),
                entry.seq,
                entry.kind.letter()
            ));
        }
        out
    }

    /// The files to load, in order: the base, then the increments.
    fn files(&self) -> impl Iterator<Item = &Entry> {
        self.base.iter().chain(&self.incrs)
    }

    fn is_empty(&self) -> bool {
        self.base.is_none() && self.incrs.is_empty()
    }

    /// The name the next base will have.
    fn next_base_name(&self, stem: &str, rdb: bool) -> String {
        let suffix = if rdb { "rdb" } else { "aof" };
        format!("{stem}.{}.base.{suffix}", self.base_seq + 1)
    }

    /// Makes `name` (from `next_base_name`) the base; the old one becomes
    /// history.
    fn install_base(&mut self, name: String) {
        if let Some(mut old) = self.base.take() {
            old.kind = Kind::History;
            self.history.insert(0, old);
        }
        self.base_seq += 1;
        self.base = Some(Entry {
            name,
            seq: self.base_seq,
            kind: Kind::Base,
        });
    }

    /// Adds a new increment file; returns its name.
    fn add_incr(&mut self, stem: &str) -> String {
        self.incr_seq += 1;
        let name = format!("{stem}.{}.incr.aof", self.incr_seq);
        self.incrs.push(Entry {
            name: name.clone(),
            seq: self.incr_seq,
            kind: Kind::Incr,
        });
        name
    }

    /// After a rewrite: the increments it covers become history — all of
    /// them, or all but the one being appended to (`keep_last`).
    fn retire_incrs(&mut self, keep_last: bool) {
        let keep = usize::from(keep_last).min(self.incrs.len());
        let retired: Vec<Entry> = self.incrs.drain(..self.incrs.len() - keep).collect();
        for mut entry in retired.into_iter().rev() {
            entry.kind = Kind::History;
            self.history.insert(0, entry);
        }
    }
}

/// The effects encoded and not yet written, shared with the sink the
/// propagation point feeds.
#[derive(Default)]
struct Pending {
    encoder: StreamEncoder,
    buf: Vec<u8>,
}

struct AofSink(Rc<RefCell<Pending>>);

impl Sink for AofSink {
    fn feed(&mut self, effects: &[Effect]) {
        let pending = &mut *self.0.borrow_mut();
        if effects.iter().any(|e| e.replicas_only) {
            let mine: Vec<Effect> = effects
                .iter()
                .filter(|e| !e.replicas_only)
                .cloned()
                .collect();
            pending.encoder.encode(&mine, &mut pending.buf);
        } else {
            pending.encoder.encode(effects, &mut pending.buf);
        }
    }
}

/// The thread that syncs the AOF for `everysec` (Redis's bio fsync job),
/// and closes increment files a rewrite replaced.
struct Syncer {
    jobs: mpsc::Sender<Arc<File>>,
    /// Syncs submitted and not finished.
    pending: Arc<AtomicUsize>,
    /// The last sync's failure, cleared by the next success; `failing`
    /// says whether there is one without taking the lock (every write
    /// command asks).
    error: Arc<Mutex<Option<String>>>,
    failing: Arc<AtomicBool>,
}

impl Syncer {
    fn start() -> io::Result<Syncer> {
        let (jobs, queue) = mpsc::channel::<Arc<File>>();
        let pending = Arc::new(AtomicUsize::new(0));
        let error = Arc::new(Mutex::new(None));
        let failing = Arc::new(AtomicBool::new(false));
        let (done, failed, flag) = (
            Arc::clone(&pending),
            Arc::clone(&error),
            Arc::clone(&failing),
        );
        std::thread::Builder::new()
            .name("lapse-aof-fsync".into())
            .spawn(move || {
                for file in queue {
                    let outcome = file.sync_data().err().map(|e| persist::error_text(&e));
                    if let Some(e) = &outcome {
                        tracing::warn!("Error in the background fsync of the AOF: {e}");
                    }
                    flag.store(outcome.is_some(), Ordering::Release);
                    *failed.lock().unwrap_or_else(|p| p.into_inner()) = outcome;
                    done.fetch_sub(1, Ordering::Release);
                }
            })?;
        Ok(Syncer {
            jobs,
            pending,
            error,
            failing,
        })
    }

    fn submit(&self, file: Arc<File>) {
        self.pending.fetch_add(1, Ordering::Acquire);
        if self.jobs.send(file).is_err() {
            self.pending.fetch_sub(1, Ordering::Release);
        }
    }

    fn in_progress(&self) -> bool {
        self.pending.load(Ordering::Acquire) > 0
    }

    fn error(&self) -> Option<String> {
        if !self.failing.load(Ordering::Acquire) {
            return None;
        }
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The AOF's state (see the module doc).
pub struct Aof {
    pub state: AofState,
    manifest: Manifest,
    pending: Rc<RefCell<Pending>>,
    sink: Option<SinkId>,
    /// The increment file being appended to.
    file: Option<Arc<File>>,
    syncer: Option<Syncer>,
    /// Bytes in the base and increment files (`aof_current_size`).
    pub current_size: u64,
    /// The base file's size (`aof_base_size`).
    pub base_size: u64,
    /// The size after the last rewrite, which automatic rewrites grow
    /// from (`aof_rewrite_base_size`).
    rewrite_base_size: u64,
    /// The increment file's size, and how much of it was last synced.
    incr_size: u64,
    incr_synced: u64,
    /// When the last sync was done or handed to the thread, unix seconds.
    last_fsync_s: i64,
    /// When a write started waiting for the sync thread (`everysec`).
    postponed_since_s: Option<i64>,
    /// Writes that went without waiting any longer (`aof_delayed_fsync`).
    pub delayed_fsync: u64,
    /// The last write's failure (`aof_last_write_status`), cleared by the
    /// next write that succeeds.
    pub write_error: Option<String>,
    /// A rewrite to start as soon as nothing else runs.
    pub rewrite_scheduled: bool,
    /// The base file the running rewrite writes.
    rewrite_base: Option<String>,
    pub last_rewrite_time_s: i64,
    pub last_rewrite_ok: bool,
    /// Rewrites started (`aof_rewrites`) and failed in a row.
    pub rewrites: u64,
    pub consecutive_failures: u64,
    /// With repeated failures, automatic rewrites wait until then (unix
    /// seconds), and the wait after the next failure (minutes).
    backoff_until_s: i64,
    backoff_minutes: i64,
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            state: AofState::Off,
            manifest: Manifest::default(),
            pending: Rc::default(),
            sink: None,
            file: None,
            syncer: None,
            current_size: 0,
            base_size: 0,
            rewrite_base_size: 0,
            incr_size: 0,
            incr_synced: 0,
            last_fsync_s: 0,
            postponed_since_s: None,
            delayed_fsync: 0,
            write_error: None,
            rewrite_scheduled: false,
            rewrite_base: None,
            last_rewrite_time_s: -1,
            last_rewrite_ok: true,
            rewrites: 0,
            consecutive_failures: 0,
            backoff_until_s: 0,
            backoff_minutes: 0,
        }
    }
}

impl Aof {
    /// Bytes encoded and not yet written (`aof_buffer_length`).
    pub fn buffer_len(&self) -> usize {
        self.pending.borrow().buf.len()
    }

    /// Whether syncs are running on the thread (`aof_pending_bio_fsync`).
    pub fn sync_in_progress(&self) -> bool {
        self.syncer.as_ref().is_some_and(Syncer::in_progress)
    }

    /// Why writes are refused, if the AOF cannot be written or synced
    /// (Redis's MISCONF for the AOF).
    pub fn disk_error(&self) -> Option<String> {
        if self.state == AofState::Off {
            return None;
        }
        self.write_error
            .clone()
            .or_else(|| self.syncer.as_ref().and_then(Syncer::error))
    }

    /// Whether something must reach the file before replies leave: effects
    /// not written, or (with `always`) not synced.
    pub fn must_flush(&self, policy: FsyncPolicy) -> bool {
        self.state != AofState::Off
            && (!self.pending.borrow().buf.is_empty()
                || (policy == FsyncPolicy::Always && self.incr_synced != self.incr_size))
    }

    /// Starts receiving the effect stream.
    fn attach(&mut self, propagate: &mut crate::propagate::Propagator) {
        if self.sink.is_none() {
            *self.pending.borrow_mut() = Pending::default();
            self.sink = Some(propagate.attach(Box::new(AofSink(Rc::clone(&self.pending)))));
        }
    }

    fn detach(&mut self, propagate: &mut crate::propagate::Propagator) {
        if let Some(id) = self.sink.take() {
            propagate.detach(id);
        }
        *self.pending.borrow_mut() = Pending::default();
    }

    /// Appends to `file` from now on (a new increment file): the next
    /// effect selects its database again.
    fn switch_file(&mut self, file: File) {
        if let (Some(old), Some(syncer)) = (self.file.take(), &self.syncer) {
            // Synced and closed on the thread, as Redis's
            // `aof_background_fsync_and_close`.
            syncer.submit(old);
        }
        self.file = Some(Arc::new(file));
        self.incr_size = 0;
        self.incr_synced = 0;
        self.pending.borrow_mut().encoder = StreamEncoder::default();
    }
}

/// The AOF directory: `appenddirname` in `dir`.
pub fn dir_path(config: &Config) -> PathBuf {
    Path::new(&config.dir).join(&config.appenddirname)
}

fn manifest_path(config: &Config) -> PathBuf {
    dir_path(config).join(format!("{}.manifest", config.appendfilename))
}

/// Where effects go while the first base is written (Redis's temp incr).
fn temp_incr_path(config: &Config) -> PathBuf {
    dir_path(config).join(format!("temp-{}.incr", config.appendfilename))
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Reads the manifest, if the directory and the manifest exist.
fn read_manifest(config: &Config) -> io::Result<Manifest> {
    let path = manifest_path(config);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Manifest::default()),
        Err(e) => {
            return Err(invalid(format!(
                "Fatal error: can't open the AOF manifest file {} for reading: {}",
                path.display(),
                persist::error_text(&e)
            )))
        }
    };
    Manifest::parse(&text).map_err(|e| {
        let at = e
            .line
            .map(|(n, line)| format!(", at line {n} ('{line}')"))
            .unwrap_or_default();
        invalid(format!(
            "FATAL AOF MANIFEST FILE ERROR in {}{at}: {}",
            path.display(),
            e.message
        ))
    })
}

/// Writes the manifest through a temporary file, synced, renamed, and the
/// directory synced.
fn write_manifest(config: &Config, manifest: &Manifest) -> io::Result<()> {
    let path = manifest_path(config);
    let temp = dir_path(config).join(format!("temp-{}.manifest", config.appendfilename));
    persist::replace_file(&path, &temp, manifest.format().as_bytes()).inspect_err(|e| {
        tracing::warn!("Can't write the AOF manifest {}: {e}", path.display());
    })
}

/// Opens an increment file for appending.
fn open_for_append(path: &Path, truncate: bool) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .truncate(false)
        .open(path)
        .and_then(|file| {
            if truncate {
                file.set_len(0)?;
            }
            Ok(file)
        })
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The format of a new base file.
fn base_format(state: &ServerState) -> FileFormat {
    if state.config.aof_use_rdb_preamble {
        FileFormat::Rdb {
            options: persist::save_options(state),
            aof_base: true,
        }
    } else {
        FileFormat::Commands
    }
}

/// At startup with `appendonly yes`: loads the files the manifest names
/// (a single `appendfilename` in `dir` from before Redis 7.0 is moved
/// into the directory first), then opens the last increment file for
/// appending — after writing a base of the empty dataset when there were
/// no files, as Redis does.
/// Runs one command read from an AOF file for `session`, the file's own
/// client (the dispatcher's `replay`, handed in by the caller, so that
/// the files know no dispatcher).
pub type Replay = fn(&mut ServerState, &mut crate::connection::Session, crate::protocol::Args<'_>);

pub fn load_at_startup(state: &mut ServerState, now_ms: i64, run: Replay) -> io::Result<()> {
    let mut manifest = read_manifest(&state.config)?;
    if manifest.is_empty() {
        manifest = upgrade_single_file(&state.config, manifest)?;
    }
    load_files(state, &manifest, now_ms, run)?;
    state.aof.manifest = manifest;
    open_at_startup(state, now_ms)
}

/// Redis's `aofUpgradePrepare`: an old-style `appendfilename` in `dir`
/// becomes the base of a new AOF directory.
fn upgrade_single_file(config: &Config, manifest: Manifest) -> io::Result<Manifest> {
    let old = Path::new(&config.dir).join(&config.appendfilename);
    if !old.is_file() {
        return Ok(manifest);
    }
    let dir = dir_path(config);
    std::fs::create_dir_all(&dir)?;
    let mut upgraded = Manifest::default();
    upgraded.install_base(config.appendfilename.clone());
    std::fs::rename(&old, dir.join(&config.appendfilename))?;
    write_manifest(config, &upgraded)?;
    tracing::info!(
        "Successfully migrated an old-style AOF file ({}) into the AOF directory ({}).",
        config.appendfilename,
        dir.display()
    );
    Ok(upgraded)
}

/// Creates the directory, the first base if there are no files, the
/// increment file to append to; writes the manifest; attaches the sink.
fn open_at_startup(state: &mut ServerState, now_ms: i64) -> io::Result<()> {
    let dir = dir_path(&state.config);
    std::fs::create_dir_all(&dir).map_err(|e| {
        invalid(format!(
            "Can't open or create append-only dir {}: {}",
            dir.display(),
            persist::error_text(&e)
        ))
    })?;
    let mut manifest = std::mem::take(&mut state.aof.manifest);
    if manifest.is_empty() {
        let name = manifest.next_base_name(
            &state.config.appendfilename,
            state.config.aof_use_rdb_preamble,
        );
        let temp = format!("temp-rewriteaof-{}.aof", std::process::id());
        let format = base_format(state);
        persist::write_now(state, now_ms, &dir.join(&name), &temp, format)?;
        tracing::info!("Creating AOF base file {name} on server start");
        manifest.install_base(name);
    }
    let name = match manifest.incrs.last() {
        Some(last) => last.name.clone(),
        None => manifest.add_incr(&state.config.appendfilename),
    };
    let path = dir.join(&name);
    let file = open_for_append(&path, false).map_err(|e| {
        invalid(format!(
            "Can't open the append-only file {}: {}",
            path.display(),
            persist::error_text(&e)
        ))
    })?;
    write_manifest(&state.config, &manifest)?;
    let aof = &mut state.aof;
    aof.syncer = Some(Syncer::start()?);
    aof.switch_file(file);
    aof.incr_size = file_len(&path);
    aof.incr_synced = aof.incr_size;
    aof.base_size = manifest
        .base
        .as_ref()
        .map_or(0, |b| file_len(&dir.join(&b.name)));
    aof.current_size = manifest.files().map(|f| file_len(&dir.join(&f.name))).sum();
    aof.rewrite_base_size = aof.base_size;
    aof.manifest = manifest;
    aof.state = AofState::On;
    aof.last_fsync_s = now_ms / 1000;
    aof.attach(&mut state.propagate);
    state.refresh_event_recording();
    tracing::info!("Appending to AOF incr file {name}");
    Ok(())
}

/// Loads every file `manifest` names, in order. Errors name the file and
/// what was wrong; a missing file is an error.
fn load_files(
    state: &mut ServerState,
    manifest: &Manifest,
    now_ms: i64,
    run: Replay,
) -> io::Result<()> {
    let dir = dir_path(&state.config);
    let files: Vec<&Entry> = manifest.files().collect();
    let mut total = 0;
    for entry in &files {
        let path = dir.join(&entry.name);
        match std::fs::metadata(&path) {
            Ok(meta) => total += meta.len(),
            Err(e) => {
                return Err(invalid(format!(
                    "The AOF file {} named in the manifest {} can't be opened: {}",
                    path.display(),
                    manifest_path(&state.config).display(),
                    persist::error_text(&e)
                )))
            }
        }
    }
    if total == 0 {
        return Ok(());
    }
    let counted = (
        state.stats.total_commands_processed,
        state.stats.total_error_replies,
    );
    state.set_loading(true);
    let mut loaded = Ok(());
    for (i, entry) in files.iter().enumerate() {
        let last = i + 1 == files.len();
        loaded = load_file(state, &dir.join(&entry.name), last, now_ms, run);
        if loaded.is_err() {
            break;
        }
    }
    state.set_loading(false);
    (
        state.stats.total_commands_processed,
        state.stats.total_error_replies,
    ) = counted;
    loaded?;
    // What was loaded is what the files hold: no change to save.
    persist::mark_saved_state(state);
    tracing::info!("DB loaded from append only file");
    Ok(())
}

/// How a file's commands ended.
enum Replayed {
    /// At the end of the file, outside a transaction.
    Complete,
    /// Cut short: the bytes up to `valid_up_to` hold whole commands.
    Truncated { valid_up_to: u64, why: &'static str },
}

/// Loads one AOF file: an RDB preamble if it starts with one, then
/// commands.
fn load_file(
    state: &mut ServerState,
    path: &Path,
    last: bool,
    now_ms: i64,
    run: Replay,
) -> io::Result<()> {
    let shown = path.display().to_string();
    let open_error = |e: io::Error| {
        invalid(format!(
            "Fatal error: can't open the append log file {shown} for reading: {}",
            persist::error_text(&e)
        ))
    };
    let mut file = File::open(path).map_err(open_error)?;
    if file.metadata().is_ok_and(|m| m.len() == 0) {
        return Ok(());
    }
    let mut signature = [0u8; 5];
    let has_preamble = file.read_exact(&mut signature).is_ok() && &signature == b"REDIS";
    file.seek(io::SeekFrom::Start(0)).map_err(open_error)?;
    let replayed = if has_preamble {
        let mut data = Vec::new();
        file.read_to_end(&mut data).map_err(open_error)?;
        let consumed =
            persist::load_rdb(state, &data, path, now_ms, Load::KeepAll).map_err(|e| {
                invalid(format!(
                    "Error reading the RDB base file {shown}, AOF loading aborted: {e}"
                ))
            })?;
        replay(state, &data[consumed..], consumed as u64, &shown, run)?
    } else {
        replay(state, file, 0, &shown, run)?
    };
    let Replayed::Truncated { valid_up_to, why } = replayed else {
        return Ok(());
    };
    if !state.config.aof_load_truncated {
        return Err(invalid(format!(
            "Unexpected end of file reading the append only file {shown} ({why}; the last whole command ends at offset {valid_up_to}). You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
        )));
    }
    if !last {
        return Err(invalid(format!(
            "Fatal error: the truncated file is not the last file: {shown} ({why} at offset {valid_up_to})"
        )));
    }
    tracing::warn!("!!! Warning: short read while loading the AOF file {shown}!!! ({why})");
    tracing::warn!("!!! Truncating the AOF {shown} at offset {valid_up_to} !!!");
    OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(valid_up_to))
        .map_err(|e| {
            invalid(format!(
                "Error truncating the AOF file {shown}: {}",
                persist::error_text(&e)
            ))
        })?;
    tracing::warn!("AOF {shown} loaded anyway because aof-load-truncated is enabled");
    Ok(())
}

/// Replays the commands in `source` (which starts at byte `offset` of the
/// file `shown`) through the dispatcher, as a client of its own that
/// never blocks and whose replies are dropped.
fn replay(
    state: &mut ServerState,
    mut source: impl Read,
    offset: u64,
    shown: &str,
    run: Replay,
) -> io::Result<Replayed> {
    let mut session = crate::connection::Session {
        authenticated: true,
        deny_blocking: true,
        ..Default::default()
    };
    let mut parser = RequestParser::new(state.config.proto_max_bulk_len);
    let mut buf: Vec<u8> = Vec::new();
    // The file offset of `buf[0]`, and of the next command in `buf`.
    let (mut buf_offset, mut start) = (offset, 0usize);
    let (mut valid_up_to, mut before_multi) = (offset, offset);
    let mut eof = false;
    let bad_format = |at: u64, what: String| {
        invalid(format!(
            "Bad file format reading the append only file {shown} at offset {at}: {what}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
        ))
    };
    let outcome = loop {
        let rest = &buf[start..];
        let at = buf_offset + start as u64;
        let parsed = match rest.first() {
            None => Ok(Parsed::Incomplete),
            // An annotation (`#TS:...`): skipped.
            Some(b'#') => match crate::protocol::request::memchr(b'\n', rest) {
                Some(end) => {
                    start += end + 1;
                    continue;
                }
                None if eof => {
                    start = buf.len();
                    continue;
                }
                None => Ok(Parsed::Incomplete),
            },
            Some(b'*') => parser.parse(rest),
            Some(&other) => {
                break Err(bad_format(
                    at,
                    format!("expected '*', got '{}'", char::from(other).escape_default()),
                ))
            }
        };
        match parsed {
            Ok(Parsed::Complete { consumed }) => {
                let args = parser.args(rest);
                let Some(name) = args.iter().next() else {
                    break Err(bad_format(at, "a command with no arguments".into()));
                };
                let Some(command) = crate::command_table::lookup(name) else {
                    break Err(invalid(format!(
                        "Unknown command '{}' reading the append only file {shown} at offset {at}",
                        String::from_utf8_lossy(crate::protocol::c_str(name, 128))
                    )));
                };
                if command.name == "multi" {
                    before_multi = valid_up_to;
                }
                run(state, &mut session, args);
                session.reply.buf.clear();
                start += consumed;
                valid_up_to = buf_offset + start as u64;
            }
            Ok(Parsed::Incomplete) if eof => {
                break Ok(if start < buf.len() {
                    Replayed::Truncated {
                        valid_up_to,
                        why: "unexpected end of file",
                    }
                } else if session.multi.is_some() {
                    tracing::warn!("Revert incomplete MULTI/EXEC transaction in AOF file {shown}");
                    Replayed::Truncated {
                        valid_up_to: before_multi,
                        why: "incomplete MULTI/EXEC transaction",
                    }
                } else {
                    Replayed::Complete
                });
            }
            Ok(Parsed::Incomplete) => {
                // Keep the unparsed part at the front (the parser's
                // positions are relative to it) and read on.
                buf.drain(..start);
                buf_offset += start as u64;
                start = 0;
                let before = buf.len();
                buf.resize(before + READ_CHUNK, 0);
                let read = loop {
                    match source.read(&mut buf[before..]) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        other => break other,
                    }
                };
                match read {
                    Ok(n) => {
                        buf.truncate(before + n);
                        eof = n == 0;
                    }
                    Err(e) => {
                        break Err(invalid(format!(
                            "Unrecoverable error reading the append only file {shown}: {}",
                            persist::error_text(&e)
                        )))
                    }
                }
            }
            Err(e) => break Err(bad_format(at, e.message())),
        }
    };
    state.forget_client(session.id);
    outcome
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
                tracing::error!("Can't persist AOF for fsync error when the AOF fsync policy is 'always': {}. Exiting...", persist::error_text(&e));
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

/// Writes all of `bytes` (retrying short writes); returns what was
/// written and the error that stopped it.
fn write_fully(mut file: &File, bytes: &[u8]) -> (usize, Option<String>) {
    let mut written = 0;
    while written < bytes.len() {
        match file.write(&bytes[written..]) {
            Ok(0) => return (written, Some("No space left on device".into())),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (written, Some(persist::error_text(&e))),
        }
    }
    (written, None)
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
    if let Err(e) = persist::start_background(
        state,
        now_ms,
        Job::AofRewrite,
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

/// A rewrite's end (`persist` calls this when its background job ends):
/// on success the manifest names the new base (and, if the AOF was
/// waiting for it, the increment written meanwhile), and the files it
/// replaces are deleted (Redis's `backgroundRewriteDoneHandler`).
pub fn rewrite_done(state: &mut ServerState, outcome: io::Result<()>, elapsed_s: i64) {
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
            persist::abandon(state, Job::AofRewrite);
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
    persist::abandon(state, Job::AofRewrite);
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
        persist::abandon(state, Job::AofRewrite);
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

/// DEBUG LOADAOF: the buffer is written out, the data emptied and the
/// files the manifest on disk names loaded back.
pub fn debug_loadaof(state: &mut ServerState, now_ms: i64, run: Replay) -> io::Result<()> {
    if state.aof.state == AofState::On {
        flush(state, true);
    }
    persist::empty_data(state);
    let manifest = read_manifest(&state.config)?;
    load_files(state, &manifest, now_ms, run)?;
    tracing::warn!("Append Only File loaded by DEBUG LOADAOF");
    Ok(())
}

/// Writes the commands that build `key` with `value` (and its deadline):
/// a rewrite's base without the RDB preamble (Redis's
/// `rewriteAppendOnlyFileRio`, `ITEMS_PER_COMMAND` items per command).
/// A save's entries as the commands that build each key (an AOF base
/// without the RDB preamble).
pub struct CommandEntries;

impl crate::db::snapshot::EntryFormat for CommandEntries {
    fn is_big(&self, value: crate::value::ValueRef<'_>) -> bool {
        crate::rdb::is_big(value)
    }

    fn write_big_head(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: crate::value::ValueRef<'_>,
        _at_ms: Option<i64>,
    ) {
        write_big_commands_head(out, key, value);
    }

    fn write_big_piece(
        &self,
        out: &mut Vec<u8>,
        key: &[u8],
        value: crate::value::ValueRef<'_>,
        at: usize,
        units: usize,
        at_ms: Option<i64>,
    ) -> Option<usize> {
        write_big_commands_piece(out, key, value, at, units, at_ms)
    }
}

/// The start of a big value's commands (`rdb::is_big`): for a string, the
/// head of its SET up to the value's length, the bytes following in
/// pieces; nothing for the others, whose commands each piece writes.
pub fn write_big_commands_head(out: &mut Vec<u8>, key: &[u8], value: crate::value::ValueRef<'_>) {
    if let crate::value::ValueRef::Str(s) = value {
        out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
        out.extend_from_slice(format!("${}\r\n", key.len()).as_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(format!("\r\n${}\r\n", s.len()).as_bytes());
    }
}

/// Writes the commands for up to `units` more elements (or KB of a
/// string) of a big value from position `at`, and its deadline after the
/// last; returns where the next piece starts, or `None` when complete.
pub fn write_big_commands_piece(
    out: &mut Vec<u8>,
    key: &[u8],
    value: crate::value::ValueRef<'_>,
    at: usize,
    units: usize,
    at_ms: Option<i64>,
) -> Option<usize> {
    use crate::value::ValueRef;
    let (end, len) = match value {
        ValueRef::Str(s) => {
            let end = at
                .saturating_add(units.saturating_mul(crate::rdb::STRING_BYTES_PER_UNIT))
                .min(s.len());
            out.extend_from_slice(&s[at.min(end)..end]);
            if end == s.len() {
                out.extend_from_slice(b"\r\n");
            }
            (end, s.len())
        }
        ValueRef::List(l) => {
            let items: Vec<Vec<u8>> = l.iter_from(at).take(units).map(<[u8]>::to_vec).collect();
            write_batched(out, b"RPUSH", key, &items, 1);
            (at + items.len(), l.len())
        }
        ValueRef::Set(set) => {
            let items: Vec<Vec<u8>> = set
                .iter_from(at)
                .take(units)
                .map(|m| m.with_bytes(<[u8]>::to_vec))
                .collect();
            write_batched(out, b"SADD", key, &items, 1);
            (at + items.len(), set.len())
        }
        ValueRef::ZSet(z) => {
            let mut items = Vec::new();
            for e in z.iter_from(at, false).take(units) {
                items.push(crate::protocol::reply::format_double(e.score).into_bytes());
                items.push(e.member.with_bytes(<[u8]>::to_vec));
            }
            write_batched(out, b"ZADD", key, &items, 2);
            (at + items.len() / 2, z.len())
        }
        ValueRef::Hash(hash) => {
            let mut items = Vec::new();
            let mut deadlines = Vec::new();
            for (field, value, deadline) in hash.iter_with_ttls_from(at).take(units) {
                let field = field.with_bytes(<[u8]>::to_vec);
                if let Some(deadline) = deadline {
                    deadlines.push((deadline.to_string(), field.clone()));
                }
                items.push(field);
                items.push(value.with_bytes(<[u8]>::to_vec));
            }
            write_batched(out, b"HSET", key, &items, 2);
            // Each field's deadline after its value (as Redis 7.4's
            // rewrite does, one HPEXPIREAT per field).
            for (deadline, field) in &deadlines {
                encode_request(
                    &[
                        &b"HPEXPIREAT"[..],
                        key,
                        deadline.as_bytes(),
                        b"FIELDS",
                        b"1",
                        field,
                    ],
                    out,
                );
            }
            (at + items.len() / 2, hash.len())
        }
        ValueRef::Stream(stream) => {
            write_stream_commands(out, key, stream);
            (1, 1)
        }
    };
    if end < len && end > at {
        return Some(end);
    }
    if let Some(at_ms) = at_ms {
        let at = at_ms.to_string();
        encode_request(&[&b"PEXPIREAT"[..], key, at.as_bytes()], out);
    }
    None
}

/// The commands that rebuild a stream (Redis's `rewriteStreamObject`):
/// its entries as XADDs with their IDs (an empty stream as an XADD its
/// MAXLEN 0 empties), then XSETID for the last ID, entries added and
/// max-deleted ID; then each group with XGROUP CREATE, its pending
/// entries as forced XCLAIMs, and consumers with nothing pending.
fn write_stream_commands(out: &mut Vec<u8>, key: &[u8], stream: &crate::value::Stream) {
    use crate::value::stream::StreamId;
    let last = stream.last_id.to_text();
    if stream.is_empty() {
        // ID 0-1 as Redis writes it (XADD refuses 0-0, an empty stream's
        // last ID when nothing was ever added); XSETID sets the real one.
        encode_request(
            &[&b"XADD"[..], key, b"MAXLEN", b"0", b"0-1", b"x", b"y"],
            out,
        );
    }
    for entry in stream.range(StreamId::MIN, StreamId::MAX, false, 0) {
        let id = entry.id.to_text();
        let mut args: Vec<&[u8]> = vec![b"XADD", key, id.as_bytes()];
        args.extend(entry.fields.iter().map(Vec::as_slice));
        encode_request(&args, out);
    }
    let (added, deleted) = (
        stream.entries_added.to_string(),
        stream.max_deleted_entry_id.to_text(),
    );
    encode_request(
        &[
            &b"XSETID"[..],
            key,
            last.as_bytes(),
            b"ENTRIESADDED",
            added.as_bytes(),
            b"MAXDELETEDID",
            deleted.as_bytes(),
        ],
        out,
    );
    for (name, group) in &stream.groups {
        let last = group.last_id.to_text();
        let read = group
            .entries_read
            .map_or("-1".to_string(), |n| n.to_string());
        encode_request(
            &[
                &b"XGROUP"[..],
                b"CREATE",
                key,
                name,
                last.as_bytes(),
                b"ENTRIESREAD",
                read.as_bytes(),
            ],
            out,
        );
        for (id, p) in &group.pending {
            let (id, time, count) = (
                id.to_text(),
                p.delivery_time_ms.to_string(),
                p.delivery_count.to_string(),
            );
            encode_request(
                &[
                    &b"XCLAIM"[..],
                    key,
                    name,
                    &p.consumer,
                    b"0",
                    id.as_bytes(),
                    b"TIME",
                    time.as_bytes(),
                    b"RETRYCOUNT",
                    count.as_bytes(),
                    b"JUSTID",
                    b"FORCE",
                ],
                out,
            );
        }
        for (consumer, c) in &group.consumers {
            if c.pending.is_empty() {
                encode_request(
                    &[&b"XGROUP"[..], b"CREATECONSUMER", key, name, consumer],
                    out,
                );
            }
        }
    }
}

/// `command key item…` for `items` taken `per_item` at a time (a member,
/// or a score and member), `ITEMS_PER_COMMAND` per command.
fn write_batched(
    out: &mut Vec<u8>,
    command: &[u8],
    key: &[u8],
    items: &[Vec<u8>],
    per_item: usize,
) {
    for chunk in items.chunks(ITEMS_PER_COMMAND * per_item) {
        let mut args: Vec<&[u8]> = Vec::with_capacity(chunk.len() + 2);
        args.push(command);
        args.push(key);
        args.extend(chunk.iter().map(Vec::as_slice));
        encode_request(&args, out);
    }
}

/// (INFO) seconds the running rewrite has taken, or -1.
pub fn current_rewrite_time_s(state: &ServerState) -> i64 {
    state.persist.current_job_time_s(Job::AofRewrite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trips_and_names_files_as_redis_does() {
        let mut m = Manifest::default();
        let base = m.next_base_name("appendonly.aof", true);
        assert_eq!(base, "appendonly.aof.1.base.rdb");
        m.install_base(base);
        assert_eq!(m.add_incr("appendonly.aof"), "appendonly.aof.1.incr.aof");
        let text = m.format();
        assert_eq!(
            text,
            "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
        );
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), m);
        // A rewrite: a new increment, then the new base; the old files
        // become history.
        m.add_incr("appendonly.aof");
        let next = m.next_base_name("appendonly.aof", false);
        assert_eq!(next, "appendonly.aof.2.base.aof");
        m.install_base(next);
        m.retire_incrs(true);
        assert_eq!(
            m.format(),
            "file appendonly.aof.2.base.aof seq 2 type b\n\
             file appendonly.aof.1.incr.aof seq 1 type h\n\
             file appendonly.aof.1.base.rdb seq 1 type h\n\
             file appendonly.aof.2.incr.aof seq 2 type i\n"
        );
        assert_eq!(Manifest::parse(m.format().as_bytes()).unwrap(), m);
    }

    #[test]
    fn manifest_names_with_spaces_are_quoted() {
        let mut m = Manifest::default();
        m.install_base("my file \"x\".rdb".into());
        let text = m.format();
        assert_eq!(text, "file \"my file \\\"x\\\".rdb\" seq 1 type b\n");
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), m);
    }

    #[test]
    fn bad_manifests_get_redis_errors() {
        let cases: &[(&str, &str)] = &[
            ("", "Found an empty AOF manifest"),
            ("file a seq 1\n", "Invalid AOF manifest file format"),
            (
                "file a seq 1 type b extra\n",
                "Invalid AOF manifest file format",
            ),
            (
                "file a/b seq 1 type b\n",
                "File can't be a path, just a filename",
            ),
            ("file a seq 0 type b\n", "Invalid AOF manifest file format"),
            (
                "file a seq 1 type b\nfile b seq 2 type b\n",
                "Found duplicate base file information",
            ),
            (
                "file a seq 2 type i\nfile b seq 1 type i\n",
                "Found a non-monotonic sequence number",
            ),
            ("file a seq 1 type x\n", "Unknown AOF file type"),
            (
                "file a seq 1 type b",
                "The AOF manifest file contains too long line",
            ),
            ("\n", "Invalid AOF manifest file format"),
        ];
        for (text, message) in cases {
            let err = Manifest::parse(text.as_bytes()).unwrap_err();
            assert_eq!(err.message, *message, "for {text:?}");
        }
        let long = format!("file {} seq 1 type b\n", "x".repeat(2000));
        assert_eq!(
            Manifest::parse(long.as_bytes()).unwrap_err().message,
            "The AOF manifest file contains too long line"
        );
        // Comments and unknown pairs are fine.
        let m = Manifest::parse(b"# hi\nfile a seq 1 type b newkey v\n").unwrap();
        assert_eq!(m.base.unwrap().name, "a");
    }
}
