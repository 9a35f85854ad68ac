#!/usr/bin/env bash
# 23_slow_console_repeat: the paused console of 23_slow_console, as a user meets it, ten times
# in a row: `ferryrun --heartbeat 1 ... | (sleep 10; wc -l)`. For 10 s nobody reads ferryrun's
# stdout, far longer than the three heartbeat intervals either side waits before giving up on
# the other. The job must be held back, never ended: heartbeats keep flowing both ways while
# the output waits, every run exits 0 and every line arrives. Two hosts over SSH, one rank each.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $0 is the rank shell's
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
for run in 1 2 3 4 5 6 7 8 9 10; do
  run_capture R --timeout 120 -- bash -c 'set -o pipefail; "$@" | (sleep 10; wc -l)' paused \
    "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 --heartbeat 1 \
    sh -c 'seq 300000; : "$0"' "$tok"
  assert_eq 0 "$R_rc" "run $run: ferryrun's exit status"
  assert_eq 600000 "$(tr -d ' ' <"$T/R.out")" "run $run: lines that reached the console"
  assert_not_contains "$R_err" "lost host" "run $run: ferryrun's stderr"
  assert_not_contains "$R_err" "no word from ferryrun" "run $run: ferryrun's stderr"
  wait_gone "$tok" 5
done
wait_cluster_idle 5
pass
