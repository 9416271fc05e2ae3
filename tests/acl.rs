//! ACL users against a real redis-server: the same session on lapse and
//! on redis-server 7.0, replies compared byte for byte (ACL LOG's ages
//! and client lines masked): SETUSER and its errors, GETUSER, LIST,
//! USERS, WHOAMI, AUTH as a user, -NOPERM for commands, keys and
//! channels (top level, in MULTI, in scripts), DRYRUN, GENPASS, DELUSER
//! closing the user's connections, requirepass as the default user's
//! password, and the ACL file (SAVE, LOAD, aclfile at startup).

mod common;

use common::{temp_dir, Raw, Server};

/// An ACL LOG reply with what differs between runs masked: the age and
/// the client line (ports, ids, buffer sizes).
fn masked_log(reply: String) -> String {
    let mut out = Vec::new();
    let mut mask_next = false;
    for line in reply.split("\r\n") {
        if mask_next && !line.starts_with('$') {
            out.push("<masked>".to_string());
            mask_next = false;
            continue;
        }
        if line == "age-seconds" || line == "client-info" {
            mask_next = true;
        }
        if !(mask_next && line.starts_with('$')) {
            out.push(line.to_string());
        }
    }
    out.join("|")
}

fn session(server: &Server) -> Vec<String> {
    let mut admin = server.raw();
    let mut seen = Vec::new();
    let run = |r: &mut Raw, args: &[&str]| r.cmd(args);
    for args in [
        &[
            "ACL", "SETUSER", "alice", "on", ">pw", "~cache:*", "+@hash", "+get",
        ][..],
        &[
            "ACL",
            "SETUSER",
            "bob",
            "on",
            "nopass",
            "%R~r:*",
            "%W~w:*",
            "&news.*",
            "+@all",
            "-@dangerous",
        ],
        &["ACL", "SETUSER", "x", "+nosuch"],
        &["ACL", "SETUSER", "x", "foo"],
        &["ACL", "SETUSER", "x", "~*", "~a"],
        &["ACL", "SETUSER", "x", "&*", "&a"],
        &["ACL", "SETUSER", "x", "#abc"],
        &["ACL", "SETUSER", "x", "<nothere"],
        &["ACL", "SETUSER", "x", "%X~a"],
        &["ACL", "SETUSER", "x", "+client|id|x"],
        &["ACL", "SETUSER", "has space"],
        &["ACL", "GETUSER", "default"],
        &["ACL", "GETUSER", "alice"],
        &["ACL", "GETUSER", "bob"],
        &["ACL", "GETUSER", "nobody"],
        &["ACL", "LIST"],
        &["ACL", "USERS"],
        &["ACL", "WHOAMI"],
        &["ACL", "DRYRUN", "alice", "set", "k", "v"],
        &["ACL", "DRYRUN", "alice", "get", "cache:1"],
        &["ACL", "DRYRUN", "alice", "get", "other"],
        &["ACL", "DRYRUN", "bob", "publish", "chat", "m"],
        &["ACL", "DRYRUN", "bob", "set", "r:1", "v"],
        &["ACL", "DRYRUN", "nobody", "get", "k"],
        &["ACL", "DRYRUN", "alice", "nosuchcmd"],
        &["ACL", "DRYRUN", "alice", "get"],
        &["ACL", "GENPASS", "0"],
        &["ACL", "GENPASS", "x"],
        &["ACL", "DELUSER", "default"],
        &["ACL", "LOG", "RESET"],
        &["ACL", "SAVE"],
        &["ACL", "NOSUCH"],
    ] {
        seen.push(run(&mut admin, args));
    }
    assert_eq!(
        admin.cmd(&["ACL", "GENPASS"]).len(),
        "$64\r\n".len() + 64 + 2
    );
    assert_eq!(
        admin.cmd(&["ACL", "GENPASS", "5"]).len(),
        "$2\r\n".len() + 2 + 2
    );

    let mut alice = server.raw();
    for args in [
        &["AUTH", "alice", "wrong"][..],
        &["AUTH", "alice", "pw"],
        &["ACL", "WHOAMI"],
        &["SET", "cache:1", "v"],
        &["GET", "cache:1"],
        &["GET", "other"],
        &["HSET", "cache:h", "f", "v"],
        &["HGET", "other", "f"],
        &["MULTI"],
        &["GET", "cache:1"],
        &["SET", "cache:1", "v"],
        &["EXEC"],
        &["CLIENT", "ID"],
    ] {
        seen.push(run(&mut alice, args));
    }
    let list = admin.cmd(&["CLIENT", "LIST"]);
    assert!(list.contains(" user=alice "), "{list}");
    let mut bob = server.raw();
    for args in [
        &["AUTH", "bob", "anything"][..],
        &["SET", "w:1", "v"],
        &["SET", "r:1", "v"],
        &["GET", "r:1"],
        &["GET", "w:1"],
        // Keys judged by their key specs: SET without GET only writes,
        // with GET it reads too; LPUSH inserts; INCR reads and writes.
        &["SET", "w:1", "v", "GET"],
        &["LPUSH", "w:l", "a"],
        &["INCR", "w:n"],
        &["LMOVE", "r:l", "w:l", "LEFT", "RIGHT"],
        &["PUBLISH", "chat", "m"],
        &["PUBLISH", "news.today", "m"],
        &["SUBSCRIBE", "chat"],
        &["PSUBSCRIBE", "news.*"],
    ] {
        seen.push(run(&mut bob, args));
    }
    // Rules changed between MULTI's queueing and EXEC.
    let mut dave = server.raw();
    seen.push(admin.cmd(&["ACL", "SETUSER", "dave", "on", "nopass", "~*", "+@all"]));
    seen.push(dave.cmd(&["AUTH", "dave", "x"]));
    seen.push(dave.cmd(&["MULTI"]));
    seen.push(dave.cmd(&["SET", "d", "1"]));
    seen.push(dave.cmd(&["GET", "d"]));
    seen.push(admin.cmd(&["ACL", "SETUSER", "dave", "-set"]));
    seen.push(dave.cmd(&["EXEC"]));
    // SORT's BY and GET read keys named by the data: only for users who
    // may read every key.
    let mut erin = server.raw();
    seen.push(admin.cmd(&["ACL", "SETUSER", "erin", "on", "nopass", "~w:*", "+@all"]));
    seen.push(erin.cmd(&["AUTH", "erin", "x"]));
    for args in [
        &["RPUSH", "w:s", "2", "1"][..],
        &["SORT", "w:s"],
        &["SORT", "w:s", "BY", "nosort"],
        &["SORT", "w:s", "BY", "w:*"],
        &["SORT", "w:s", "GET", "#"],
        &["SORT_RO", "w:s", "GET", "w:*"],
    ] {
        seen.push(erin.cmd(args));
    }
    seen.push(dave.cmd(&["SORT", "w:s", "BY", "w:*", "GET", "#"]));
    let mut carol = server.raw();
    seen.push(admin.cmd(&[
        "ACL", "SETUSER", "carol", "on", "nopass", "~*", "+eval", "+get",
    ]));
    seen.push(carol.cmd(&["AUTH", "carol", "x"]));
    seen.push(carol.cmd(&["EVAL", "return redis.pcall('set', 'k', 'v')", "0"]));
    seen.push(carol.cmd(&["EVAL", "return redis.pcall('get', 'k')", "0"]));
    seen.push(masked_log(admin.cmd(&["ACL", "LOG"])));
    seen.push(admin.cmd(&["CLIENT", "KILL", "USER", "nobody"]));
    // DELUSER closes the user's connections.
    seen.push(admin.cmd(&["ACL", "DELUSER", "alice", "nobody"]));
    assert!(alice.is_closed(), "alice's connection stays");
    seen.push(admin.cmd(&["ACL", "USERS"]));
    // requirepass is the default user's password.
    seen.push(admin.cmd(&["CONFIG", "SET", "requirepass", "secret"]));
    seen.push(admin.cmd(&["ACL", "GETUSER", "default"]));
    let mut late = server.raw();
    seen.push(late.cmd(&["GET", "k"]));
    seen.push(late.cmd(&["AUTH", "secret"]));
    seen.push(late.cmd(&["ACL", "WHOAMI"]));
    seen.push(admin.cmd(&["CONFIG", "SET", "requirepass", ""]));
    seen.push(admin.cmd(&["AUTH", "x"]));
    seen
}

#[test]
fn acl_users_and_permissions_answer_as_redis() {
    let ours = common::same_on_lapse_and_redis(session);
    assert!(ours
        .iter()
        .any(|r| r.contains("NOPERM this user has no permissions to run the 'set' command")));
}

/// `aclfile`: loaded at startup, written by ACL SAVE, read again by ACL
/// LOAD (a broken file changes nothing); `user` lines in the config file.
#[test]
fn acl_file_and_user_directives() {
    let dir = temp_dir("aclfile");
    let file = dir.join("users.acl");
    std::fs::write(&file, "user worker on >pw ~jobs:* +@list +@connection\n").unwrap();
    let server = Server::lapse(&["--aclfile", file.to_str().unwrap()]);
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["ACL", "USERS"]),
        "*2\r\n$7\r\ndefault\r\n$6\r\nworker\r\n"
    );
    assert_eq!(
        r.cmd(&["ACL", "SETUSER", "extra", "on", "nopass", "+ping"]),
        "+OK\r\n"
    );
    assert_eq!(r.cmd(&["ACL", "SAVE"]), "+OK\r\n");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved.contains("user extra on nopass resetchannels -@all +ping\n"),
        "{saved}"
    );
    assert_eq!(r.cmd(&["ACL", "DELUSER", "extra"]), ":1\r\n");
    assert_eq!(r.cmd(&["ACL", "LOAD"]), "+OK\r\n");
    assert!(r.cmd(&["ACL", "USERS"]).contains("extra"));
    std::fs::write(&file, "user broken +nosuch\n").unwrap();
    let err = r.cmd(&["ACL", "LOAD"]);
    assert!(
        err.starts_with("-ERR /line 1: Unknown command or category name in ACL"),
        "{err}"
    );
    assert!(
        r.cmd(&["ACL", "USERS"]).contains("extra"),
        "a broken file changed the users"
    );
    let mut worker = server.raw();
    assert_eq!(worker.cmd(&["AUTH", "worker", "pw"]), "+OK\r\n");
    assert_eq!(worker.cmd(&["LPUSH", "jobs:1", "a"]), ":1\r\n");

    // `user` lines in the config file; beside an aclfile they are refused.
    let conf = dir.join("users.conf");
    std::fs::write(&conf, "user app on >s3 ~app:* +@read\n").unwrap();
    let server = Server::lapse(&[conf.to_str().unwrap()]);
    let mut app = server.raw();
    assert_eq!(app.cmd(&["AUTH", "app", "s3"]), "+OK\r\n");
    assert_eq!(app.cmd(&["GET", "app:1"]), "$-1\r\n");
    assert!(app.cmd(&["SET", "app:1", "v"]).starts_with("-NOPERM"));
    // CONFIG REWRITE writes every user into the config file (no aclfile).
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&["ACL", "SETUSER", "ops", "on", ">x", "+info"]),
        "+OK\r\n"
    );
    assert_eq!(admin.cmd(&["CONFIG", "REWRITE"]), "+OK\r\n");
    let rewritten = std::fs::read_to_string(&conf).unwrap();
    for line in [
        "user app on #",
        "user default on nopass ~* &* +@all",
        "user ops on #2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881 resetchannels -@all +info",
    ] {
        assert!(rewritten.contains(line), "{line} not in {rewritten}");
    }
    assert_eq!(rewritten.matches("user app ").count(), 1, "{rewritten}");
    let refused =
        common::lapse_refuses(&[conf.to_str().unwrap(), "--aclfile", file.to_str().unwrap()]);
    assert!(
        refused.contains("users defined in redis.conf and at the same setting an ACL file"),
        "{refused}"
    );
}
