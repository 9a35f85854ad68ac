#!/usr/bin/env bash
# 23_slow_console_repeat: the paused console of 23_slow_console, as a user meets it, ten
# times over, two at a time: `ferryrun --heartbeat 1 ... | (sleep 10; wc -l)`. For 10 s
# nobody reads ferryrun's stdout, far longer than the three heartbeat intervals either side
# waits before giving up on the other. The job must be held back, never ended: heartbeats keep flowing both ways while
# the output waits, every run exits 0 and every line arrives. Two hosts over SSH, one rank each.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $0 is the rank shell's
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
# Two jobs at a time, each with its own paused console (and each other's load).
for pair in 1 3 5 7 9; do
  for run in "$pair" $((pair + 1)); do
    start_bg "R$run" -- bash -c 'set -o pipefail; "$@" | (sleep 10; wc -l)' paused \
      "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 --heartbeat 1 \
      sh -c 'seq 300000; : "$0"' "$tok"
  done
  for run in "$pair" $((pair + 1)); do
    wait_bg "R$run" 120
    rc_var="R${run}_rc"
    assert_eq 0 "${!rc_var}" "run $run: ferryrun's exit status"
    assert_eq 600000 "$(tr -d ' ' <"$T/R$run.out")" "run $run: lines that reached the console"
    assert_not_contains "$(cat "$T/R$run.err")" "lost host" "run $run: ferryrun's stderr"
    assert_not_contains "$(cat "$T/R$run.err")" "no word from ferryrun" "run $run: ferryrun's stderr"
  done
  wait_gone "$tok" 5
done
wait_cluster_idle 5
pass
