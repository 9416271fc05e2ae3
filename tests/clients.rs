//! Real client code runs unchanged against lapse: redis-py's `Lock`
//! (acquire, extend, reacquire, release through its Lua scripts) and the
//! huey job queue (enqueue, schedule, process in its consumer, complete),
//! from `tests/clients/lock_and_queue.py`, with the Python packages that
//! `.ci/run` installs into `.ci/pydeps`. The same script is run against a
//! real redis-server where one is installed, so a failure on lapse is not
//! the script's.

mod common;

use std::path::Path;
use std::process::Command;

use common::{python_deps, Server};

fn run_clients(deps: &Path, port: u16, who: &str) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/lock_and_queue.py"
    );
    let output = Command::new("python3")
        .arg(script)
        .arg(port.to_string())
        .env("PYTHONPATH", deps)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("lock and queue: ok"),
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
    let lapse = Server::lapse(&[]);
    run_clients(deps, lapse.port, "lapse");
    if let Some(redis) = Server::redis() {
        run_clients(deps, redis.port, "redis-server");
    }
}
