#!/usr/bin/env bash
# 68_detach_elastic: Horovod's elastic mode under --detach behaves as attached. The elastic
# script of 36 on fnode1 and fnode2, one slot each, started with `horovodrun --detach`: the
# worker on fnode2 exits 3 at epoch 1, fnode2 leaves the job, the worker on fnode1 resets to a
# world of 1, restores the last commit and finishes. `ferry wait` gives 0 (as an attached
# ferryrun would), the journal holds the failure report, the reset and the final line, and
# nothing of the job is left on any host.
# shellcheck disable=SC2154
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
require_horovod

export XDG_STATE_HOME=$T/state
elastic_setup fnode1:1 fnode2:1

run_capture D --timeout 60 -- "$T/horovodrun" --detach --ssh-config "$SSHCFG" -np 2 --min-np 1 \
  --host-discovery-script "$T/discover.sh" "$HOROVOD_PY" "$prog" "$T/m" 3 1 fnode2:0@1 "$tok"
assert_eq 0 "$D_rc" "horovodrun --detach"
id=$(head -1 <<<"$D_out")
assert_match "$id" '^[0-9a-f]{8}$' "the job's id"
run_capture W --timeout 240 -- "$FERRY_BIN/ferry" wait "$id"
assert_eq 0 "$W_rc" "ferry wait: a worker failed, the other finished"
journal=$XDG_STATE_HOME/ferry/jobs/$id/console.log
assert_contains "$(cat "$journal")" "rank 1 on host fnode2 (local rank 0, pid" "the failed worker is named"
assert_contains "$(cat "$journal")" "elastic: reset 1: 1 worker on 1 host" "the job goes on without fnode2"
assert_elastic_finals "$journal" 1
assert_contains "$(rank_lines "$journal" 1 stdout)" "dying rank 1 at epoch 1" "the victim"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
