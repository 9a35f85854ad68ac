#!/usr/bin/env bash
# 73_docker_horovod: real Horovod (tests/e2e/programs/hvd_train.py) in the two workers of
# docker/compose.bridge.yml on a real engine, 2 containers x 2 slots, the Horovod build
# mounted into them (the image has python3-torch and what Horovod needs at run time):
#  - as horovodrun (ferry's personality) from this machine, through the published ports;
#  - as plain ferryrun from another machine (the cluster host fnode1, through 10.231.0.1).
# Every rank's hvd.rank(), local_rank(), cross_rank(), size(), local_size(), cross_size()
# match its container, the collectives agree and the weights are the same on every rank
# after DistributedOptimizer steps (gloo's traffic goes container to container over the
# Docker bridge, the rendezvous through each container's ferryd). Nothing is left.
# shellcheck disable=SC2154 # H_rc etc. come from run_capture
# shellcheck source=docker_lib.sh
source "$(dirname "$0")/docker_lib.sh"
require_root
require_cluster
require_horovod
require_docker
compose_up bridge  # sets c0, c1
"$DOCKER" exec "$c0" env PYTHONPATH="$PYTHONPATH" /usr/bin/python3 -c 'import horovod.torch' ||
  fail "horovod.torch does not import inside the worker container (image without python3-torch, python3-cloudpickle, python3-psutil, python3-packaging, python3-cffi? $FERRY_DOCKER up rebuilds it)"

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/hvd_train.py
ln -s "$FERRYRUN" "$T/horovodrun"
hostfile_for() { # ADDR: the two workers as seen at ADDR
  echo "$1 slots=2 port=2201 ferryd=/opt/ferry/bin/ferryd"
  echo "$1 slots=2 port=2202 ferryd=/opt/ferry/bin/ferryd"
}
hostfile_for "$DOCKER_MACHINE_ADDR" >"$T/lan.txt"
hostfile_for 127.0.0.1 >"$T/local.txt"

# check_job P WHAT: 4 ranks, rank r in docker-worker(r/2).
check_job() { assert_hvd_train "$T/$1.out" "$2" 4 docker-worker 0; }

# --- 1. horovodrun from this machine (the personality forwards PYTHONPATH).
run_capture H --timeout 240 -- "$T/horovodrun" --gloo --ssh-config "$DCFG" --ssh-accept-new \
  --hostfile "$T/local.txt" "$HOROVOD_PY" "$prog" 3 "$tok"
assert_eq 0 "$H_rc" "horovodrun exit code (containers)"
check_job H "horovodrun into containers"
wait_ctr_idle 10 "$c0" "$c1"

# --- 2. Plain ferryrun from another machine on the LAN.
run_capture F --timeout 240 -- "$FERRY_CLUSTER" exec fnode1 "$FERRYRUN" --ssh-config "$DCFG" \
  --ssh-accept-new --hostfile "$T/lan.txt" -x PYTHONPATH "$HOROVOD_PY" "$prog" 3 "$tok"
assert_eq 0 "$F_rc" "ferryrun exit code (from fnode1 into containers)"
check_job F "ferryrun from fnode1 into containers"
wait_ctr_idle 10 "$c0" "$c1"
wait_gone "$tok" 10
pass
