//! The append-only file's files, as Redis 7.0 keeps them: a directory
//! (`appenddirname`, in `dir`) holding a base file (an RDB file with the
//! `aof-base` field, or commands), increment files with the effect stream
//! since the base was taken, and a manifest naming them in order. `Aof`
//! (the server state's) owns the manifest, the open increment file, the
//! bytes not yet written, the fsync thread and the rewrite's bookkeeping;
//! what the server does with them is `aof`'s.
//!
//! **Writing.** The AOF is a consumer of the propagation point: each unit
//! of effects is encoded (with `SELECT` on database change) into a buffer.
//! The loop writes the buffer to the increment file before any reply
//! leaves (`super::aof::flush`, from `before_sleep` and before any socket
//! write), so a client never sees a write the file has not got.
//! `appendfsync always` syncs there too — once per loop iteration for
//! every command of the iteration (group commit); `everysec` hands a sync
//! to the fsync thread at most once a second, and the loop never waits
//! for the disk; `no` leaves it to the OS.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use crate::config::{Config, FsyncPolicy};
use crate::propagate::{Effect, Sink, SinkId, StreamEncoder};

/// A manifest line longer than this is refused (Redis's
/// `MANIFEST_MAX_LINE`).
pub(super) const MANIFEST_MAX_LINE: usize = 1024;

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
pub(super) enum Kind {
    Base,
    /// A base or increment replaced by a rewrite, to be deleted.
    History,
    Incr,
}

impl Kind {
    pub(super) fn letter(self) -> char {
        match self {
            Kind::Base => 'b',
            Kind::History => 'h',
            Kind::Incr => 'i',
        }
    }
}

/// One file the manifest names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) name: String,
    pub(super) seq: u64,
    pub(super) kind: Kind,
}

/// The manifest: which files make the AOF, in order (Redis's
/// `aofManifest`, same text format).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub(super) base: Option<Entry>,
    pub(super) incrs: Vec<Entry>,
    pub(super) history: Vec<Entry>,
    /// The sequence numbers of the newest base and increment.
    pub(super) base_seq: u64,
    pub(super) incr_seq: u64,
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
    pub(super) fn files(&self) -> impl Iterator<Item = &Entry> {
        self.base.iter().chain(&self.incrs)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.base.is_none() && self.incrs.is_empty()
    }

    /// The name the next base will have.
    pub(super) fn next_base_name(&self, stem: &str, rdb: bool) -> String {
        let suffix = if rdb { "rdb" } else { "aof" };
        format!("{stem}.{}.base.{suffix}", self.base_seq + 1)
    }

    /// Makes `name` (from `next_base_name`) the base; the old one becomes
    /// history.
    pub(super) fn install_base(&mut self, name: String) {
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
    pub(super) fn add_incr(&mut self, stem: &str) -> String {
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
    pub(super) fn retire_incrs(&mut self, keep_last: bool) {
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
pub(super) struct Pending {
    pub(super) encoder: StreamEncoder,
    pub(super) buf: Vec<u8>,
}

pub(super) struct AofSink(Rc<RefCell<Pending>>);

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
pub(super) struct Syncer {
    pub(super) jobs: mpsc::Sender<Arc<File>>,
    /// Syncs submitted and not finished.
    pub(super) pending: Arc<AtomicUsize>,
    /// The last sync's failure, cleared by the next success; `failing`
    /// says whether there is one without taking the lock (every write
    /// command asks).
    pub(super) error: Arc<Mutex<Option<String>>>,
    pub(super) failing: Arc<AtomicBool>,
}

impl Syncer {
    pub(super) fn start() -> io::Result<Syncer> {
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
                    let outcome = file.sync_data().err().map(|e| super::jobs::error_text(&e));
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

    pub(super) fn submit(&self, file: Arc<File>) {
        self.pending.fetch_add(1, Ordering::Acquire);
        if self.jobs.send(file).is_err() {
            self.pending.fetch_sub(1, Ordering::Release);
        }
    }

    pub(super) fn in_progress(&self) -> bool {
        self.pending.load(Ordering::Acquire) > 0
    }

    pub(super) fn error(&self) -> Option<String> {
        if !self.failing.load(Ordering::Acquire) {
            return None;
        }
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The AOF's state (see the module doc).
pub struct Aof {
    pub state: AofState,
    pub(super) manifest: Manifest,
    pub(super) pending: Rc<RefCell<Pending>>,
    pub(super) sink: Option<SinkId>,
    /// The increment file being appended to.
    pub(super) file: Option<Arc<File>>,
    pub(super) syncer: Option<Syncer>,
    /// Bytes in the base and increment files (`aof_current_size`).
    pub current_size: u64,
    /// The base file's size (`aof_base_size`).
    pub base_size: u64,
    /// The size after the last rewrite, which automatic rewrites grow
    /// from (`aof_rewrite_base_size`).
    pub(super) rewrite_base_size: u64,
    /// The increment file's size, and how much of it was last synced.
    pub(super) incr_size: u64,
    pub(super) incr_synced: u64,
    /// When the last sync was done or handed to the thread, unix seconds.
    pub(super) last_fsync_s: i64,
    /// When a write started waiting for the sync thread (`everysec`).
    pub(super) postponed_since_s: Option<i64>,
    /// Writes that went without waiting any longer (`aof_delayed_fsync`).
    pub delayed_fsync: u64,
    /// The last write's failure (`aof_last_write_status`), cleared by the
    /// next write that succeeds.
    pub write_error: Option<String>,
    /// A rewrite to start as soon as nothing else runs.
    pub rewrite_scheduled: bool,
    /// The base file the running rewrite writes.
    pub(super) rewrite_base: Option<String>,
    pub last_rewrite_time_s: i64,
    pub last_rewrite_ok: bool,
    /// Rewrites started (`aof_rewrites`) and failed in a row.
    pub rewrites: u64,
    pub consecutive_failures: u64,
    /// With repeated failures, automatic rewrites wait until then (unix
    /// seconds), and the wait after the next failure (minutes).
    pub(super) backoff_until_s: i64,
    pub(super) backoff_minutes: i64,
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
    /// (Redis's MISCONF for the AOF). Asked before every command: with
    /// the AOF off, one comparison.
    #[inline]
    pub fn disk_error(&self) -> Option<String> {
        if self.state == AofState::Off {
            return None;
        }
        self.disk_error_of_open_file()
    }

    fn disk_error_of_open_file(&self) -> Option<String> {
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
    pub(super) fn attach(&mut self, propagate: &mut crate::propagate::Propagator) {
        if self.sink.is_none() {
            *self.pending.borrow_mut() = Pending::default();
            self.sink = Some(propagate.attach(Box::new(AofSink(Rc::clone(&self.pending)))));
        }
    }

    pub(super) fn detach(&mut self, propagate: &mut crate::propagate::Propagator) {
        if let Some(id) = self.sink.take() {
            propagate.detach(id);
        }
        *self.pending.borrow_mut() = Pending::default();
    }

    /// Appends to `file` from now on (a new increment file): the next
    /// effect selects its database again.
    pub(super) fn switch_file(&mut self, file: File) {
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

pub(super) fn manifest_path(config: &Config) -> PathBuf {
    dir_path(config).join(format!("{}.manifest", config.appendfilename))
}

/// Where effects go while the first base is written (Redis's temp incr).
pub(super) fn temp_incr_path(config: &Config) -> PathBuf {
    dir_path(config).join(format!("temp-{}.incr", config.appendfilename))
}

pub(super) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Reads the manifest, if the directory and the manifest exist.
pub(super) fn read_manifest(config: &Config) -> io::Result<Manifest> {
    let path = manifest_path(config);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Manifest::default()),
        Err(e) => {
            return Err(invalid(format!(
                "Fatal error: can't open the AOF manifest file {} for reading: {}",
                path.display(),
                super::jobs::error_text(&e)
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
pub(super) fn write_manifest(config: &Config, manifest: &Manifest) -> io::Result<()> {
    let path = manifest_path(config);
    let temp = dir_path(config).join(format!("temp-{}.manifest", config.appendfilename));
    crate::files::replace_file(&path, &temp, manifest.format().as_bytes()).inspect_err(|e| {
        tracing::warn!("Can't write the AOF manifest {}: {e}", path.display());
    })
}

/// Opens an increment file for appending.
pub(super) fn open_for_append(path: &Path, truncate: bool) -> io::Result<File> {
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

pub(super) fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Writes all of `bytes` (retrying short writes); returns what was
/// written and the error that stopped it.
pub(super) fn write_fully(mut file: &File, bytes: &[u8]) -> (usize, Option<String>) {
    let mut written = 0;
    while written < bytes.len() {
        match file.write(&bytes[written..]) {
            Ok(0) => return (written, Some("No space left on device".into())),
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (written, Some(super::jobs::error_text(&e))),
        }
    }
    (written, None)
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
