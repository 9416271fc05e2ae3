#!/usr/bin/env python3
"""Set and sorted-set member expiry (issue 40) on lapse.

    benches/member_expiry.py              # MEMBERS=1000000 SETS=10000 PROBES=1000 RUNS=3
    PART=memory benches/member_expiry.py  # one part: lag, memory or throughput

1. Lag: SETS sets holding MEMBERS members in all, every member with a
   1-hour TTL, plus PROBES probe members (spread over the sets) sharing one
   deadline 2 s ahead; nothing reads them. INFO is polled every ~1 ms (it
   reads no key) until `expired_subkeys` counts every probe: the time from
   the deadline to then is the last probe's lag. RUNS runs; the worst is
   reported. Then the same with sorted sets.
2. Memory: used_memory growth per member of MEMBERS members, then after
   giving every member a TTL (the extra bytes per member with a TTL): in
   SETS sets (small ones: 100 members each by default) and in one set;
   the same for sorted sets.
3. Throughput: redis-benchmark -P 16 SADD (of a member already there),
   SISMEMBER, SMEMBERS, and ZADD, ZSCORE, ZRANGE 0 -1 on 100,000 keys of
   10 members each, every member with a 1-hour TTL, against the same keys
   without TTLs, on two fresh lapse servers side by side, each test
   alternating between them RUNS times (median ratios reported): requests
   per second (with TTLs / plain) and server CPU per request (plain / with
   TTLs; above 1 would mean the TTLs cost nothing).

No other server has sorted-set member TTLs, and Redis 8.12 is not
packaged here: the targets are absolute (lag <= 100 ms, <= 16 B per
member, throughput within 10%)."""

import os
import sys
import time

from benchlib import build, cmd, info_field, pipeline, rps, side_by_side, start, stop

MEMBERS = int(os.environ.get("MEMBERS", "1000000"))
SETS = int(os.environ.get("SETS", "10000"))
PROBES = int(os.environ.get("PROBES", "1000"))
RUNS = int(os.environ.get("RUNS", "3"))
PART = os.environ.get("PART", "all")

# Per family: the command that adds members (and how a member is
# written), and the one that gives them a TTL.
FAMILIES = {
    "set": ("SADD", lambda m: [m], "SPEXPIRE"),
    "zset": ("ZADD", lambda m: ["1", m], "ZPEXPIRE"),
}


def fill(port, family, keys, members, ttl_ms, prefix="m"):
    """`members` members over `keys` keys of `family`, each with a TTL of
    `ttl_ms` (None: none)."""
    add, member, expire = FAMILIES[family]
    per = members // keys
    cmds = []
    for k in range(keys):
        for j in range(0, per, 100):
            names = ["%s%d" % (prefix, n) for n in range(j, min(j + 100, per))]
            cmds.append([add, "k%d" % k] + sum((member(m) for m in names), []))
            if ttl_ms is not None:
                cmds.append([expire, "k%d" % k, str(ttl_ms), "MEMBERS", str(len(names))] + names)
    pipeline(port, cmds)


def used(port):
    return int(info_field(port, "used_memory", "memory"))


def lag_run(family):
    proc, port = start("lapse")
    try:
        fill(port, family, SETS, MEMBERS, 3_600_000)
        add, member, _ = FAMILIES[family]
        probes_at = int(time.time() * 1000) + 2000
        cmds = []
        for p in range(PROBES):
            key = "k%d" % (p % SETS)
            cmds.append([add, key] + member("probe%d" % p))
            cmds.append([FAMILIES[family][2] + "AT", key, str(probes_at), "MEMBERS", "1", "probe%d" % p])
        pipeline(port, cmds)
        while True:
            done = int(info_field(port, "expired_subkeys", "stats"))
            now = time.time() * 1000
            if done >= PROBES:
                return now - probes_at
            time.sleep(0.001)
    finally:
        stop(proc)


def memory_run(family, keys):
    """(bytes per member without TTLs, bytes more per member with one,
    OBJECT ENCODING of a key with TTLs)."""
    proc, port = start("lapse")
    try:
        base = used(port)
        fill(port, family, keys, MEMBERS, None)
        plain = used(port)
        _, _, expire = FAMILIES[family]
        per = MEMBERS // keys
        cmds = []
        for k in range(keys):
            for j in range(0, per, 100):
                names = ["m%d" % n for n in range(j, min(j + 100, per))]
                cmds.append([expire, "k%d" % k, "3600000", "MEMBERS", str(len(names))] + names)
        pipeline(port, cmds)
        with_ttl = used(port)
        encoding = cmd(port, "OBJECT", "ENCODING", "k0").decode().split("\r\n")[1]
        return (plain - base) / MEMBERS, (with_ttl - plain) / MEMBERS, encoding
    finally:
        stop(proc)


def fill_keys(port, with_ttls):
    """100,000 sets and 100,000 sorted sets of 10 members each, every
    member with a 1-hour TTL if `with_ttls`."""
    cmds = []
    names = ["member:%d" % j for j in range(10)]
    for n in range(100000):
        cmds.append(["SADD", "s:%012d" % n] + names)
        cmds.append(["ZADD", "z:%012d" % n] + sum(([str(j), m] for j, m in enumerate(names)), []))
        if with_ttls:
            cmds.append(["SPEXPIRE", "s:%012d" % n, "3600000", "MEMBERS", "10"] + names)
            cmds.append(["ZPEXPIRE", "z:%012d" % n, "3600000", "MEMBERS", "10"] + names)
    pipeline(port, cmds)


def throughput():
    ttl_proc, ttl_port = start("lapse")
    plain_proc, plain_port = start("lapse")
    try:
        fill_keys(ttl_port, True)
        fill_keys(plain_port, False)
        for name, test in (
                ("SADD of a member already there", ["SADD", "s:__rand_int__", "member:3"]),
                ("SISMEMBER", ["SISMEMBER", "s:__rand_int__", "member:3"]),
                ("SMEMBERS", ["SMEMBERS", "s:__rand_int__"]),
                ("ZADD of a member already there", ["ZADD", "z:__rand_int__", "3", "member:3"]),
                ("ZSCORE", ["ZSCORE", "z:__rand_int__", "member:3"]),
                ("ZRANGE 0 -1", ["ZRANGE", "z:__rand_int__", "0", "-1"])):
            side_by_side(name + " -P 16 (with TTLs / plain; CPU plain / with TTLs)", RUNS,
                         lambda: rps(ttl_proc, ttl_port, test),
                         lambda: rps(plain_proc, plain_port, test))
    finally:
        stop(ttl_proc)
        stop(plain_proc)


def main():
    build()
    if PART in ("all", "lag"):
        for family in FAMILIES:
            lags = [lag_run(family) for _ in range(RUNS)]
            print("%s: probe lag, ms (deadline to the last of %d probes gone; %d members with "
                  "1-hour TTLs in %d keys): %s; worst %.1f"
                  % (family, PROBES, MEMBERS, SETS, ", ".join("%.1f" % l for l in lags), max(lags)),
                  flush=True)
    if PART in ("all", "memory"):
        for family in FAMILIES:
            for keys in (SETS, 1):
                per_member, per_ttl, encoding = memory_run(family, keys)
                print("%s: memory: %.1f B per member (%d members in %d keys); %.1f B more per "
                      "member with a TTL (encoding then: %s)"
                      % (family, per_member, MEMBERS, keys, per_ttl, encoding), flush=True)
    if PART in ("all", "throughput"):
        throughput()


if __name__ == "__main__":
    sys.exit(main())
