//! MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key...], as Redis 7.0 does it: each
//! key DUMPed here and RESTOREd there, pipelined over a connection of its
//! own, then (without COPY) deleted here and propagated as one DEL. As in
//! Redis the server waits for the target meanwhile, each step bounded by
//! the timeout, and keeps the connection for 10 s to reuse it (SELECT is
//! sent when the database changes).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::{int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::EventClass;
use crate::net::{KeptConn, KeptStream};
use crate::protocol::{encode_request, Args};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[("migrate", migrate)];

/// What MIGRATE's options asked for.
#[derive(Default)]
struct Options<'a> {
    copy: bool,
    replace: bool,
    /// AUTH password, or AUTH2 username password.
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    /// Where the keys start, and how many (KEYS: all the rest).
    first_key: usize,
    num_keys: usize,
}

fn parse<'a>(args: &Args<'a>) -> Result<Options<'a>, CmdError> {
    let mut o = Options {
        first_key: 3,
        num_keys: 1,
        ..Options::default()
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "COPY") {
            o.copy = true;
        } else if is(&args[j], "REPLACE") {
            o.replace = true;
        } else if is(&args[j], "AUTH") && more >= 1 {
            o.auth = Some((None, args.get(j + 1)));
            j += 1;
        } else if is(&args[j], "AUTH2") && more >= 2 {
            o.auth = Some((Some(args.get(j + 1)), args.get(j + 2)));
            j += 2;
        } else if is(&args[j], "KEYS") {
            if !args[3].is_empty() {
                return Err(CmdError::Static(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            o.first_key = j + 1;
            o.num_keys = args.len() - j - 1;
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// A connection to the target: TLS when `tls` holds the configuration
/// for peers (`tls-cluster`, as Redis's MIGRATE).
fn connect(
    host: &str,
    port: u16,
    timeout: Duration,
    tls: Option<&crate::tls::TlsContext>,
) -> Result<KeptConn, CmdError> {
    let address = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next());
    let stream = match address.map(|addr| TcpStream::connect_timeout(&addr, timeout)) {
        Some(Ok(stream)) => stream,
        // Redis connects without waiting for the outcome: a refused
        // connection shows as the write that follows failing.
        Some(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Err(io_error(true))
        }
        _ => {
            return Err(CmdError::Static(
                "IOERR error or timeout connecting to the client",
            ))
        }
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let _ = stream.set_nodelay(true);
    let stream = match tls {
        None => KeptStream::Tcp(stream),
        Some(context) => match context.connect_peer(host) {
            Ok(client) => KeptStream::Tls(Box::new(rustls::StreamOwned::new(client, stream))),
            Err(_) => {
                return Err(CmdError::Static(
                    "IOERR error or timeout connecting to the client",
                ))
            }
        },
    };
    Ok(KeptConn::new(stream))
}

/// AUTH (if asked), SELECT (if the connection has another database
/// selected), then a RESTORE for each key.
fn migrate_request(
    o: &Options,
    db_index: i64,
    select: bool,
    restore_name: &[u8],
    keys: &[(&[u8], Vec<u8>, i64)],
) -> Vec<u8> {
    let mut request = Vec::new();
    if let Some((user, password)) = o.auth {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        auth.extend(user);
        auth.push(password);
        encode_request(&auth, &mut request);
    }
    if select {
        let db_text = db_index.to_string();
        encode_request(&[&b"SELECT"[..], db_text.as_bytes()], &mut request);
    }
    for (key, payload, ttl) in keys {
        let ttl = ttl.to_string();
        let mut restore: Vec<&[u8]> = vec![restore_name, key, ttl.as_bytes(), payload];
        if o.replace {
            restore.push(b"REPLACE");
        }
        encode_request(&restore, &mut request);
    }
    request
}

/// The target's reply lines: AUTH's and SELECT's (when sent), then one
/// per RESTORE; `complete` unless the connection failed part way.
struct Replies {
    auth: Option<Vec<u8>>,
    select: Option<Vec<u8>>,
    restores: Vec<Vec<u8>>,
    complete: bool,
}

/// Sends the request and reads its replies. An error: nothing was read
/// back (the write or the first reply failed).
fn exchange(
    stream: &mut KeptStream,
    request: &[u8],
    auth: bool,
    select: bool,
    restores: usize,
) -> Result<Replies, CmdError> {
    if stream
        .write_all(request)
        .and_then(|_| stream.flush())
        .is_err()
    {
        return Err(io_error(true));
    }
    let mut reader = BufReader::new(stream);
    let mut read_line = || {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(n) if n > 0 => Some(line),
            _ => None,
        }
    };
    let auth = match auth {
        true => Some(read_line().ok_or_else(|| io_error(false))?),
        false => None,
    };
    let select = match select {
        true => Some(read_line().ok_or_else(|| io_error(false))?),
        false => None,
    };
    let mut replies = Replies {
        auth,
        select,
        restores: Vec::with_capacity(restores),
        complete: true,
    };
    for _ in 0..restores {
        match read_line() {
            Some(line) => replies.restores.push(line),
            None => {
                // Nothing read at all: the request may be retried whole.
                if replies.restores.is_empty() && replies.auth.is_none() && replies.select.is_none()
                {
                    return Err(io_error(false));
                }
                replies.complete = false;
                break;
            }
        }
    }
    Ok(replies)
}

/// A failed exchange with the target: Redis's IOERR, for what failed.
fn io_error(writing: bool) -> CmdError {
    let step = if writing { "writing" } else { "reading" };
    CmdError::owned(format!("IOERR error or timeout {step} to target instance"))
}

fn migrate(ctx: &mut Ctx, args: Args) -> CmdResult {
    let o = parse(&args)?;
    let timeout = int_arg(&args[5])?;
    let db_index = int_arg(&args[4])?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let now_ms = ctx.now_ms;
    // The keys that are here, each with its payload and remaining TTL.
    let options = crate::persistence::rdb::SaveOptions {
        compress: ctx.server.config.rdbcompression,
        checksum: true,
    };
    let mut keys: Vec<(&[u8], Vec<u8>, i64)> = Vec::new();
    for key in args.iter().skip(o.first_key).take(o.num_keys) {
        let db = ctx.db();
        let Some(deadline) = db.expire_at(key, now_ms) else {
            continue;
        };
        let ttl = match deadline {
            Some(at) if at - now_ms < 0 => continue,
            Some(at) => (at - now_ms).max(1),
            None => 0,
        };
        if let Some(value) = db.get(key, now_ms) {
            keys.push((
                key,
                crate::persistence::rdb::dump_value(value, options),
                ttl,
            ));
        }
    }
    if keys.is_empty() {
        ctx.out().simple("NOKEY");
        return Ok(());
    }
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    let port = u16::try_from(int_arg(&args[2])?).map_err(|_| CmdError::NotInteger)?;
    let target = format!("{host}:{port}");
    // A cluster node's target imports the slot: RESTORE-ASKING is served
    // there without ASKING (Redis's choice in cluster mode).
    let restore_name: &[u8] = if ctx.server.cluster.is_some() {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    // A connection kept from an earlier MIGRATE to this target is tried
    // first; if it turns out broken, once more on a new one (Redis's
    // retry), which cannot have applied anything yet.
    let mut conn = ctx.server.migrate_conns.take(&target);
    let replies = loop {
        let fresh = conn.is_none();
        let mut c = match conn.take() {
            Some(c) => c,
            None => {
                let tls = match ctx.server.config.tls.cluster {
                    true => ctx.server.tls.as_ref(),
                    false => None,
                };
                connect(&host, port, timeout, tls)?
            }
        };
        let select = c.db != Some(db_index);
        let request = migrate_request(&o, db_index, select, restore_name, &keys);
        match exchange(
            &mut c.stream,
            &request,
            o.auth.is_some(),
            select,
            keys.len(),
        ) {
            Ok(replies) => {
                if replies.select.as_ref().is_some_and(|r| r.starts_with(b"+")) {
                    c.db = Some(db_index);
                }
                break Ok((replies, c));
            }
            Err(_) if !fresh => conn = None,
            Err(e) => break Err(e),
        }
    };
    let (replies, c) = replies?;
    let Replies {
        auth: auth_reply,
        select: select_reply,
        restores,
        complete,
    } = replies;
    if complete {
        ctx.server.migrate_conns.put(target, c);
    }
    let mut target_error: Option<Vec<u8>> = None;
    let mut deleted: Vec<&[u8]> = Vec::new();
    let socket_error = !complete;
    for ((key, _, _), reply) in keys.iter().zip(&restores) {
        let failed = [
            auth_reply.as_deref(),
            select_reply.as_deref(),
            Some(&reply[..]),
        ]
        .into_iter()
        .flatten()
        .find(|r| r.starts_with(b"-"));
        match failed {
            Some(error) => {
                target_error.get_or_insert_with(|| error.to_vec());
            }
            None if !o.copy => {
                let db = ctx.db();
                db.delete(key, now_ms, false);
                db.signal(EventClass::GENERIC, "del", key);
                deleted.push(key);
            }
            None => {}
        }
    }
    // What the target took is gone here: the stream gets one DEL of it.
    if !o.copy {
        match deleted.is_empty() {
            true => ctx.server.propagate.suppress(),
            false => {
                let mut del: Vec<&[u8]> = vec![b"DEL"];
                del.extend(&deleted);
                ctx.propagate_as(&del);
            }
        }
    }
    if let Some(error) = target_error {
        let text = String::from_utf8_lossy(&error[1..]);
        return Err(CmdError::owned(format!(
            "ERR Target instance replied with error: {}",
            text.trim_end()
        )));
    }
    if socket_error {
        return Err(io_error(false));
    }
    ctx.out().ok();
    Ok(())
}
