#!/usr/bin/env bash
# 58_horovod_real: real Horovod (horovod.torch, gloo controller) in an unmodified training
# script on 4 hosts x 2 slots, started once as horovodrun (ferry's horovodrun personality:
# the link named horovodrun, with horovodrun's flags) and once as plain ferryrun. Each rank's
# hvd.rank(), local_rank(), cross_rank(), size(), local_size() and cross_size() match its
# host; allreduce, allgather and broadcast give the same results on every rank; after
# hvd.broadcast_parameters and a few hvd.DistributedOptimizer steps on data that differs
# between ranks, every rank holds the same weights. Needs FERRY_TEST_HOROVOD (see lib.sh).
# shellcheck disable=SC2154 # H_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4
require_horovod

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/hvd_train.py
hosts=fnode1:2,fnode2:2,fnode3:2,fnode4:2
ln -s "$FERRYRUN" "$T/horovodrun"

# check_job P WHAT: the 8 ranks' lines in $T/P.out say what a correct Horovod job says (rank r
# on fnode(r/2+1)), and the weights moved from one per rank, to one after broadcast, to one
# after the steps.
check_job() {
  local p=$1 what=$2 init before after
  assert_hvd_train "$T/$p.out" "$what" 8 fnode 1
  # init differs per rank (seeded by rank); before and after are one value each.
  init=$(sed -n 's/.*hvd weights rank=[0-9]* init=\([0-9a-f]*\) .*/\1/p' "$T/$p.out" | sort -u | wc -l)
  before=$(sed -n 's/.*hvd weights .* before=\([0-9a-f]*\) .*/\1/p' "$T/$p.out" | sort -u)
  after=$(sed -n 's/.*hvd weights .* after=\([0-9a-f]*\)$/\1/p' "$T/$p.out" | sort | uniq -c)
  assert_eq 8 "$init" "$what: distinct initial weights (one per rank)"
  assert_eq 1 "$(wc -l <<<"$before")" "$what: distinct weights after broadcast_parameters"
  assert_ne "$before" "${after##* }" "$what: weights after the steps (they must have moved)"
}

# As horovodrun, with its flags: --gloo, -p, --network-interface, a tunable. Like horovodrun,
# the personality forwards the launcher's environment (PYTHONPATH with Horovod).
run_capture H --timeout 180 -- "$T/horovodrun" --gloo --ssh-config "$SSHCFG" -np 8 -H "$hosts" \
  -p 2222 --network-interface eth0 --cycle-time-ms 1 "$HOROVOD_PY" "$prog" 3 "$tok"
assert_eq 0 "$H_rc" "horovodrun exit code"
check_job H horovodrun
assert_eq "" "$(grep -v '^\[[0-7]\]<std' "$T/H.out" || true)" "horovodrun: untagged stdout lines"

# As plain ferryrun: the environment is exported with -x (nothing else is forwarded).
exports=()
[[ -n ${PYTHONPATH:-} ]] && exports=(-x PYTHONPATH)
run_capture F --timeout 180 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 8 -H "$hosts" \
  "${exports[@]}" "$HOROVOD_PY" "$prog" 3 "$tok"
assert_eq 0 "$F_rc" "ferryrun exit code"
check_job F ferryrun

wait_gone "$tok" 10
wait_cluster_idle 10
pass
