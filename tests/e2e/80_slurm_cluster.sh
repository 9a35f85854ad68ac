#!/usr/bin/env bash
# 80_slurm_cluster: the Slurm test cluster itself (tests/cluster/ferry-slurm), no ferry,
# as the Slurm scenarios rely on it:
#  - sinfo lists every node idle;
#  - srun -N4 runs one task on each of snode1..snode4, as root, with /usr/bin/python3,
#    and the nodes resolve each other's names;
#  - a task on every node reaches a listener of this machine on the bridge address
#    (what ferryd started by srun does to reach ferryrun);
#  - salloc -N2 runs srun on its two nodes (and resolves their names where it runs);
#  - sbatch --wait of a 2-node script returns once it ran, with its exit code;
#  - afterwards no job is queued and no step process is left on any node.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the tasks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_slurm 4

# --- 1. Every node idle.
run_capture I -- sinfo -h -N -o '%N %T'
assert_eq 0 "$I_rc" "sinfo exit code"
assert_eq "$FERRY_SLURM_NODES" "$(count_lines "$T/I.out" ' idle$')" "idle nodes in sinfo"

# --- 2. One task a node, as root, with python3; names resolve on the nodes.
run_capture S -- srun -N4 hostname
assert_eq 0 "$S_rc" "srun -N4 hostname exit code"
assert_eq "snode1 snode2 snode3 snode4" "$(sort "$T/S.out" | paste -sd' ')" "srun -N4 hostnames"

run_capture P -- srun -N4 /usr/bin/python3 -c \
  'import os, socket; print(os.getuid(), socket.gethostname(), socket.gethostbyname("snode4"))'
assert_eq 0 "$P_rc" "srun python3 exit code"
expected=""
for i in 1 2 3 4; do expected+="0 snode$i 10.233.0.14"$'\n'; done
assert_eq "${expected%$'\n'}" "$(sort "$T/P.out")" "uid, hostname, address of snode4 per task"

# --- 3. Every node connects back to this machine on the bridge address.
start_bg L -- "$PY" -c '
import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 0))
s.listen(16)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
__import__("os").rename(sys.argv[2] + ".tmp", sys.argv[2])
for _ in range(int(sys.argv[3])):
    c, _addr = s.accept()
    print(c.makefile().readline().strip(), flush=True)
    c.close()
' "$FERRY_SLURM_HEAD_ADDR" "$T/port" 4
wait_for "the listener's port" 10 test -s "$T/port"
port=$(cat "$T/port")
run_capture C -- srun -N4 bash -c \
  'exec 3<>"/dev/tcp/$0/$1" && echo "$(hostname)" >&3' "$FERRY_SLURM_HEAD_ADDR" "$port"
assert_eq 0 "$C_rc" "srun connecting back exit code"
wait_bg L 10
assert_eq 0 "$L_rc" "listener exit code"
assert_eq "snode1 snode2 snode3 snode4" "$(sort "$T/L.out" | paste -sd' ')" \
  "nodes that connected to $FERRY_SLURM_HEAD_ADDR:$port"

# --- 4. An allocation of two nodes; its steps run on them.
run_capture A -- salloc -N2 sh -c \
  'echo "nodes $SLURM_JOB_NUM_NODES"; srun hostname | sort; getent hosts snode2 | awk "{print \$1, \$2}"'
assert_eq 0 "$A_rc" "salloc exit code"
assert_eq "nodes 2
snode1
snode2
10.233.0.12 snode2" "$A_out" "salloc's output"

# --- 5. A batch job over two nodes, waited for; its exit code comes back.
cat >"$T/job.sh" <<EOF
#!/bin/bash
#SBATCH -N2
#SBATCH -o $T/job.out
echo "batch on \$(hostname)"
srun hostname
exit 3
EOF
run_capture B -- sbatch --wait "$T/job.sh"
assert_eq 3 "$B_rc" "sbatch --wait exit code (the script's)"
assert_match "$B_out" '^Submitted batch job [0-9]+$' "sbatch's output"
batch_host=$(sed -n 's/^batch on //p' "$T/job.out")
steps=$(grep -v '^batch on ' "$T/job.out" | sort | paste -sd' ')
assert_match "$steps" '^snode[0-9]+ snode[0-9]+$' "the batch step's hostnames"
assert_contains " $steps " " $batch_host " "the batch step's hostnames (the batch host among them)"
[[ ${steps% *} != "${steps#* }" ]] || fail "the batch step ran twice on ${steps% *}"

# --- 6. Nothing left: no job, no slurmstepd or task on any node.
wait_slurm_idle 10
pass
