#!/usr/bin/env python3
"""Bytes per stream entry (issue 20's target: within 1.2x redis-server's):
ENTRIES entries (1,000,000 by default) appended with XADD * to one stream,
on a fresh lapse and a fresh redis-server side by side; used_memory and
RSS growth per entry, and XINFO STREAM's node count.

    benches/streams.py
    ENTRIES=200000 SHAPES=event,job benches/streams.py

Throughput (XADD, XREADGROUP+XACK at -P 16) is in compare.sh:
    TESTS="xadd xreadgroup_ack" PIPELINES=16 benches/compare.sh

Needs redis-server (apt-get install -y redis-server) and a release build
(`cargo build --release`; the script builds it)."""

import os
import socket
import sys
import time

from benchlib import build, cmd, enc, rss, start, stop

ENTRIES = int(os.environ.get("ENTRIES", "1000000"))

SHAPES = {
    # An event: one small field.
    "event": lambda i: ["f", "v%d" % (i % 1000)],
    # A job: three fields, a 32-byte payload.
    "job": lambda i: ["type", "email", "user", str(i), "payload", "%032d" % i],
    # A log line: one 100-byte message.
    "log": lambda i: ["msg", ("line %d " % i).ljust(100, "x")],
}


def used_memory(port):
    info = cmd(port, "INFO", "memory").decode()
    line = [l for l in info.split("\r\n") if l.startswith("used_memory:")][0]
    return int(line.split(":")[1])


def measure(server, shape):
    proc, port = start(server)
    try:
        time.sleep(0.2)
        before = (used_memory(port), rss(proc.pid))
        s = socket.create_connection(("127.0.0.1", port))
        batch = 10000
        for first in range(0, ENTRIES, batch):
            n = min(batch, ENTRIES - first)
            s.sendall(b"".join(enc(["XADD", "s", "*"] + shape(i)) for i in range(first, first + n)))
            data = b""
            while data.count(b"\r\n") < 2 * n:
                data += s.recv(1 << 20)
        s.close()
        time.sleep(0.2)
        after = (used_memory(port), rss(proc.pid))
        info = cmd(port, "XINFO", "STREAM", "s").decode().split("\r\n")
        nodes = info[info.index("radix-tree-keys") + 1].lstrip(":")
        return ((after[0] - before[0]) / ENTRIES, (after[1] - before[1]) / ENTRIES, nodes)
    finally:
        stop(proc)


def main():
    build()
    only = os.environ.get("SHAPES")
    print("| entry | entries | lapse used B | redis used B | ratio | lapse RSS B | redis RSS B | ratio | nodes (lapse / redis) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, shape in SHAPES.items():
        if only and name not in only.split(","):
            continue
        lu, lr, ln = measure("lapse", shape)
        ru, rr, rn = measure("redis", shape)
        print("| %s | %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %s / %s |"
              % (name, ENTRIES, lu, ru, lu / ru, lr, rr, lr / rr, ln, rn), flush=True)


if __name__ == "__main__":
    sys.exit(main())
