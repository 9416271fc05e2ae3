//! Real client code runs unchanged against lapse: redis-py's `Lock`
//! (acquire, extend, reacquire, release through its Lua scripts) and the
//! huey job queue (enqueue, schedule, process in its consumer, complete),
//! from `tests/clients/lock_and_queue.py`, with the Python packages that
//! `.ci/run` installs into `.ci/pydeps`. The same script is run against a
//! real redis-server where one is installed, so a failure on lapse is not
//! the script's. Also redis-py's and node-redis's client-side caches
//! (`tests/clients/client_cache.py`, `tests/clients/node_cache.mjs`, with
//! node-redis installed by `.ci/run` into `.ci/nodedeps`), and the
//! README's GETLEASE read-through helper in both (`stampede_helper.py`,
//! `node_stampede.mjs`).

mod common;

use std::path::Path;
use std::process::Command;

use common::{node_deps, python_deps, Server};

/// Runs `tests/clients/<script>` against `port`; it prints `done` last.
fn run_script(deps: &Path, script: &str, done: &str, port: u16, who: &str) {
    let script = format!("{}/tests/clients/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = Command::new("python3")
        .arg(script)
        .arg(port.to_string())
        .env("PYTHONPATH", deps)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains(done),
        "{who}: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn redis_py_lock_and_huey_queue_run_unchanged() {
    let Some(deps) = python_deps() else {
        return;
    };
    let run = |port, who| run_script(deps, "lock_and_queue.py", "lock and queue: ok", port, who);
    let lapse = Server::lapse(&[]);
    run(lapse.port, "lapse");
    if let Some(redis) = Server::redis() {
        run(redis.port, "redis-server");
    }
}

/// redis-py's client-side cache (RESP3 tracking): cached reads, and
/// invalidation by another client's write, by expiry and by FLUSHALL.
#[test]
fn redis_py_client_side_cache_is_invalidated() {
    let Some(deps) = python_deps() else {
        return;
    };
    let run = |port, who| run_script(deps, "client_cache.py", "client cache: ok", port, who);
    let lapse = Server::lapse(&[]);
    run(lapse.port, "lapse");
    if let Some(redis) = Server::redis() {
        run(redis.port, "redis-server");
    }
}

/// Runs `tests/clients/<script>` with node against `port`; its stdout.
fn run_node(deps: &Path, script: &str, port: u16, who: &str) -> String {
    let path = format!("{}/tests/clients/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = Command::new("node")
        .arg(path)
        .arg(port.to_string())
        .env("LAPSE_NODE_DEPS", deps)
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{who}: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// bullmq (a job queue built on streams, Lua scripts and blocking reads)
/// runs its basic flow unchanged: jobs added, processed, one retried
/// after failing, completions reported through its event stream; the
/// same outcome as on redis-server.
#[test]
fn bullmq_queue_runs_jobs_with_retries_and_events() {
    let Some(deps) = node_deps() else {
        return;
    };
    let expected = r#"{"counts":{"completed":5,"failed":0,"waiting":0,"active":0,"paused":0},"third":{"attemptsMade":2,"returnvalue":6},"events":true}"#;
    let lapse = Server::lapse(&[]);
    assert_eq!(
        run_node(&deps, "bullmq_flow.mjs", lapse.port, "lapse").trim(),
        expected
    );
    if let Some(redis) = Server::redis() {
        let theirs = run_node(&deps, "bullmq_flow.mjs", redis.port, "redis-server");
        assert_eq!(theirs.trim(), expected);
    }
}

/// node-redis 5's client-side cache: cached reads, invalidation by
/// another client's write and by FLUSHALL.
#[test]
fn node_redis_client_side_cache_is_invalidated() {
    let Some(deps) = node_deps() else {
        return;
    };
    let run = |port: u16, who: &str| {
        let stdout = run_node(&deps, "node_cache.mjs", port, who);
        assert!(stdout.contains("node cache: ok"), "{who}: {stdout}");
    };
    let lapse = Server::lapse(&[]);
    run(lapse.port, "lapse");
    if let Some(redis) = Server::redis() {
        run(redis.port, "redis-server");
    }
}

/// The README's GETLEASE read-through helper, with redis-py's
/// `execute_command` and node-redis's `sendCommand`: many readers of a
/// missing key compute it once, a failed compute hands the lease back, a
/// stale key is refreshed once while the old value is served (lapse
/// only: redis-server has no GETLEASE).
#[test]
fn the_readme_stampede_helpers_compute_once() {
    let lapse = Server::lapse(&[]);
    if let Some(deps) = python_deps() {
        run_script(
            deps,
            "stampede_helper.py",
            "stampede helper: ok",
            lapse.port,
            "lapse",
        );
    }
    if let Some(deps) = node_deps() {
        let out = run_node(&deps, "node_stampede.mjs", lapse.port, "lapse");
        assert!(out.contains("node stampede: ok"), "{out}");
    }
}
