#!/usr/bin/env python3
"""Hit ratio of allkeys-lru and allkeys-lfu under a skewed read-through
workload (issue 18), lapse and redis-server side by side with the same
maxmemory-samples, and true LRU's ratio from a simulation as the ceiling.

KEYS keys (100-byte values) are requested with Zipf(0.99) popularity; a
request GETs its key and, on a miss, SETs it (read-through), in pipelined
batches of 100. Both servers get the same maxmemory: redis-server's
startup memory plus 10% of what the whole working set takes in
redis-server (measured first); how many keys each then holds is part of
the result. The first fifth of the requests warm the cache and are not
counted. True LRU is simulated on the same request sequence with room for
as many keys as each server held at the end (the ceiling for it).

    benches/hit_ratio.py                  # KEYS=200000, REQUESTS=2000000
    KEYS=100000 SAMPLES=10 benches/hit_ratio.py

Needs redis-server and the redis package of .ci/pydeps (see .ci/run).
"""
import bisect
import collections
import os
import random
import sys

from benchlib import ROOT, build, info_field, start, stop

sys.path.insert(0, os.path.join(ROOT, ".ci", "pydeps"))
import redis  # noqa: E402

KEYS = int(os.environ.get("KEYS", "200000"))
REQUESTS = int(os.environ.get("REQUESTS", "2000000"))
SAMPLES = os.environ.get("SAMPLES", "5")
BATCH = 100
VALUE = b"v" * 100


def zipf_requests(n, count, s=0.99, seed=7):
    """`count` key numbers in 0..n, key i drawn with weight 1/(i+1)^s."""
    weights = [1.0 / (i + 1) ** s for i in range(n)]
    total = sum(weights)
    cdf, acc = [], 0.0
    for w in weights:
        acc += w / total
        cdf.append(acc)
    rng = random.Random(seed)
    # Keys are shuffled so that popularity is not key order.
    names = list(range(n))
    rng.shuffle(names)
    return [names[min(bisect.bisect_left(cdf, rng.random()), n - 1)] for _ in range(count)]


def working_set_bytes(server):
    proc, port = start(server)
    r = redis.Redis(port=port)
    base = int(info_field(port, "used_memory", "memory"))
    for lo in range(0, KEYS, 1000):
        p = r.pipeline(transaction=False)
        for k in range(lo, min(lo + 1000, KEYS)):
            p.set("key:%d" % k, VALUE)
        p.execute()
    used = int(info_field(port, "used_memory", "memory"))
    stop(proc)
    return base, used - base


def run(server, policy, requests, maxmemory):
    proc, port = start(server, extra=["--maxmemory", str(maxmemory), "--maxmemory-policy", policy,
                                      "--maxmemory-samples", SAMPLES])
    r = redis.Redis(port=port)
    warm = len(requests) // 5
    hits = counted = 0
    for at in range(0, len(requests), BATCH):
        batch = requests[at:at + BATCH]
        p = r.pipeline(transaction=False)
        for k in batch:
            p.get("key:%d" % k)
        replies = p.execute()
        p = r.pipeline(transaction=False)
        for k, v in zip(batch, replies):
            if v is None:
                p.set("key:%d" % k, VALUE)
        p.execute()
        if at >= warm:
            counted += len(batch)
            hits += sum(1 for v in replies if v is not None)
    held = r.dbsize()
    stop(proc)
    return hits / counted, held


def true_lru(requests, capacity):
    cache = collections.OrderedDict()
    warm = len(requests) // 5
    hits = counted = 0
    for i, k in enumerate(requests):
        hit = k in cache
        if hit:
            cache.move_to_end(k)
        else:
            cache[k] = True
            if len(cache) > capacity:
                cache.popitem(last=False)
        if i >= warm:
            counted += 1
            hits += hit
    return hits / counted


def main():
    build()
    requests = zipf_requests(KEYS, REQUESTS)
    print("%d keys, %d requests (Zipf 0.99, read-through), maxmemory = 10%% of the working set, "
          "maxmemory-samples %s" % (KEYS, REQUESTS, SAMPLES))
    base, working = working_set_bytes("redis")
    maxmemory = base + working // 10
    print("maxmemory %d bytes for both" % maxmemory)
    print("%-14s %12s %12s %12s %12s" % ("policy", "lapse", "redis", "lapse keys", "redis keys"))
    held = {}
    for policy in ("allkeys-lru", "allkeys-lfu"):
        (lapse, lapse_held), (red, red_held) = (run(s, policy, requests, maxmemory)
                                                for s in ("lapse", "redis"))
        held.setdefault("lapse", lapse_held)
        held.setdefault("redis", red_held)
        print("%-14s %12.4f %12.4f %12d %12d" % (policy, lapse, red, lapse_held, red_held))
    print("%-14s %12.4f %12.4f   (at the keys each held under allkeys-lru)"
          % ("true LRU", true_lru(requests, held["lapse"]), true_lru(requests, held["redis"])))


if __name__ == "__main__":
    main()
