#!/usr/bin/env bash
# 37_hvd_elastic_reset_limit: the elastic script of 36 with --reset-limit 1 on 3 hosts x 2 slots.
# fnode2[1] fails at epoch 1: the first reset, the job goes on with 4 workers; fnode3[1] fails at
# epoch 2: a second reset would pass the limit, so the job stops, says why in one line, exits
# with the failed worker's status (3), and nothing of it is left on any host.
# shellcheck disable=SC2154
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
require_horovod

elastic_setup fnode1:2 fnode2:2 fnode3:2

run_capture E --timeout 240 -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 6 --min-np 2 \
  --gloo-timeout-seconds 15 --reset-limit 1 --host-discovery-script "$T/discover.sh" \
  "$HOROVOD_PY" "$prog" "$T/m" 6 1 fnode2:1@1 fnode3:1@2 "$tok"
assert_eq 3 "$E_rc" "ferryrun exit code (the last failed worker's status)"
assert_contains "$E_err" "rank 3 on host fnode2 (local rank 1, pid" "the first failure"
assert_contains "$E_err" "elastic: reset 1: 4 workers on 2 hosts" "the first reset"
assert_contains "$E_err" "rank 3 on host fnode3 (local rank 1, pid" \
  "the second failure, named by its rank after the first reset (started as rank 5)"
assert_contains "$E_err" \
  "horovodrun: elastic: stopping the job: it reset 1 time, the most --reset-limit 1 allows" \
  "the limit is named"
assert_not_contains "$E_err" "reset 2:" "no second reset"
assert_eq "" "$(grep '<stdout>:final' "$T/E.out" || true)" "no worker finished"
assert_tags_are_ranks "$T/E.out"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
