//! Real client code runs unchanged against lapse: redis-py's `Lock`
//! (acquire, extend, reacquire, release through its Lua scripts) and the
//! huey job queue (enqueue, schedule, process in its consumer, complete),
//! from `tests/clients/lock_and_queue.py`, with the Python packages that
//! `.ci/run` installs into `.ci/pydeps`. The same script is run against a
//! real redis-server where one is installed, so a failure on lapse is not
//! the script's. Also redis-py's client-side cache
//! (`tests/clients/client_cache.py`).

mod common;

use std::path::Path;
use std::process::Command;

use common::{python_deps, Server};

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
