//! Loading the append-only file (Redis's `loadAppendOnlyFiles`): the
//! files the manifest names are replayed through the dispatcher's
//! `replay`, handed in, with a client of their own, with nothing expiring
//! and nothing propagated meanwhile (`ServerState::set_loading`). A last
//! file cut mid-command loads up to its last whole command when
//! `aof-load-truncated` allows, and is truncated there; anything else
//! wrong stops the server with the file, the byte offset and what was
//! wrong.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek};
use std::path::Path;

use super::aof::{base_format, flush};
use super::aof_files::{
    dir_path, file_len, invalid, manifest_path, open_for_append, read_manifest, write_manifest,
    AofState, Entry, Manifest, Syncer,
};
use super::load::Load;
use crate::config::Config;
use crate::protocol::{Parsed, RequestParser};
use crate::state::ServerState;

/// Bytes read from an AOF file at a time while loading.
const READ_CHUNK: usize = 1 << 20;

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
            super::jobs::error_text(&e)
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
        super::save::write_now(state, now_ms, &dir.join(&name), &temp, format)?;
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
            super::jobs::error_text(&e)
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
                    super::jobs::error_text(&e)
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
    super::save::mark_saved_state(state);
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
            super::jobs::error_text(&e)
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
            super::load::load_rdb(state, &data, path, now_ms, Load::KeepAll).map_err(|e| {
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
                super::jobs::error_text(&e)
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
                            super::jobs::error_text(&e)
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

/// DEBUG LOADAOF: the buffer is written out, the data emptied and the
/// files the manifest on disk names loaded back.
pub fn debug_loadaof(state: &mut ServerState, now_ms: i64, run: Replay) -> io::Result<()> {
    if state.aof.state == AofState::On {
        flush(state, true);
    }
    super::load::empty_data(state);
    let manifest = read_manifest(&state.config)?;
    load_files(state, &manifest, now_ms, run)?;
    tracing::warn!("Append Only File loaded by DEBUG LOADAOF");
    Ok(())
}
