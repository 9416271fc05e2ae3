"""Real client code against a server: redis-py's Lock (its Lua scripts for
release, extend and reacquire) and a huey job queue (enqueue, schedule,
process in its consumer, complete; it blocks on BRPOP and pops scheduled
tasks with a Lua script). Usage: python3 lock_and_queue.py PORT. Exits non-zero
with the failed assertion on any mismatch."""

import sys

import redis
from redis.exceptions import LockError, LockNotOwnedError
from huey import RedisHuey
from huey.exceptions import TaskException


def check_lock(r):
    lock = r.lock("resource", timeout=5, blocking_timeout=1)
    assert lock.acquire(), "could not take a free lock"
    rival = r.lock("resource", timeout=5, blocking_timeout=0.2)
    assert not rival.acquire(), "a taken lock was taken again"
    assert lock.extend(10), "extend failed"
    ttl = r.pttl("resource")
    assert 10_000 < ttl <= 15_000, f"extend left a TTL of {ttl} ms"
    assert lock.reacquire(), "reacquire failed"
    ttl = r.pttl("resource")
    assert 0 < ttl <= 5_000, f"reacquire left a TTL of {ttl} ms"
    assert lock.owned() and lock.locked()
    lock.release()
    assert r.get("resource") is None, "release left the key"
    try:
        lock.release()
        raise AssertionError("releasing an unheld lock succeeded")
    except LockError:
        pass
    # Someone else's token: release and extend must refuse.
    r.set("resource", "not-ours", px=5_000)
    stolen = r.lock("resource", timeout=5)
    stolen.local.token = b"mine"
    try:
        stolen.release()
        raise AssertionError("released a lock held by another")
    except LockNotOwnedError:
        pass
    assert r.get("resource") == b"not-ours"


def check_queue(port):
    huey = RedisHuey("jobs", host="127.0.0.1", port=port, blocking=True, read_timeout=1)

    @huey.task()
    def add(a, b):
        return a + b

    @huey.task()
    def divide(a, b):
        return a / b

    # Enqueued before a consumer runs; one scheduled a second ahead (the
    # consumer's scheduler pops it with huey's Lua script).
    results = [add(i, 10) for i in range(5)]
    later = add.schedule((1, 1), delay=1)
    failing = divide(1, 0)
    assert huey.pending_count() == 7, f"{huey.pending_count()} pending"
    consumer = huey.create_consumer(workers=2, worker_type="thread", periodic=False,
                                    check_worker_health=False)
    consumer.start()
    try:
        for i, result in enumerate(results):
            got = result.get(blocking=True, timeout=10)
            assert got == i + 10, f"task {i} returned {got}"
        assert later.get(blocking=True, timeout=10) == 2
        try:
            failing.get(blocking=True, timeout=10)
            raise AssertionError("a failing task succeeded")
        except TaskException as e:
            assert "ZeroDivisionError" in str(e.metadata), e.metadata
    finally:
        consumer.stop(graceful=True)
    assert huey.pending_count() == 0
    assert huey.scheduled_count() == 0


def main():
    r = redis.Redis(port=int(sys.argv[1]))
    r.flushall()
    check_lock(r)
    check_queue(int(sys.argv[1]))
    print("lock and queue: ok")


if __name__ == "__main__":
    main()
