#!/usr/bin/env python3
"""TLS connections, lapse beside redis-server (both with mutual TLS):

  storm   CONNS clients complete their handshakes at once (asyncio, each
          then sends one PING); meanwhile a plain connection PINGs the
          server in a loop: the longest round trip is the loop's worst
          stall while it handshakes.
  idle    the server's RSS grown per idle TLS connection once they are
          all connected and have answered (RSS after minus before,
          divided by CONNS).

    python3 benches/tls_connections.py            # CONNS=1000, ROUNDS=3
    CONNS=2000 ROUNDS=5 python3 benches/tls_connections.py
"""

import asyncio
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

CONNS = int(os.environ.get("CONNS", "1000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def make_certs(folder):
    def run(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    run("genrsa", "-out", "ca.key", "2048")
    run("req", "-x509", "-new", "-nodes", "-sha256", "-key", "ca.key", "-days", "30",
        "-subj", "/CN=bench ca", "-out", "ca.crt")
    for name in ("server", "client"):
        run("genrsa", "-out", f"{name}.key", "2048")
        run("req", "-new", "-sha256", "-subj", f"/CN={name}", "-key", f"{name}.key",
            "-out", f"{name}.csr")
        with open(os.path.join(folder, f"{name}.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        run("x509", "-req", "-sha256", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey",
            "ca.key", "-CAcreateserial", "-days", "30", "-extfile", f"{name}.ext",
            "-out", f"{name}.crt")


def start(kind, certs):
    plain, tls = benchlib.free_port(), benchlib.free_port()
    args = ["--port", str(plain), "--tls-port", str(tls),
            "--tls-cert-file", os.path.join(certs, "server.crt"),
            "--tls-key-file", os.path.join(certs, "server.key"),
            "--tls-ca-cert-file", os.path.join(certs, "ca.crt"),
            "--save", "", "--maxclients", str(CONNS + 100)]
    workdir = tempfile.mkdtemp()
    binary = benchlib.LAPSE if kind == "lapse" else "redis-server"
    if kind == "redis":
        args += ["--appendonly", "no"]
    proc = subprocess.Popen([binary, *args], cwd=workdir,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", plain)).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, plain, tls, workdir


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


WATCHER = """
import signal, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
worst = 0.0
def done(*_):
    print(f"{worst * 1000:.2f}", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
print("ready", flush=True)
while True:
    t = time.perf_counter()
    s.sendall(b"PING\\r\\n")
    s.recv(64)
    worst = max(worst, time.perf_counter() - t)
    time.sleep(0.0005)
"""


def watch(port):
    """A PING loop in its own process (no share of this one's GIL)."""
    proc = subprocess.Popen([sys.executable, "-c", WATCHER, str(port)],
                            stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    return proc


async def storm(tls_port, certs):
    ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.crt"))
    ctx.load_cert_chain(os.path.join(certs, "client.crt"), os.path.join(certs, "client.key"))
    opened = []

    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", tls_port, ssl=ctx,
                                                       server_hostname="localhost")
        writer.write(b"PING\r\n")
        await writer.drain()
        assert await reader.readline() == b"+PONG\r\n"
        opened.append(writer)

    await asyncio.gather(*(one() for _ in range(CONNS)))
    return opened


def measure(kind, certs):
    proc, plain, tls, workdir = start(kind, certs)
    before = rss_kb(proc.pid)
    watcher = watch(plain)
    loop = asyncio.new_event_loop()
    t0 = time.perf_counter()
    opened = loop.run_until_complete(storm(tls, certs))
    elapsed = time.perf_counter() - t0
    watcher.terminate()
    worst = float(watcher.stdout.readline())
    watcher.wait()
    time.sleep(0.2)
    per_conn = (rss_kb(proc.pid) - before) * 1024 / CONNS
    for w in opened:
        w.close()
    loop.close()
    proc.terminate()
    proc.wait()
    shutil.rmtree(workdir, ignore_errors=True)
    return elapsed, worst, per_conn


def main():
    if shutil.which("openssl") is None or shutil.which("redis-server") is None:
        sys.exit("openssl and redis-server are needed")
    benchlib.build()
    certs = tempfile.mkdtemp()
    make_certs(certs)
    got = {"lapse": [], "redis": []}
    for _ in range(ROUNDS):
        for kind in ("lapse", "redis"):
            got[kind].append(measure(kind, certs))
    shutil.rmtree(certs, ignore_errors=True)
    print(f"| {CONNS} TLS clients at once, median of {ROUNDS} | seconds to connect all | "
          "longest PING round trip meanwhile (ms) | RSS per idle TLS connection (bytes) |")
    print("|---|---|---|---|")
    for kind, rows in got.items():
        secs = statistics.median(r[0] for r in rows)
        stall = statistics.median(r[1] for r in rows)
        per = statistics.median(r[2] for r in rows)
        print(f"| {kind} | {secs:.2f} | {stall:.1f} | {per:,.0f} |")


if __name__ == "__main__":
    main()
