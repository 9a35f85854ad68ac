#!/usr/bin/env bash
# 39_hvd_elastic_slots_down: the elastic script of 36 on fnode1 and fnode2, two slots each. Once
# epoch 1 is committed, the discovery script leaves fnode1 one slot: the 4 workers reset at their
# next commit, fnode1's worker of local rank 1 (tag [1]) is stopped on purpose while the job
# runs, before it hears that it is out (not a failure: fnode1 stays), the other 3 go on as
# ranks 0..2 of 3 (fnode2's, started as [2] and [3], tagged [1] and [2] from then on) and finish
# in sync; the job ends 0, nothing is left on any host.
# shellcheck disable=SC2154,SC2001
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
require_horovod

elastic_setup fnode1:2 fnode2:2

start_bg E -- "$T/horovodrun" --verbose --ssh-config "$SSHCFG" -np 4 --min-np 2 \
  --gloo-timeout-seconds 15 --host-discovery-script "$T/discover.sh" \
  "$HOROVOD_PY" "$prog" "$T/m" 8 1 "$tok"
wait_for "epoch 1 to be committed" 120 test -e "$T/m/epoch-1"
assert_eq 4 "$(elastic_workers)" "4 workers before the change"
printf 'fnode1:1\nfnode2:2\n' >"$T/hosts.new"
mv "$T/hosts.new" "$T/hosts"
wait_for "the round after the change" 60 grep -q 'elastic: reset 1:' "$T/E.err"
wait_for "fnode1's removed worker to be stopped" 30 test "$(elastic_workers)" -eq 3
kill -0 "$E_pid" || fail "the job ended before the removed worker was stopped"
assert_eq 3 "$(elastic_workers)" "3 workers go on"
wait_bg E 180
assert_eq 0 "$E_rc" "ferryrun exit code (fnode1 lost a slot, the job finished)"
assert_contains "$E_err" "elastic: reset 1: 3 workers on 2 hosts" "the world of 3"
# Stopped before it reads its rank -1 (Horovod's worker would abort on it, with a core message).
assert_not_contains "$E_err" "has been removed from elastic job" "stopped before it heard it was out"
assert_contains "$E_err" "elastic: stopping rank 1 on fnode1 (local rank 1): its slot left the world" \
  "the removed slot's worker is stopped on purpose"
assert_not_contains "$E_err" "rank 1 on host fnode1" "its end is not a failure"
assert_not_contains "$E_err" "leaves the job" "fnode1 stays"
assert_eq 3 "$(grep -c '^\[[0-2]\]<stdout>:reset size 3 rank [0-2]$' "$T/E.out")" \
  "3 workers reset to a world of 3 (the stopped one joins no later round: no fourth)"
assert_elastic_finals "$T/E.out" 3
assert_tags_are_ranks "$T/E.out"
assert_eq 3 "$(grep -c '^\[[0-2]\]<stdout>:epoch 8 size 3 ' "$T/E.out")" \
  "the last epoch ran on 3 workers"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
