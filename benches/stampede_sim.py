#!/usr/bin/env python3
"""A cache stampede, simulated (issue 42): CLIENTS connections read one hot
key whose value lives TTL_MS; a miss (or a refresh) costs a recompute in a
backend that takes BACKEND_MS. Each pattern runs DURATION seconds, in one
run, one after the other:

  on lapse, stampede protection in the server:
    getlease-stale  SET ... PX ttl PSTALE grace LEASE t; readers GETLEASE:
                    one `refresh`es while the others get the stale value
    getlease-wait   SET ... PX ttl LEASE t, no grace; readers GETLEASE
                    WAIT: one `fill`s, the others block until it writes
    getlease-beta   getlease-stale with BETA 1: the server's XFetch
                    refreshes early, before the soft deadline
  on redis-server, the best client-side patterns:
    lock            GET; on a miss SET lock NX PX, the winner reads again
                    and recomputes, the others retry every RETRY_MS
    jitter          GET; on a miss recompute and SET PX ttl +-10%
    xfetch          GET + PTTL; recompute early when now - delta * beta *
                    ln(rand()) >= expiry (Vattani et al.), or on a miss

Reported per pattern: backend calls in all and per expiry (calls that
start within two recompute times of each other are one wave: one
expiry), and the time each read took to give its caller a value, p50 /
p99 / max, over all reads and over the reads that started within
[-100, +500] ms of an expiry's first backend call.

    benches/stampede_sim.py                 # CLIENTS=200 DURATION=30
    DURATION=5 PATTERNS="getlease-wait lock" benches/stampede_sim.py

A reader thinks THINK_MS between reads (so that one Python process can
drive 200 connections; the latencies include its scheduling, alike for
every pattern)."""

import asyncio
import math
import os
import random
import sys
import time

from benchlib import build, enc, start, stop

CLIENTS = int(os.environ.get("CLIENTS", "200"))
DURATION = float(os.environ.get("DURATION", "30"))
TTL_MS = int(os.environ.get("TTL_MS", "1000"))
BACKEND_MS = int(os.environ.get("BACKEND_MS", "50"))
THINK_MS = int(os.environ.get("THINK_MS", "20"))
RETRY_MS = int(os.environ.get("RETRY_MS", "10"))
GRACE_MS = 10_000
LEASE_MS = 2_000
ALL = "getlease-stale getlease-wait getlease-beta lock jitter xfetch"
PATTERNS = os.environ.get("PATTERNS", ALL).split()
KEY = "hot"


class Conn:
    """One connection speaking RESP, one request at a time."""

    def __init__(self, reader, writer):
        self.r, self.w = reader, writer

    async def call(self, *args):
        self.w.write(enc(args))
        await self.w.drain()
        return await self.read()

    async def read(self):
        line = (await self.r.readline())[:-2]
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return rest if kind == b"+" else int(rest)
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            return (await self.r.readexactly(n + 2))[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [await self.read() for _ in range(n)]
        if kind == b"_":
            return None
        raise RuntimeError("unexpected reply %r" % line)


class Backend:
    """The slow thing the cache protects: each call takes BACKEND_MS."""

    def __init__(self):
        self.calls = []

    async def compute(self):
        self.calls.append(time.monotonic())
        await asyncio.sleep(BACKEND_MS / 1000)
        return b"v%d" % len(self.calls)


async def getlease_read(c, backend, wait, beta):
    args = ["GETLEASE", KEY, LEASE_MS]
    if wait:
        args += ["WAIT", 2 * BACKEND_MS + 1000]
    if beta:
        args += ["BETA", 1]
    while True:
        value, state, token = await c.call(*args)
        if state in (b"fresh", b"stale"):
            return value
        if state in (b"fill", b"refresh"):
            new = await backend.compute()
            grace = [] if wait else ["PSTALE", GRACE_MS]
            await c.call("SET", KEY, new, "PX", TTL_MS, *grace, "LEASE", token)
            return value if state == b"refresh" else new
        await asyncio.sleep(RETRY_MS / 1000)  # busy


async def lock_read(c, backend):
    while True:
        value = await c.call("GET", KEY)
        if value is not None:
            return value
        if await c.call("SET", "lock:" + KEY, "1", "NX", "PX", LEASE_MS) is not None:
            # Filled between the GET and the lock: nothing to do.
            value = await c.call("GET", KEY)
            if value is not None:
                await c.call("DEL", "lock:" + KEY)
                return value
            new = await backend.compute()
            await c.call("SET", KEY, new, "PX", TTL_MS)
            await c.call("DEL", "lock:" + KEY)
            return new
        await asyncio.sleep(RETRY_MS / 1000)


async def jitter_read(c, backend):
    value = await c.call("GET", KEY)
    if value is not None:
        return value
    new = await backend.compute()
    ttl = int(TTL_MS * random.uniform(0.9, 1.1))
    await c.call("SET", KEY, new, "PX", ttl)
    return new


async def xfetch_read(c, backend, beta=1.0):
    # The value carries its recompute time: "delta_ms:value".
    c.w.write(enc(["GET", KEY]) + enc(["PTTL", KEY]))
    await c.w.drain()
    stored, pttl = await c.read(), await c.read()
    if stored is not None:
        delta_ms, value = stored.split(b":", 1)
        early = -float(delta_ms) * beta * math.log(1.0 - random.random())
        if early < pttl:
            return value
    started = time.monotonic()
    new = await backend.compute()
    delta_ms = int((time.monotonic() - started) * 1000)
    await c.call("SET", KEY, b"%d:%s" % (delta_ms, new), "PX", TTL_MS)
    return new


def reader_for(pattern):
    return {
        "getlease-stale": lambda c, b: getlease_read(c, b, wait=False, beta=False),
        "getlease-wait": lambda c, b: getlease_read(c, b, wait=True, beta=False),
        "getlease-beta": lambda c, b: getlease_read(c, b, wait=False, beta=True),
        "lock": lock_read,
        "jitter": jitter_read,
        "xfetch": xfetch_read,
    }[pattern]


async def client(port, read, backend, until, reads):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    c = Conn(reader, writer)
    await asyncio.sleep(random.uniform(0, THINK_MS / 1000))
    while time.monotonic() < until:
        t0 = time.monotonic()
        value = await read(c, backend)
        assert value is not None
        reads.append((t0, time.monotonic() - t0))
        await asyncio.sleep(THINK_MS / 1000)
    writer.close()


async def warm(port, pattern):
    """The key as the pattern writes it, before the readers come: every
    pattern starts with a fresh value, not a cold miss."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    c = Conn(reader, writer)
    value = b"%d:v0" % BACKEND_MS if pattern == "xfetch" else b"v0"
    grace = ["PSTALE", GRACE_MS] if pattern in ("getlease-stale", "getlease-beta") else []
    await c.call("SET", KEY, value, "PX", TTL_MS, *grace)
    writer.close()


async def simulate(port, pattern):
    await warm(port, pattern)
    backend = Backend()
    reads = []
    until = time.monotonic() + DURATION
    read = reader_for(pattern)
    await asyncio.gather(*(client(port, read, backend, until, reads) for _ in range(CLIENTS)))
    return backend.calls, reads


def waves(calls):
    """Backend calls grouped by expiry: a call that starts within two
    recompute times of the wave's last joins it (recomputes of the same
    expiry overlap; those of the next expiry come a TTL later)."""
    out = []
    for t in sorted(calls):
        if out and t - out[-1][-1] < 2 * BACKEND_MS / 1000:
            out[-1].append(t)
        else:
            out.append([t])
    return out


def pct(sorted_ms, p):
    if not sorted_ms:
        return float("nan")
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * p))]


def report(pattern, calls, reads):
    ws = waves(calls)
    firsts = [w[0] for w in ws]
    per_wave = [len(w) for w in ws] or [0]
    all_ms = sorted(d * 1000 for _, d in reads)
    near = []
    j = 0
    for t0, d in sorted(reads):
        while j < len(firsts) and firsts[j] + 0.5 < t0:
            j += 1
        if j < len(firsts) and firsts[j] - 0.1 <= t0:
            near.append(d * 1000)
    near.sort()
    print("%-15s backend calls %6d, expiries %3d, per expiry mean %6.2f max %4d | reads %7d: "
          "p50 %6.2f p99 %7.2f max %7.2f ms | around expiries %6d: p50 %6.2f p99 %7.2f max %7.2f ms"
          % (pattern, len(calls), len(ws), sum(per_wave) / len(per_wave), max(per_wave),
             len(all_ms), pct(all_ms, 0.5), pct(all_ms, 0.99), all_ms[-1] if all_ms else 0,
             len(near), pct(near, 0.5), pct(near, 0.99), near[-1] if near else 0), flush=True)


def main():
    build()
    print("%d clients, one key, TTL %d ms, backend %d ms per recompute, %g s per pattern, think %d ms"
          % (CLIENTS, TTL_MS, BACKEND_MS, DURATION, THINK_MS), flush=True)
    for pattern in PATTERNS:
        server = "lapse" if pattern.startswith("getlease") else "redis"
        proc, port = start(server, extra=["--maxclients", str(CLIENTS + 100)])
        try:
            calls, reads = asyncio.run(simulate(port, pattern))
        finally:
            stop(proc)
        report(pattern + " (" + server + ")", calls, reads)


if __name__ == "__main__":
    sys.exit(main())
