#!/usr/bin/env bash
# 22_stdin_window: a stdin rank that does not read holds ferryrun's reading back (at most
# a small window is in flight to its ferryd), and once it reads, every byte arrives.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from wait_bg; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 1

tok=$(unique_token)
size=$((64 * 1024 * 1024))
truncate -s "$size" "$T/in.bin"  # sparse: 64 MiB of zeros that cost no disk

# Rank 0 on fnode1 waits for a go file before it reads its stdin.
"$FERRYRUN" --ssh-config "$SSHCFG" -np 1 -H fnode1:1 sh -c \
  'while [ ! -e "$1" ]; do sleep 0.1; done; wc -c; : "$0"' "$tok" "$T/go" \
  <"$T/in.bin" >"$T/S.out" 2>"$T/S.err" &
pid=$!
echo "$pid" >>"$T/.bgpids"

wait_for "rank started" 30 pgrep -f -- "$tok"
sleep 2  # ample time for an unbounded reader to swallow the whole file
pos=$(awk '/^pos:/ {print $2}' "/proc/$pid/fdinfo/0")
echo "ferryrun had read $pos of $size bytes while the rank was not reading"
# The window (1 MiB) plus one chunk in the reader's hands and pipe slack.
if ((pos > 4 * 1024 * 1024)); then
  fail "ferryrun read $pos bytes of stdin ahead of a rank that reads nothing"
fi

touch "$T/go"
rc=0
wait "$pid" || rc=$?
assert_eq 0 "$rc" "ferryrun exit code"
assert_eq "$size" "$(rank_lines "$T/S.out" 0 stdout | tr -d ' ')" "bytes the rank read"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
