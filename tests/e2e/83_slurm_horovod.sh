#!/usr/bin/env bash
# 83_slurm_horovod: real Horovod (tests/e2e/programs/hvd_train.py) inside a real Slurm
# allocation of 4 nodes x 2 tasks, with no host list: started as horovodrun (ferry's
# personality, hosts from the allocation) and as plain ferryrun. Every rank's
# hvd.rank(), local_rank(), cross_rank(), size(), local_size(), cross_size() match its
# node, the collectives agree and the weights are the same on every rank after
# DistributedOptimizer steps. Nothing is left on any node.
# shellcheck disable=SC2154 # H_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_slurm 4
require_horovod

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/hvd_train.py
ln -s "$FERRYRUN" "$T/horovodrun"

# check_job P WHAT: the 8 ranks' lines in $T/P.out, rank r on snode(r/2+1).
check_job() { assert_hvd_train "$T/$1.out" "$2" 8 snode 1; }

# As horovodrun: hosts and slots from the allocation, the environment forwarded.
run_capture H --timeout 240 -- salloc -N4 --ntasks-per-node=2 "$T/horovodrun" --gloo \
  "$HOROVOD_PY" "$prog" 3 "$tok"
assert_eq 0 "$H_rc" "horovodrun exit code (inside salloc)"
check_job H "horovodrun in salloc"

# As plain ferryrun: PYTHONPATH exported with -x.
exports=()
[[ -n ${PYTHONPATH:-} ]] && exports=(-x PYTHONPATH)
run_capture F --timeout 240 -- salloc -N4 --ntasks-per-node=2 "$FERRYRUN" "${exports[@]}" \
  "$HOROVOD_PY" "$prog" 3 "$tok"
assert_eq 0 "$F_rc" "ferryrun exit code (inside salloc)"
check_job F "ferryrun in salloc"

wait_gone "$tok" 10
wait_slurm_idle 10
pass
