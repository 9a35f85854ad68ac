#!/usr/bin/env bash
# 71_docker_bridge: docker/compose.bridge.yml on a real engine. Two workers on this
# machine's Docker bridge, reached through published ports 2201 and 2202:
#  - from another machine (the cluster host fnode1, through 10.231.0.1:PORT) and from
#    this machine (127.0.0.1:PORT: an entry with its own port is SSH, not local);
#  - every rank's environment right: hostname, RANK, LOCAL_RANK, HOROVOD_HOSTNAME
#    (address:port, the two entries share an address);
#  - a real PyTorch gloo all-reduce and DDP step across the two containers (rank 0's
#    MASTER_ADDR:MASTER_PORT reached by the other container's ranks);
#  - kill -9 of ferryrun mid-job: nothing of the job in either container 2 s later;
#  - a container stopped mid-job: the host is reported lost, the job aborted, nothing
#    left in the other container.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_lib.sh
source "$(dirname "$0")/docker_lib.sh"
require_root
require_cluster
require_docker
compose_up bridge  # sets c0, c1

hostfile_for() { # ADDR: the two workers as seen at ADDR
  echo "$1 slots=2 port=2201 ferryd=/opt/ferry/bin/ferryd"
  echo "$1 slots=2 port=2202 ferryd=/opt/ferry/bin/ferryd"
}
hostfile_for "$DOCKER_MACHINE_ADDR" >"$T/lan.txt"
hostfile_for 127.0.0.1 >"$T/local.txt"
show='echo "$(hostname) $RANK $LOCAL_RANK $WORLD_SIZE $HOROVOD_HOSTNAME $(cat /proc/1/comm)"'
expected_for() { # ADDR
  local r
  for r in 0 1 2 3; do
    echo "[$r]<stdout>:docker-worker$((r / 2)) $r $((r % 2)) 4 $1:$((2201 + r / 2)) docker-init"
  done
}

# --- 1. From another machine on the LAN.
run_capture L -- "$FERRY_CLUSTER" exec fnode1 "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new \
  --hostfile "$T/lan.txt" sh -c "$show"
assert_eq 0 "$L_rc" "ferryrun from fnode1 ($L_err)"
assert_eq "$(expected_for "$DOCKER_MACHINE_ADDR")" "$(sort -t']' -k1.2n "$T/L.out")" "ranks launched from fnode1"
wait_ctr_idle 5 "$c0" "$c1"

# --- 2. From this machine, through 127.0.0.1 and the published ports.
run_capture H -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new --verbose \
  --hostfile "$T/local.txt" sh -c "$show"
assert_eq 0 "$H_rc" "ferryrun from this machine ($H_err)"
assert_eq "$(expected_for 127.0.0.1)" "$(sort -t']' -k1.2n "$T/H.out")" "ranks launched from this machine"
wait_ctr_idle 5 "$c0" "$c1"

# --- 3. PyTorch gloo across the two containers.
run_capture P --timeout 180 -- "$FERRYRUN" --ssh-config "$DCFG" --hostfile "$T/local.txt" \
  /usr/bin/python3 "$FERRY_SRC/tests/e2e/programs/torch_allreduce.py"
assert_eq 0 "$P_rc" "torch job exit code ($P_out $P_err)"
assert_eq 4 "$(grep -c '^\[[0-3]\]<stdout>:torch rank [0-3]/4 ok' "$T/P.out")" "torch ranks ok"
wait_ctr_idle 5 "$c0" "$c1"

# --- 4. kill -9 of ferryrun: 2 s later nothing of the job is left in the containers.
ctr_kill9_case "$T/local.txt" "$c0" "$c1"

# --- 5. A container stopped mid-job: reported, the job aborted.
tok=$(unique_token)
start_bg S -- "$FERRYRUN" --ssh-config "$DCFG" --hostfile "$T/local.txt" \
  sh -c 'sleep 1000; : "$1"' sh "$tok"
wait_procs "$tok" 4 30
"$DOCKER" stop -t 2 "$c1" >/dev/null
wait_bg S 30
assert_ne 0 "$S_rc" "exit status when a container stops"
assert_contains "$S_err" "lost host 127.0.0.1:2202" "the report names the stopped container's entry"
wait_ctr_idle 5 "$c0"
wait_gone "$tok" 5
pass
