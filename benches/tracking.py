#!/usr/bin/env python3
"""Client-side caching under load (issue 19's target): 100 RESP3 clients
with CLIENT TRACKING ON keep reading 1,000 keys (pipelined GETs of random
keys, their replies and invalidation pushes drained as they come), while
redis-benchmark SETs those same keys (-P 16, 50 clients): every SET
invalidates a key up to 100 clients hold. lapse and redis-server side by
side; also each without the trackers, for scale.

    benches/tracking.py
    REQUESTS=4000000 benches/tracking.py
"""
import os
import random
import re
import selectors
import socket
import subprocess
import threading

from benchlib import build, enc, info_field, start, stop

CLIENTS = int(os.environ.get("TRACKERS", "100"))
KEYS = 1000
REQUESTS = int(os.environ.get("REQUESTS", "2000000"))


def key(n):
    # redis-benchmark's __rand_int__ with -r: twelve digits.
    return "key:%012d" % n


def trackers(port, stop_event, stats):
    socks = []
    sel = selectors.DefaultSelector()
    for _ in range(CLIENTS):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(enc(["HELLO", "3"]) + enc(["CLIENT", "TRACKING", "ON"]))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        socks.append(s)
    rng = random.Random(1)
    while not stop_event.is_set():
        for s in socks:
            batch = b"".join(enc(["GET", key(rng.randrange(KEYS))]) for _ in range(20))
            try:
                s.sendall(batch)
            except BlockingIOError:
                pass
        for sk, _ in sel.select(timeout=0.001):
            try:
                data = sk.fileobj.recv(1 << 20)
            except BlockingIOError:
                continue
            stats["bytes"] += len(data)
            stats["pushes"] += data.count(b">2\r\n$10\r\ninvalidate")
    for s in socks:
        s.close()


def measure(server, tracked):
    proc, port = start(server)
    # The keys exist (random SETs over the same space).
    subprocess.run(
        ["redis-benchmark", "-p", str(port), "-q", "-t", "set", "-n", str(KEYS * 10), "-r", str(KEYS)],
        stdout=subprocess.DEVNULL,
    )
    stop_event = threading.Event()
    stats = {"bytes": 0, "pushes": 0}
    thread = None
    if tracked:
        thread = threading.Thread(target=trackers, args=(port, stop_event, stats))
        thread.start()
        # Let the tables fill.
        while int(info_field(port, "tracking_total_items") or 0) < KEYS * CLIENTS // 2:
            pass
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-c", "50", "-P", "16", "-q", "-t", "set",
         "-n", str(REQUESTS), "-r", str(KEYS)],
        capture_output=True, text=True,
    ).stdout
    items = info_field(port, "tracking_total_items")
    stop_event.set()
    if thread:
        thread.join()
    stop(proc)
    rps = float(re.findall(r"([\d.]+) requests per second", out)[-1])
    return rps, stats["pushes"], items


def main():
    build()
    results = {}
    for tracked in (False, True):
        for server in ("lapse", "redis"):
            results[(server, tracked)] = measure(server, tracked)
    for tracked in (False, True):
        l, r = results[("lapse", tracked)], results[("redis", tracked)]
        what = "with %d trackers" % CLIENTS if tracked else "no trackers"
        print("SET -P 16 %-16s lapse %10.0f  redis %10.0f  ratio %.2f   invalidations seen: lapse %d, redis %d"
              % (what, l[0], r[0], l[0] / r[0], l[1], r[1]))


if __name__ == "__main__":
    main()
