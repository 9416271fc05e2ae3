#!/usr/bin/env python3
"""Redis 7.0.15's own test suite (tests/unit/*.tcl) against a running
server, in external-server mode: lapse, or redis-server for the baseline.

    tools/redis_suite.py run lapse  [UNIT ...]   # -> target/redis-suite-lapse.json
    tools/redis_suite.py run redis  [UNIT ...]   # -> target/redis-suite-redis.json
    tools/redis_suite.py compare                 # what passes on redis but not on lapse

Each unit (e.g. unit/tracking, unit/type/list) runs against a fresh server
on a free port (so a hang or crash in one does not spill into the next),
with `--durable` (an exception ends a test, not the unit) and one test
client. Units that need cluster mode or TLS are left out (lapse gains them
in their own issues), as are module tests.

The suite is Redis's, not ours: it is not in this repository. Point
REDIS_TESTS at a directory holding `runtest` and `tests/` of the 7.0.15
tag, for example:

    git --git-dir=<redis clone>/.git archive 7.0.15 tests runtest | tar -x -C /work/redis-tests

Without it this script says so and exits 0. LAPSE_BIN names another lapse
binary (a copy, so that building meanwhile does not change the one under
test). It takes about 25 minutes for
all units on two cores (each server in turn), so CI does not run it.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(os.environ.get("REDIS_TESTS", ROOT.parent / "redis-tests"))
LEFT_OUT = ("unit/cluster", "unit/moduleapi", "unit/tls", "unit/cluster-scripting")
UNIT_TIMEOUT_S = int(os.environ.get("UNIT_TIMEOUT", "900"))
RESULT = re.compile(r"\[(ok|err|exception|skip|ignore)\]: (.*?)(?: \(\d+ ms\))?(?: in tests/\S+)?$")
COLOR = re.compile(r"\x1b\[[0-9;]*m")


def units():
    found = []
    for path in sorted((TESTS / "tests" / "unit").rglob("*.tcl")):
        unit = str(path.relative_to(TESTS / "tests"))[: -len(".tcl")]
        if not unit.startswith(LEFT_OUT) and unit not in ("unit/printver", "unit/cluster"):
            found.append(unit)
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(server, port, workdir):
    common = ["--port", str(port), "--bind", "127.0.0.1", "--save", "",
              "--enable-debug-command", "yes"]
    if server == "lapse":
        cmd = [os.environ.get("LAPSE_BIN", str(ROOT / "target" / "release" / "lapse"))] + common
    else:
        cmd = [os.environ.get("REDIS_SERVER", "redis-server")] + common + ["--appendonly", "no"]
    log = open(workdir / f"{server}-{port}.log", "w")
    child = subprocess.Popen(cmd, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return child
        except OSError:
            time.sleep(0.05)
    child.kill()
    raise SystemExit(f"{server} did not start on port {port}")


def run_unit(server, unit, workdir):
    port = free_port()
    # A directory of its own: no unit starts from another's files.
    workdir = workdir / unit.replace("/", "-")
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    child = start(server, port, workdir)
    started = time.time()
    try:
        out = subprocess.run(
            ["./runtest", "--host", "127.0.0.1", "--port", str(port), "--single", unit,
             "--durable", "--clients", "1", "--timeout", "120"],
            cwd=TESTS, capture_output=True, text=True, timeout=UNIT_TIMEOUT_S,
        ).stdout
        timed_out = False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        timed_out = True
    finally:
        alive = child.poll() is None
        child.kill()
        child.wait()
    seen = {"ok": [], "err": [], "exception": [], "skip": [], "ignore": []}
    for line in out.splitlines():
        m = RESULT.search(COLOR.sub("", line).strip())
        if m:
            seen[m.group(1)].append(m.group(2))
    seen["timed_out"] = timed_out
    seen["server_died"] = not alive
    seen["seconds"] = round(time.time() - started, 1)
    return seen


def run(server, chosen):
    if not (TESTS / "runtest").exists():
        print(f"!!! SKIPPED: Redis's test suite is not at {TESTS} (set REDIS_TESTS; see this file's opening) !!!")
        return
    workdir = ROOT / "target" / f"redis-suite-{server}"
    workdir.mkdir(parents=True, exist_ok=True)
    out_file = ROOT / "target" / f"redis-suite-{server}.json"
    results = json.loads(out_file.read_text()) if out_file.exists() and chosen else {}
    for unit in chosen or units():
        seen = run_unit(server, unit, workdir)
        results[unit] = seen
        out_file.write_text(json.dumps(results, indent=1))
        print(f"{unit}: {len(seen['ok'])} ok, {len(seen['err'])} err, "
              f"{len(seen['exception'])} exceptions{', TIMED OUT' if seen['timed_out'] else ''}"
              f"{', SERVER DIED' if seen['server_died'] else ''} ({seen['seconds']} s)", flush=True)
    total = {k: sum(len(v[k]) for v in results.values()) for k in ("ok", "err", "exception")}
    print(f"{server}: {total['ok']} ok, {total['err']} err, {total['exception']} exceptions")


def compare():
    lapse = json.loads((ROOT / "target" / "redis-suite-lapse.json").read_text())
    redis = json.loads((ROOT / "target" / "redis-suite-redis.json").read_text())
    missing = 0
    for unit, seen in sorted(redis.items()):
        ok_lapse = set(lapse.get(unit, {}).get("ok", []))
        lost = [t for t in seen["ok"] if t not in ok_lapse]
        missing += len(lost)
        for t in lost:
            print(f"{unit}: {t}")
    ok = lambda r: sum(len(v["ok"]) for v in r.values())
    print(f"redis-server: {ok(redis)} ok; lapse: {ok(lapse)} ok; "
          f"{missing} pass on redis-server but not on lapse")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "run" and sys.argv[2] in ("lapse", "redis"):
        run(sys.argv[2], sys.argv[3:])
    elif sys.argv[1:] == ["compare"]:
        compare()
    else:
        print(__doc__)
        sys.exit(2)
