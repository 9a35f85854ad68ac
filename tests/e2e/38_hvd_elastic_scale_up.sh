#!/usr/bin/env bash
# 38_hvd_elastic_scale_up: the elastic script of 36 under `horovodrun --host-discovery-script`,
# starting on fnode1 and fnode2 (2 slots each). Once epoch 1 is committed, the discovery script
# lists fnode9 (no such host) and fnode3 too. fnode9 cannot be opened: it is left out, said in
# one line, and never enters a world (were it put in one, the workers reset for it would wait for
# its workers until gloo's timeout and end the job). fnode3 gets a ferryd first, then ferryrun
# tells rank 0 (Horovod's notification service), the 4 workers reset at their next commit, and
# fnode3 gets 2 new workers (ranks 4 and 5 of 6), which take the state from rank 0; all 6 finish
# in sync, the job ends 0, nothing is left on any host.
# The training script comes by --sync: ferryrun runs in a mount namespace of its own where the
# script's tree sits on a tmpfs the hosts cannot see, and the workers run it from their host's
# copy; fnode3, which joins later, gets the tree before its workers start.
# shellcheck disable=SC2154,SC2001
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
require_horovod

elastic_setup fnode1:2 fnode2:2
make_in_ns
mkdir -p "$T/tree"
cp "$prog" "$T/tree/"

start_bg E -- "$in_ns" "$T/tree" "$T/horovodrun" --ssh-config "$SSHCFG" -np 4 --min-np 2 \
  --max-np 6 --host-discovery-script "$T/discover.sh" --sync "$MNT" \
  "$HOROVOD_PY" "$(basename "$prog")" "$T/m" 6 1 "$tok"
wait_for "epoch 1 to be committed" 120 test -e "$T/m/epoch-1"
printf 'fnode1:2\nfnode2:2\nfnode9:2\nfnode3:2\n' >"$T/hosts.new"
mv "$T/hosts.new" "$T/hosts"
wait_bg E 240
assert_eq 0 "$E_rc" "ferryrun exit code (the job grew and finished)"
assert_contains "$E_err" "elastic: reset 1: 6 workers on 3 hosts" "the job grew to fnode3"
assert_contains "$E_err" "elastic: fnode9 is left out for now (" "the host that cannot be opened"
assert_eq 4 "$(grep -c '^\[[0-3]\]<stdout>:reset size 6 rank [0-3]$' "$T/E.out")" \
  "the 4 first workers reset to a world of 6, keeping ranks 0..3"
assert_elastic_finals "$T/E.out" 6
assert_tags_are_ranks "$T/E.out"
assert_match "$(rank_lines "$T/E.out" 4 stdout | grep '^final' || true)" '^final size 6 rank [45] ' \
  "a new worker on fnode3"
run_capture S -- "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode3 --tag-style none sh -c "ls -A '$MNT' | wc -l"
assert_eq "0" "$S_out" "fnode3 cannot see the script's tree: its workers ran its synced copy"
# (the epoch whose commit saw the notice prints no line: the reset interrupts it)
assert_eq 6 "$(grep -c '^\[[0-5]\]<stdout>:epoch 6 size 6 ' "$T/E.out")" \
  "the last epoch ran on 6 workers"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
