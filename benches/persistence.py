#!/usr/bin/env python3
"""RDB persistence, lapse and redis-server side by side (issue 16):

1. 1,000,000 keys of mixed types (70% strings, 10% hashes of 5 fields,
   10% lists of 5, 5% sets of 5, 5% sorted sets of 5), half with a TTL:
   SAVE time, RDB size, load time (process start to the first PONG).
2. BGSAVE of that dataset while redis-benchmark overwrites its string keys
   at full speed (SET, -P 16, 4 clients): the longest PING (one every ms on
   its own connection) during the save and in the same load without one,
   the save's duration, and memory: peak RSS during the save over RSS just
   before (lapse: one process; redis: parent + child RSS, and the child's
   copy-on-write as redis reports it, rdb_last_cow_size).

3. BGSAVE of two big values (a list and a set of 3,000,000 elements each),
   written in pieces: the longest PING during the save.
4. FLUSHDB ASYNC sent right after BGSAVE of ~865,000 keys: its latency
   (lapse hands the table to the save instead of finishing the save first).

    benches/persistence.py            # KEYS=1000000 by default
    KEYS=200000 benches/persistence.py
"""
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from benchlib import build, cmd, enc, info_field, rss, start, stop

KEYS = int(os.environ.get("KEYS", "1000000"))


def send_all(port, commands, batch=10000):
    """Pipelines `commands` (lists of args) and reads every reply."""
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    for i in range(0, len(commands), batch):
        chunk = commands[i:i + batch]
        s.sendall(b"".join(enc(c) for c in chunk))
        for _ in chunk:
            line = f.readline()
            if line.startswith(b"-"):
                raise RuntimeError(line)
    s.close()


def populate(port):
    """The mixed dataset; string keys are named as redis-benchmark's."""
    commands = []
    for n in range(KEYS):
        kind = n % 20
        if kind < 14:
            commands.append(["SET", "key:%012d" % n, "value-%d" % n])
        elif kind < 16:
            key = "hash:%d" % n
            commands.append(["HSET", key] + sum([["f%d" % i, str(i * n)] for i in range(5)], []))
        elif kind < 18:
            commands.append(["RPUSH", "list:%d" % n] + ["item%d" % i for i in range(5)])
        elif kind < 19:
            commands.append(["SADD", "set:%d" % n] + ["m%d" % (i * n) for i in range(5)])
        else:
            commands.append(["ZADD", "zset:%d" % n] + sum([[str(i), "m%d" % i] for i in range(5)], []))
        if n % 2 == 0:
            key = commands[-1][1]
            commands.append(["EXPIRE", key, "100000"])
        if len(commands) >= 50000:
            send_all(port, commands)
            commands = []
    send_all(port, commands)


def wait_bgsave(port):
    while info_field(port, "rdb_bgsave_in_progress", "persistence") != "0":
        time.sleep(0.005)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def tree_rss(pid):
    total = rss(pid)
    for child in children(pid):
        try:
            total += rss(child)
        except (OSError, IndexError):
            pass
    return total


def ping_worst(port, stop_flag, out):
    s = socket.create_connection(("127.0.0.1", port))
    worst = 0.0
    while not stop_flag.is_set():
        t = time.perf_counter()
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        s.recv(100)
        worst = max(worst, time.perf_counter() - t)
        time.sleep(0.001)
    out.append(worst)


def pinged(port, seconds_or_until):
    """Runs `seconds_or_until()` while pinging; returns (its result, worst)."""
    flag, out = threading.Event(), []
    t = threading.Thread(target=ping_worst, args=(port, flag, out))
    t.start()
    result = seconds_or_until()
    flag.set()
    t.join()
    return result, out[0]


def under_write_load(proc, port, command, in_progress, status_field, cow_field):
    """Runs the background `command` (BGSAVE, BGREWRITEAOF) while
    redis-benchmark overwrites the string keys at full speed; returns its
    duration, the worst PING without and during it, RSS before and at
    peak (the process and its children), and what the server reports."""
    bench = subprocess.Popen(
        ["redis-benchmark", "-p", str(port), "-c", "4", "-n", "1000000000", "-r", str(KEYS),
         "-P", "16", "-t", "set", "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    _, idle_worst = pinged(port, lambda: time.sleep(2))
    before = tree_rss(proc.pid)
    peak = [before]

    def run_and_watch():
        t = time.perf_counter()
        assert cmd(port, command).startswith(b"+Background")
        while info_field(port, in_progress, "persistence") != "0":
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.002)
        return time.perf_counter() - t

    job_s, worst = pinged(port, run_and_watch)
    bench.kill()
    bench.wait()
    return {
        "job_s": job_s, "idle_worst_ms": idle_worst * 1000, "worst_ms": worst * 1000,
        "before_mb": before / 2**20, "peak_mb": peak[0] / 2**20,
        "status": info_field(port, status_field, "persistence"),
        "cow_mb": int(info_field(port, cow_field, "persistence") or 0) / 2**20,
        "fork_ms": int(info_field(port, "latest_fork_usec", "stats") or 0) / 1000,
    }


def measure(server):
    work = tempfile.mkdtemp(prefix="lapse-persist-bench-")
    extra = ["--dir", work, "--dbfilename", "dump.rdb"]
    proc, port = start(server, extra=extra)
    populate(port)
    dbsize = int(cmd(port, "DBSIZE")[1:].strip())
    t = time.perf_counter()
    assert cmd(port, "SAVE").startswith(b"+OK")
    save_s = time.perf_counter() - t
    size = os.path.getsize(os.path.join(work, "dump.rdb"))
    # SIGTERM; both run with --save "", so the file stays SAVE's.
    stop(proc)
    t = time.perf_counter()
    proc, port = start(server, extra=extra)
    while cmd(port, "PING") != b"+PONG\r\n":
        time.sleep(0.01)
    load_s = time.perf_counter() - t
    assert int(cmd(port, "DBSIZE")[1:].strip()) == dbsize, "the reload lost keys"

    job = under_write_load(proc, port, "BGSAVE", "rdb_bgsave_in_progress",
                           "rdb_last_bgsave_status", "rdb_last_cow_size")
    stop(proc)
    shutil.rmtree(work, ignore_errors=True)
    return dict(job, keys=dbsize, save_s=save_s, size=size, load_s=load_s,
                bgsave_s=job["job_s"], save_worst_ms=job["worst_ms"])


def big_values(server):
    """BGSAVE of a 3M-element list and a 3M-member set; (seconds, worst
    PING ms, fork ms)."""
    work = tempfile.mkdtemp(prefix="lapse-persist-bench-")
    proc, port = start(server, extra=["--dir", work])
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    for command, prefix in (("RPUSH", "element-"), ("SADD", "member-")):
        key = "big" + command.lower()
        for i in range(0, 3_000_000, 1000):
            s.sendall(enc([command, key] + ["%s%d" % (prefix, j) for j in range(i, i + 1000)]))
        for i in range(0, 3_000_000, 1000):
            f.readline()

    def job():
        t = time.perf_counter()
        assert cmd(port, "BGSAVE").startswith(b"+Background")
        wait_bgsave(port)
        return time.perf_counter() - t

    seconds, worst = pinged(port, job)
    fork_us = int(info_field(port, "latest_fork_usec", "stats") or 0)
    stop(proc)
    shutil.rmtree(work, ignore_errors=True)
    return seconds, worst * 1000, fork_us / 1000


def flush_during_save(server):
    """Milliseconds FLUSHDB ASYNC takes right after BGSAVE starts."""
    work = tempfile.mkdtemp(prefix="lapse-persist-bench-")
    proc, port = start(server, extra=["--dir", work])
    subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-r", "1000000",
                    "-n", "2000000", "-P", "64", "-q"], capture_output=True)
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    s.sendall(enc(["BGSAVE"]))
    f.readline()
    t = time.perf_counter()
    s.sendall(enc(["FLUSHDB", "ASYNC"]))
    f.readline()
    took = time.perf_counter() - t
    wait_bgsave(port)
    stop(proc)
    shutil.rmtree(work, ignore_errors=True)
    return took * 1000


def main():
    build()
    for server in ("lapse", "redis"):
        print("%s: FLUSHDB ASYNC right after BGSAVE: %.1f ms" % (server, flush_during_save(server)))
    for server in ("lapse", "redis"):
        seconds, worst, fork = big_values(server)
        print("%s: BGSAVE of a 3M list + 3M set: %.2f s, worst PING %.1f ms, fork %.1f ms"
              % (server, seconds, worst, fork))
    results = {s: measure(s) for s in ("lapse", "redis")}
    l, r = results["lapse"], results["redis"]
    print("%d keys (lapse %d, redis %d after load)" % (KEYS, l["keys"], r["keys"]))
    rows = [
        ("SAVE, s", "save_s"), ("RDB size, MB", "size"), ("load, s", "load_s"),
        ("BGSAVE under SET load, s", "bgsave_s"),
        ("worst PING without a save, ms", "idle_worst_ms"),
        ("worst PING during BGSAVE, ms", "save_worst_ms"),
        ("RSS before BGSAVE, MB", "before_mb"), ("peak RSS during BGSAVE, MB", "peak_mb"),
    ]
    print("%-34s %12s %12s %8s" % ("", "lapse", "redis", "ratio"))
    for name, key in rows:
        lv, rv = l[key], r[key]
        if key == "size":
            lv, rv = lv / 2**20, rv / 2**20
        print("%-34s %12.2f %12.2f %8.2f" % (name, lv, rv, lv / rv if rv else float("nan")))
    for who, m in results.items():
        print("%s: peak/before %.2f; bgsave status %s; fork %.1f ms; copy-on-write %.1f MB"
              % (who, m["peak_mb"] / m["before_mb"], m["status"], m["fork_ms"], m["cow_mb"]))


if __name__ == "__main__":
    main()
