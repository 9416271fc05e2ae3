"""redis-py's RedisCluster against a cluster, unchanged: it discovers the
slots with CLUSTER SLOTS from one node, routes keys, runs a pipeline and
multi-key commands under one hash tag, and finds every key again; with a
second argument it goes on, checking every value, while slots move
(MOVED and ASK followed by the client) until that file appears."""
import os
import sys

from redis.cluster import RedisCluster

port = int(sys.argv[1])
stop_file = sys.argv[2] if len(sys.argv) > 2 else None
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
nodes = rc.get_nodes()
assert len(nodes) == 3, nodes

rounds = 0
while True:
    for i in range(300):
        assert rc.set(f"user:{i}", f"{rounds}:{i}") is True
    for i in range(300):
        assert rc.get(f"user:{i}") == f"{rounds}:{i}"
    pipe = rc.pipeline()
    for i in range(100):
        pipe.incr(f"counter:{i}")
        pipe.expire(f"counter:{i}", 1000)
    results = pipe.execute()
    assert results == [rounds + 1, True] * 100, results[:6]
    assert rc.mset({"{tag}a": "1", "{tag}b": str(rounds)}) is True
    assert rc.mget("{tag}a", "{tag}b") == ["1", str(rounds)]
    assert 0 < rc.ttl("counter:7") <= 1000
    rounds += 1
    if stop_file is None or os.path.exists(stop_file):
        break

if stop_file is None:
    # Every node holds some of the keys.
    sizes = [rc.dbsize(target_nodes=n) for n in rc.get_primaries()]
    assert all(s > 0 for s in sizes), sizes
    assert sum(sizes) == 300 + 100 + 2, sizes
print(f"cluster client: ok {rounds}")
