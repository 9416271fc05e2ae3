"""The README's read-through helper for GETLEASE (issue 42), with redis-py's
plain execute_command, against the lapse on the port given: twenty threads
reading a missing key compute it once (the others wait for it), a failed
compute hands the lease back at once, a stale key is refreshed once while
the old value is served."""
import sys
import threading
import time

import redis


def cached(r, key, compute, ttl=60, grace=30, lease_ms=5000):
    value, state, token = r.execute_command("GETLEASE", key, lease_ms, "WAIT", lease_ms)
    if state in (b"fill", b"refresh"):
        try:
            fresh = compute()
        except Exception:
            r.execute_command("LEASE", "RELEASE", key, token)  # the next reader tries at once
            raise
        r.execute_command("SET", key, fresh, "EX", ttl, "STALE", grace, "LEASE", token)
        return fresh if state == b"fill" else value  # a refresher may serve the old value
    return value  # fresh, stale, or (WAIT ran out) None: busy


port = int(sys.argv[1])
pool = redis.ConnectionPool(port=port, max_connections=32)
calls = []


def slow_compute():
    calls.append(1)
    time.sleep(0.2)
    return b"computed"


results = []
threads = [
    threading.Thread(target=lambda: results.append(cached(redis.Redis(connection_pool=pool), "page", slow_compute)))
    for _ in range(20)
]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert len(calls) == 1, calls
assert results == [b"computed"] * 20, results

# A failing compute releases its lease: the next reader fills at once.
r = redis.Redis(connection_pool=pool)


def failing():
    raise RuntimeError("backend down")


try:
    cached(r, "down", failing)
    raise AssertionError("the failure was swallowed")
except RuntimeError:
    pass
assert cached(r, "down", lambda: b"back") == b"back"

# Stale: one refresh, the old value served meanwhile.
r.execute_command("SET", "old", "v1", "PX", "1", "PSTALE", "60000")
time.sleep(0.01)
assert cached(r, "old", lambda: b"v2") == b"v1"
assert r.get("old") == b"v2"
assert cached(r, "old", lambda: b"never") == b"v2"
print("stampede helper: ok")
