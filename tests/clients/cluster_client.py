"""redis-py's RedisCluster against a cluster, unchanged: it discovers the
slots with CLUSTER SLOTS from one node, routes keys, runs a pipeline and
multi-key commands under one hash tag, and finds every key again."""
import sys

from redis.cluster import RedisCluster

port = int(sys.argv[1])
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
nodes = rc.get_nodes()
assert len(nodes) == 3, nodes

for i in range(300):
    assert rc.set(f"user:{i}", i) is True
for i in range(300):
    assert rc.get(f"user:{i}") == str(i)

pipe = rc.pipeline()
for i in range(100):
    pipe.incr(f"counter:{i}")
    pipe.expire(f"counter:{i}", 1000)
results = pipe.execute()
assert results == [1, True] * 100, results[:6]

assert rc.mset({"{tag}a": "1", "{tag}b": "2"}) is True
assert rc.mget("{tag}a", "{tag}b") == ["1", "2"]
assert 0 < rc.ttl("counter:7") <= 1000

# Every node holds some of the keys.
sizes = [rc.dbsize(target_nodes=n) for n in rc.get_primaries()]
assert all(s > 0 for s in sizes), sizes
assert sum(sizes) == 300 + 100 + 2, sizes
print("cluster client: ok")
