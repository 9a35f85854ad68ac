#!/usr/bin/env bash
# 28_broken_pipe: `ferryrun ... | head -2`: once head exits, ferryrun's stdout is a broken pipe.
# The job ends as a pipeline's writer does: its ranks are stopped as in an abort (SIGTERM, each
# rank here writes a mark on it, SIGKILL after the grace), ferryrun exits 141 (128+SIGPIPE)
# and nothing of the job is left. Ranks on this machine, then on two hosts over SSH.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $VARs are the ranks'
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
# Each rank writes only once both have set their trap: a rank still starting when head exits
# would die of the SIGTERM before it could mark it (it did once, in a loaded CI run).
rank='trap "touch MARK/term.$RANK; exit 0" TERM; touch MARK/ready.$RANK
while [ ! -e MARK/ready.0 ] || [ ! -e MARK/ready.1 ]; do sleep 0.05; done; yes "$0" & wait'
for layout in local remote; do
  rm -f "$T"/term.* "$T"/ready.*
  hosts=()
  [[ $layout == remote ]] && hosts=(--ssh-config "$SSHCFG" -H "fnode1:1,fnode2:1")
  run_capture R --timeout 60 -- bash -c 'set -o pipefail; "$@" | head -2' broken-pipe \
    "$FERRYRUN" "${hosts[@]}" -np 2 --kill-grace 5 sh -c "${rank//MARK/$T}" "$tok"
  assert_eq 141 "$R_rc" "$layout: ferryrun's exit status (pipefail: head exits 0)"
  assert_eq 2 "$(wc -l <"$T/R.out")" "$layout: lines head printed"
  assert_contains "$R_err" "stdout is a broken pipe" "$layout: ferryrun's stderr"
  assert_not_contains "$R_err" "further output to it is discarded" "$layout: ferryrun's stderr"
  for r in 0 1; do
    [[ -e $T/term.$r ]] || fail "$layout: rank $r did not get SIGTERM"
  done
  wait_gone "$tok" 5
  wait_cluster_idle 5
done
pass
