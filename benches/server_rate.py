#!/usr/bin/env python3
"""Issue 41's -P 16 comparison with a client that is not the bottleneck:
lapse, redis-server and Valkey 8.0.1 side by side, benches/loadgen as the
client (50 connections, -P 16, key:__rand_int__ over 100,000 keys), SET
then GET, PAIRS rounds with the servers' order rotating; median ratios of
requests per second and of server CPU per request (schedstat), lapse
against each. redis-benchmark's one process saturates a core near 1M
requests a second here (benches/cpu_per_request.sh measures with it).

    benches/server_rate.py
    PAIRS=20 REQUESTS=500000 PIPELINE=1 benches/server_rate.py

Needs redis-server; Valkey from benches/build_valkey.sh (skipped, loudly,
without it)."""

import os
import shutil
import statistics
import subprocess
import sys

from benchlib import LOADGEN, VALKEY, build, build_loadgen, cpu_seconds, start, stop

PAIRS = int(os.environ.get("PAIRS", "10"))
REQUESTS = int(os.environ.get("REQUESTS", "500000"))
PIPELINE = os.environ.get("PIPELINE", "16")


def main():
    if not shutil.which("redis-server"):
        sys.exit("redis-server is needed (apt-get install -y redis-server)")
    build()
    build_loadgen()
    names = ["lapse", "redis"]
    if os.access(VALKEY, os.X_OK):
        names.append("valkey")
    else:
        print("SKIPPING Valkey: %s not found (benches/build_valkey.sh builds it)" % VALKEY)
    servers = {name: start(name) for name in names}
    try:
        for test, command in (("SET", ["SET", "key:__rand_int__", "v" * 16]),
                              ("GET", ["GET", "key:__rand_int__"])):
            results = {name: [] for name in names}
            for i in range(PAIRS):
                for name in names[i % len(names):] + names[:i % len(names)]:
                    proc, port = servers[name]
                    before = cpu_seconds(proc.pid)
                    out = subprocess.run([LOADGEN, str(port), "50", PIPELINE, str(REQUESTS), "100000",
                                          "--"] + command,
                                         capture_output=True, text=True, check=True).stdout
                    cpu_ns = (cpu_seconds(proc.pid) - before) * 1e9 / REQUESTS
                    results[name].append((float(out.split()[0]), cpu_ns))
            for other in names[1:]:
                rate = [a[0] / b[0] for a, b in zip(results["lapse"], results[other])]
                cpu = [a[1] / b[1] for a, b in zip(results["lapse"], results[other])]
                print("%s -P %s, lapse / %s: requests/s median %.2f (quartiles %.2f-%.2f), "
                      "server CPU per request median %.2f (quartiles %.2f-%.2f)" % (
                          test, PIPELINE, other, statistics.median(rate),
                          *statistics.quantiles(rate, n=4)[::2], statistics.median(cpu),
                          *statistics.quantiles(cpu, n=4)[::2]), flush=True)
            for name in names:
                print("   %s: requests/s median %.0f, CPU ns/request median %.0f" % (
                    name, statistics.median(r[0] for r in results[name]),
                    statistics.median(r[1] for r in results[name])), flush=True)
    finally:
        for proc, _ in servers.values():
            stop(proc)


if __name__ == "__main__":
    main()
