#!/usr/bin/env bash
# 52_horovod_kv: ranks on several hosts rendezvous through Horovod's HTTP KV store the way
# gloo's HTTPStore does (a connection per request, 404 polling, scopes global,
# local_<host>, cross_<local_rank>, binary values, DELETE at the end), each at
# 127.0.0.1:<its ferryd's port>; processes without the job secret get 403; a rank that puts
# without end fails at the store's bound. Also measures KV requests per second through the proxy.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3

tok=$(unique_token)
client=$FERRY_SRC/tests/e2e/programs/gloo_kv_client.py

# Uneven hosts so that local and cross scopes have different sizes.
run_capture K --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 5 \
  -H fnode1:2,fnode2:2,fnode3:1 "$PY" "$client" "$tok"
assert_eq 0 "$K_rc" "ferryrun exit code"
for r in 0 1 2 3 4; do
  line=$(rank_lines "$T/K.out" "$r" stdout | grep '^kv rank' || true)
  assert_match "$line" "^kv rank $r/5 ok " "rank $r rendezvous"
done
assert_contains "$(rank_lines "$T/K.out" 4 stdout)" "local=0/1 cross=2/3 host=fnode3" \
  "rank 4's scopes"

# Variables: rendezvous at loopback on the rank's own host, gloo controller, a 64-digit secret.
run_capture V -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  sh -c 'echo "$HOROVOD_GLOO_RENDEZVOUS_ADDR $HOROVOD_CONTROLLER $HOROVOD_CPU_OPERATIONS ${#FERRY_JOB_SECRET}"; echo "port $HOROVOD_GLOO_RENDEZVOUS_PORT"'
assert_eq 0 "$V_rc" "ferryrun exit code (variables)"
for r in 0 1; do
  assert_eq "127.0.0.1 gloo gloo 64" "$(rank_lines "$T/V.out" $r stdout | head -1)" "rank $r variables"
  assert_match "$(rank_lines "$T/V.out" $r stdout | tail -1)" '^port [0-9]+$' "rank $r KV port"
done

# A process outside the job on the same host cannot use a rank's store: 403.
probe='import os,socket,sys,time
port=int(os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"])
open(sys.argv[1],"w").write(str(port))
time.sleep(4)'
start_bg P -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 1 -H fnode2:1 "$PY" -c "$probe" "$T/port" "$tok"
wait_for "the rank to write its KV port" 20 test -s "$T/port"
port=$(cat "$T/port")
status=$("$FERRY_CLUSTER" exec fnode2 "$PY" -c "
import socket
s=socket.create_connection(('127.0.0.1',$port))
s.sendall(b'GET /global/0 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n')
print(s.recv(100).split(b' ')[1].decode())")
assert_eq 403 "$status" "status for a process without the secret"
wait_bg P 30
assert_eq 0 "$P_rc" "ferryrun exit code (probe job)"

# Throughput: each of 4 ranks on 2 hosts does PUT+GET pairs on fresh connections.
bench='import os,socket,sys,time
a,p=os.environ["HOROVOD_GLOO_RENDEZVOUS_ADDR"],int(os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"])
r=os.environ["HOROVOD_RANK"]
def req(m,path,body=b""):
    with socket.create_connection((a,p),timeout=20) as s:
        s.sendall(f"{m} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()+body)
        d=b""
        while b"\r\n\r\n" not in d:
            c=s.recv(4096)
            if not c: sys.exit(f"rank {r}: {m} {path}: connection closed before a reply")
            d+=c
        return int(d.split(b" ")[1])
n=400
t=time.monotonic()
for i in range(n):
    assert req("PUT",f"/bench{r}/k{i}",b"v"*64)==200
    assert req("GET",f"/bench{r}/k{i}")==200
dt=time.monotonic()-t
print(f"bench {2*n/dt:.0f} req/s")'
run_capture B --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  "$PY" -c "$bench" "$tok"
assert_eq 0 "$B_rc" "ferryrun exit code (bench)"
total=$(grep -o 'bench [0-9]* req/s' "$T/B.out" | awk '{s+=$2} END {print s}')
echo "KV requests through the proxy: $total req/s in total over 4 ranks on 2 hosts (fresh connection each)"
((total > 100)) || fail "KV proxy too slow: $total req/s"

# A rank that puts without end meets the store's bound (64 MiB per job): its put is refused
# (507), ferryd stops it, and the job fails naming it and why; the store's memory is freed with
# the job. Rank 0 only waits.
flood='import os,socket,sys,time
a,p=os.environ["HOROVOD_GLOO_RENDEZVOUS_ADDR"],int(os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"])
if os.environ["HOROVOD_RANK"]=="0": time.sleep(60); sys.exit(0)
body=b"v"*(1<<20)
for i in range(200):
    with socket.create_connection((a,p),timeout=20) as s:
        s.sendall(f"PUT /flood/k{i} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()+body)
        d=b""
        while b"\r\n\r\n" not in d:
            c=s.recv(4096)
            if not c: break
            d+=c
    if not d.startswith(b"HTTP/1.1 200"):
        print(f"put {i}: {d[:12]!r}", flush=True); time.sleep(30)
print("all 200 puts were stored", flush=True)'
run_capture F --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  "$PY" -c "$flood" "$tok"
assert_ne 0 "$F_rc" "ferryrun exit code (a rank flooding the store)"
assert_not_contains "$(cat "$T/F.out")" "all 200 puts were stored" "the flood's end"
assert_contains "$(cat "$T/F.err")" "rank 1 on host fnode2" "the failure names the flooding rank"
assert_contains "$(cat "$T/F.err")" "its puts passed the 64 MiB the job's key-value store holds at most" \
  "the failure says why"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
