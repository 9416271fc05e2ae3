#!/usr/bin/env python3
"""The append-only file, lapse and redis-server side by side (issue 16):

1. Write throughput: redis-benchmark SET, -P 16, 50 clients, 100,000 random
   keys, with appendonly off, appendfsync everysec and always; each as a
   ratio to the same server with the AOF off, and lapse over redis with the
   same setting. The servers take turns, ROUNDS times, best of each kept.
2. BGREWRITEAOF of KEYS keys (the mixed dataset of persistence.py) while
   redis-benchmark overwrites its string keys at full speed: the longest
   PING (one every ms on its own connection) during the rewrite and in the
   same load without one, the rewrite's duration, and peak RSS during the
   rewrite over RSS just before (redis: parent + child, and its fork time
   and copy-on-write).
3. Crash: kill -9 under a steady INCR load (8 clients) with everysec and
   always; a client counts what was acknowledged, the restart shows what
   survived (process death, not power loss: the page cache survives).

    benches/aof.py                    # KEYS=1000000, ROUNDS=3 by default
    KEYS=200000 ROUNDS=1 benches/aof.py
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from benchlib import build, cmd, start, stop
from persistence import populate, under_write_load

KEYS = int(os.environ.get("KEYS", "1000000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SETTINGS = {
    "off": ["--appendonly", "no"],
    "everysec": ["--appendonly", "yes", "--appendfsync", "everysec"],
    "always": ["--appendonly", "yes", "--appendfsync", "always"],
}


def server_args(work, setting):
    return ["--dir", work] + SETTINGS[setting]


def set_rps(server, setting):
    work = tempfile.mkdtemp(prefix="lapse-aof-bench-")
    proc, port = start(server, extra=server_args(work, setting))
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-c", "50", "-n", "1000000", "-r", "100000",
         "-P", "16", "-t", "set", "-q"],
        capture_output=True, text=True).stdout
    stop(proc)
    shutil.rmtree(work, ignore_errors=True)
    return float(re.search(r"SET: ([\d.]+) requests per second", out).group(1))


def throughput():
    best = {}
    for _ in range(ROUNDS):
        for setting in SETTINGS:
            for server in ("lapse", "redis"):
                rps = set_rps(server, setting)
                best[(server, setting)] = max(best.get((server, setting), 0), rps)
    print("SET -P 16, 50 clients (best of %d), requests/s:" % ROUNDS)
    print("%-10s %12s %12s %10s %10s %12s" % ("", "lapse", "redis", "lapse/off", "redis/off",
                                              "lapse/redis"))
    for setting in SETTINGS:
        l, r = best[("lapse", setting)], best[("redis", setting)]
        print("%-10s %12.0f %12.0f %10.2f %10.2f %12.2f" % (
            setting, l, r, l / best[("lapse", "off")], r / best[("redis", "off")], l / r))


def rewrite(server):
    work = tempfile.mkdtemp(prefix="lapse-aof-bench-")
    proc, port = start(server, extra=server_args(work, "everysec"))
    populate(port)
    job = under_write_load(proc, port, "BGREWRITEAOF", "aof_rewrite_in_progress",
                           "aof_last_bgrewrite_status", "aof_last_cow_size")
    stop(proc)
    shutil.rmtree(work, ignore_errors=True)
    return dict(job, rewrite_s=job["job_s"])


def rewrites():
    results = {s: rewrite(s) for s in ("lapse", "redis")}
    l, r = results["lapse"], results["redis"]
    print("\nBGREWRITEAOF of %d keys under a SET load:" % KEYS)
    rows = [("rewrite, s", "rewrite_s"), ("worst PING without a rewrite, ms", "idle_worst_ms"),
            ("worst PING during the rewrite, ms", "worst_ms"),
            ("RSS before, MB", "before_mb"), ("peak RSS during, MB", "peak_mb")]
    print("%-36s %10s %10s" % ("", "lapse", "redis"))
    for name, key in rows:
        print("%-36s %10.2f %10.2f" % (name, l[key], r[key]))
    for who, m in results.items():
        print("%s: peak/before %.2f; status %s; fork %.1f ms; copy-on-write %.1f MB"
              % (who, m["peak_mb"] / m["before_mb"], m["status"], m["fork_ms"], m["cow_mb"]))


def incr_until_dead(port, key, acked):
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    request = b"*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n" % (len(key), key.encode())
    try:
        while True:
            s.sendall(request)
            line = f.readline()
            if not line.startswith(b":"):
                return
            acked[key] = int(line[1:])
    except OSError:
        return


def crash(server, setting):
    work = tempfile.mkdtemp(prefix="lapse-aof-bench-")
    proc, port = start(server, extra=server_args(work, setting))
    acked = {}
    threads = [threading.Thread(target=incr_until_dead, args=(port, "c%d" % i, acked))
               for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for t in threads:
        t.join()
    proc, port = start(server, extra=server_args(work, setting))
    lost = 0
    for key, value in acked.items():
        stored = cmd(port, "GET", key).split(b"\r\n")
        stored = int(stored[1]) if len(stored) > 1 and stored[1] else 0
        lost += max(0, value - stored)
    stop(proc)
    shutil.rmtree(work, ignore_errors=True)
    return sum(acked.values()), lost


def crashes():
    print("\nkill -9 under INCR load (8 clients, 2 s):")
    print("%-10s %-6s %14s %8s" % ("setting", "server", "acknowledged", "lost"))
    for setting in ("everysec", "always"):
        for server in ("lapse", "redis"):
            acked, lost = crash(server, setting)
            print("%-10s %-6s %14d %8d" % (setting, server, acked, lost))


def main():
    build()
    throughput()
    rewrites()
    crashes()


if __name__ == "__main__":
    main()
