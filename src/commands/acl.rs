//! ACL: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, LOG,
//! GENPASS, DRYRUN, SAVE, LOAD, HELP, answering as Redis 7.0 does. The
//! users and the log are `crate::acl`'s; this file only parses and
//! replies.

use super::{c_str, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::protocol::Args;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("acl|setuser", acl_setuser),
    ("acl|getuser", acl_getuser),
    ("acl|deluser", acl_deluser),
    ("acl|list", acl_list),
    ("acl|users", acl_users),
    ("acl|whoami", acl_whoami),
    ("acl|cat", acl_cat),
    ("acl|log", acl_log),
    ("acl|genpass", acl_genpass),
    ("acl|dryrun", acl_dryrun),
    ("acl|save", acl_save),
    ("acl|load", acl_load),
    ("acl|help", acl_help),
];

/// ACL's answer to a subcommand given the wrong number of arguments.
fn syntax_error(args: &Args) -> CmdError {
    CmdError::subcommand_syntax(args, "ACL")
}

fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

/// ACL SETUSER name rule...: all rules or none.
fn acl_setuser(ctx: &mut Ctx, args: Args) -> CmdResult {
    let name = text(&args[2]);
    if name.bytes().any(|b| b == b' ' || b == 0) {
        return Err(CmdError::Static(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    let rules: Vec<String> = args.iter().skip(3).map(text).collect();
    let pubsub_all = ctx.server.config.acl_pubsub_all();
    ctx.server
        .acl
        .set_user(&name, &rules, pubsub_all)
        .map_err(|(rule, why)| {
            CmdError::owned(format!("ERR Error in ACL SETUSER modifier '{rule}': {why}"))
        })?;
    ctx.out().ok();
    Ok(())
}

fn acl_getuser(ctx: &mut Ctx, args: Args) -> CmdResult {
    let name = text(&args[2]);
    let Some(user) = ctx.server.acl.user(&name).cloned() else {
        ctx.out().null();
        return Ok(());
    };
    let (commands, keys, channels) = user.getuser_fields();
    let out = ctx.out();
    out.map(6);
    out.bulk(b"flags");
    let flags = user.flags();
    out.set(flags.len());
    for flag in flags {
        out.bulk(flag.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(user.passwords().len());
    for hash in user.passwords() {
        out.bulk(hash.as_bytes());
    }
    for (field, value) in [
        ("commands", commands),
        ("keys", keys),
        ("channels", channels),
    ] {
        out.bulk(field.as_bytes());
        out.bulk(value.as_bytes());
    }
    out.bulk(b"selectors");
    out.array(0);
    Ok(())
}

/// ACL DELUSER name...: the users go, and their connections with them.
fn acl_deluser(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.iter().skip(2).any(|a| a == b"default") {
        return Err(CmdError::Static("ERR The 'default' user cannot be removed"));
    }
    let mut deleted = 0;
    for name in args.iter().skip(2).map(text) {
        if ctx.server.acl.delete_user(&name) {
            deleted += 1;
            disconnect_user(ctx, &name);
        }
    }
    ctx.out().int(deleted);
    Ok(())
}

/// Closes every connection authenticated as `name` (this one after its
/// reply).
fn disconnect_user(ctx: &mut Ctx, name: &str) {
    let mut doomed = Vec::new();
    ctx.peers.for_each_session(&mut |s| {
        if s.user_name() == name {
            doomed.push(s.id);
        }
    });
    ctx.server.kill_requests.extend(doomed);
    if ctx.session.user_name() == name {
        ctx.session.close_after_reply = true;
    }
}

fn acl_list(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let lines: Vec<String> = ctx
        .server
        .acl
        .users()
        .map(|u| format!("user {} {}", u.name, u.describe()))
        .collect();
    let out = ctx.out();
    out.array(lines.len());
    for line in lines {
        out.bulk(line.as_bytes());
    }
    Ok(())
}

fn acl_users(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let names: Vec<String> = ctx.server.acl.users().map(|u| u.name.clone()).collect();
    let out = ctx.out();
    out.array(names.len());
    for name in names {
        out.bulk(name.as_bytes());
    }
    Ok(())
}

fn acl_whoami(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let name = ctx.session.user_name().to_string();
    ctx.out().bulk(name.as_bytes());
    Ok(())
}

/// ACL CAT [category]: the categories, or the commands (subcommands as
/// `parent|sub`) in one, in the command table's order.
fn acl_cat(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 3 {
        return Err(syntax_error(&args));
    }
    let out = ctx.out();
    if args.len() == 2 {
        out.array(crate::acl::CATEGORIES.len());
        for category in crate::acl::CATEGORIES {
            out.bulk(category.as_bytes());
        }
        return Ok(());
    }
    let wanted = text(&args[2]).to_ascii_lowercase();
    if !crate::acl::CATEGORIES.contains(&wanted.as_str()) {
        return Err(CmdError::with_arg(
            "ERR Unknown category '",
            c_str(&args[2], 128),
            "'",
        ));
    }
    let names: Vec<String> = crate::command_table::all_with_subcommands()
        .filter(|(c, parent)| crate::acl::categories(c, *parent).has(&wanted))
        .map(|(c, parent)| super::full_name(c, parent))
        .collect();
    out.array(names.len());
    for name in names {
        out.bulk(name.as_bytes());
    }
    Ok(())
}

/// ACL LOG [count | RESET]: the newest entries first (10 by default).
fn acl_log(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 3 {
        return Err(syntax_error(&args));
    }
    let mut count = 10;
    if args.len() == 3 {
        if is(&args[2], "reset") {
            ctx.server.acl.reset_log();
            ctx.out().ok();
            return Ok(());
        }
        count = int_arg(&args[2])?.max(0) as usize;
    }
    let now_ms = ctx.now_ms;
    let entries: Vec<crate::acl::LogEntry> =
        ctx.server.acl.log_entries().take(count).cloned().collect();
    let out = ctx.out();
    out.array(entries.len());
    for e in entries {
        out.map(7);
        out.bulk(b"count");
        out.int(e.count as i64);
        for (field, value) in [
            ("reason", e.reason),
            ("context", e.context),
            ("object", e.object.as_str()),
            ("username", e.username.as_str()),
        ] {
            out.bulk(field.as_bytes());
            out.bulk(value.as_bytes());
        }
        out.bulk(b"age-seconds");
        out.double((now_ms - e.created_ms).max(0) as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
    }
    Ok(())
}

/// ACL GENPASS [bits]: random hex, 256 bits by default.
fn acl_genpass(ctx: &mut Ctx, args: Args) -> CmdResult {
    use rand::RngCore;
    if args.len() > 3 {
        return Err(syntax_error(&args));
    }
    let bits = if args.len() == 3 {
        int_arg(&args[2])?
    } else {
        256
    };
    if !(1..=4096).contains(&bits) {
        return Err(CmdError::Static(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
        ));
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    ctx.out().bulk(&hex.as_bytes()[..chars]);
    Ok(())
}

/// ACL DRYRUN user command [arg...]: `OK`, or why not (as a string).
fn acl_dryrun(ctx: &mut Ctx, args: Args) -> CmdResult {
    let name = text(&args[2]);
    let Some(user) = ctx.server.acl.user(&name).cloned() else {
        return Err(CmdError::owned(format!("ERR User '{name}' not found")));
    };
    let rest = args.skip(3);
    let Some(top) = super::lookup(&args[3]) else {
        return Err(CmdError::owned(format!(
            "ERR Command '{}' not found",
            text(&args[3])
        )));
    };
    let (cmd, parent) = match (top.subcommands.is_empty(), rest.len() >= 2) {
        (false, true) => match top.subcommand(rest.get(1)) {
            Some(sub) => (sub, Some(top)),
            None => {
                return Err(CmdError::owned(format!(
                    "ERR Command '{}' not found",
                    text(&args[3])
                )))
            }
        },
        _ => (top, None),
    };
    if !cmd.arity_ok(rest.len()) {
        let full = parent.map_or(cmd.name.to_string(), |p| format!("{}|{}", p.name, cmd.name));
        return Err(CmdError::owned(format!(
            "ERR wrong number of arguments for '{full}' command"
        )));
    }
    match user.check(cmd, parent, &rest) {
        Ok(()) => ctx.out().ok(),
        Err(denied) => {
            let why = denied.dryrun_message(cmd, parent);
            ctx.out().bulk(why.as_bytes());
        }
    }
    Ok(())
}

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

/// ACL SAVE: every user to `aclfile`, replaced whole.
fn acl_save(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let Some(path) = ctx.server.config.aclfile_path() else {
        return Err(CmdError::Static(NO_ACL_FILE));
    };
    let text: String = ctx
        .server
        .acl
        .users()
        .map(|u| format!("user {} {}\n", u.name, u.describe()))
        .collect();
    let mut temp = path.clone().into_os_string();
    temp.push(format!(".tmp-{}", std::process::id()));
    if let Err(e) = crate::files::replace_file(&path, std::path::Path::new(&temp), text.as_bytes())
    {
        tracing::warn!("Opening temp ACL file for ACL SAVE: {e}");
        return Err(CmdError::Static(
            "ERR There was an error trying to save the ACLs. Please check the server logs for more information",
        ));
    }
    ctx.out().ok();
    Ok(())
}

/// ACL LOAD: the users of `aclfile` replace all (none if it is wrong).
fn acl_load(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let Some(path) = ctx.server.config.aclfile_path() else {
        return Err(CmdError::Static(NO_ACL_FILE));
    };
    let pubsub_all = ctx.server.config.acl_pubsub_all();
    let users = std::fs::read_to_string(&path)
        .map_err(|e| format!("Error loading ACLs, opening file '{}': {e}", path.display()))
        .and_then(|text| crate::acl::parse_users(&text, pubsub_all));
    match users {
        Ok(users) => {
            ctx.server.acl.replace_users(users);
            ctx.out().ok();
            Ok(())
        }
        Err(e) => Err(CmdError::owned(format!("ERR {e}"))),
    }
}

fn acl_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    );
    Ok(())
}
