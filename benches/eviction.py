#!/usr/bin/env python3
"""The memory limit under writes (issue 18), lapse and redis-server side by
side with the same maxmemory and policy: redis-benchmark writes new keys
(SET -P 16, 50 clients, 100-byte values, random keys from a space 4x what
fits) at full speed while used_memory and RSS are sampled every 5 ms.
Reports the highest used_memory seen over maxmemory, RSS before and after,
the throughput, and the keys evicted.

    benches/eviction.py                 # maxmemory 64 MB, allkeys-lru
    MAXMEMORY_MB=32 POLICY=allkeys-lfu benches/eviction.py
"""
import os
import re
import subprocess
import threading
import time

from benchlib import build, info_field, rss, start, stop

MAXMEMORY = int(os.environ.get("MAXMEMORY_MB", "64")) * 1024 * 1024
POLICY = os.environ.get("POLICY", "allkeys-lru")
# About 250 bytes a key in either server: 4x what fits, all written.
KEYSPACE = MAXMEMORY // 250 * 4


def measure(server):
    proc, port = start(server, extra=["--maxmemory", str(MAXMEMORY), "--maxmemory-policy", POLICY])
    rss_before = rss(proc.pid)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], int(info_field(port, "used_memory", "memory")))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-c", "50", "-n", str(KEYSPACE), "-r", str(KEYSPACE),
         "-d", "100", "-P", "16", "-t", "set", "-q"], capture_output=True, text=True).stdout
    done.set()
    sampler.join()
    rps = float(re.search(r"SET: ([\d.]+) requests per second", out).group(1))
    result = {
        "rps": rps,
        "peak_over": peak[0] / MAXMEMORY,
        "rss_before_mb": rss_before / 2**20,
        "rss_after_mb": rss(proc.pid) / 2**20,
        "evicted": int(info_field(port, "evicted_keys", "stats")),
        "keys": int(info_field(port, "db0", "keyspace").split(",")[0].split("=")[1]),
    }
    stop(proc)
    return result


def main():
    build()
    results = {s: measure(s) for s in ("lapse", "redis")}
    print("maxmemory %d MB, %s, %d SETs over %d keys" % (MAXMEMORY >> 20, POLICY, KEYSPACE, KEYSPACE))
    print("%-36s %14s %14s" % ("", "lapse", "redis"))
    for name, key in [("SET -P 16, req/s", "rps"), ("highest used_memory / maxmemory", "peak_over"),
                      ("RSS before, MB", "rss_before_mb"), ("RSS after, MB", "rss_after_mb"),
                      ("keys evicted", "evicted"), ("keys left", "keys")]:
        print("%-36s %14.3f %14.3f" % (name, results["lapse"][key], results["redis"][key]))


if __name__ == "__main__":
    main()
