"""redis-py's client-side caching (RESP3, CLIENT TRACKING ON, invalidation
pushes) against the server on the port given: reads are served from the
local cache until another client's write, expiry or FLUSHALL invalidates
them.

redis-py 5.2 enables its cache only for servers announcing Redis 7.4 or
later in HELLO; the tracking protocol it uses is 7.0's, so the check is
lowered here to the version lapse announces (7.0)."""
import sys
import time

import redis
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection

CacheProxyConnection.MIN_ALLOWED_VERSION = "7.0.0"

port = int(sys.argv[1])
cached = redis.Redis(port=port, protocol=3, cache_config=CacheConfig())
other = redis.Redis(port=port)
cache = cached.get_cache()

other.set("k", "1")
assert cached.get("k") == b"1"
assert cache.size == 1, cache.size
# Served from the cache: the server sees no second GET.
calls = other.info("commandstats")["cmdstat_get"]["calls"]
assert cached.get("k") == b"1"
assert other.info("commandstats")["cmdstat_get"]["calls"] == calls

# Another client's write: the push empties the entry, the next read fetches.
other.set("k", "2")
deadline = time.time() + 5
while cache.size and time.time() < deadline:
    cached.ping()  # reading a reply processes pending pushes
assert cache.size == 0, "not invalidated"
assert cached.get("k") == b"2"

# Expiry invalidates too.
other.set("e", "v", px=100)
assert cached.get("e") == b"v"
deadline = time.time() + 5
while cached.get("e") is not None and time.time() < deadline:
    time.sleep(0.05)
assert cached.get("e") is None, "expired key still cached"

# FLUSHALL empties the whole cache.
assert cached.get("k") == b"2"
other.flushall()
deadline = time.time() + 5
while cache.size and time.time() < deadline:
    cached.ping()
assert cache.size == 0
assert cached.get("k") is None
print("client cache: ok")
