//! TLS as redis-server serves it: certificates made here with `openssl`
//! (a CA, a server certificate for 127.0.0.1 and localhost, a client
//! certificate), and real TLS clients: redis-cli, redis-benchmark,
//! redis-py, and a rustls client for what the tools cannot do (keep a
//! connection open across a certificate change).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::certs::{
    certificates, lapse_with_tls, make_ca, openssl, path, server_args, sign, TlsClient,
};
use common::{free_port, Server};

/// `redis-cli --tls` with the CA `ca` and, if given, a client
/// certificate: its output, or an error.
fn tls_cli(dir: &Path, port: u16, ca: &str, client: Option<&str>, args: &[&str]) -> String {
    let mut command = Command::new("redis-cli");
    command
        .args(["-p", &port.to_string(), "--tls", "--cacert", &path(dir, ca)])
        .current_dir(dir);
    if let Some(client) = client {
        command.args([
            "--cert",
            &path(dir, &format!("{client}.crt")),
            "--key",
            &path(dir, &format!("{client}.key")),
        ]);
    }
    let out = command.args(args).output().expect("run redis-cli");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
    .trim()
    .to_string()
}

#[test]
fn mutual_tls_by_default_beside_the_plain_port() {
    let Some(dir) = certificates("tls-mutual") else {
        return;
    };
    if !common::tool_present("redis-cli", "the TLS tests") {
        return;
    }
    let (server, tls) = lapse_with_tls(&dir, &[]);
    assert_eq!(
        tls_cli(
            &dir,
            tls,
            "ca.crt",
            Some("client"),
            &["SET", "k", "over tls"]
        ),
        "OK"
    );
    // Without a client certificate the handshake fails.
    let refused = tls_cli(&dir, tls, "ca.crt", None, &["PING"]);
    assert!(!refused.contains("PONG"), "{refused}");
    assert!(TlsClient::connect(&dir, tls, "ca.crt", None)
        .and_then(|mut c| c.cmd("PING"))
        .is_err());
    // The plain port serves the same data.
    assert_eq!(server.raw().cmd(&["GET", "k"]), "$8\r\nover tls\r\n");
    // A TLS client is an ordinary client in CLIENT LIST and INFO.
    let mut client = TlsClient::connect(&dir, tls, "ca.crt", Some("client")).unwrap();
    assert_eq!(client.cmd("CLIENT SETNAME tlsclient").unwrap(), "+OK");
    let list = server.raw().cmd(&["CLIENT", "LIST"]);
    let line = list.lines().find(|l| l.contains("name=tlsclient")).unwrap();
    assert!(line.contains(&format!("laddr=127.0.0.1:{tls}")), "{line}");
    // Its TLS state counts in its memory (CLIENT LIST tot-mem, and so
    // maxmemory-clients).
    let tot_mem = |line: &str| -> usize {
        let field = line.split(' ').find(|f| f.starts_with("tot-mem=")).unwrap();
        field["tot-mem=".len()..].parse().unwrap()
    };
    let plain = list
        .lines()
        .find(|l| l.contains("cmd=client|list"))
        .unwrap();
    assert!(
        tot_mem(line) >= tot_mem(plain) + 16 * 1024,
        "{line}\n{plain}"
    );
    assert_eq!(
        common::info_field(&mut server.raw(), "clients", "connected_clients"),
        "2"
    );
}

#[test]
fn tls_auth_clients_no_and_optional() {
    let Some(dir) = certificates("tls-auth") else {
        return;
    };
    // Another CA's client, which no setting lets in while it shows its
    // certificate.
    make_ca(&dir, "other-ca");
    sign(&dir, "other-ca", "stranger", Some("clientAuth"), false);
    let (server, tls) = lapse_with_tls(&dir, &["--tls-auth-clients", "no"]);
    let ping = |client: Option<&str>| {
        TlsClient::connect(&dir, tls, "ca.crt", client)
            .and_then(|mut c| c.cmd("PING"))
            .unwrap_or_else(|e| format!("refused: {e}"))
    };
    assert_eq!(ping(None), "+PONG");
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "tls-auth-clients", "optional"]),
        "+OK\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "tls-auth-clients"]).lines().last(),
        Some("optional")
    );
    assert_eq!(ping(None), "+PONG");
    assert_eq!(ping(Some("client")), "+PONG");
    assert!(ping(Some("stranger")).starts_with("refused"));
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "tls-auth-clients", "yes"]),
        "+OK\r\n"
    );
    assert!(ping(None).starts_with("refused"));
    assert_eq!(ping(Some("client")), "+PONG");
}

#[test]
fn port_0_serves_tls_alone() {
    let Some(dir) = certificates("tls-only") else {
        return;
    };
    let log = dir.join("lapse.log");
    let tls = free_port();
    let mut args = vec!["--port".to_string(), "0".into()];
    args.extend(server_args(&dir, tls));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::lapse_logging_to(&log, &args);
    assert_eq!(server.port, tls);
    let mut client = TlsClient::connect(&dir, tls, "ca.crt", Some("client")).unwrap();
    assert_eq!(client.cmd("PING").unwrap(), "+PONG");
    let text = std::fs::read_to_string(&log).unwrap();
    let listening: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("listening on"))
        .collect();
    assert!(
        !listening.is_empty() && listening.iter().all(|l| l.contains("listening on TLS")),
        "{listening:?}"
    );
}

#[test]
fn certificates_rotate_by_config_set_for_new_connections() {
    let Some(dir) = certificates("tls-rotate") else {
        return;
    };
    make_ca(&dir, "ca2");
    sign(&dir, "ca2", "server2", None, true);
    sign(&dir, "ca2", "client2", Some("clientAuth"), false);
    let (server, tls) = lapse_with_tls(&dir, &[]);
    let mut before = TlsClient::connect(&dir, tls, "ca.crt", Some("client")).unwrap();
    assert_eq!(before.cmd("PING").unwrap(), "+PONG");
    let mut r = server.raw();
    // A key file that does not exist: refused whole, nothing changes.
    let refused = r.cmd(&["CONFIG", "SET", "tls-key-file", &path(&dir, "missing.key")]);
    assert_eq!(
        refused,
        "-ERR CONFIG SET failed (possibly related to argument 'tls-key-file') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "tls-key-file"]).lines().last(),
        Some(path(&dir, "server.key").as_str())
    );
    assert_eq!(
        r.cmd(&[
            "CONFIG",
            "SET",
            "tls-cert-file",
            &path(&dir, "server2.crt"),
            "tls-key-file",
            &path(&dir, "server2.key"),
            "tls-ca-cert-file",
            &path(&dir, "ca2.crt"),
        ]),
        "+OK\r\n"
    );
    // New connections see the new certificate and CA...
    let mut after = TlsClient::connect(&dir, tls, "ca2.crt", Some("client2")).unwrap();
    assert_eq!(after.cmd("PING").unwrap(), "+PONG");
    assert!(TlsClient::connect(&dir, tls, "ca.crt", Some("client"))
        .and_then(|mut c| c.cmd("PING"))
        .is_err());
    // ...and the one made before keeps its own.
    assert_eq!(before.cmd("PING").unwrap(), "+PONG");
}

#[test]
fn garbage_and_stalled_handshakes_disturb_no_one() {
    let Some(dir) = certificates("tls-garbage") else {
        return;
    };
    let (server, tls) = lapse_with_tls(&dir, &[]);
    let mut good = TlsClient::connect(&dir, tls, "ca.crt", Some("client")).unwrap();
    // Plain text on the TLS port: the server answers with an alert (or
    // nothing) and closes.
    let mut plain = TcpStream::connect(("127.0.0.1", tls)).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    plain.write_all(b"PING\r\nGET k\r\n").unwrap();
    let mut sink = Vec::new();
    let _ = plain.read_to_end(&mut sink);
    assert!(!String::from_utf8_lossy(&sink).contains("PONG"));
    // Random bytes after a record header that promises more.
    let mut junk = TcpStream::connect(("127.0.0.1", tls)).unwrap();
    junk.write_all(&[0x16, 0x03, 0x01, 0x40, 0x00, 1, 2, 3, 4, 5])
        .unwrap();
    // Half a ClientHello, then silence: the handshake never completes.
    let mut half = TcpStream::connect(("127.0.0.1", tls)).unwrap();
    half.write_all(&[0x16, 0x03, 0x01, 0x00, 0xc8, 0x01, 0x00, 0x00])
        .unwrap();
    for i in 0..50 {
        assert_eq!(good.cmd(&format!("SET g{i} v")).unwrap(), "+OK");
    }
    let mut another = TlsClient::connect(&dir, tls, "ca.crt", Some("client")).unwrap();
    assert_eq!(another.cmd("DBSIZE").unwrap(), ":50");
    assert_eq!(server.raw().cmd(&["PING"]), "+PONG\r\n");
    drop((junk, half));
}

#[test]
fn redis_benchmark_runs_over_tls() {
    let Some(dir) = certificates("tls-benchmark") else {
        return;
    };
    if !common::tool_present("redis-benchmark", "the TLS benchmark test") {
        return;
    }
    let (server, tls) = lapse_with_tls(&dir, &[]);
    let out = Command::new("redis-benchmark")
        .args([
            "-p",
            &tls.to_string(),
            "--tls",
            "--cacert",
            &path(&dir, "ca.crt"),
        ])
        .args([
            "--cert",
            &path(&dir, "client.crt"),
            "--key",
            &path(&dir, "client.key"),
        ])
        .args([
            "-t", "set,get", "-n", "20000", "-P", "16", "-q", "-r", "1000",
        ])
        .output()
        .expect("run redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "\n");
    let done: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("requests per second") && !l.contains("rps="))
        .collect();
    assert_eq!(done.len(), 2, "{text}");
    let keys = common::info_field(&mut server.raw(), "keyspace", "db0");
    assert!(keys.starts_with("keys="), "{keys}");
}

/// Runs a client script (`program tests/clients/<script> TLS_PORT
/// CERT_DIR`, with its packages found through `deps_var`) against a
/// lapse with a TLS port; it prints `done` last.
fn run_tls_client(program: &str, script: &str, deps_var: &str, deps: &Path, done: &str) {
    let dir = certificates(&format!("tls-{script}")).expect("certificates");
    let (_server, tls) = lapse_with_tls(&dir, &[]);
    let script = format!("{}/tests/clients/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(program)
        .arg(script)
        .arg(tls.to_string())
        .arg(&dir)
        .env(deps_var, deps)
        .output()
        .expect("run the client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains(done),
        "{}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn redis_py_over_tls() {
    if !common::tool_answers("openssl", "version", "the TLS tests") {
        return;
    }
    if let Some(deps) = common::python_deps() {
        run_tls_client(
            "python3",
            "tls_client.py",
            "PYTHONPATH",
            deps,
            "tls client: ok",
        );
    }
}

#[test]
fn node_redis_over_tls() {
    if !common::tool_answers("openssl", "version", "the TLS tests") {
        return;
    }
    if let Some(deps) = common::node_deps() {
        run_tls_client(
            "node",
            "node_tls.mjs",
            "LAPSE_NODE_DEPS",
            &deps,
            "node tls: ok",
        );
    }
}

/// A server's TLS arguments on `tls_port` (lapse or redis-server), with
/// replication over TLS and no delay before a diskless sync.
fn server_tls_args(dir: &Path, tls_port: u16) -> Vec<String> {
    let mut args = server_args(dir, tls_port);
    args.extend(
        [
            "--tls-replication",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
        ]
        .map(String::from),
    );
    args
}

fn synced(replica: &Server, keys: &str) -> bool {
    common::eventually(Duration::from_secs(20), || {
        let mut r = replica.raw();
        common::info_field(&mut r, "replication", "master_link_status") == "up"
            && r.cmd(&["DBSIZE"]) == format!(":{keys}\r\n")
    })
}

fn write_some(server: &Server, tag: &str) {
    let mut r = server.raw();
    for i in 0..500 {
        let key = format!("{tag}:{i}");
        assert_eq!(r.cmd(&["SET", &key, &"v".repeat(i)]), "+OK\r\n");
    }
    assert_eq!(r.cmd(&["EXPIRE", &format!("{tag}:7"), "1000"]), ":1\r\n");
    assert_eq!(r.cmd(&["HSET", &format!("{tag}:h"), "f", "1"]), ":1\r\n");
}

#[test]
fn replication_over_tls_with_redis_server_in_both_roles() {
    let Some(dir) = certificates("tls-replication") else {
        return;
    };
    // A redis-server primary over TLS, a lapse replica of it.
    let redis_tls = free_port();
    let args = server_tls_args(&dir, redis_tls);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(primary) = Server::redis_with(&args) else {
        return;
    };
    write_some(&primary, "from-redis");
    let lapse_tls = free_port();
    let tls_port = redis_tls.to_string();
    let mut lapse_args = server_tls_args(&dir, lapse_tls);
    lapse_args.extend(["--replicaof".into(), "127.0.0.1".into(), tls_port]);
    let lapse_args: Vec<&str> = lapse_args.iter().map(String::as_str).collect();
    let plain = free_port().to_string();
    let mut with_plain = vec!["--port", &plain];
    with_plain.extend(lapse_args);
    let replica = Server::lapse(&with_plain);
    assert!(synced(&replica, "501"), "lapse never synced over TLS");
    // The stream goes on over the same link.
    assert_eq!(primary.raw().cmd(&["SET", "later", "x"]), "+OK\r\n");
    assert!(synced(&replica, "502"));
    assert_eq!(
        replica.raw().cmd(&["DEBUG", "DIGEST"]),
        primary.raw().cmd(&["DEBUG", "DIGEST"])
    );
    // A redis-server replica of a lapse primary, over TLS.
    let (lapse_primary, tls) = lapse_with_tls(&dir, &["--repl-diskless-sync-delay", "0"]);
    write_some(&lapse_primary, "from-lapse");
    let tls = tls.to_string();
    let mut args = server_tls_args(&dir, free_port());
    args.extend(["--replicaof".into(), "127.0.0.1".into(), tls]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let redis_replica = Server::redis_with(&args).unwrap();
    assert!(
        synced(&redis_replica, "501"),
        "redis-server never synced over TLS"
    );
    assert_eq!(lapse_primary.raw().cmd(&["DEL", "from-lapse:1"]), ":1\r\n");
    assert!(synced(&redis_replica, "500"));
    assert_eq!(
        redis_replica.raw().cmd(&["DEBUG", "DIGEST"]),
        lapse_primary.raw().cmd(&["DEBUG", "DIGEST"])
    );
}

#[test]
fn an_encrypted_key_is_read_with_tls_key_file_pass() {
    let Some(dir) = certificates("tls-encrypted-key") else {
        return;
    };
    // The server's key as OpenSSL 3 encrypts it (PKCS#8, PBES2).
    openssl(
        &dir,
        &[
            "pkcs8",
            "-topk8",
            "-in",
            "server.key",
            "-out",
            "locked.key",
            "-passout",
            "pass:s3cret",
            "-v2",
            "aes-256-cbc",
        ],
    );
    let locked = path(&dir, "locked.key");
    let (server, tls) = lapse_with_tls(
        &dir,
        &["--tls-key-file", &locked, "--tls-key-file-pass", "s3cret"],
    );
    let mut client = TlsClient::connect(&dir, tls, "ca.crt", Some("client")).unwrap();
    assert_eq!(client.cmd("PING").unwrap(), "+PONG");
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "tls-key-file-pass", "wrong"]),
        "-ERR CONFIG SET failed (possibly related to argument 'tls-key-file-pass') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "tls-key-file-pass"])
            .lines()
            .last(),
        Some("s3cret")
    );
}

#[test]
fn sentinel_monitors_and_fails_over_lapse_over_tls() {
    let Some(dir) = certificates("tls-sentinel") else {
        return;
    };
    if !common::tool_present("redis-sentinel", "the Sentinel over TLS test") {
        return;
    }
    let over_tls = [
        "--tls-replication",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ];
    let (primary, primary_tls) = lapse_with_tls(&dir, &over_tls);
    let primary_tls_port = primary_tls.to_string();
    let mut replica_args = over_tls.to_vec();
    replica_args.extend(["--replicaof", "127.0.0.1", &primary_tls_port]);
    let (replica, replica_tls) = lapse_with_tls(&dir, &replica_args);
    assert!(common::eventually(Duration::from_secs(20), || {
        common::info_field(&mut replica.raw(), "replication", "master_link_status") == "up"
    }));
    // The replica announces its TLS port, where Sentinel will reach it.
    let slave0 = common::info_field(&mut primary.raw(), "replication", "slave0");
    assert!(slave0.contains(&format!("port={replica_tls}")), "{slave0}");
    let sentinel_tls = free_port();
    let conf = dir.join("sentinel.conf");
    std::fs::write(
        &conf,
        format!(
            "port 0\ntls-port {sentinel_tls}\nbind 127.0.0.1\ndir {dir}\n\
             tls-cert-file {cert}\ntls-key-file {key}\ntls-ca-cert-file {ca}\n\
             tls-replication yes\n\
             sentinel monitor mymaster 127.0.0.1 {primary_tls} 1\n\
             sentinel down-after-milliseconds mymaster 3000\n\
             sentinel failover-timeout mymaster 10000\n",
            dir = dir.display(),
            cert = path(&dir, "server.crt"),
            key = path(&dir, "server.key"),
            ca = path(&dir, "ca.crt"),
        ),
    )
    .unwrap();
    let child = Command::new("redis-sentinel")
        .arg(&conf)
        .arg("--logfile")
        .arg(dir.join("sentinel.log"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn redis-sentinel");
    let _sentinel = Server::started(child, sentinel_tls);
    let ask = |command: &str| {
        TlsClient::connect(&dir, sentinel_tls, "ca.crt", Some("client"))
            .and_then(|mut c| c.cmd(command))
            .unwrap_or_default()
    };
    // Sentinel found the replica (through the primary's INFO, over TLS).
    assert!(
        common::eventually(Duration::from_secs(20), || {
            ask("SENTINEL REPLICAS mymaster") == "*1" && ask("SENTINEL FAILOVER mymaster") == "+OK"
        }),
        "{}",
        std::fs::read_to_string(dir.join("sentinel.log")).unwrap_or_default()
    );
    // The replica is promoted over TLS, and the old primary follows it.
    // (Sentinel's CLIENT KILL may close a connection that asks.)
    let field = common::replication_field;
    let promoted = common::eventually(Duration::from_secs(30), || {
        field(replica.port, "role").as_deref() == Some("master")
            && field(primary.port, "master_port") == Some(replica_tls.to_string())
    });
    assert!(
        promoted,
        "{}",
        std::fs::read_to_string(dir.join("sentinel.log")).unwrap_or_default()
    );
}

#[test]
fn tls_port_moves_and_opens_by_config_set() {
    let Some(dir) = certificates("tls-port-set") else {
        return;
    };
    let (server, old) = lapse_with_tls(&dir, &[]);
    let mut before = TlsClient::connect(&dir, old, "ca.crt", Some("client")).unwrap();
    let mut r = server.raw();
    let new = free_port();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "tls-port", &new.to_string()]),
        "+OK\r\n"
    );
    let mut moved = TlsClient::connect(&dir, new, "ca.crt", Some("client")).unwrap();
    assert_eq!(moved.cmd("PING").unwrap(), "+PONG");
    assert!(TlsClient::connect(&dir, old, "ca.crt", Some("client")).is_err());
    assert_eq!(before.cmd("PING").unwrap(), "+PONG");
    // CONFIG SET bind moves the TLS listeners with the plain ones, as
    // Redis's does.
    assert_eq!(r.cmd(&["CONFIG", "SET", "bind", "127.0.0.2"]), "+OK\r\n");
    assert!(common::eventually(Duration::from_secs(5), || {
        TlsClient::connect(&dir, new, "ca.crt", Some("client")).is_err()
            && std::net::TcpStream::connect(("127.0.0.2", new)).is_ok()
    }));
    assert_eq!(r.cmd(&["CONFIG", "SET", "bind", "127.0.0.1"]), "+OK\r\n");
    assert!(common::eventually(Duration::from_secs(5), || {
        TlsClient::connect(&dir, new, "ca.crt", Some("client"))
            .is_ok_and(|mut c| c.cmd("PING").is_ok_and(|p| p == "+PONG"))
    }));
    assert_eq!(before.cmd("PING").unwrap(), "+PONG");
    assert_eq!(r.cmd(&["CONFIG", "SET", "tls-port", "0"]), "+OK\r\n");
    assert!(TlsClient::connect(&dir, new, "ca.crt", Some("client")).is_err());
    // A server started without TLS gets it in one CONFIG SET.
    let plain = Server::lapse(&[]);
    let port = free_port();
    let args: Vec<String> = ["CONFIG".to_string(), "SET".into()]
        .into_iter()
        .chain(server_args(&dir, port))
        .map(|a| a.trim_start_matches("--").to_string())
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(plain.raw().cmd(&args), "+OK\r\n");
    let mut client = TlsClient::connect(&dir, port, "ca.crt", Some("client")).unwrap();
    assert_eq!(client.cmd("PING").unwrap(), "+PONG");
}
