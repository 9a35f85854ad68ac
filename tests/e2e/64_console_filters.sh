#!/usr/bin/env bash
# 64_console_filters: 64 ranks over 4 hosts. --fold prints a line every rank prints alike
# once, with the rank set, and lets differing lines pass; --console-ranks shows only the
# ranks asked (the others still reach --output-filename files, and a failure of a hidden
# rank is still reported); --tag-style host names each rank's host.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4
hosts=fnode1:16,fnode2:16,fnode3:16,fnode4:16

# The ranks start together (each waits until the test saw all 64 run), as after a
# collective: the fold waits a bounded time for the others, not for ranks yet to start.
start_bg F -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 64 -H "$hosts" --fold \
  sh -c 'touch "$1/up.$RANK"; while [ ! -e "$1/go" ]; do sleep 0.1; done
    echo "epoch 1 done"; echo "rank $RANK says hi"; echo "epoch 2 done"' sh "$T"
wait_for "64 ranks running" 60 sh -c '[ "$(ls "$1" | grep -c "^up\.")" -eq 64 ]' sh "$T"
touch "$T/go"
wait_bg F 60
assert_eq 0 "$F_rc" "exit status with --fold"
assert_eq 1 "$(grep -cx '\[0-63\]<stdout>:epoch 1 done' "$T/F.out")" "epoch 1, folded once"
assert_eq 1 "$(grep -cx '\[0-63\]<stdout>:epoch 2 done' "$T/F.out")" "epoch 2, folded once"
assert_eq 64 "$(grep -cE '^\[([0-9]+)\]<stdout>:rank \1 says hi$' "$T/F.out")" "differing lines"
assert_eq 66 "$(wc -l <"$T/F.out")" "lines in all"
# Each rank's order holds: epoch 1 before its own line before epoch 2.
first=$(grep -n 'epoch 1 done' "$T/F.out" | cut -d: -f1)
last=$(grep -n 'epoch 2 done' "$T/F.out" | cut -d: -f1)
assert_eq "1 66" "$first $last" "folded lines around the others"

run_capture C -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 64 -H "$hosts" \
  --console-ranks 1,62-63 --tag-style host --output-filename "$T/out" \
  sh -c 'echo "hi from $RANK"; touch "$1/said.$RANK"; [ "$RANK" != 40 ] && exit 0
    while [ ! -e "$1/said.1" ] || [ ! -e "$1/said.62" ] || [ ! -e "$1/said.63" ]; do
      sleep 0.1; done; exit 7' sh "$T"
assert_eq 7 "$C_rc" "exit status: rank 40's"
assert_eq $'[1@fnode1]<stdout>:hi from 1\n[62@fnode4]<stdout>:hi from 62\n[63@fnode4]<stdout>:hi from 63' \
  "$(sort "$T/C.out")" "the console shows ranks 1, 62 and 63 only, with their hosts"
assert_eq "hi from 40" "$(cat "$T/out/rank.40/stdout")" "a hidden rank's file"
assert_contains "$C_err" "rank 40" "a hidden rank's failure is reported"
assert_contains "$C_err" "job summary" "a failure brings the summary"
wait_cluster_idle 10
pass
