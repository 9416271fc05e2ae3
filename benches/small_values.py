#!/usr/bin/env python3
"""Bytes per small aggregate (issue 23): VALUES values (100,000 by default)
of 3, 10 and 50 elements of each kind, each row on a fresh lapse and a
fresh redis-server, side by side: used_memory growth per value (what the
issue's table measures) and RSS growth per value, with OBJECT ENCODING.

    benches/small_values.py                  # all rows
    ROWS=hash,zset SIZES=10 benches/small_values.py

Needs redis-server (apt-get install -y redis-server) and a release build
(`cargo build --release`; the script builds it)."""

import os
import sys
import time

from benchlib import build, cmd, enc, rss, start, stop

VALUES = int(os.environ.get("VALUES", "100000"))
SIZES = [int(n) for n in os.environ.get("SIZES", "3,10,50").split(",")]


def rows(n):
    """Each kind: the command that builds one value of n elements."""
    return {
        # fieldN -> valueNNNN
        "hash": lambda k: ["HSET", k] + sum([["field%d" % j, "value%04d" % (j * 37 % 10000)] for j in range(n)], []),
        "intset": lambda k: ["SADD", k] + [str(j) for j in range(n)],
        "zset": lambda k: ["ZADD", k] + sum([[str(j), "member:%d" % j] for j in range(n)], []),
        "list": lambda k: ["RPUSH", k] + ["item:%d" % j for j in range(n)],
        "strset": lambda k: ["SADD", k] + ["tag:%d" % j for j in range(n)],
    }


def used_memory(port):
    info = cmd(port, "INFO", "memory").decode()
    line = [l for l in info.split("\r\n") if l.startswith("used_memory:")][0]
    return int(line.split(":")[1])


def measure(server, make):
    """(used bytes per value, RSS bytes per value, encoding) on a fresh server."""
    proc, port = start(server)
    try:
        time.sleep(0.2)
        before = (used_memory(port), rss(proc.pid))
        s = __import__("socket").create_connection(("127.0.0.1", port))
        s.sendall(b"".join(enc(make("key:%d" % i)) for i in range(VALUES)))
        data = b""
        while data.count(b"\r\n") < VALUES:
            data += s.recv(1 << 20)
        s.close()
        time.sleep(0.2)
        after = (used_memory(port), rss(proc.pid))
        encoding = cmd(port, "OBJECT", "ENCODING", "key:1").decode().split()[-1]
        return ((after[0] - before[0]) / VALUES, (after[1] - before[1]) / VALUES, encoding)
    finally:
        stop(proc)


def main():
    build()
    only = os.environ.get("ROWS")
    print("| value | n | lapse used B | redis used B | ratio | lapse RSS B | redis RSS B | ratio | encoding (lapse / redis) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in SIZES:
        for name, make in rows(n).items():
            if only and name not in only.split(","):
                continue
            lu, lr, le = measure("lapse", make)
            ru, rr, re = measure("redis", make)
            print("| %s | %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %s / %s |"
                  % (name, n, lu, ru, lu / ru, lr, rr, lr / rr, le, re), flush=True)


if __name__ == "__main__":
    sys.exit(main())
