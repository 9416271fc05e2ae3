#!/usr/bin/env python3
"""Server CPU spent sending one big value to a slow reader (issue 22,
fault 4), lapse and redis-server side by side, each on a fresh server.

    benches/slow_reader.py                 # 200 MB value
    MB=500 benches/slow_reader.py

The reader takes 256 KB at a time with a short pause, so the server's
output buffer drains in many partial writes. Reports the server's user +
system CPU seconds while the reply was read (from /proc/<pid>/stat)."""

import os
import socket
import time

from benchlib import build, cpu_seconds, start, stop

MB = int(os.environ.get("MB", "200"))


def read_line(s):
    line = b""
    while not line.endswith(b"\r\n"):
        line += s.recv(1)
    return line


def measure(server):
    proc, port = start(server)
    try:
        s = socket.create_connection(("127.0.0.1", port))
        size = MB * 1024 * 1024
        # SETRANGE builds the value server-side without sending it.
        s.sendall(b"*4\r\n$8\r\nSETRANGE\r\n$3\r\nbig\r\n$%d\r\n%d\r\n$1\r\nx\r\n" % (len(str(size - 1)), size - 1))
        read_line(s)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        before = cpu_seconds(proc.pid)
        started = time.time()
        s.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n")
        left = size + len(b"$%d\r\n" % size) + 2
        while left > 0:
            chunk = s.recv(min(left, 256 * 1024))
            if not chunk:
                raise RuntimeError("connection closed")
            left -= len(chunk)
            time.sleep(0.0005)
        return cpu_seconds(proc.pid) - before, time.time() - started
    finally:
        stop(proc)


def main():
    build()
    lapse_cpu, lapse_wall = measure("lapse")
    redis_cpu, redis_wall = measure("redis")
    print("| server | value MB | server CPU s | read wall s |")
    print("|---|---|---|---|")
    print("| lapse | %d | %.2f | %.1f |" % (MB, lapse_cpu, lapse_wall))
    print("| redis-server | %d | %.2f | %.1f |" % (MB, redis_cpu, redis_wall))
    print("\nCPU ratio lapse / redis: %.2f" % (lapse_cpu / max(redis_cpu, 0.01)))


if __name__ == "__main__":
    main()
