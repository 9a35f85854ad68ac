#!/usr/bin/env bash
# 10_hostnames: 8 ranks over 4 simulated hosts each run `hostname`; every rank
# runs on its host (fill each host's slots first) and prints one tagged line.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4

run_capture R -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 8 \
  -H fnode1:2,fnode2:2,fnode3:2,fnode4:2 hostname
assert_eq 0 "$R_rc" "ferryrun exit code"
assert_lines_count "$T/R.out" 8 "stdout lines"

expected=""
for r in 0 1 2 3 4 5 6 7; do
  expected+="[$r]<stdout>:fnode$((r / 2 + 1))"$'\n'
done
actual=$(sort -t']' -k1.2n "$T/R.out")
assert_eq "${expected%$'\n'}" "$actual" "tagged hostname lines (sorted by rank)"
assert_eq 0 "$(count_lines "$T/R.err" '^\[[0-9]+\]<stderr>:')" "rank stderr lines"

wait_cluster_idle 5
pass
