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
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = int(os.environ.get("KEYS", str((1 << 21) + 1)))


def enc(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([os.path.join(ROOT, "target", "release", "lapse"), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        s = socket.create_connection(("127.0.0.1", port))
        f = s.makefile("rb")
        for start in range(0, KEYS, 10000):
            n = min(10000, KEYS - start)
            s.sendall(b"".join(enc(["SET", "k%d" % i, "v"]) for i in range(start, start + n)))
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
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
