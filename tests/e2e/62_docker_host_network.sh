#!/usr/bin/env bash
# 62_docker_host_network: two Docker machines in host networking, two
# containers each sharing the machine's network (tests/cluster/ferry-docker-sim):
# each container has its own hostname and its own sshd, on ports 2222 and 2223
# of the machine's address. A job over the four containers: every rank runs in
# its container, HOROVOD_HOSTNAME is address:port, the framework's data plane
# works between machines (rank 0 listens on MASTER_ADDR:MASTER_PORT and every
# rank connects, as torch's TCPStore does), and failures leave nothing behind
# in any container, though two share one network namespace.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_sim_lib.sh
source "$(dirname "$0")/docker_sim_lib.sh"
require_root
docker_sim_up host

hostfile=$T/hosts.txt
sim_hostfile host "$hostfile"
ctrs=(dhost3a dhost3b dhost4a dhost4b)
labels=(10.232.0.13:2222 10.232.0.13:2223 10.232.0.14:2222 10.232.0.14:2223)

# --- 1. Placement, hostnames, HOROVOD_HOSTNAME, and a rank-to-rank exchange
# over MASTER_ADDR:MASTER_PORT (rank 0's machine address).
cat >"$T/store.py" <<'EOF'
import os, socket, sys, time
rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
host = socket.gethostname()
print(host, rank, os.environ["LOCAL_RANK"], os.environ["HOROVOD_HOSTNAME"], addr, flush=True)
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(size)
    s.settimeout(60)
    seen = {}
    while len(seen) < size - 1:
        c, peer = s.accept()
        r, h = c.makefile().readline().split()
        seen[int(r)] = h
        c.close()
    print("store", " ".join(seen[r] for r in sorted(seen)), flush=True)
else:
    deadline = time.time() + 60
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    c.sendall(f"{rank} {host}\n".encode())
    c.close()
EOF
run_capture R -- "$FERRYRUN" --ssh-config "$DSSHCFG" --hostfile "$hostfile" "$PY" "$T/store.py"
assert_eq 0 "$R_rc" "ferryrun exit code"
expected=""
for r in 0 1 2 3 4 5 6 7; do
  h=$((r / 2))
  expected+="${ctrs[h]} $r $((r % 2)) ${labels[h]} 10.232.0.13"$'\n'
done
actual=$(rank_lines "$T/R.out" '[0-7]' stdout | grep -v '^store' | sort -k2n)
assert_eq "${expected%$'\n'}" "$actual" "hostname, rank, local rank, HOROVOD_HOSTNAME, MASTER_ADDR"
assert_eq "dhost3a dhost3b dhost3b dhost4a dhost4a dhost4b dhost4b" \
  "$(rank_lines "$T/R.out" 0 stdout | sed -n 's/^store //p')" \
  "ranks 1..7 that reached rank 0 at MASTER_ADDR:MASTER_PORT (hostnames)"
wait_sim_idle 10

# --- 2. Rank 6 (dhost4b) exits 3: exit code, report, and no rank left in any
# container, including dhost4a, which shares dhost4b's network namespace.
sim_rank_exit_case "$hostfile" 6 3 10.232.0.14:2223

# --- 3. kill -9 of ferryrun: nothing is left in any container.
sim_kill9_case "$hostfile"
pass
