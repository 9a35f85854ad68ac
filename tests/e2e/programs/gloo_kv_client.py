#!/usr/bin/env python3
"""Speaks to the Horovod gloo rendezvous KV store exactly as horovod's C++ HTTPStore does
(horovod/common/gloo/http_store.cc over elnormous/HTTPRequest), from each rank:

  * a new TCP connection per request, never reused, to HOROVOD_GLOO_RENDEZVOUS_ADDR:_PORT;
  * request: "METHOD /<scope>/<key> HTTP/1.1\\r\\nHost: <addr>\\r\\nContent-Length: N\\r\\n\\r\\n"
    + body; reply read until Content-Length bytes arrived or the server closed;
  * 200 and 404 are answers, anything else is retried 3 times 500 ms apart, then fatal;
  * wait() polls GET through 404s every 10 ms;
  * Finalize() sends DELETE /<scope>/<rank>.

Per rank it rendezvouses in the scopes gloo_context.cc uses: `global` (key = rank),
`local_<HOROVOD_HOSTNAME>` (key = local rank), `cross_<local_rank>` (key = cross rank),
checks every peer's value, then DELETEs. It also checks that the store refuses a process
without the job secret (FERRY_JOB_SECRET missing or wrong) with 403 Forbidden.
Prints "kv rank R/N ok ..." and exits 0, or exits 1 with the reason.

  --skip-auth-probe   leave out the 403 check (against a store without authentication)
"""
import os
import socket
import subprocess
import sys
import time

RETRIES = 3
RETRY_WAIT = 0.5
POLL = 0.010
TIMEOUT = 60.0


def fail(msg):
    print(f"kv rank {os.environ.get('HOROVOD_RANK', '?')}: FAILED: {msg}", flush=True)
    sys.exit(1)


def request_once(addr, port, method, path, body=b""):
    """One HTTPRequest-style exchange: returns (status, headers, body)."""
    with socket.create_connection((addr, port), timeout=10) as s:
        head = (f"{method} {path} HTTP/1.1\r\nHost: {addr}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        s.sendall(head + body)
        data = b""
        status, headers, length = None, {}, None
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if status is None and b"\r\n\r\n" in data:
                raw, data = data.split(b"\r\n\r\n", 1)
                lines = raw.decode("latin-1").split("\r\n")
                status = int(lines[0].split(" ")[1])
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k] = v.strip()
                # HTTPRequest matches this header name case-sensitively.
                if "Content-Length" in headers:
                    length = int(headers["Content-Length"])
            if status is not None and length is not None and len(data) >= length:
                break
        if status is None:
            raise ConnectionError("connection closed before a status line")
        return status, headers, data


def perform(addr, port, method, path, body=b""):
    """PerformHTTP: 200/404 are answers; other statuses and errors are retried."""
    last = None
    for _ in range(RETRIES):
        try:
            status, headers, data = request_once(addr, port, method, path, body)
            if status in (200, 404):
                if "Content-Length" not in headers:
                    fail(f"{method} {path}: reply without Content-Length")
                if status == 404 and data:
                    fail(f"{method} {path}: 404 with a body")
                return status, data
            last = f"HTTP {status}"
        except OSError as e:
            last = str(e)
        time.sleep(RETRY_WAIT)
    fail(f"{method} {path} failed {RETRIES} times: {last}")


def rendezvous(addr, port, scope, my_key, size, value):
    perform(addr, port, "PUT", f"/{scope}/{my_key}", value)
    got = {}
    deadline = time.monotonic() + TIMEOUT
    for k in range(size):
        while True:
            status, data = perform(addr, port, "GET", f"/{scope}/{k}")
            if status == 200:
                got[k] = data
                break
            if time.monotonic() > deadline:
                fail(f"scope {scope}: key {k} never appeared")
            time.sleep(POLL)
    return got


def probe(secret):
    """Run as a child: one GET with the given environment; print the status."""
    addr = os.environ["HOROVOD_GLOO_RENDEZVOUS_ADDR"]
    port = int(os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"])
    try:
        status, _, _ = request_once(addr, port, "GET", "/global/0")
        print(status)
    except OSError as e:
        print(f"error {e}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--probe":
        probe(None)
        return
    need = ["HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT", "HOROVOD_RANK",
            "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK",
            "HOROVOD_CROSS_SIZE", "HOROVOD_HOSTNAME"]
    for v in need:
        if v not in os.environ:
            fail(f"{v} is not set")
    e = os.environ
    addr, port = e["HOROVOD_GLOO_RENDEZVOUS_ADDR"], int(e["HOROVOD_GLOO_RENDEZVOUS_PORT"])
    rank, size = int(e["HOROVOD_RANK"]), int(e["HOROVOD_SIZE"])
    lrank, lsize = int(e["HOROVOD_LOCAL_RANK"]), int(e["HOROVOD_LOCAL_SIZE"])
    crank, csize = int(e["HOROVOD_CROSS_RANK"]), int(e["HOROVOD_CROSS_SIZE"])
    hostname = e["HOROVOD_HOSTNAME"]

    if "--skip-auth-probe" not in sys.argv:
        for label, env in (
                ("no secret", {k: v for k, v in e.items() if k != "FERRY_JOB_SECRET"}),
                ("wrong secret", dict(e, FERRY_JOB_SECRET="0" * 64))):
            out = subprocess.run([sys.executable, __file__, "--probe"], env=env,
                                 capture_output=True, text=True, timeout=30).stdout.strip()
            if out != "403":
                fail(f"a process with {label} got '{out}' from the store, expected 403")

    # Like gloo: the value is this rank's "address"; peers check what they read.
    me = f"rank{rank}@{hostname}".encode()
    g = rendezvous(addr, port, "global", rank, size, me)
    l_ = rendezvous(addr, port, f"local_{hostname}", lrank, lsize, me)
    c = rendezvous(addr, port, f"cross_{lrank}", crank, csize, me)
    for k, v in g.items():
        if not v.startswith(f"rank{k}@".encode()):
            fail(f"global key {k} holds {v!r}")
    if len(l_) != lsize or any(not v.endswith(f"@{hostname}".encode()) for v in l_.values()):
        fail(f"local scope holds {l_!r}")
    if len(c) != csize:
        fail(f"cross scope holds {c!r}")
    # Binary values survive (gloo stores raw address structs).
    blob = bytes(range(256)) + b"\r\n\r\n\0"
    perform(addr, port, "PUT", f"/blob_{rank}/k", blob)
    status, data = perform(addr, port, "GET", f"/blob_{rank}/k")
    if status != 200 or data != blob:
        fail("binary value did not round-trip")
    perform(addr, port, "DELETE", f"/blob_{rank}/k")
    # Finalize: DELETE /<scope>/<rank-in-scope>.
    for scope, key in (("global", rank), (f"local_{hostname}", lrank), (f"cross_{lrank}", crank)):
        status, _ = perform(addr, port, "DELETE", f"/{scope}/{key}")
        if status != 200:
            fail(f"DELETE /{scope}/{key} gave {status}")
    print(f"kv rank {rank}/{size} ok local={lrank}/{lsize} cross={crank}/{csize} "
          f"host={hostname}", flush=True)


if __name__ == "__main__":
    main()
