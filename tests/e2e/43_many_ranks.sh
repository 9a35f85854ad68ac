#!/usr/bin/env bash
# 43_many_ranks: 256 ranks on 4 hosts (oversubscribed), each printing 1,000 lines: every
# line arrives, whole, in order per rank.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4

run_capture R --timeout 240 -- "$FERRYRUN" --ssh-config "$SSHCFG" --oversubscribe -np 256 \
  -H fnode1:1,fnode2:1,fnode3:1,fnode4:1 \
  sh -c 'i=0; while [ $i -lt 1000 ]; do echo "r$RANK l$i"; i=$((i+1)); done'
assert_eq 0 "$R_rc" "exit status"
assert_eq 256000 "$(wc -l <"$T/R.out")" "lines received"
bad=$(grep -cvE '^\[([0-9]+)\]<stdout>:r\1 l[0-9]+$' "$T/R.out" || true)
assert_eq 0 "$bad" "lines not of the form [r]<stdout>:r<r> l<i> (torn or mis-tagged)"
# Per rank: exactly lines 0..999 in order.
summary=$(sed -E 's/^\[([0-9]+)\]<stdout>:r[0-9]+ l([0-9]+)$/\1 \2/' "$T/R.out" |
  awk '{ if ($2 != next_[$1]+0) bad++; next_[$1] = $2 + 1 }
       END { n = 0; for (r in next_) { n++; if (next_[r] != 1000) bad++ } print n, bad+0 }')
assert_eq "256 0" "$summary" "ranks seen and out-of-order/missing lines"
wait_cluster_idle 10
pass
