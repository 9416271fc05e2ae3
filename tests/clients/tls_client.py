"""redis-py over TLS against lapse: a pipeline, pub/sub and a 5 MB value,
with the server's certificate checked against the test CA and a client
certificate shown (redis-py checks certificates and host names by
default).

    python3 tls_client.py PORT CERT_DIR
"""

import os
import sys
import threading
import time

import redis

port, certs = int(sys.argv[1]), sys.argv[2]


def connect():
    return redis.Redis(
        host="localhost",
        port=port,
        ssl=True,
        ssl_ca_certs=os.path.join(certs, "ca.crt"),
        ssl_certfile=os.path.join(certs, "client.crt"),
        ssl_keyfile=os.path.join(certs, "client.key"),
    )


r = connect()
assert r.ping()

pipe = r.pipeline(transaction=False)
for i in range(500):
    pipe.set(f"p:{i}", i)
pipe.get("p:499")
replies = pipe.execute()
assert replies[-1] == b"499", replies[-1]

big = os.urandom(5 * 1024 * 1024)
r.set("big", big)
assert r.get("big") == big

got = []
p = r.pubsub()
p.subscribe("news")
deadline = time.time() + 10
while time.time() < deadline:
    m = p.get_message(timeout=0.1)
    if m and m["type"] == "subscribe":
        break


def publish():
    other = connect()
    for i in range(3):
        other.publish("news", f"m{i}")


threading.Thread(target=publish).start()
while time.time() < deadline and len(got) < 3:
    m = p.get_message(timeout=0.1)
    if m and m["type"] == "message":
        got.append(m["data"])
assert got == [b"m0", b"m1", b"m2"], got
print("tls client: ok")
