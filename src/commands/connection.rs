//! Connection commands: PING, ECHO, QUIT, SELECT, HELLO, RESET, CLIENT.

use super::{db_index_arg, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::blocking::Unblock;
use crate::connection::{ClientType, Session};
use crate::protocol::Args;
use crate::REDIS_COMPAT_VERSION;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("ping", ping),
    ("echo", echo),
    ("quit", quit),
    ("select", select),
    ("hello", hello),
    ("reset", reset),
    ("auth", auth),
    ("client|id", client_id),
    ("client|setname", client_setname),
    ("client|getname", client_getname),
    ("client|list", client_list),
    ("client|info", client_info),
    ("client|kill", client_kill),
    ("client|unblock", client_unblock),
    ("client|setinfo", client_setinfo),
    ("client|no-evict", client_no_evict),
    ("client|reply", client_reply),
    ("client|getredir", client_getredir),
    ("client|tracking", client_tracking),
    ("client|caching", client_caching),
    ("client|trackinginfo", client_trackinginfo),
    ("client|pause", client_pause),
    ("client|unpause", client_unpause),
    ("client|no-touch", client_no_touch),
    ("client|help", client_help),
];

fn ping(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() <= 2 && ctx.session.is_subscribed() && !ctx.session.reply.resp3 {
        // Subscribed in RESP2: PING answers in the shape of a message.
        let out = ctx.out();
        out.array(2);
        out.bulk(b"pong");
        out.bulk(if args.len() == 2 { &args[1] } else { b"" });
        return Ok(());
    }
    match args.len() {
        1 => ctx.out().simple("PONG"),
        2 => ctx.out().bulk(&args[1]),
        _ => return Err(CmdError::wrong_arity("ping")),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx, args: Args) -> CmdResult {
    // From the primary or the AOF: a soft deadline (issue 42) in a form
    // redis-server ignores; it goes on to this server's own AOF and
    // replicas.
    let soft = crate::db::soft_deadlines::from_echo_message(&args[1]);
    if let (Some((soft_ms, key)), true) = (soft, ctx.obeys_client()) {
        ctx.db().set_soft_deadline(key, soft_ms);
        ctx.propagate_as(&[b"ECHO", &args[1]]);
        ctx.server.propagate.force();
    }
    ctx.out().bulk(&args[1]);
    Ok(())
}

fn quit(ctx: &mut Ctx, _args: Args) -> CmdResult {
    ctx.out().ok();
    ctx.session.close_after_reply = true;
    Ok(())
}

fn select(ctx: &mut Ctx, args: Args) -> CmdResult {
    if ctx.server.cluster.is_some() {
        // Parsed first, as Redis's `getIntFromObjectOrReply`.
        let index =
            crate::protocol::request::parse_i64(&args[1]).filter(|n| i32::try_from(*n).is_ok());
        let Some(index) = index else {
            return Err(db_index_arg(&args[1], 0, None)
                .err()
                .unwrap_or(CmdError::NotInteger));
        };
        if index != 0 {
            return Err(CmdError::Static(
                "ERR SELECT is not allowed in cluster mode",
            ));
        }
    }
    ctx.session.db = db_index_arg(&args[1], ctx.server.dbs.len(), None)?;
    ctx.out().ok();
    Ok(())
}

/// Names may not contain spaces or control characters (Redis's rule).
fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn hello(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut resp3 = ctx.session.reply.resp3;
    if args.len() >= 2 {
        match int_arg(&args[1]) {
            Ok(2) => resp3 = false,
            Ok(3) => resp3 = true,
            Ok(_) => return Err(CmdError::Static("NOPROTO unsupported protocol version")),
            Err(_) => {
                return Err(CmdError::Static(
                    "ERR Protocol version is not an integer or out of range",
                ))
            }
        }
    }
    let mut name = None;
    let mut authenticated = ctx.session.authenticated;
    let mut i = 2;
    while i < args.len() {
        let remaining = args.len() - i - 1;
        if is(&args[i], "AUTH") && remaining >= 2 {
            check_credentials(ctx, args.get(i + 1), args.get(i + 2), args.get(0))?;
            authenticated = true;
            i += 3;
        } else if is(&args[i], "SETNAME") && remaining >= 1 {
            if !valid_client_name(&args[i + 1]) {
                return Err(bad_name());
            }
            name = Some(String::from_utf8_lossy(&args[i + 1]).into_owned());
            i += 2;
        } else {
            return Err(CmdError::with_arg(
                "ERR Syntax error in HELLO option '",
                &args[i],
                "'",
            ));
        }
    }
    if !authenticated {
        return Err(CmdError::Static(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    ctx.session.authenticated = true;
    if let Some(name) = name {
        ctx.session.name = name;
    }
    ctx.session.reply.resp3 = resp3;
    let id = ctx.session.id as i64;
    let mode: &[u8] = if ctx.server.cluster.is_some() {
        b"cluster"
    } else {
        b"standalone"
    };
    let out = ctx.out();
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_COMPAT_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(id);
    out.bulk(b"mode");
    out.bulk(mode);
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
    Ok(())
}

const WRONGPASS: CmdError =
    CmdError::Static("WRONGPASS invalid username-password pair or user is disabled.");

/// Checks a username and password against the only user, `default`.
/// A failure counts in INFO's `acl_access_denied_auth`.
fn check_credentials(ctx: &mut Ctx, user: &[u8], pass: &[u8], command: &[u8]) -> CmdResult {
    if ctx.server.acl.authenticate(user, pass) {
        ctx.session.auth_failures = 0;
        ctx.session.user = if user == b"default" {
            String::new()
        } else {
            String::from_utf8_lossy(user).into_owned()
        };
        Ok(())
    } else {
        let (who, max) = (
            String::from_utf8_lossy(user).into_owned(),
            ctx.server.config.acllog_max_len,
        );
        let tracker = ctx.server.tracking.tracker(ctx.session.id);
        let info = ctx.session.info_line(ctx.now_ms, tracker, None);
        let object = String::from_utf8_lossy(command).into_owned();
        ctx.server
            .acl
            .log("auth", "toplevel", object, who, info, ctx.now_ms, max);
        ctx.server.stats.acl_access_denied_auth += 1;
        ctx.session.auth_failures = ctx.session.auth_failures.saturating_add(1);
        if let Some(delay) = auth_delay_ms(ctx.session.auth_failures) {
            ctx.session.paused_until_ms = ctx.now_ms + delay;
        }
        Err(WRONGPASS)
    }
}

/// Wrong passwords a connection may try at full speed.
const FREE_AUTH_FAILURES: u32 = 3;
/// Then its next request waits this long, doubling per failure up to
/// `AUTH_DELAY_MAX_MS`: guessing goes from millions a second per
/// connection to about one.
const AUTH_DELAY_BASE_MS: i64 = 100;
const AUTH_DELAY_MAX_MS: i64 = 1000;

/// How long a connection pauses after its `failures`-th wrong password.
fn auth_delay_ms(failures: u32) -> Option<i64> {
    let past_free = failures
        .checked_sub(FREE_AUTH_FAILURES)
        .filter(|&n| n > 0)?;
    Some((AUTH_DELAY_BASE_MS << (past_free - 1).min(10)).min(AUTH_DELAY_MAX_MS))
}

fn auth(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (user, pass): (&[u8], &[u8]) = match args.len() {
        2 => (b"default", args.get(1)),
        3 => (args.get(1), args.get(2)),
        _ => return Err(CmdError::Syntax),
    };
    if args.len() == 2 && ctx.server.acl.default_nopass() {
        return Err(CmdError::Static(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ));
    }
    check_credentials(ctx, user, pass, args.get(0))?;
    ctx.session.authenticated = true;
    ctx.out().ok();
    Ok(())
}

fn bad_name() -> CmdError {
    CmdError::Static("ERR Client names cannot contain spaces, newlines or special characters.")
}

fn reset(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let open = ctx.server.acl.default_is_open();
    ctx.session.reset(open);
    ctx.server.forget_client(ctx.session.id);
    ctx.out().simple("RESET");
    Ok(())
}

fn client_id(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let id = ctx.session.id as i64;
    ctx.out().int(id);
    Ok(())
}

fn client_setname(ctx: &mut Ctx, args: Args) -> CmdResult {
    if !valid_client_name(&args[2]) {
        return Err(bad_name());
    }
    ctx.session.name = String::from_utf8_lossy(&args[2]).into_owned();
    ctx.out().ok();
    Ok(())
}

fn client_getname(ctx: &mut Ctx, _args: Args) -> CmdResult {
    if ctx.session.name.is_empty() {
        ctx.out().null();
    } else {
        let name = ctx.session.name.clone();
        ctx.out().bulk(name.as_bytes());
    }
    Ok(())
}

fn client_list(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut wanted_ids: Option<Vec<u64>> = None;
    let mut wanted_type: Option<ClientType> = None;
    if args.len() > 2 {
        if is(&args[2], "ID") && args.len() > 3 {
            let mut ids = Vec::new();
            for arg in args.iter().skip(3) {
                match int_arg(arg) {
                    Ok(id) if id > 0 => ids.push(id as u64),
                    _ => return Err(CmdError::Static("ERR Invalid client ID")),
                }
            }
            wanted_ids = Some(ids);
        } else if is(&args[2], "TYPE") && args.len() == 4 {
            wanted_type =
                Some(ClientType::from_name(&args[3]).ok_or_else(|| {
                    CmdError::with_arg("ERR Unknown client type '", &args[3], "'")
                })?);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let now_ms = ctx.now_ms;
    let tracking = &ctx.server.tracking;
    let mut lines: Vec<(u64, String)> = Vec::new();
    let mut add = |s: &Session, running: Option<&Args>| {
        if wanted_type.is_none_or(|t| t == s.client_type()) {
            lines.push((s.id, s.info_line(now_ms, tracking.tracker(s.id), running)));
        }
    };
    add(ctx.session, Some(&args));
    ctx.peers.for_each_session(&mut |s| add(s, None));
    lines.sort_by_key(|(id, _)| *id);
    let mut text = String::new();
    for (id, line) in lines {
        if wanted_ids.as_ref().is_none_or(|ids| ids.contains(&id)) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

fn client_info(ctx: &mut Ctx, args: Args) -> CmdResult {
    let tracker = ctx.server.tracking.tracker(ctx.session.id);
    let mut line = ctx.session.info_line(ctx.now_ms, tracker, Some(&args));
    line.push('\n');
    ctx.out().verbatim(line.as_bytes());
    Ok(())
}

/// CLIENT KILL addr (the old form: `+OK` or `No such client`, and the
/// caller may kill itself) or CLIENT KILL with filters (ID, TYPE, ADDR,
/// LADDR, USER, SKIPME; answers how many): the clients go when this
/// command is done (`ServerState::kill_requests`), as Redis frees them.
fn client_kill(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut addr: Option<&[u8]> = None;
    let mut laddr: Option<&[u8]> = None;
    let mut client_type: Option<ClientType> = None;
    let mut id: Option<u64> = None;
    let mut max_age_s: Option<i64> = None;
    let mut user: Option<String> = None;
    let mut skipme = true;
    let old_form = args.len() == 3;
    if old_form {
        addr = Some(&args[2]);
        skipme = false;
    } else {
        let mut i = 2;
        while i < args.len() {
            let (option, value) = (&args[i], args.iter().nth(i + 1));
            let Some(value) = value else {
                return Err(CmdError::Syntax);
            };
            if is(option, "ID") {
                match int_arg(value) {
                    Ok(n) if n >= 1 => id = Some(n as u64),
                    _ => return Err(CmdError::Static("ERR client-id should be greater than 0")),
                }
            } else if is(option, "MAXAGE") {
                // Redis 7.4's filter: connections at least this old.
                let age = int_arg(value).map_err(|_| {
                    CmdError::Static("ERR maxage is not an integer or out of range")
                })?;
                if age <= 0 {
                    return Err(CmdError::Static("ERR maxage should be greater than 0"));
                }
                max_age_s = Some(age);
            } else if is(option, "TYPE") {
                client_type =
                    Some(ClientType::from_name(value).ok_or_else(|| {
                        CmdError::with_arg("ERR Unknown client type '", value, "'")
                    })?);
            } else if is(option, "ADDR") {
                addr = Some(value);
            } else if is(option, "LADDR") {
                laddr = Some(value);
            } else if is(option, "USER") {
                let name = String::from_utf8_lossy(value).into_owned();
                if ctx.server.acl.user(&name).is_none() {
                    return Err(CmdError::with_arg("ERR No such user '", value, "'"));
                }
                user = Some(name);
            } else if is(option, "SKIPME") {
                skipme = match () {
                    () if is(value, "YES") => true,
                    () if is(value, "NO") => false,
                    () => return Err(CmdError::Syntax),
                };
            } else {
                return Err(CmdError::Syntax);
            }
            i += 2;
        }
    }
    let now_s = ctx.now_ms / 1000;
    let matches = |s: &Session| {
        max_age_s.is_none_or(|max| now_s - s.created_ms / 1000 >= max)
            && user.as_ref().is_none_or(|u| u == s.user_name())
            && addr.is_none_or(|a| a == s.addr.as_bytes())
            && laddr.is_none_or(|a| a == s.laddr.as_bytes())
            && client_type.is_none_or(|t| t == s.client_type())
            && id.is_none_or(|id| id == s.id)
    };
    let mut doomed = Vec::new();
    ctx.peers.for_each_session(&mut |s| {
        if matches(s) {
            doomed.push(s.id);
        }
    });
    let me = !skipme && matches(ctx.session);
    let killed = doomed.len() + usize::from(me);
    ctx.server.kill_requests.extend(doomed);
    if old_form {
        if killed == 0 {
            return Err(CmdError::Static("ERR No such client"));
        }
        ctx.out().ok();
    } else {
        ctx.out().int(killed as i64);
    }
    // Closed once the reply is out.
    if me {
        ctx.session.close_after_reply = true;
    }
    Ok(())
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends another client's wait (the loop
/// answers it after this command); 1 if it was blocked.
fn client_unblock(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 4 {
        return Err(CmdError::Static(
            "ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.",
        ));
    }
    let id = int_arg(&args[2])?;
    let how = match args.iter().nth(3) {
        None => Unblock::Timeout,
        Some(a) if is(a, "TIMEOUT") => Unblock::Timeout,
        Some(a) if is(a, "ERROR") => Unblock::Error,
        Some(_) => {
            return Err(CmdError::Static(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let unblocked = u64::try_from(id).is_ok_and(|id| ctx.server.blocking.request_unblock(id, how));
    ctx.out().int(i64::from(unblocked));
    Ok(())
}

fn client_setinfo(ctx: &mut Ctx, args: Args) -> CmdResult {
    let value = String::from_utf8_lossy(&args[3]).into_owned();
    if !valid_client_name(&args[3]) {
        return Err(CmdError::with_arg(
            "ERR ",
            &args[2].to_ascii_lowercase(),
            " cannot contain spaces, newlines or special characters.",
        ));
    }
    if is(&args[2], "LIB-NAME") {
        ctx.session.lib_name = value;
    } else if is(&args[2], "LIB-VER") {
        ctx.session.lib_ver = value;
    } else {
        return Err(CmdError::with_arg(
            "ERR Unrecognized option '",
            &args[2],
            "'",
        ));
    }
    ctx.out().ok();
    Ok(())
}

fn on_off(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "on") {
        Ok(true)
    } else if is(arg, "off") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

fn client_no_evict(ctx: &mut Ctx, args: Args) -> CmdResult {
    ctx.session.no_evict = on_off(&args[2])?;
    ctx.out().ok();
    Ok(())
}

/// CLIENT PAUSE timeout-ms [WRITE|ALL] (see `pause`), with Redis's
/// checks in its order: the mode, then the timeout.
fn client_pause(ctx: &mut Ctx, args: Args) -> CmdResult {
    use crate::pause::{PauseKind, PausePurpose};
    if args.len() > 4 {
        return Err(CmdError::subcommand_syntax(&args, "CLIENT"));
    }
    let kind = match (args.len() > 3).then(|| &args[3]) {
        None => PauseKind::All,
        Some(mode) if is(mode, "write") => PauseKind::Write,
        Some(mode) if is(mode, "all") => PauseKind::All,
        Some(_) => {
            return Err(CmdError::Static(
                "ERR CLIENT PAUSE mode must be WRITE or ALL",
            ))
        }
    };
    let ms: i64 = int_arg(&args[2])
        .map_err(|_| CmdError::Static("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    // Redis 7.0 adds the time without an overflow check: a timeout near
    // i64::MAX wraps to a past end, a pause that ends at once.
    let end_ms = match ms {
        0 => 0,
        ms => ms.wrapping_add(ctx.now_ms),
    };
    ctx.server
        .pause_clients(PausePurpose::ClientCommand, kind, end_ms);
    ctx.out().ok();
    Ok(())
}

fn client_unpause(ctx: &mut Ctx, _args: Args) -> CmdResult {
    ctx.server
        .unpause_clients(crate::pause::PausePurpose::ClientCommand);
    ctx.out().ok();
    Ok(())
}

fn client_no_touch(ctx: &mut Ctx, args: Args) -> CmdResult {
    ctx.session.no_touch = on_off(&args[2])?;
    ctx.out().ok();
    Ok(())
}

/// CLIENT REPLY ON|OFF|SKIP (see `ReplyMode`): only ON is answered; SKIP
/// does nothing while replies are off, as in Redis.
fn client_reply(ctx: &mut Ctx, args: Args) -> CmdResult {
    use crate::connection::ReplyMode;
    let mode = &mut ctx.session.reply_mode;
    if is(&args[2], "on") {
        *mode = ReplyMode::On;
        ctx.out().ok();
    } else if is(&args[2], "off") {
        *mode = ReplyMode::Off;
    } else if is(&args[2], "skip") {
        if *mode != ReplyMode::Off {
            *mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(CmdError::Syntax);
    }
    Ok(())
}

/// CLIENT GETREDIR: -1, as Redis answers a client without tracking (lapse
/// has no client-side caching yet).
/// CLIENT GETREDIR: the redirect target's id, 0 when tracking without
/// one, -1 when not tracking.
fn client_getredir(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let redirect = redirect_id(ctx.server.tracking.tracker(ctx.session.id));
    ctx.out().int(redirect);
    Ok(())
}

fn redirect_id(tracker: Option<&crate::tracking::Tracker>) -> i64 {
    tracker.map_or(-1, |t| t.redirect.map_or(0, |r| r.client as i64))
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN]
/// [OPTOUT] [NOLOOP], with Redis 7.0's checks and errors in its order.
fn client_tracking(ctx: &mut Ctx, args: Args) -> CmdResult {
    use crate::tracking::{overlap, Tracker};
    let mut options = Tracker {
        token: ctx.session.token,
        ..Tracker::default()
    };
    let mut i = 3;
    while i < args.len() {
        let more = i + 1 < args.len();
        let option = &args[i];
        if is(option, "redirect") && more {
            i += 1;
            if options.redirect.is_some() {
                return Err(CmdError::Static(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = int_arg(&args[i])?;
            let mut target = None;
            ctx.peers.for_each_session(&mut |s| {
                if s.id as i64 == id {
                    target = Some(crate::pubsub::Subscriber {
                        client: s.id,
                        token: s.token,
                    });
                }
            });
            if id == ctx.session.id as i64 {
                target = Some(crate::pubsub::Subscriber {
                    client: ctx.session.id,
                    token: ctx.session.token,
                });
            }
            let Some(target) = target else {
                return Err(CmdError::Static(
                    "ERR The client ID you want redirect to does not exist",
                ));
            };
            options.redirect = Some(target);
        } else if is(option, "bcast") {
            options.bcast = true;
        } else if is(option, "optin") {
            options.optin = true;
        } else if is(option, "optout") {
            options.optout = true;
        } else if is(option, "noloop") {
            options.noloop = true;
        } else if is(option, "prefix") && more {
            i += 1;
            options.prefixes.push(args[i].to_vec());
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if is(&args[2], "off") {
        ctx.server.set_tracking(ctx.session.id, None);
        ctx.out().ok();
        return Ok(());
    }
    if !is(&args[2], "on") {
        return Err(CmdError::Syntax);
    }
    let current = ctx.server.tracking.tracker(ctx.session.id);
    if !options.bcast && !options.prefixes.is_empty() {
        return Err(CmdError::Static(
            "ERR PREFIX option requires BCAST mode to be enabled",
        ));
    }
    if current.is_some_and(|t| t.bcast != options.bcast) {
        return Err(CmdError::Static(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if options.bcast && (options.optin || options.optout) {
        return Err(CmdError::Static(
            "ERR OPTIN and OPTOUT are not compatible with BCAST",
        ));
    }
    if options.optin && options.optout {
        return Err(CmdError::Static(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if current.is_some_and(|t| (options.optin && t.optout) || (options.optout && t.optin)) {
        return Err(CmdError::Static(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    let held: &[Vec<u8>] = current.map_or(&[], |t| &t.prefixes);
    for (n, prefix) in options.prefixes.iter().enumerate() {
        if let Some(old) = held.iter().find(|old| overlap(old, prefix)) {
            return Err(CmdError::owned(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                String::from_utf8_lossy(prefix),
                String::from_utf8_lossy(old)
            )));
        }
        if let Some(other) = options.prefixes[n + 1..]
            .iter()
            .find(|o| overlap(prefix, o))
        {
            return Err(CmdError::owned(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                String::from_utf8_lossy(prefix),
                String::from_utf8_lossy(other)
            )));
        }
    }
    ctx.server.set_tracking(ctx.session.id, Some(options));
    ctx.out().ok();
    Ok(())
}

/// CLIENT CACHING YES|NO: whether the next command's keys are tracked
/// (OPTIN / OPTOUT).
fn client_caching(ctx: &mut Ctx, args: Args) -> CmdResult {
    let Some(t) = ctx.server.tracking.tracker_mut(ctx.session.id) else {
        return Err(CmdError::Static(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    };
    if is(&args[2], "yes") {
        if !t.optin {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(&args[2], "no") {
        if !t.optout {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(CmdError::Syntax);
    }
    t.caching = true;
    ctx.out().ok();
    Ok(())
}

/// CLIENT TRACKINGINFO: flags, redirect and prefixes, as Redis 7.0.
fn client_trackinginfo(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let tracker = ctx.server.tracking.tracker(ctx.session.id).cloned();
    let mut flags: Vec<&str> = Vec::new();
    match &tracker {
        None => flags.push("off"),
        Some(t) => {
            flags.push("on");
            let named = [
                (t.bcast, "bcast"),
                (t.optin, "optin"),
                (t.optin && t.caching, "caching-yes"),
                (t.optout, "optout"),
                (t.optout && t.caching, "caching-no"),
                (t.noloop, "noloop"),
                (t.broken_redirect, "broken_redirect"),
            ];
            flags.extend(named.iter().filter(|(on, _)| *on).map(|(_, n)| *n));
        }
    }
    let out = ctx.out();
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for flag in flags {
        out.bulk(flag.as_bytes());
    }
    out.bulk(b"redirect");
    out.int(redirect_id(tracker.as_ref()));
    out.bulk(b"prefixes");
    let prefixes = tracker.map(|t| t.prefixes).unwrap_or_default();
    out.array(prefixes.len());
    for prefix in prefixes {
        out.bulk(&prefix);
    }
    Ok(())
}

/// CLIENT HELP: Redis 7.0's text (lapse's 7.2 additions, SETINFO and
/// NO-TOUCH, are left out of it, as 7.0 has them not).
fn client_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "CLIENT",
        &[
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::harness::Harness;

    #[test]
    fn hello_switches_protocol() {
        let mut h = Harness::new();
        assert!(h
            .run("HELLO 3")
            .starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"));
        assert_eq!(h.run("GET nokey"), "_\r\n");
        assert!(h.run("HELLO 2").starts_with("*14\r\n"));
        assert_eq!(h.run("GET nokey"), "$-1\r\n");
        assert_eq!(
            h.run("HELLO 4"),
            "-NOPROTO unsupported protocol version\r\n"
        );
        assert_eq!(
            h.run("HELLO 3 SETNAME"),
            "-ERR Syntax error in HELLO option 'SETNAME'\r\n"
        );
        assert!(h.run("HELLO 3 SETNAME me").starts_with('%'));
        assert_eq!(h.run("CLIENT GETNAME"), "$2\r\nme\r\n");
    }

    #[test]
    fn select_checks_range() {
        let mut h = Harness::new();
        assert_eq!(h.run("SELECT 15"), "+OK\r\n");
        assert_eq!(h.run("SELECT 16"), "-ERR DB index is out of range\r\n");
        assert_eq!(h.run("SELECT -1"), "-ERR DB index is out of range\r\n");
        assert_eq!(
            h.run("SELECT x"),
            "-ERR value is not an integer or out of range\r\n"
        );
    }
}
