#!/usr/bin/env bash
# 72_docker_host: docker/compose.host.yml on a real engine. Two workers sharing this
# machine's network namespace, each with its own sshd on a non-22 port of the
# machine's addresses (2222, 2223):
#  - from another machine (fnode1, through 10.231.0.1) and from this machine
#    (127.0.0.1 with the entries' own ports): ranks run in the containers (the
#    machine's hostname, the image's ferryd), HOROVOD_HOSTNAME is address:port;
#  - a real PyTorch gloo all-reduce and DDP step across the two containers;
#  - kill -9 of ferryrun mid-job: nothing of the job in either container 2 s later.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_lib.sh
source "$(dirname "$0")/docker_lib.sh"
require_root
require_cluster
require_docker
for port in 2222 2223; do
  ! _ssh_banner 127.0.0.1 "$port" 2>/dev/null || fail "port $port of this machine is taken before the test"
done
compose_up host  # sets c0, c1

hostfile_for() { # ADDR
  echo "$1 slots=2 port=2222 ferryd=/opt/ferry/bin/ferryd"
  echo "$1 slots=2 port=2223 ferryd=/opt/ferry/bin/ferryd"
}
hostfile_for "$DOCKER_MACHINE_ADDR" >"$T/lan.txt"
hostfile_for 127.0.0.1 >"$T/local.txt"
# A rank in a container sees the container's init (docker-init, from `init: true`) as
# PID 1, and ferryd as its parent.
show='echo "$(hostname) $RANK $LOCAL_RANK $HOROVOD_HOSTNAME $(cat /proc/$PPID/comm) $(cat /proc/1/comm)"'
expected_for() { # ADDR
  local r
  for r in 0 1 2 3; do
    echo "[$r]<stdout>:$(hostname) $r $((r % 2)) $1:$((2222 + r / 2)) ferryd docker-init"
  done
}

# --- 1. From another machine, and from this one.
run_capture L -- "$FERRY_CLUSTER" exec fnode1 "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new \
  --hostfile "$T/lan.txt" sh -c "$show"
assert_eq 0 "$L_rc" "ferryrun from fnode1 ($L_err)"
assert_eq "$(expected_for "$DOCKER_MACHINE_ADDR")" "$(sort -t']' -k1.2n "$T/L.out")" "ranks launched from fnode1"
run_capture H -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new --hostfile "$T/local.txt" \
  sh -c "$show"
assert_eq 0 "$H_rc" "ferryrun from this machine ($H_err)"
assert_eq "$(expected_for 127.0.0.1)" "$(sort -t']' -k1.2n "$T/H.out")" "ranks launched from this machine"
wait_ctr_idle 5 "$c0" "$c1"

# --- 2. PyTorch gloo across the two containers, launched from fnode1.
run_capture P --timeout 180 -- "$FERRY_CLUSTER" exec fnode1 "$FERRYRUN" --ssh-config "$DCFG" \
  --hostfile "$T/lan.txt" /usr/bin/python3 "$FERRY_SRC/tests/e2e/programs/torch_allreduce.py"
assert_eq 0 "$P_rc" "torch job exit code ($P_out $P_err)"
assert_eq 4 "$(grep -c '^\[[0-3]\]<stdout>:torch rank [0-3]/4 ok' "$T/P.out")" "torch ranks ok"
wait_ctr_idle 5 "$c0" "$c1"

# --- 3. kill -9 of ferryrun: 2 s later nothing of the job is left in the containers.
ctr_kill9_case "$T/local.txt" "$c0" "$c1"
pass
