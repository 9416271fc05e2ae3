#!/usr/bin/env python3
"""Replication, lapse and redis-server side by side in the same roles
(issue 17). For each server as both primary and replica:

1. Full sync of KEYS keys (persistence.py's mixed dataset, half with a
   TTL), from disk and diskless (both primaries with the same
   `repl-diskless-sync`, no delay): seconds from REPLICAOF to
   master_link_status:up, the longest PING on the primary meanwhile (one
   every ms on its own connection), peak RSS of the primary (with its
   children) over its RSS before. The rest runs after the diskless sync
   (the default of both).
2. redis-benchmark SET -P 16, 50 clients, 100,000 random keys, on the
   primary with the replica attached, as a ratio to the same primary with
   no replica; the largest lag (primary offset minus replica offset,
   sampled every 10 ms) during the run.
3. 1,000 probe keys sharing one deadline (2 s ahead) among the dataset's
   TTL keys: how long after the deadline the replica's DBSIZE shows all
   of them gone (the primary's DELs arriving; capped at 120 s).

    benches/replication.py            # KEYS=1000000 by default
    KEYS=200000 benches/replication.py
"""
import re
import shutil
import subprocess
import tempfile
import threading
import time

from benchlib import build, cmd, info_field, start, stop
from persistence import KEYS, pinged, populate, send_all, tree_rss


def int_info(port, field, section):
    value = info_field(port, field, section)
    return int(value) if value not in (None, "") else 0


def set_rps(port):
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-c", "50", "-n", "1000000", "-r", "100000",
         "-P", "16", "-t", "set", "-q"], capture_output=True, text=True).stdout
    return float(re.search(r"SET: ([\d.]+) requests per second", out).group(1))


def measure(server):
    work = tempfile.mkdtemp(prefix="lapse-repl-bench-")
    primary, pport = start(server, extra=["--dir", work, "--repl-diskless-sync-delay", "0"])
    populate(pport)
    alone_rps = set_rps(pport)
    replica, rport = start(server, extra=["--dir", work, "--dbfilename", "replica.rdb"])
    before = tree_rss(primary.pid)
    result = {}

    def sync(mode):
        cmd(pport, "CONFIG", "SET", "repl-diskless-sync", "yes" if mode == "diskless" else "no")
        peak = [before]

        def run():
            t = time.perf_counter()
            cmd(rport, "REPLICAOF", "127.0.0.1", str(pport))
            while info_field(rport, "master_link_status", "replication") != "up":
                peak[0] = max(peak[0], tree_rss(primary.pid))
                time.sleep(0.005)
            return time.perf_counter() - t

        sync_s, worst = pinged(pport, run)
        result.update({mode + "_sync_s": sync_s, mode + "_worst_ms": worst * 1000,
                       mode + "_peak": peak[0] / before})

    sync("disk")
    cmd(rport, "REPLICAOF", "NO", "ONE")
    cmd(rport, "FLUSHALL")
    sync("diskless")

    lag = [0]
    done = threading.Event()

    def sample_lag():
        while not done.is_set():
            p = int_info(pport, "master_repl_offset", "replication")
            r = int_info(rport, "slave_repl_offset", "replication")
            lag[0] = max(lag[0], p - r)
            time.sleep(0.01)

    sampler = threading.Thread(target=sample_lag)
    sampler.start()
    with_rps = set_rps(pport)
    done.set()
    sampler.join()

    # Probes: 1,000 keys, one deadline 2 s ahead.
    deadline = time.time() + 2
    at_ms = int(deadline * 1000)
    send_all(pport, [["SET", "probe:%d" % i, "v", "PXAT", str(at_ms)] for i in range(1000)])
    while int_info(rport, "slave_repl_offset", "replication") < \
            int_info(pport, "master_repl_offset", "replication"):
        time.sleep(0.01)
    size_with = int(cmd(rport, "DBSIZE")[1:].strip())
    # (Capped at 2 minutes: sampling expiry can take far longer.)
    while int(cmd(rport, "DBSIZE")[1:].strip()) > size_with - 1000 \
            and time.time() < deadline + 120:
        time.sleep(0.001)
    del_lag_ms = (time.time() - deadline) * 1000

    stop(replica)
    stop(primary)
    shutil.rmtree(work, ignore_errors=True)
    result.update({"alone_rps": alone_rps, "with_rps": with_rps, "lag": lag[0],
                   "del_lag_ms": del_lag_ms})
    return result


def main():
    build()
    results = {s: measure(s) for s in ("lapse", "redis")}
    print("%d keys; primary and replica of the same kind" % KEYS)
    rows = [(label % mode, key % mode)
            for mode in ("disk", "diskless")
            for label, key in [("full sync (%s), s", "%s_sync_s"),
                               ("worst PING on the primary (%s), ms", "%s_worst_ms"),
                               ("primary peak RSS / before (%s)", "%s_peak")]]
    rows += [
            ("SET -P 16 alone, req/s", "alone_rps"), ("SET -P 16 with a replica", "with_rps"),
            ("max lag under that load, bytes", "lag"),
            ("probes gone on the replica after the deadline, ms", "del_lag_ms")]
    print("%-50s %14s %14s" % ("", "lapse", "redis"))
    for name, key in rows:
        print("%-50s %14.2f %14.2f" % (name, results["lapse"][key], results["redis"][key]))
    for who, m in results.items():
        print("%s: with a replica / alone = %.2f" % (who, m["with_rps"] / m["alone_rps"]))


if __name__ == "__main__":
    main()
