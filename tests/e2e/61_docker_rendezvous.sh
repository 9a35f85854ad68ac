#!/usr/bin/env bash
# 61_docker_rendezvous: Horovod's and MPICH's rendezvous, and the NIC check, on
# Docker hosts (tests/cluster/ferry-docker-sim). Needs the rendezvous
# integration; skipped, saying so, while `ferryrun --help` does not
# list --network-interface.
#
# Bridge mode (2 machines x 2 containers, only the mapped SSH ports open):
#  - every rank finds HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1, i.e. its own
#    container, and a Horovod-style HTTP KV exchange (PUT its key, GET every
#    rank's) completes across machines: the requests travel over ferry's SSH
#    connections, never to the head or to another container directly;
#  - every rank completes an MPICH PMI-1 exchange over PMI_FD (put, barrier,
#    get every rank's value);
#  - the NIC check warns that the containers' addresses (172.31.1.x on one
#    machine, 172.31.2.x on the other) do not connect the hosts, and sets no
#    NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME (docs/frameworks.md).
# Host mode (2 machines x 2 containers sharing the machine's network): the
# NIC check picks eth0 (the machines' LAN), not docker0, and does not warn.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_sim_lib.sh
source "$(dirname "$0")/docker_sim_lib.sh"
require_root
require_ferry
skip_without_rendezvous "the Horovod KV / PMI-1 exchange and the NIC check in containers"
docker_sim_up all

cat >"$T/rdv.py" <<'EOF'
# One rank: a Horovod-style KV exchange and an MPICH PMI-1 exchange, then the
# interface variables ferry gave it. Prints one line per result.
import http.client, os, socket, sys, time

rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
host = socket.gethostname()
deadline = time.time() + 60

# Horovod gloo rendezvous (runner/http/http_server.py protocol).
addr = os.environ.get("HOROVOD_GLOO_RENDEZVOUS_ADDR", "")
port = int(os.environ.get("HOROVOD_GLOO_RENDEZVOUS_PORT", "0"))
print(f"kvaddr {addr}", flush=True)
if not addr or not port:
    sys.exit("HOROVOD_GLOO_RENDEZVOUS_ADDR/_PORT not set")

def kv(method, key, body=None):
    c = http.client.HTTPConnection(addr, port, timeout=10)
    c.request(method, f"/ferrydocker/{key}", body=body,
              headers={"Content-Length": str(len(body or b""))})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data

status, _ = kv("PUT", f"rank{rank}", host.encode())
if status != 200:
    sys.exit(f"kv PUT rank{rank}: HTTP {status}")
peers = []
for r in range(size):
    while True:
        status, data = kv("GET", f"rank{r}")
        if status == 200:
            peers.append(data.decode())
            break
        if status != 404 or time.time() > deadline:
            sys.exit(f"kv GET rank{r}: HTTP {status}")
        time.sleep(0.01)
print("kv " + " ".join(peers), flush=True)

# MPICH PMI-1 "simple" wire protocol over the inherited PMI_FD.
if "PMI_FD" not in os.environ:
    sys.exit("PMI_FD not set")
pmi = socket.socket(fileno=int(os.environ["PMI_FD"]))
lines = pmi.makefile("r")

def cmd(text, expect):
    pmi.sendall((text + "\n").encode())
    reply = dict(item.split("=", 1) for item in lines.readline().split())
    if reply.get("cmd") != expect or reply.get("rc", "0") != "0":
        sys.exit(f"pmi: sent '{text}', got {reply}")
    return reply

cmd("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init")
kvs = cmd("cmd=get_my_kvsname", "my_kvsname")["kvsname"]
cmd(f"cmd=put kvsname={kvs} key=host{rank} value={host}", "put_result")
cmd("cmd=barrier_in", "barrier_out")
got = [cmd(f"cmd=get kvsname={kvs} key=host{r}", "get_result")["value"] for r in range(size)]
cmd("cmd=finalize", "finalize_ack")
print("pmi " + " ".join(got), flush=True)

for v in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
    print(f"{v} {os.environ.get(v, '-')}", flush=True)
EOF

# check_rank_lines FILE WHAT EXPECTED: each rank printed "WHAT EXPECTED".
check_rank_lines() {
  local file=$1 what=$2 expected=$3 r
  for r in 0 1 2 3 4 5 6 7; do
    assert_eq "$what $expected" "$(rank_lines "$file" "$r" stdout | grep "^$what " || true)" \
      "rank $r's '$what' line"
  done
}

# --- Bridge mode.
hostfile=$T/bridge.txt
sim_hostfile bridge "$hostfile"
run_capture B -- "$FERRYRUN" --ssh-config "$DSSHCFG" --hostfile "$hostfile" --no-preflight \
  "$PY" "$T/rdv.py"
assert_eq 0 "$B_rc" "ferryrun exit code (bridge mode)"
bridge_hosts="dctr1a dctr1a dctr1b dctr1b dctr2a dctr2a dctr2b dctr2b"
check_rank_lines "$T/B.out" kvaddr 127.0.0.1
check_rank_lines "$T/B.out" kv "$bridge_hosts"
check_rank_lines "$T/B.out" pmi "$bridge_hosts"
check_rank_lines "$T/B.out" NCCL_SOCKET_IFNAME -
check_rank_lines "$T/B.out" GLOO_SOCKET_IFNAME -
# The warning: one ferryrun message showing both machines' container networks.
warning=$(grep -v '^\[[0-9]*\]<std' "$T/B.err" || true)
assert_match "$warning" '172\.31\.1\.[0-9]' "ferryrun's NIC warning (dctr1*'s addresses)"
assert_match "$warning" '172\.31\.2\.[0-9]' "ferryrun's NIC warning (dctr2*'s addresses)"
assert_contains "$warning" "--network-interface" "ferryrun's NIC warning (what to do)"
wait_sim_idle 10

# --- Host mode.
hostfile=$T/host.txt
sim_hostfile host "$hostfile"
run_capture H -- "$FERRYRUN" --ssh-config "$DSSHCFG" --hostfile "$hostfile" "$PY" "$T/rdv.py"
assert_eq 0 "$H_rc" "ferryrun exit code (host mode)"
host_hosts="dhost3a dhost3a dhost3b dhost3b dhost4a dhost4a dhost4b dhost4b"
check_rank_lines "$T/H.out" kvaddr 127.0.0.1
check_rank_lines "$T/H.out" kv "$host_hosts"
check_rank_lines "$T/H.out" pmi "$host_hosts"
check_rank_lines "$T/H.out" NCCL_SOCKET_IFNAME =eth0
check_rank_lines "$T/H.out" GLOO_SOCKET_IFNAME eth0
assert_not_contains "$(grep -v '^\[[0-9]*\]<std' "$T/H.err" || true)" "172.31." \
  "ferryrun's messages in host mode (no NIC warning about docker0)"
wait_sim_idle 10
pass
