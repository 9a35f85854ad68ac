#!/usr/bin/env bash
# 38_hvd_elastic_scale_up: the elastic script of 36 under `horovodrun --host-discovery-script`,
# starting on fnode1 and fnode2 (2 slots each). Once epoch 1 is committed, the discovery script
# lists fnode3 too: ferryrun tells rank 0 (Horovod's notification service), the 4 workers reset at
# their next commit, fnode3 gets a ferryd and 2 new workers (ranks 4 and 5 of 6), which take the
# state from rank 0; all 6 finish in sync, the job ends 0, nothing is left on any host.
# shellcheck disable=SC2154,SC2001
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
require_horovod

elastic_setup fnode1:2 fnode2:2

start_bg E -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 4 --min-np 2 --max-np 6 \
  --host-discovery-script "$T/discover.sh" "$HOROVOD_PY" "$prog" "$T/m" 6 1 "$tok"
wait_for "epoch 1 to be committed" 120 test -e "$T/m/epoch-1"
printf 'fnode1:2\nfnode2:2\nfnode3:2\n' >"$T/hosts.new"
mv "$T/hosts.new" "$T/hosts"
wait_bg E 240
assert_eq 0 "$E_rc" "ferryrun exit code (the job grew and finished)"
assert_contains "$E_err" "elastic: reset 1: 6 workers on 3 hosts" "the job grew to fnode3"
assert_eq 4 "$(grep -c '^\[[0-3]\]<stdout>:reset size 6 rank [0-3]$' "$T/E.out")" \
  "the 4 first workers reset to a world of 6, keeping ranks 0..3"
assert_elastic_finals "$T/E.out" 6
assert_tags_are_ranks "$T/E.out"
assert_match "$(rank_lines "$T/E.out" 4 stdout | grep '^final' || true)" '^final size 6 rank [45] ' \
  "a new worker on fnode3"
# (the epoch whose commit saw the notice prints no line: the reset interrupts it)
assert_eq 6 "$(grep -c '^\[[0-5]\]<stdout>:epoch 6 size 6 ' "$T/E.out")" \
  "the last epoch ran on 6 workers"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
