"""A Sentinel-aware client writing through a failover (tests/sentinel.rs).

Usage: sentinel_writer.py <seconds> <sentinel port>...

Finds the primary of `mymaster` through the Sentinels with redis-py's
`Sentinel.master_for`, and keeps incrementing `counter`, each INCR
followed by `WAIT <n> 1000`: 2 (both replicas hold it) on the first
primary, 1 on the next. Errors while the primary is down or being
replaced are retried, as an application would. Prints `ready <port>`
once the first write is acknowledged, then, when it has made 50
acknowledged writes to a second primary (or the time is up), one line
`done first=<port> last=<port> max_acked=<v> after=<n> errors=<n>`:
`max_acked` is the highest counter value both replicas of the first
primary had when WAIT answered, which the promoted replica must still
hold; `after` counts the writes acknowledged on the second primary.
"""

import sys
import time

import redis
from redis.sentinel import Sentinel


def main():
    seconds = float(sys.argv[1])
    sentinels = [("127.0.0.1", int(p)) for p in sys.argv[2:]]
    sentinel = Sentinel(sentinels, socket_timeout=0.5)
    primary = sentinel.master_for("mymaster", socket_timeout=0.5)
    deadline = time.monotonic() + seconds
    first = last = None
    after = errors = max_acked = 0
    while time.monotonic() < deadline and after < 50:
        try:
            address = primary.connection_pool.get_master_address()
            value = primary.incr("counter")
            wanted = 2 if first in (None, address[1]) else 1
            replicas = primary.execute_command("WAIT", wanted, 1000)
        except (redis.exceptions.RedisError, OSError):
            errors += 1
            time.sleep(0.05)
            continue
        port = address[1]
        if first is None:
            first = port
            print(f"ready {port}", flush=True)
        last = port
        if replicas >= wanted:
            if port == first:
                max_acked = max(max_acked, value)
            else:
                after += 1
        time.sleep(0.005)
    print(
        f"done first={first} last={last} max_acked={max_acked} "
        f"after={after} errors={errors}",
        flush=True,
    )

if __name__ == "__main__":
    main()
