#!/usr/bin/env bash
# 36_hvd_elastic_failure: a real Horovod elastic script (hvd.elastic.run, TorchState, commit)
# under `horovodrun --host-discovery-script` on 3 hosts x 2 slots. At epoch 1 the worker
# fnode2[1] exits 3: fnode2 leaves the job (its other worker is stopped), the 4 workers of
# fnode1 and fnode3 reset to ranks 0..3 of 4 (fnode3's, started as [4] and [5], are tagged [2]
# and [3] from then on), restore the last commit and finish in sync; the job ends 0 and nothing
# of it is left on any host.
# shellcheck disable=SC2154,SC2001
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
require_horovod

elastic_setup fnode1:2 fnode2:2 fnode3:2

run_capture E --timeout 240 -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 6 --min-np 2 \
  --gloo-timeout-seconds 15 --host-discovery-script "$T/discover.sh" \
  "$HOROVOD_PY" "$prog" "$T/m" 4 1 fnode2:1@1 "$tok"
assert_eq 0 "$E_rc" "ferryrun exit code (a worker failed, the others finished)"
assert_contains "$E_err" "rank 3 on host fnode2 (local rank 1, pid" "the failed worker is named"
assert_contains "$E_err" "elastic: reset 1: 4 workers on 2 hosts" "the job goes on without fnode2"
assert_eq 4 "$(grep -c '^\[[0-3]\]<stdout>:reset size 4 rank [0-3]$' "$T/E.out")" \
  "4 workers reset to a world of 4"
# fnode2's workers are gone (rank 3 died, rank 2 was stopped): 4 finals, no fifth.
assert_elastic_finals "$T/E.out" 4
assert_tags_are_ranks "$T/E.out"
assert_contains "$(rank_lines "$T/E.out" 2 stdout)" "reset size 4 rank 2" \
  "fnode3's first worker, started as [4], is tagged [2] once it holds rank 2"
assert_contains "$(rank_lines "$T/E.out" 3 stdout)" "dying rank 3 at epoch 1" "the victim"
assert_eq 4 "$(rank_lines "$T/E.out" 0 stdout | grep -c '^epoch [1-4] ')" "rank 0 ran 4 epochs"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
