#!/usr/bin/env bash
# 19_second_interrupt: the first SIGINT is forwarded to every rank; ranks that ignore it
# keep running (until --kill-grace); a second SIGINT kills them all at once.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

start_sleeper_job F 4 \
  --rank 'trap "echo got-int-$RANK" INT; "$0" 1000 & while :; do wait; done; : "$1"' \
  -- --ssh-config "$SSHCFG" --kill-grace 60 -np 4 -H fnode1:2,fnode2:2

kill -INT "$F_pid"
# Forwarded: every rank's trap runs, and they keep going.
wait_for "4 ranks report the forwarded SIGINT" 10 \
  bash -c "[ \$(grep -c 'got-int-' '$T/F.out') -ge 4 ]"
sleep 0.5
kill -0 "$F_pid" 2>/dev/null || fail "ferryrun ended after the first SIGINT although the ranks ignore it"
assert_eq 4 "$(count_procs "^$F_sleeper 1000")" "sleepers still running after the first SIGINT"

kill -INT "$F_pid"
wait_bg F 10
assert_eq 130 "$F_rc" "exit status after two SIGINTs"
assert_contains "$F_err" "again" "ferryrun says the second signal kills at once"
wait_gone "$F_tok" 3
wait_cluster_idle 5
pass
