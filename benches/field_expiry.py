#!/usr/bin/env python3
"""Hash-field expiry (issue 21) on lapse.

    benches/field_expiry.py                 # FIELDS=1000000 PROBES=1000 RUNS=3
    FIELDS=100000 benches/field_expiry.py

1. Lag: HASHES hashes holding FIELDS fields in all, every field with a
   1-hour TTL, plus PROBES probe fields (spread over the hashes) sharing one
   deadline 2 s ahead; nothing reads them. INFO is polled every ~1 ms (it
   reads no key) until `expired_subkeys` counts every probe: the time from
   the deadline to then is the last probe's lag (at least the p99). RUNS
   runs; the worst is reported.
2. Memory: used_memory growth per field of one hash of FIELDS fields, then
   after giving every field a TTL (the extra bytes per field with a TTL).
3. Throughput: redis-benchmark -P 16 HSET (of a field without a TTL) and
   HGET (of every field alike, then of single ones) on 100,000 hashes of
   10 fields, half of them with a 1-hour TTL, against the same hashes
   without TTLs, on two fresh lapse
   servers side by side, each test alternating between them RUNS times
   (median ratio reported). HGET f0 reads the fifth field of a hash with
   TTLs (Redis 7.4's order puts the fields with a TTL first, the last one
   given a TTL before the others with the same deadline: f4 f3 f2 f1 f0
   f5 ...) and the first of a plain one; HGET of the 1st and of the 5th
   field read the same place in each (f4 and f0, f0 and f4): the cost of
   a TTL alone. Each test also gives the server's CPU time per request
   (from /proc), steadier than the rate: redis-benchmark shares the two
   cores with the server.

redis-server 7.4 is not in Debian's archive here, so there is no side by
side run; the targets are absolute (p99 < 100 ms, <= 16 B per field).
For comparison, the throughput part alone runs on a redis-server 7.4
built by hand (its two servers are then both redis-server):

    SERVER=redis REDIS_SERVER=/path/to/7.4/redis-server benches/field_expiry.py

and `THROUGHPUT_ONLY=1` runs only that part on lapse."""

import os
import sys
import time

from benchlib import build, info_field, pipeline, rps, side_by_side, start, stop

FIELDS = int(os.environ.get("FIELDS", "1000000"))
PROBES = int(os.environ.get("PROBES", "1000"))
HASHES = int(os.environ.get("HASHES", "10"))
RUNS = int(os.environ.get("RUNS", "3"))
# "redis": only the throughput part, on redis-server (REDIS_SERVER).
SERVER = os.environ.get("SERVER", "lapse")
def fill(port, hashes, fields, ttl_ms):
    """`fields` fields over `hashes` hashes, each with a TTL of `ttl_ms`
    (None: none)."""
    per = fields // hashes
    cmds = []
    for h in range(hashes):
        for j in range(0, per, 100):
            args = ["HSET", "h%d" % h]
            for k in range(j, min(j + 100, per)):
                args += ["f%d" % k, "v"]
            cmds.append(args)
    pipeline(port, cmds)
    if ttl_ms is not None:
        cmds = []
        for h in range(hashes):
            for j in range(0, per, 100):
                names = ["f%d" % k for k in range(j, min(j + 100, per))]
                cmds.append(["HPEXPIRE", "h%d" % h, str(ttl_ms), "FIELDS", str(len(names))] + names)
        pipeline(port, cmds)


def used(port):
    return int(info_field(port, "used_memory", "memory"))


def lag_run():
    proc, port = start("lapse")
    try:
        fill(port, HASHES, FIELDS, 3_600_000)
        probes_at = int(time.time() * 1000) + 2000
        cmds = []
        for p in range(PROBES):
            h = "h%d" % (p % HASHES)
            cmds.append(["HSET", h, "probe%d" % p, "v"])
            cmds.append(["HPEXPIREAT", h, str(probes_at), "FIELDS", "1", "probe%d" % p])
        pipeline(port, cmds)
        while True:
            done = int(info_field(port, "expired_subkeys", "stats"))
            now = time.time() * 1000
            if done >= PROBES:
                return now - probes_at
            time.sleep(0.001)
    finally:
        stop(proc)


def memory_run():
    proc, port = start("lapse")
    try:
        base = used(port)
        fill(port, 1, FIELDS, None)
        plain = used(port)
        cmds = []
        for j in range(0, FIELDS, 100):
            names = ["f%d" % k for k in range(j, min(j + 100, FIELDS))]
            cmds.append(["HPEXPIRE", "h0", "3600000", "FIELDS", str(len(names))] + names)
        pipeline(port, cmds)
        with_ttl = used(port)
        return (plain - base) / FIELDS, (with_ttl - plain) / FIELDS
    finally:
        stop(proc)


def fill_hashes(port, with_ttls):
    """100,000 hashes of 10 fields, f0-f4 with a 1-hour TTL if `with_ttls`."""
    cmds = []
    for n in range(100000):
        key = "h:%012d" % n
        cmds.append(["HSET", key] + sum([["f%d" % j, "value%d" % j] for j in range(10)], []))
        if with_ttls:
            cmds.append(["HPEXPIRE", key, "3600000", "FIELDS", "5", "f0", "f1", "f2", "f3", "f4"])
    pipeline(port, cmds)


def throughput():
    """Two servers side by side, hashes with TTLs and plain ones; each test
    alternates between them RUNS times (the machine is noisy): the median
    ratio of each."""
    ttl_proc, ttl_port = start(SERVER)
    plain_proc, plain_port = start(SERVER)
    try:
        fill_hashes(ttl_port, True)
        fill_hashes(plain_port, False)
        for name, ttl_test, plain_test in (
                ("HSET f9 (no TTL)", ["HSET", "h:__rand_int__", "f9", "v"], ["HSET", "h:__rand_int__", "f9", "v"]),
                ("HGET of any field (f0..f9, as many of each)",
                 [["HGET", "h:__rand_int__", "f%d" % j] for j in range(10)],
                 [["HGET", "h:__rand_int__", "f%d" % j] for j in range(10)]),
                ("HGET f0 (TTL; 5th field vs 1st)", ["HGET", "h:__rand_int__", "f0"], ["HGET", "h:__rand_int__", "f0"]),
                ("HGET of the 1st field (f4 with a TTL vs f0)", ["HGET", "h:__rand_int__", "f4"], ["HGET", "h:__rand_int__", "f0"]),
                ("HGET of the 5th field (f0 with a TTL vs f4)", ["HGET", "h:__rand_int__", "f0"], ["HGET", "h:__rand_int__", "f4"])):
            side_by_side(name + " (with TTLs / plain; CPU plain/with TTLs)", RUNS,
                         lambda: rps(ttl_proc, ttl_port, ttl_test),
                         lambda: rps(plain_proc, plain_port, plain_test))
    finally:
        stop(ttl_proc)
        stop(plain_proc)


def main():
    if SERVER == "lapse":
        build()
    if SERVER != "lapse" or os.environ.get("THROUGHPUT_ONLY"):
        throughput()
        return
    lags = [lag_run() for _ in range(RUNS)]
    print("probe lag, ms (deadline to the last of %d probes gone; %d fields with 1-hour TTLs in %d hashes): %s; worst %.1f"
          % (PROBES, FIELDS, HASHES, ", ".join("%.1f" % l for l in lags), max(lags)))
    per_field, per_ttl = memory_run()
    print("memory: %.1f B per field of a %d-field hash; %.1f B more per field with a TTL" % (per_field, FIELDS, per_ttl))
    throughput()


if __name__ == "__main__":
    sys.exit(main())
