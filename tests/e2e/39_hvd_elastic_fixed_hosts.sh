#!/usr/bin/env bash
# 39_hvd_elastic_fixed_hosts: horovodrun's elastic mode over fixed hosts. `horovodrun -np 4
# --min-np 2 --max-np 4 -H fnode1:2,fnode2:2` (no discovery script) is elastic, as in horovodrun
# (--min-np makes a run elastic; the -H hosts are found again every second). The elastic script of
# 36 runs there; at epoch 1 the worker fnode2[1] exits 3: fnode2 is blacklisted for good (no
# --blacklist-cooldown-range), its other worker is stopped, the 2 workers of fnode1 reset to a world
# of 2, restore the last commit and finish in sync; the job ends 0 and nothing is left anywhere.
# shellcheck disable=SC2154,SC2001
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
require_horovod

elastic_setup
run_capture E --timeout 240 -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 4 --min-np 2 \
  --gloo-timeout-seconds 15 --max-np 4 -H fnode1:2,fnode2:2 \
  "$HOROVOD_PY" "$prog" "$T/m" 5 1 fnode2:1@1 "$tok"
assert_eq 0 "$E_rc" "ferryrun exit code (a worker failed, the others finished)"
assert_contains "$E_err" "rank 3 on host fnode2 (local rank 1, pid" "the failed worker is named"
assert_contains "$E_err" "elastic: reset 1: 2 workers on 1 host" "the job goes on without fnode2"
assert_not_contains "$E_err" "reset 2:" "fnode2 stays out"
assert_eq 2 "$(grep -c '^\[[01]\]<stdout>:reset size 2 rank [01]$' "$T/E.out")" \
  "fnode1's 2 workers reset to a world of 2"
assert_elastic_finals "$T/E.out" 2
assert_tags_are_ranks "$T/E.out"
assert_contains "$(rank_lines "$T/E.out" 3 stdout)" "dying rank 3 at epoch 1" "the victim"
assert_eq 2 "$(grep -c '^\[[01]\]<stdout>:epoch 5 size 2 ' "$T/E.out")" \
  "the last epoch ran on 2 workers"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
