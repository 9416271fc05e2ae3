//! Real client code runs unchanged against lapse: redis-py's `Lock`
//! (acquire, extend, reacquire, release through its Lua scripts) and the
//! huey job queue (enqueue, schedule, process in its consumer, complete),
//! from `tests/clients/lock_and_queue.py`, with the Python packages that
//! `.ci/run` installs into `.ci/pydeps`. The same script is run against a
//! real redis-server where one is installed, so a failure on lapse is not
//! the script's.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Command;

use common::Server;

/// The packages' folder, or `None` (with a loud message outside CI) when
/// they or Python are missing.
fn python_deps() -> Option<&'static Path> {
    let deps = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/pydeps"));
    let python = Command::new("python3").arg("--version").output();
    let ready = python.is_ok_and(|o| o.status.success())
        && deps.join("redis").is_dir()
        && deps.join("huey").is_dir();
    if ready {
        return Some(deps);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "python3 with redis and huey in .ci/pydeps is required in CI (.ci/run installs them)"
        );
    }
    let banner = "\n\
        !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
        !!! SKIPPED: the client-library test needs python3 and the packages  !!!\n\
        !!! in .ci/pydeps: pip3 install --target .ci/pydeps redis huey       !!!\n\
        !!! (the versions are in .ci/run)                                    !!!\n\
        !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n";
    let _ = std::io::stderr().lock().write_all(banner.as_bytes());
    None
}

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
