//! Redis Cluster over TCP with the real tools: `redis-cli --cluster
//! create` and `check` on lapse nodes, a cluster of lapse and
//! redis-server nodes side by side (the bus spoken both ways),
//! redirections as Redis words them, failure detection, `nodes.conf`
//! read back at restart, redis-py's RedisCluster, and CLUSTER's replies
//! and errors beside a redis-server's.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{eventually, free_port, Raw, Server};

/// A lapse node in cluster mode (its own directory, a free client port,
/// a free bus port), a short node timeout so that failures show fast.
fn lapse_node(extra: &[&str]) -> Server {
    let mut args = vec!["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"];
    args.extend_from_slice(extra);
    Server::lapse(&args)
}

/// A redis-server node in cluster mode, when one is installed.
fn redis_node() -> Option<Server> {
    let cport = free_port().to_string();
    Server::redis_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-node-timeout",
        "1000",
        "--cluster-port",
        &cport,
    ])
}

/// `redis-cli --cluster <args>`: its output, or None without redis-cli.
fn cluster_tool(args: &[String]) -> Option<std::process::Output> {
    if !common::tool_present("redis-cli", "the redis-cli --cluster tests") {
        return None;
    }
    let out = Command::new("redis-cli")
        .arg("--cluster")
        .args(args)
        .output()
        .expect("run redis-cli");
    Some(out)
}

/// Creates a cluster of masters from `nodes` with redis-cli, and waits
/// until every node says it is ok.
fn create(nodes: &[&Server]) -> bool {
    create_with_replicas(nodes, 0)
}

/// `create`, with `replicas` replicas for each master.
fn create_with_replicas(nodes: &[&Server], replicas: usize) -> bool {
    let mut args = vec!["create".to_string()];
    args.extend(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)));
    args.extend(["--cluster-replicas".to_string(), replicas.to_string()]);
    args.push("--cluster-yes".into());
    let Some(out) = cluster_tool(&args) else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("[OK] All 16384 slots covered."),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for node in nodes {
        let mut r = node.raw();
        assert!(
            eventually(Duration::from_secs(20), || cluster_info(
                &mut r,
                "cluster_state"
            ) == "ok"),
            "node {} never reached cluster_state:ok: {}",
            node.port,
            r.cmd(&["CLUSTER", "NODES"])
        );
    }
    true
}

/// A field of CLUSTER INFO.
fn cluster_info(r: &mut Raw, field: &str) -> String {
    let text = r.cmd(&["CLUSTER", "INFO"]);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or("")
        .to_string()
}

/// The lines of CLUSTER NODES (the verbatim reply's text).
fn nodes_lines(r: &mut Raw) -> Vec<String> {
    r.cmd(&["CLUSTER", "NODES"])
        .lines()
        .skip(1)
        .filter(|l| l.len() > 40)
        .map(|l| l.trim_start_matches("txt:").to_string())
        .collect()
}

/// Each node's id, flags and slots as one node sees them, sorted: what
/// every node must agree on (links and times aside).
fn slot_view(r: &mut Raw) -> Vec<String> {
    let mut view: Vec<String> = nodes_lines(r)
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let flags = f[2].replace("myself,", "");
            format!("{} {} {}", f[0], flags, f[8..].join(" "))
        })
        .collect();
    view.sort();
    view
}

/// Runs a command the way a cluster client does: follows MOVED, asks
/// the importing node after an ASK, tries again after TRYAGAIN.
fn cluster_cmd(ports: &[u16], args: &[&str]) -> String {
    let mut port = ports[0];
    let mut asking = false;
    for _ in 0..50 {
        let mut r = Raw::connect(port);
        if std::mem::take(&mut asking) {
            assert_eq!(r.cmd(&["ASKING"]), "+OK\r\n");
        }
        let reply = r.cmd(args);
        let target = |rest: &str| rest.trim().rsplit(':').next().unwrap().parse().unwrap();
        if let Some(rest) = reply.strip_prefix("-MOVED ") {
            port = target(rest);
        } else if let Some(rest) = reply.strip_prefix("-ASK ") {
            port = target(rest);
            asking = true;
        } else if reply.starts_with("-TRYAGAIN") {
            std::thread::sleep(Duration::from_millis(10));
        } else {
            return reply;
        }
    }
    panic!("redirected too often: {args:?}");
}

#[test]
fn three_lapse_masters_made_by_redis_cli_serve_and_redirect() {
    let nodes = [lapse_node(&[]), lapse_node(&[]), lapse_node(&[])];
    if !create(&nodes.iter().collect::<Vec<_>>()) {
        return;
    }
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let mut r0 = nodes[0].raw();
    assert_eq!(cluster_info(&mut r0, "cluster_known_nodes"), "3");
    assert_eq!(cluster_info(&mut r0, "cluster_size"), "3");
    assert_eq!(cluster_info(&mut r0, "cluster_slots_assigned"), "16384");
    // Every node sees the same slots.
    let views: Vec<Vec<String>> = nodes.iter().map(|n| slot_view(&mut n.raw())).collect();
    assert!(views.iter().all(|v| v == &views[0]), "{views:?}");
    // Keys land on the node serving their slot; a wrong node redirects.
    let mut moved = 0;
    for i in 0..60 {
        let key = format!("key:{i}");
        let direct = r0.cmd(&["SET", &key, &i.to_string()]);
        if let Some(rest) = direct.strip_prefix("-MOVED ") {
            moved += 1;
            let slot: u16 = rest.split(' ').next().unwrap().parse().unwrap();
            assert_eq!(
                r0.cmd(&["CLUSTER", "KEYSLOT", &key]),
                format!(":{slot}\r\n")
            );
            assert_eq!(
                cluster_cmd(&ports, &["SET", &key, &i.to_string()]),
                "+OK\r\n"
            );
        } else {
            assert_eq!(direct, "+OK\r\n");
        }
        assert_eq!(
            cluster_cmd(&ports, &["GET", &key]),
            format!("${}\r\n{i}\r\n", i.to_string().len())
        );
    }
    assert!(moved > 20, "only {moved} of 60 keys were elsewhere");
    // Keys of several slots in one request; a hash tag keeps them together.
    assert_eq!(
        r0.cmd(&["MSET", "a", "1", "b", "2"]),
        "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    );
    assert_eq!(
        cluster_cmd(&ports, &["MSET", "{u}a", "1", "{u}b", "2"]),
        "+OK\r\n"
    );
    assert_eq!(
        cluster_cmd(&ports, &["MGET", "{u}a", "{u}b"]),
        "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
    assert_eq!(
        r0.cmd(&["SELECT", "1"]),
        "-ERR SELECT is not allowed in cluster mode\r\n"
    );
    assert!(common::info_field(&mut r0, "cluster", "cluster_enabled") == "1");
    // A PUBLISH on one node reaches subscribers on the others.
    let mut subscribers: Vec<Raw> = ports[1..].iter().map(|p| Raw::connect(*p)).collect();
    for sub in &mut subscribers {
        assert!(sub.cmd(&["SUBSCRIBE", "news"]).contains("subscribe"));
    }
    assert_eq!(r0.cmd(&["PUBLISH", "news", "hello"]), ":0\r\n");
    for sub in &mut subscribers {
        let message = String::from_utf8_lossy(&sub.reply()).into_owned();
        assert!(
            message.contains("news") && message.contains("hello"),
            "{message}"
        );
    }
    // Keys expire on every node without being read.
    let before: Vec<String> = ports
        .iter()
        .map(|p| common::info_field(&mut Raw::connect(*p), "keyspace", "db0"))
        .collect();
    for i in 0..300 {
        let key = format!("short:{i}");
        assert_eq!(
            cluster_cmd(&ports, &["SET", &key, "v", "PX", "200"]),
            "+OK\r\n"
        );
    }
    for (port, before) in ports.iter().zip(&before) {
        let mut r = Raw::connect(*port);
        let keys = |s: &str| s.split(',').next().unwrap_or("").to_string();
        assert!(
            eventually(Duration::from_secs(10), || keys(&common::info_field(
                &mut r, "keyspace", "db0"
            )) == keys(before)),
            "node {port} kept expired keys: {}",
            common::info_field(&mut r, "keyspace", "db0")
        );
    }
    // One slot moved by hand, as redis-cli does it: a hash keeps its
    // field's deadline and the key its TTL; while the slot is open a
    // missing key is asked for on the importing node.
    let owner = serving(ports[0], &["GET", "{moved}h"]);
    let target = *ports.iter().find(|p| **p != owner).unwrap();
    assert_eq!(
        cluster_cmd(&ports, &["HSET", "{moved}h", "f", "v", "g", "w"]),
        ":2\r\n"
    );
    assert_eq!(
        cluster_cmd(&ports, &["HEXPIRE", "{moved}h", "1000", "FIELDS", "1", "f"]),
        "*1\r\n:1\r\n"
    );
    assert_eq!(
        cluster_cmd(&ports, &["SET", "{moved}s", "v", "EX", "1000"]),
        "+OK\r\n"
    );
    let slot = Raw::connect(owner).cmd(&["CLUSTER", "KEYSLOT", "{moved}h"]);
    let slot = slot.trim().trim_start_matches(':').to_string();
    let (owner_id, target_id) = (my_id(owner), my_id(target));
    let mut src = Raw::connect(owner);
    let mut dst = Raw::connect(target);
    assert_eq!(
        dst.cmd(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &owner_id]),
        "+OK\r\n"
    );
    assert_eq!(
        src.cmd(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id]),
        "+OK\r\n"
    );
    assert_eq!(src.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot]), ":2\r\n");
    let ask = src.cmd(&["GET", "{moved}missing"]);
    assert_eq!(ask, format!("-ASK {slot} 127.0.0.1:{target}\r\n"));
    let keys = src.cmd(&["CLUSTER", "GETKEYSINSLOT", &slot, "10"]);
    assert!(keys.starts_with("*2\r\n"), "{keys}");
    let target_port = target.to_string();
    assert_eq!(
        src.cmd(&[
            "MIGRATE",
            "127.0.0.1",
            &target_port,
            "",
            "0",
            "5000",
            "KEYS",
            "{moved}h",
            "{moved}s"
        ]),
        "+OK\r\n"
    );
    for port in &ports {
        let reply = Raw::connect(*port).cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]);
        assert_eq!(reply, "+OK\r\n");
    }
    assert_eq!(src.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot]), ":0\r\n");
    assert_eq!(dst.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot]), ":2\r\n");
    let httl = cluster_cmd(&ports, &["HTTL", "{moved}h", "FIELDS", "2", "f", "g"]);
    let field_ttl: i64 = httl
        .lines()
        .nth(1)
        .unwrap()
        .trim_start_matches(':')
        .parse()
        .unwrap();
    assert!(field_ttl > 900 && httl.ends_with(":-1\r\n"), "{httl}");
    let ttl = ttl_of(&ports, "{moved}s");
    assert!(ttl > 900, "{ttl}");
    // redis-cli's own check agrees.
    let out = cluster_tool(&["check".into(), format!("127.0.0.1:{}", ports[1])]).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("[OK] All nodes agree"),
        "{text}"
    );
}

#[test]
fn lapse_and_redis_server_nodes_form_one_cluster() {
    let Some(redis) = redis_node() else {
        return;
    };
    let lapse = [lapse_node(&[]), lapse_node(&[])];
    if !create(&[&lapse[0], &redis, &lapse[1]]) {
        return;
    }
    let all = [&lapse[0], &redis, &lapse[1]];
    let views: Vec<Vec<String>> = all.iter().map(|n| slot_view(&mut n.raw())).collect();
    assert!(views.iter().all(|v| v == &views[0]), "{views:?}");
    // Every node routes every key: writes through one, reads through
    // another, whichever serves it.
    for i in 0..40 {
        let key = format!("mixed:{i}");
        let ports: Vec<u16> = all.iter().map(|n| n.port).collect();
        let rotated: Vec<u16> = ports.iter().cycle().skip(i % 3).take(3).copied().collect();
        assert_eq!(cluster_cmd(&rotated, &["SET", &key, "v"]), "+OK\r\n");
        let other: Vec<u16> = ports
            .iter()
            .cycle()
            .skip(i % 3 + 1)
            .take(3)
            .copied()
            .collect();
        assert_eq!(cluster_cmd(&other, &["GET", &key]), "$1\r\nv\r\n");
    }
    // The redis-server node counts lapse's messages as its own kind's.
    let mut rr = redis.raw();
    let received: u64 = cluster_info(&mut rr, "cluster_stats_messages_received")
        .parse()
        .unwrap();
    assert!(received > 0);
    assert_eq!(cluster_info(&mut rr, "cluster_known_nodes"), "3");
}

#[test]
fn a_killed_master_is_marked_failing_by_the_others() {
    let mut nodes = vec![lapse_node(&[]), lapse_node(&[]), lapse_node(&[])];
    if let Some(redis) = redis_node() {
        nodes.push(redis);
    }
    if !create(&nodes.iter().collect::<Vec<_>>()) {
        return;
    }
    let victim = nodes.remove(1);
    let victim_id = victim.raw().cmd(&["CLUSTER", "MYID"]);
    let victim_id = victim_id.lines().nth(1).unwrap().to_string();
    drop(victim);
    for node in &nodes {
        let mut r = node.raw();
        let failed = eventually(Duration::from_secs(20), || {
            nodes_lines(&mut r).iter().any(|l| {
                l.starts_with(&victim_id)
                    && l.split(' ').nth(2).unwrap().split(',').any(|f| f == "fail")
            })
        });
        assert!(
            failed,
            "node {} never marked the killed master failing: {:?}",
            node.port,
            nodes_lines(&mut r)
        );
        // Its slots are served by no one: the cluster is down.
        assert!(eventually(Duration::from_secs(10), || cluster_info(
            &mut r,
            "cluster_state"
        ) == "fail"));
        let reports = r.cmd(&["CLUSTER", "COUNT-FAILURE-REPORTS", &victim_id]);
        assert!(reports.starts_with(':'), "{reports}");
    }
}

#[test]
fn nodes_conf_is_written_whole_and_read_back_at_restart() {
    let dir = common::temp_dir("cluster-restart");
    let dir_arg = dir.to_str().unwrap().to_string();
    let port = free_port().to_string();
    let cport = free_port().to_string();
    let args = ["--dir", &dir_arg, "--port", &port, "--cluster-port", &cport];
    let node = lapse_node(&args);
    let mut r = node.raw();
    assert_eq!(r.cmd(&["CLUSTER", "SET-CONFIG-EPOCH", "7"]), "+OK\r\n");
    assert_eq!(
        r.cmd(&["CLUSTER", "ADDSLOTSRANGE", "0", "100", "200", "16383"]),
        "+OK\r\n"
    );
    assert_eq!(r.cmd(&["CLUSTER", "DELSLOTS", "5000"]), "+OK\r\n");
    let id = r.cmd(&["CLUSTER", "MYID"]);
    let before = nodes_lines(&mut r);
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(dir.join("nodes.conf")).is_ok_and(|t| {
            t.contains(" 0-100 200-4999 5001-16383")
                && t.ends_with("vars currentEpoch 7 lastVoteEpoch 0\n")
        })
    }));
    drop(r);
    drop(node);
    let node = lapse_node(&args);
    let mut r = node.raw();
    assert_eq!(r.cmd(&["CLUSTER", "MYID"]), id);
    let after = nodes_lines(&mut r);
    let fields = |l: &str| {
        let f: Vec<&str> = l.split(' ').collect();
        (
            f[0].to_string(),
            f[2].to_string(),
            f[6].to_string(),
            f[8..].join(" "),
        )
    };
    assert_eq!(fields(&after[0]), fields(&before[0]));
    assert_eq!(cluster_info(&mut r, "cluster_current_epoch"), "7");
    // Beside it only the version before the last save, whole, which the
    // next save is written over before it swaps names with nodes.conf.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["nodes.conf", "nodes.conf.previous"]);
    let previous = std::fs::read_to_string(dir.join("nodes.conf.previous")).unwrap();
    let id = id.trim_start_matches('$').split("\r\n").nth(1).unwrap();
    assert!(
        previous.starts_with(id) && previous.ends_with("lastVoteEpoch 0\n"),
        "{previous}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// CLUSTER's answers on one node in cluster mode, and its errors.
fn cluster_replies(server: &Server) -> Vec<String> {
    let mut r = server.raw();
    let id = r
        .cmd(&["CLUSTER", "MYID"])
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    let port = format!(":{}\r\n", server.port);
    let mut seen = Vec::new();
    for cmd in [
        "CLUSTER KEYSLOT foo",
        "CLUSTER KEYSLOT {user1000}.following",
        "CLUSTER KEYSLOT foo{}{bar}",
        "CLUSTER KEYSLOT foo{{bar}}zap",
        "CLUSTER ADDSLOTS 16384",
        "CLUSTER ADDSLOTS x",
        "CLUSTER ADDSLOTS 1 2 1",
        "CLUSTER ADDSLOTS 1 2",
        "CLUSTER ADDSLOTS 2",
        "CLUSTER ADDSLOTSRANGE 10 5",
        "CLUSTER ADDSLOTSRANGE 10 20 15 30",
        "CLUSTER ADDSLOTSRANGE 10",
        "CLUSTER ADDSLOTSRANGE 10 20 30",
        "CLUSTER ADDSLOTSRANGE 10 20",
        "CLUSTER DELSLOTS 3",
        "CLUSTER DELSLOTS 1",
        "CLUSTER DELSLOTSRANGE 10 12",
        "CLUSTER COUNTKEYSINSLOT 16384",
        "CLUSTER COUNTKEYSINSLOT x",
        "CLUSTER GETKEYSINSLOT 0 -1",
        "CLUSTER GETKEYSINSLOT 0 x",
        "CLUSTER SET-CONFIG-EPOCH -1",
        "CLUSTER SET-CONFIG-EPOCH 3",
        "CLUSTER SET-CONFIG-EPOCH 4",
        "CLUSTER BUMPEPOCH",
        "CLUSTER FORGET 0123456789012345678901234567890123456789",
        "CLUSTER COUNT-FAILURE-REPORTS nope",
        "CLUSTER REPLICAS nope",
        "CLUSTER MEET 127.0.0.1 x",
        "CLUSTER MEET 127.0.0.1 7000 x",
        "CLUSTER MEET nohost 7000",
        "CLUSTER MEET 127.0.0.1 7000 1 2",
        "CLUSTER RESET MEDIUM",
        "CLUSTER INFO extra",
        "CLUSTER NOPE",
        "CLUSTER SLOTS",
        "SET foo 1",
        "SET {user1000}x 1",
        "GET {user1000}x",
        "MSET a 1 b 2",
        "SELECT 1",
        "SELECT x",
        "SELECT 0",
        "ASKING",
        "READONLY",
        "READWRITE",
        "MOVE foo 1",
        "SWAPDB 0 1",
        "COPY {user1000}x {user1000}y DB 1",
        "COPY {user1000}x {user1000}y",
        "EVAL return~redis.call('get','{user1000}x') 1 {user1000}x",
        "EVAL return~redis.call('get','{user1000}x') 0",
        "EVAL return~redis.call('get','foo') 0",
        "EVAL return~redis.call('get','foo') 1 {user1000}x",
        "EVAL return~redis.call('cluster','keyslot','a') 0",
        "EVAL return~redis.call('cluster','reset') 0",
        "EVAL #!lua~flags=no-cluster\nreturn~1 0",
        "PUBLISH ch hello",
        "SPUBLISH ch hello",
        "CLUSTER FLUSHSLOTS",
        "CLUSTER RESET SOFT",
        "FLUSHALL",
        "CLUSTER FLUSHSLOTS",
        "CLUSTER INFO",
    ] {
        let args: Vec<String> = cmd.split(' ').map(|a| a.replace('~', " ")).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = r.cmd(&args);
        // The counters of bus messages and the epoch's line differ by
        // timing; the rest is compared.
        let kept: String = reply
            .split("\r\n")
            .filter(|l| !l.starts_with("cluster_stats_messages") && !l.starts_with("total_cluster"))
            .collect::<Vec<_>>()
            .join("\r\n");
        // The node's id and port are its own.
        let kept = kept.replace(&id, "<id>").replace(&port, ":<port>\r\n");
        seen.push(format!("{cmd} -> {kept}"));
    }
    seen
}

#[test]
fn cluster_replies_and_errors_match_redis_server() {
    let lapse = lapse_node(&[]);
    let ours = cluster_replies(&lapse);
    let Some(redis) = redis_node() else {
        return;
    };
    let theirs = cluster_replies(&redis);
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a, b);
    }
    assert_eq!(ours.len(), theirs.len());
    // Off cluster mode, CLUSTER says so.
    let plain = common::same_on_lapse_and_redis(|s| {
        let mut r = s.raw();
        vec![
            r.cmd(&["CLUSTER", "INFO"]),
            r.cmd(&["CLUSTER", "KEYSLOT", "x"]),
            r.cmd(&["ASKING"]),
            r.cmd(&["READONLY"]),
        ]
    });
    assert_eq!(
        plain[0],
        "-ERR This instance has cluster support disabled\r\n"
    );
}

#[test]
fn redis_py_cluster_client_runs_unchanged() {
    let Some(deps) = common::python_deps() else {
        return;
    };
    let nodes = [lapse_node(&[]), lapse_node(&[]), lapse_node(&[])];
    if !create(&nodes.iter().collect::<Vec<_>>()) {
        return;
    }
    let script = format!(
        "{}/tests/clients/cluster_client.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let output = Command::new("python3")
        .arg(script)
        .arg(nodes[1].port.to_string())
        .env("PYTHONPATH", deps)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("cluster client: ok"),
        "{}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A lapse node that can be restarted: its own directory, fixed ports.
struct Restartable {
    dir: std::path::PathBuf,
    port: String,
    cport: String,
}

impl Restartable {
    fn new(name: &str) -> Restartable {
        Restartable {
            dir: common::temp_dir(name),
            port: free_port().to_string(),
            cport: free_port().to_string(),
        }
    }

    fn start(&self) -> Server {
        let dir = self.dir.to_str().unwrap();
        let args = [
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            "1000",
            "--dir",
            dir,
            "--port",
            &self.port,
            "--cluster-port",
            &self.cport,
        ];
        Server::lapse_logging_to(&self.log(), &args)
    }

    /// Its log so far (shown when a test fails).
    fn log(&self) -> std::path::PathBuf {
        self.dir.with_extension("log")
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }
}

impl Drop for Restartable {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(self.log());
    }
}

/// The port of the node that serves a request sent to `port`: `port`
/// itself, or where it redirects.
fn serving(port: u16, args: &[&str]) -> u16 {
    let reply = Raw::connect(port).cmd(args);
    match reply.strip_prefix("-MOVED ") {
        Some(rest) => rest.trim().rsplit(':').next().unwrap().parse().unwrap(),
        None => port,
    }
}

/// ROLE's first word.
fn role(port: u16) -> String {
    let reply = Raw::connect(port).cmd(&["ROLE"]);
    reply.lines().nth(2).unwrap_or("").to_string()
}

fn my_id(port: u16) -> String {
    let reply = Raw::connect(port).cmd(&["CLUSTER", "MYID"]);
    reply.lines().nth(1).unwrap().to_string()
}

/// The master a replica follows, by CLUSTER NODES on itself.
fn master_of(port: u16) -> Option<String> {
    let lines = nodes_lines(&mut Raw::connect(port));
    let me = lines
        .iter()
        .find(|l| l.split(' ').nth(2).unwrap().contains("myself"))?;
    let f: Vec<&str> = me.split(' ').collect();
    (f[3] != "-").then(|| f[3].to_string())
}

#[test]
fn replicas_take_over_a_killed_master_which_rejoins_as_a_replica() {
    let homes: Vec<Restartable> = (0..6)
        .map(|i| Restartable::new(&format!("failover-{i}")))
        .collect();
    let mut nodes: Vec<Option<Server>> = homes.iter().map(|h| Some(h.start())).collect();
    let all: Vec<&Server> = nodes.iter().map(|n| n.as_ref().unwrap()).collect();
    if !create_with_replicas(&all, 1) {
        return;
    }
    let ports: Vec<u16> = all.iter().map(|n| n.port).collect();
    // Every replica syncs with its master.
    for &port in &ports {
        if role(port) == "slave" {
            let mut r = Raw::connect(port);
            assert!(eventually(Duration::from_secs(20), || {
                common::info_field(&mut r, "replication", "master_link_status") == "up"
            }));
        }
    }
    for i in 0..30 {
        let key = format!("k{i}");
        assert_eq!(
            cluster_cmd(&ports, &["SET", &key, "v", "EX", "1000"]),
            "+OK\r\n"
        );
    }
    // SPUBLISH on a shard's master reaches a subscriber on its replica,
    // over the bus.
    let channel_owner = serving(ports[0], &["SPUBLISH", "orders", "x"]);
    let owner_id = my_id(channel_owner);
    let shard_replica = *ports
        .iter()
        .find(|p| master_of(**p).as_deref() == Some(&owner_id))
        .expect("a replica of the channel's master");
    let mut sub = Raw::connect(shard_replica);
    assert!(sub.cmd(&["SSUBSCRIBE", "orders"]).contains("ssubscribe"));
    assert_eq!(
        Raw::connect(channel_owner).cmd(&["SPUBLISH", "orders", "shipped"]),
        ":0\r\n"
    );
    let message = String::from_utf8_lossy(&sub.reply()).into_owned();
    assert!(
        message.contains("smessage") && message.contains("shipped"),
        "{message}"
    );
    // The master of k0 is killed; its replica takes over.
    let slot = Raw::connect(ports[0]).cmd(&["CLUSTER", "KEYSLOT", "k0"]);
    let owner_port = serving(ports[0], &["GET", "k0"]);
    let victim = ports.iter().position(|p| *p == owner_port).unwrap();
    let victim_id = my_id(owner_port);
    let replica = ports
        .iter()
        .position(|p| *p != owner_port && master_of(*p).as_deref() == Some(&victim_id))
        .expect("the master has a replica");
    // Let the replica have everything before the kill.
    std::thread::sleep(Duration::from_millis(300));
    nodes[victim] = None;
    let survivors: Vec<u16> = ports.iter().copied().filter(|p| *p != owner_port).collect();
    let started = std::time::Instant::now();
    assert!(
        eventually(Duration::from_secs(30), || role(ports[replica]) == "master"),
        "the replica never took over: {:?}",
        nodes_lines(&mut Raw::connect(ports[replica]))
    );
    eprintln!("failover after {:?} (node timeout 1 s)", started.elapsed());
    for &port in &survivors {
        let mut r = Raw::connect(port);
        assert!(eventually(Duration::from_secs(20), || cluster_info(
            &mut r,
            "cluster_state"
        ) == "ok"));
    }
    // Acknowledged writes and their TTLs are there.
    for i in 0..30 {
        let key = format!("k{i}");
        assert_eq!(
            cluster_cmd(&survivors, &["GET", &key]),
            "$1\r\nv\r\n",
            "{key}"
        );
        let ttl = ttl_of(&survivors, &key);
        assert!(ttl > 900, "{key} {ttl} (slot {slot})");
    }
    // The old master comes back from its nodes.conf and follows the new one.
    nodes[victim] = Some(homes[victim].start());
    let new_master = my_id(ports[replica]);
    assert!(
        eventually(Duration::from_secs(20), || master_of(owner_port).as_deref()
            == Some(&new_master)),
        "{:?}",
        nodes_lines(&mut Raw::connect(owner_port))
    );
    let mut r = Raw::connect(owner_port);
    assert!(eventually(Duration::from_secs(20), || {
        common::info_field(&mut r, "replication", "master_link_status") == "up"
    }));
    // A manual failover gives it its slots back.
    assert_eq!(r.cmd(&["CLUSTER", "FAILOVER"]), "+OK\r\n");
    assert!(
        eventually(Duration::from_secs(20), || role(owner_port) == "master"),
        "the manual failover never ended: {}\n--- its master:\n{}",
        homes[victim].log_text(),
        homes[replica].log_text()
    );
    assert!(eventually(Duration::from_secs(20), || role(ports[replica]) == "slave"));
    assert_eq!(cluster_cmd(&[owner_port], &["GET", "k0"]), "$1\r\nv\r\n");
    assert_eq!(
        r.cmd(&["CLUSTER", "FAILOVER"]),
        "-ERR You should send CLUSTER FAILOVER to a replica\r\n"
    );
}

/// `redis-cli --cluster reshard` of `slots` slots from one node (by id) to
/// another, through the node at `port`.
fn reshard(port: u16, from: &str, to: &str, slots: usize) {
    cluster_tool_ok(&[
        "reshard".into(),
        format!("127.0.0.1:{port}"),
        "--cluster-from".into(),
        from.into(),
        "--cluster-to".into(),
        to.into(),
        "--cluster-slots".into(),
        slots.to_string(),
        "--cluster-yes".into(),
    ]);
}

/// Waits until every node knows every other and they see the same slots
/// (what redis-cli checks before it changes anything).
fn agree(ports: &[u16]) {
    let agreed = eventually(Duration::from_secs(20), || {
        let views: Vec<Vec<String>> = ports
            .iter()
            .map(|p| slot_view(&mut Raw::connect(*p)))
            .collect();
        views
            .iter()
            .all(|v| v == &views[0] && v.len() == ports.len())
            && ports
                .iter()
                .all(|p| cluster_info(&mut Raw::connect(*p), "cluster_state") == "ok")
    });
    assert!(agreed, "the nodes never agreed");
}

/// `redis-cli --cluster <args>`, which must succeed.
fn cluster_tool_ok(args: &[String]) -> String {
    let out = cluster_tool(args).expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "redis-cli --cluster {args:?}: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Increments counters through the cluster until told to stop; what each
/// counter was acknowledged to reach.
fn writer(ports: Vec<u16>, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Vec<i64> {
    let mut acked = vec![0i64; 50];
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let i = n % acked.len();
        let key = format!("counter:{i}");
        let reply = cluster_cmd(&ports, &["INCR", &key]);
        let value: i64 = reply
            .trim()
            .trim_start_matches(':')
            .parse()
            .expect("INCR's reply");
        acked[i] += 1;
        assert_eq!(value, acked[i], "{key}: a lost or doubled increment");
        n += 1;
    }
    acked
}

/// Every counter the writer incremented holds what it was acknowledged
/// to reach.
fn counters_hold(ports: &[u16], acked: &[i64]) {
    assert!(acked.iter().sum::<i64>() > 100, "{acked:?}");
    for (i, n) in acked.iter().enumerate() {
        let key = format!("counter:{i}");
        assert_eq!(
            cluster_cmd(ports, &["GET", &key]),
            format!("${}\r\n{n}\r\n", n.to_string().len())
        );
    }
}

fn ttl_of(ports: &[u16], key: &str) -> i64 {
    let ttl = cluster_cmd(ports, &["TTL", key]);
    ttl.trim()
        .trim_start_matches(':')
        .parse()
        .expect("TTL's reply")
}

#[test]
fn resharding_under_a_writer_loses_nothing_and_keeps_ttls() {
    if !common::tool_present("redis-cli", "the resharding test") {
        return;
    }
    let mut nodes = vec![lapse_node(&[]), lapse_node(&[])];
    let mixed = redis_node();
    let third = mixed.unwrap_or_else(|| lapse_node(&[]));
    nodes.push(third);
    if !create(&nodes.iter().collect::<Vec<_>>()) {
        return;
    }
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    for i in 0..1000 {
        let key = format!("ttl:{i}");
        assert_eq!(
            cluster_cmd(&ports, &["SET", &key, "v", "EX", "1000"]),
            "+OK\r\n"
        );
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writing = {
        let (ports, stop) = (ports.clone(), stop.clone());
        std::thread::spawn(move || writer(ports, stop))
    };
    let ids: Vec<String> = ports.iter().map(|p| my_id(*p)).collect();
    // lapse -> redis-server (or lapse), back, and lapse -> lapse.
    for (from, to, slots) in [(0, 2, 1500), (2, 0, 800), (1, 0, 1200), (2, 1, 700)] {
        reshard(ports[0], &ids[from], &ids[to], slots);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acked = writing.join().expect("the writer");
    counters_hold(&ports, &acked);
    for i in 0..1000 {
        let key = format!("ttl:{i}");
        let ttl = ttl_of(&ports, &key);
        assert!(ttl > 900, "{key}: {ttl}");
    }
    let check = cluster_tool_ok(&["check".into(), format!("127.0.0.1:{}", ports[1])]);
    assert!(check.contains("[OK] All 16384 slots covered."), "{check}");
    // Each node counts what it holds by slot, as the slots it serves say.
    let mut total = 0;
    for &port in &ports {
        let mut r = Raw::connect(port);
        total += common::info_field(&mut r, "keyspace", "db0")
            .split(',')
            .next()
            .and_then(|k| k.strip_prefix("keys="))
            .map_or(0, |k| k.parse::<i64>().unwrap());
    }
    assert_eq!(total, 1000 + 50);
}

#[test]
fn add_node_rebalance_under_a_writer_and_del_node() {
    if !common::tool_present("redis-cli", "the add-node test") {
        return;
    }
    let nodes = [lapse_node(&[]), lapse_node(&[]), lapse_node(&[])];
    if !create(&nodes.iter().collect::<Vec<_>>()) {
        return;
    }
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    for i in 0..500 {
        assert_eq!(
            cluster_cmd(&ports, &["SET", &format!("k{i}"), "v", "EX", "1000"]),
            "+OK\r\n"
        );
    }
    let newcomer = lapse_node(&[]);
    cluster_tool_ok(&[
        "add-node".into(),
        format!("127.0.0.1:{}", newcomer.port),
        format!("127.0.0.1:{}", ports[0]),
    ]);
    let mut r = newcomer.raw();
    assert!(eventually(Duration::from_secs(20), || cluster_info(
        &mut r,
        "cluster_known_nodes"
    ) == "4"));
    // It gets its share of the slots, and then gives them all away.
    let mut r0 = nodes[0].raw();
    let mut all = ports.clone();
    all.push(newcomer.port);
    agree(&all);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writing = {
        let (ports, stop) = (ports.clone(), stop.clone());
        std::thread::spawn(move || writer(ports, stop))
    };
    cluster_tool_ok(&[
        "rebalance".into(),
        format!("127.0.0.1:{}", ports[0]),
        "--cluster-use-empty-masters".into(),
    ]);
    let newcomer_id = my_id(newcomer.port);
    let owned = |r: &mut Raw| {
        nodes_lines(r)
            .iter()
            .find(|l| l.starts_with(&newcomer_id))
            .map_or(0, |l| l.split(' ').skip(8).count())
    };
    assert!(eventually(Duration::from_secs(10), || owned(&mut r0) > 0));
    agree(&all);
    assert!(common::info_field(&mut r, "keyspace", "db0").starts_with("keys="));
    cluster_tool_ok(&[
        "rebalance".into(),
        format!("127.0.0.1:{}", ports[0]),
        "--cluster-weight".into(),
        format!("{newcomer_id}=0"),
    ]);
    assert!(eventually(Duration::from_secs(10), || owned(&mut r0) == 0));
    agree(&all);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acked = writing.join().expect("the writer");
    counters_hold(&ports, &acked);
    cluster_tool_ok(&[
        "del-node".into(),
        format!("127.0.0.1:{}", ports[0]),
        newcomer_id.clone(),
    ]);
    assert!(eventually(Duration::from_secs(10), || cluster_info(
        &mut r0,
        "cluster_known_nodes"
    ) == "3"));
    for i in 0..500 {
        let key = format!("k{i}");
        assert_eq!(cluster_cmd(&ports, &["GET", &key]), "$1\r\nv\r\n");
        let ttl = ttl_of(&ports, &key);
        assert!(ttl > 900, "{key}: {ttl}");
    }
}

#[test]
fn cluster_clients_keep_working_while_slots_move() {
    let Some(py) = common::python_deps() else {
        return;
    };
    let Some(node) = common::node_deps() else {
        return;
    };
    if !common::tool_present("redis-cli", "the resharding test") {
        return;
    }
    let nodes = [lapse_node(&[]), lapse_node(&[]), lapse_node(&[])];
    if !create(&nodes.iter().collect::<Vec<_>>()) {
        return;
    }
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let dir = common::temp_dir("cluster-clients");
    let stop = dir.join("stop");
    let manifest = env!("CARGO_MANIFEST_DIR");
    let python = Command::new("python3")
        .arg(format!("{manifest}/tests/clients/cluster_client.py"))
        .arg(ports[1].to_string())
        .arg(&stop)
        .env("PYTHONPATH", py)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    let node = Command::new("node")
        .arg(format!("{manifest}/tests/clients/node_cluster.mjs"))
        .arg(ports[2].to_string())
        .arg(&stop)
        .env("LAPSE_NODE_DEPS", &node)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run node");
    // Let both clients write, then move a third of the slots twice.
    std::thread::sleep(Duration::from_millis(500));
    let ids: Vec<String> = ports.iter().map(|p| my_id(*p)).collect();
    for (from, to) in [(0, 1), (1, 2)] {
        reshard(ports[0], &ids[from], &ids[to], 1500);
    }
    std::fs::write(&stop, b"").unwrap();
    for (child, done) in [(python, "cluster client: ok"), (node, "node cluster: ok")] {
        let out = child.wait_with_output().expect("client output");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(done),
            "{}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lapse_and_redis_server_replicate_each_other_inside_a_cluster() {
    let Some(redis_master) = redis_node() else {
        return;
    };
    let Some(redis_replica) = redis_node() else {
        return;
    };
    let lapse = [lapse_node(&[]), lapse_node(&[])];
    let lapse_replica = lapse_node(&[]);
    if !create(&[&lapse[0], &lapse[1], &redis_master]) {
        return;
    }
    let masters = [lapse[0].port, lapse[1].port, redis_master.port];
    // A redis-server replica for a lapse master, a lapse replica for the
    // redis-server master, added as an operator adds them.
    for (replica, master) in [
        (&redis_replica, lapse[0].port),
        (&lapse_replica, redis_master.port),
    ] {
        cluster_tool_ok(&[
            "add-node".into(),
            format!("127.0.0.1:{}", replica.port),
            format!("127.0.0.1:{}", masters[0]),
            "--cluster-slave".into(),
            "--cluster-master-id".into(),
            my_id(master),
        ]);
    }
    for (replica, master) in [
        (redis_replica.port, lapse[0].port),
        (lapse_replica.port, redis_master.port),
    ] {
        let master_id = my_id(master);
        assert!(
            eventually(Duration::from_secs(20), || master_of(replica).as_deref()
                == Some(&master_id)),
            "{:?}",
            nodes_lines(&mut Raw::connect(replica))
        );
        let mut r = Raw::connect(replica);
        assert!(eventually(Duration::from_secs(30), || {
            common::info_field(&mut r, "replication", "master_link_status") == "up"
        }));
    }
    // Writes reach each kind of replica; READONLY reads them there.
    let mut written = Vec::new();
    for i in 0..200 {
        let key = format!("x:{i}");
        assert_eq!(
            cluster_cmd(&masters, &["SET", &key, &i.to_string()]),
            "+OK\r\n"
        );
        written.push(key);
    }
    for (replica, master) in [
        (redis_replica.port, lapse[0].port),
        (lapse_replica.port, redis_master.port),
    ] {
        let mine: Vec<&String> = written
            .iter()
            .filter(|k| serving(master, &["GET", k]) == master)
            .collect();
        assert!(!mine.is_empty());
        let mut r = Raw::connect(replica);
        assert_eq!(r.cmd(&["READONLY"]), "+OK\r\n");
        for key in mine {
            let value = key.trim_start_matches("x:");
            let want = format!("${}\r\n{value}\r\n", value.len());
            assert!(
                eventually(Duration::from_secs(10), || r.cmd(&["GET", key]) == want),
                "{key} on replica {replica}"
            );
        }
    }
    // The lapse master dies: its redis-server replica takes over, elected
    // by lapse and redis-server masters.
    let [first, second] = lapse;
    drop(first);
    assert!(
        eventually(Duration::from_secs(30), || role(redis_replica.port)
            == "master"),
        "{:?}",
        nodes_lines(&mut Raw::connect(second.port))
    );
    let survivors = [second.port, redis_master.port, redis_replica.port];
    for port in survivors {
        let mut r = Raw::connect(port);
        assert!(eventually(Duration::from_secs(20), || cluster_info(
            &mut r,
            "cluster_state"
        ) == "ok"));
    }
    for key in &written {
        let value = key.trim_start_matches("x:");
        let want = format!("${}\r\n{value}\r\n", value.len());
        assert_eq!(cluster_cmd(&survivors, &["GET", key]), want, "{key}");
    }
}

/// A client blocked on a key whose slot moves away, and one blocked where
/// the cluster goes down: what each hears (ports named by role).
fn blocked_clients_when_the_slot_moves(nodes: &[Server]) -> Vec<String> {
    let mut out = Vec::new();
    if !create(&nodes.iter().collect::<Vec<_>>()) {
        return out;
    }
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let owner = match Raw::connect(ports[0]).cmd(&["LLEN", "blk"]) {
        moved if moved.starts_with("-MOVED ") => {
            moved.trim().rsplit(':').next().unwrap().parse().unwrap()
        }
        _ => ports[0],
    };
    let other = *ports.iter().find(|p| **p != owner).unwrap();
    let named = |reply: String| {
        reply
            .replace(&format!(":{owner}"), ":<old owner>")
            .replace(&format!(":{other}"), ":<new owner>")
    };
    let slot = Raw::connect(owner).cmd(&["CLUSTER", "KEYSLOT", "blk"]);
    let slot = slot.trim().trim_start_matches(':').to_string();
    let mut waiter = Raw::connect(owner);
    waiter.send_cmd(&[b"BLPOP", b"blk", b"0"]);
    assert!(common::blocked_clients_reach(&mut Raw::connect(owner), 1));
    // The slot (empty) given to another master, as redis-cli does it.
    let other_id = my_id(other);
    for port in [other, owner] {
        out.push(Raw::connect(port).cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &other_id]));
    }
    out.push(named(String::from_utf8_lossy(&waiter.reply()).into_owned()));
    assert!(common::blocked_clients_reach(&mut Raw::connect(owner), 0));
    // Blocked on the new owner, which then stops serving the slot.
    let mut waiter = Raw::connect(other);
    waiter.send_cmd(&[b"BRPOP", b"blk", b"0"]);
    assert!(common::blocked_clients_reach(&mut Raw::connect(other), 1));
    out.push(Raw::connect(other).cmd(&["CLUSTER", "DELSLOTS", &slot]));
    out.push(named(String::from_utf8_lossy(&waiter.reply()).into_owned()));
    out
}

#[test]
fn blocked_clients_are_redirected_when_their_slot_moves_as_redis_does() {
    let lapse = [lapse_node(&[]), lapse_node(&[]), lapse_node(&[])];
    let on_lapse = blocked_clients_when_the_slot_moves(&lapse);
    if on_lapse.is_empty() {
        return;
    }
    assert!(on_lapse[2].starts_with("-MOVED "), "{on_lapse:?}");
    assert_eq!(on_lapse[4], "-CLUSTERDOWN The cluster is down\r\n");
    let redis: Option<Vec<Server>> = (0..3).map(|_| redis_node()).collect();
    if let Some(redis) = redis {
        assert_eq!(on_lapse, blocked_clients_when_the_slot_moves(&redis));
    }
}

/// `redis-cli`'s TLS options with the test certificates in `dir`.
fn tls_tool_args(dir: &std::path::Path) -> Vec<String> {
    use common::certs::path;
    vec![
        "--tls".into(),
        "--cacert".into(),
        path(dir, "ca.crt"),
        "--cert".into(),
        path(dir, "client.crt"),
        "--key".into(),
        path(dir, "client.key"),
    ]
}

/// Each node's `ip:port@cport` as one node lists it (CLUSTER NODES, by
/// node id), through the connection `r`.
fn addresses(nodes_text: &str) -> Vec<String> {
    let mut seen: Vec<String> = nodes_text
        .lines()
        .filter(|l| l.len() > 40)
        .map(|l| {
            let f: Vec<&str> = l.trim_start_matches("txt:").split(' ').collect();
            format!("{} {}", f[0], f[1])
        })
        .collect();
    seen.sort();
    seen
}

/// A cluster whose bus speaks TLS (`tls-cluster yes`), of two lapse nodes
/// and a redis-server: made by `redis-cli --cluster create --tls`, so the
/// bus links between lapse and redis-server are TLS both ways (redis-server
/// speaks nothing else there). Plain clients are pointed to plain ports,
/// TLS clients to TLS ports, as redis-server does; CLUSTER SHARDS lists
/// both; a resharding over TLS (MIGRATE over TLS, both ways) keeps keys.
#[test]
fn tls_cluster_of_lapse_and_redis_server_nodes() {
    let Some(dir) = common::certs::certificates("tls-cluster") else {
        return;
    };
    let node_args = |tls_port: u16| -> Vec<String> {
        let mut args = common::certs::server_args(&dir, tls_port);
        args.extend(
            [
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "1000",
                "--tls-cluster",
                "yes",
                "--tls-replication",
                "yes",
                "--cluster-port",
            ]
            .map(String::from),
        );
        args.push(free_port().to_string());
        args
    };
    let tls_ports = [free_port(), free_port(), free_port()];
    let redis_args = node_args(tls_ports[1]);
    let redis_args: Vec<&str> = redis_args.iter().map(String::as_str).collect();
    let Some(redis) = Server::redis_with(&redis_args) else {
        return;
    };
    let lapse: Vec<Server> = [tls_ports[0], tls_ports[2]]
        .iter()
        .map(|&tls_port| {
            let mut args = vec!["--port".to_string(), free_port().to_string()];
            args.extend(node_args(tls_port));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            Server::lapse(&args)
        })
        .collect();
    let nodes = [&lapse[0], &redis, &lapse[1]];
    let plain: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let mut create = vec!["create".to_string()];
    create.extend(tls_ports.iter().map(|p| format!("127.0.0.1:{p}")));
    create.push("--cluster-yes".into());
    create.extend(tls_tool_args(&dir));
    if !common::tool_present("redis-cli", "the TLS cluster test") {
        return;
    }
    let out = cluster_tool_ok(&create);
    assert!(out.contains("[OK] All 16384 slots covered."), "{out}");
    agree(&plain);
    // Every node's address as every node lists it to a plain client: its
    // plain port; to a TLS client: its TLS port (the one it announces).
    let ids: Vec<String> = plain
        .iter()
        .map(|p| {
            let reply = Raw::connect(*p).cmd(&["CLUSTER", "MYID"]);
            reply.lines().nth(1).unwrap().to_string()
        })
        .collect();
    let mut want_plain: Vec<String> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let text = Raw::connect(plain[i]).cmd(&["CLUSTER", "NODES"]);
        let line = text.lines().find(|l| l.contains(id.as_str())).unwrap();
        let cport = line.split(' ').nth(1).unwrap().split('@').nth(1).unwrap();
        want_plain.push(format!("{id} 127.0.0.1:{}@{cport}", plain[i]));
    }
    want_plain.sort();
    for p in &plain {
        let listed = addresses(&Raw::connect(*p).cmd(&["CLUSTER", "NODES"]));
        assert_eq!(listed, want_plain, "CLUSTER NODES of the node at {p}");
    }
    for (i, &tls_port) in tls_ports.iter().enumerate() {
        let mut c =
            common::certs::TlsClient::connect(&dir, tls_port, "ca.crt", Some("client")).unwrap();
        // A key each node does not serve: the redirection names the port
        // the client's kind connects to.
        let key = (0..)
            .map(|n| format!("tls:{n}"))
            .find(|k| {
                Raw::connect(plain[i])
                    .cmd(&["GET", k])
                    .starts_with("-MOVED")
            })
            .unwrap();
        let over_plain = Raw::connect(plain[i]).cmd(&["GET", &key]);
        let over_tls = c.cmd(&format!("GET {key}")).unwrap();
        let to = |reply: &str| -> u16 { reply.trim().rsplit(':').next().unwrap().parse().unwrap() };
        let (p, t) = (to(&over_plain), to(&over_tls));
        let j = plain.iter().position(|x| *x == p).expect("a plain port");
        assert_eq!(t, tls_ports[j], "{over_plain} / {over_tls}");
    }
    // CLUSTER SHARDS names both ports, as redis-server's does.
    for p in &plain {
        let shards = Raw::connect(*p).cmd(&["CLUSTER", "SHARDS"]);
        for (plain_port, tls_port) in plain.iter().zip(&tls_ports) {
            let both = format!("$4\r\nport\r\n:{plain_port}\r\n$8\r\ntls-port\r\n:{tls_port}\r\n");
            assert!(shards.contains(&both), "node {p}: {shards}");
        }
    }
    // Keys through every node, then slots moved over TLS both ways
    // (MIGRATE between lapse and redis-server over TLS) keep them.
    for i in 0..200 {
        let key = format!("k:{i}");
        assert_eq!(
            cluster_cmd(&plain, &["SET", &key, &i.to_string()]),
            "+OK\r\n"
        );
    }
    for (from, to) in [(0, 1), (1, 2), (2, 0)] {
        let mut args = vec![
            "reshard".to_string(),
            format!("127.0.0.1:{}", tls_ports[0]),
            "--cluster-from".into(),
            ids[from].clone(),
            "--cluster-to".into(),
            ids[to].clone(),
            "--cluster-slots".into(),
            "300".into(),
            "--cluster-yes".into(),
        ];
        args.extend(tls_tool_args(&dir));
        cluster_tool_ok(&args);
    }
    agree(&plain);
    for i in 0..200 {
        let key = format!("k:{i}");
        let want = format!("${}\r\n{i}\r\n", i.to_string().len());
        assert_eq!(cluster_cmd(&plain, &["GET", &key]), want);
    }
    let mut check = vec!["check".to_string(), format!("127.0.0.1:{}", tls_ports[2])];
    check.extend(tls_tool_args(&dir));
    let out = cluster_tool_ok(&check);
    assert!(out.contains("[OK] All 16384 slots covered."), "{out}");
}
