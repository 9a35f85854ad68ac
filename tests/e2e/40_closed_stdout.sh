#!/usr/bin/env bash
# 40_closed_stdout: a rank that closes its stdout early is not a failure; its stderr still
# arrives, the other ranks' output is complete, and the job exits 0.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

run_capture R --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  sh -c 'if [ $RANK = 1 ]; then echo before; exec 1>&-; sleep 0.3; echo after-close >&2; exit 0; fi
         i=0; while [ $i -lt 100 ]; do echo "line $i"; i=$((i+1)); done'
assert_eq 0 "$R_rc" "exit status"
assert_eq "before" "$(rank_lines "$T/R.out" 1 stdout)" "rank 1 stdout before closing"
assert_eq "after-close" "$(rank_lines "$T/R.err" 1 stderr)" "rank 1 stderr after closing stdout"
for r in 0 2 3; do
  assert_eq 100 "$(rank_lines "$T/R.out" "$r" stdout | wc -l)" "lines of rank $r"
done
wait_cluster_idle 5
pass
