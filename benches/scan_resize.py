#!/usr/bin/env python3
"""SCAN right after the keyspace starts a resize (issue 22, fault 5):
KEYS keys (default 2^21 + 1, one past a doubling) are SET into a fresh
lapse, then 200 `SCAN cursor COUNT 10` steps are timed from a client; the
slowest round trip is printed.

    benches/scan_resize.py
    KEYS=8388609 benches/scan_resize.py
"""

import os
import socket
import time

from benchlib import build, enc, start, stop

KEYS = int(os.environ.get("KEYS", str((1 << 21) + 1)))


def main():
    build()
    proc, port = start("lapse")
    try:
        s = socket.create_connection(("127.0.0.1", port))
        f = s.makefile("rb")
        for first in range(0, KEYS, 10000):
            n = min(10000, KEYS - first)
            s.sendall(b"".join(enc(["SET", "k%d" % i, "v"]) for i in range(first, first + n)))
            for _ in range(n):
                f.readline()
        worst, cursor = 0.0, b"0"
        for _ in range(200):
            t = time.time()
            s.sendall(enc(["SCAN", cursor, "COUNT", "10"]))
            f.readline()
            f.readline()
            cursor = f.readline().strip()
            n = int(f.readline()[1:])
            for _ in range(2 * n):
                f.readline()
            worst = max(worst, time.time() - t)
        print("%d keys: slowest of 200 SCAN steps after the resize began: %.2f ms" % (KEYS, worst * 1000))
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
