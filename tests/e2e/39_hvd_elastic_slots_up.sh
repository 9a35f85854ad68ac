#!/usr/bin/env bash
# 39_hvd_elastic_slots_up: the elastic script of 36 under `horovodrun --host-discovery-script` on
# fnode1 and fnode2, one slot each. Once epoch 1 is committed, the discovery script gives fnode1
# a second slot: the 2 workers reset at their next commit, the ferryd already running on fnode1
# starts a third worker for the new slot (local rank 1, Horovod rank 1: started as [2], tagged
# [1]), the fnode2 worker goes on as rank 2 (tagged [2] from then on); all 3 finish in sync, the
# job ends 0, nothing is left on any host.
# shellcheck disable=SC2154,SC2001
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
require_horovod

elastic_setup fnode1:1 fnode2:1

start_bg E -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 2 --min-np 1 --max-np 4 \
  --host-discovery-script "$T/discover.sh" "$HOROVOD_PY" "$prog" "$T/m" 6 1 "$tok"
wait_for "epoch 1 to be committed" 120 test -e "$T/m/epoch-1"
printf 'fnode1:2\nfnode2:1\n' >"$T/hosts.new"
mv "$T/hosts.new" "$T/hosts"
wait_for "the round after the change" 60 grep -q 'elastic: reset 1:' "$T/E.err"
wait_for "a third worker" 30 test "$(elastic_workers)" -eq 3
kill -0 "$E_pid" || fail "the job ended before the third worker started"
wait_bg E 180
assert_eq 0 "$E_rc" "ferryrun exit code (the job grew on fnode1 and finished)"
assert_contains "$E_err" "elastic: reset 1: 3 workers on 2 hosts" "fnode1's second slot is used"
assert_eq "reset size 3 rank 0" "$(rank_lines "$T/E.out" 0 stdout | grep '^reset' || true)" \
  "fnode1's first worker keeps rank 0"
assert_eq "reset size 3 rank 2" "$(rank_lines "$T/E.out" 2 stdout | grep '^reset' || true)" \
  "fnode2's worker goes on as rank 2, so tagged"
assert_match "$(rank_lines "$T/E.out" 1 stdout | grep '^final' || true)" '^final size 3 rank 1 ' \
  "a new worker in fnode1's new slot, tagged with its rank 1"
assert_eq "" "$(rank_lines "$T/E.out" 1 stdout | grep '^reset' || true)" \
  "rank 1 is the new worker: it starts no reset"
assert_elastic_finals "$T/E.out" 3
assert_tags_are_ranks "$T/E.out"
assert_eq 3 "$(grep -c '^\[[0-2]\]<stdout>:epoch 6 size 3 ' "$T/E.out")" \
  "the last epoch ran on 3 workers"
assert_not_contains "$E_err" "host fnode1 (local rank" "no worker failed"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
