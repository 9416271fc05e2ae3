#!/usr/bin/env python3
"""An unauthenticated client pipelining PINGs without reading the NOAUTH
errors (issue 22, fault 2), lapse and redis-server side by side, each
with a password: how much it could send before the server hung up, and
the server's peak RSS.

    benches/unauth_flood.py        # up to 420 MB of PINGs, 40 s at most
"""
import socket
import time

from benchlib import build, rss, start, stop


def measure(server):
    proc, port = start(server, extra=["--requirepass", "pw"])
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(5)
        chunk = b"*1\r\n$4\r\nPING\r\n" * 70000  # about 1 MB
        sent, peak, ended = 0, 0, "sent everything"
        started = time.time()
        try:
            while sent < 420e6 and time.time() - started < 40:
                s.sendall(chunk)
                sent += len(chunk)
                if sent % (20 * len(chunk)) < len(chunk):
                    peak = max(peak, rss(proc.pid))
        except OSError as e:
            ended = "cut off (%s)" % e.__class__.__name__
        peak = max(peak, rss(proc.pid))
        return sent, peak, ended
    finally:
        stop(proc)


def main():
    build()
    print("| server | sent MB | peak RSS MB | end |")
    print("|---|---|---|---|")
    for server in ["lapse", "redis"]:
        sent, peak, ended = measure(server)
        print("| %s | %.0f | %.0f | %s |" % (server, sent / 1e6, peak / 1e6, ended))


if __name__ == "__main__":
    main()
