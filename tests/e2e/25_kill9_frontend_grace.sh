#!/usr/bin/env bash
# 25_kill9_frontend_grace: ferryrun killed with SIGKILL while its ranks run. Each ferryd
# gives its ranks SIGTERM and the job's --kill-grace before SIGKILL, as an aborted job
# gets: ranks that checkpoint on SIGTERM finish doing so, a rank that ignores SIGTERM is
# killed once the grace is over, and then nothing of the job is left.
# shellcheck disable=SC2154,SC2016 # F_pid etc. come from start_sleeper_job; $VARs are the ranks'
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

# Ranks 0-2 take 1 s to "checkpoint" on SIGTERM (longer than ferryd would wait on its own
# before); rank 3 ignores SIGTERM, its sleeper too.
rank='if [ "$RANK" = 3 ]; then trap "" TERM; else trap "sleep 1; touch CKPT.$RANK; exit 0" TERM; fi
"$0" 1000 & wait; : "$1"'
start_sleeper_job F 4 --rank "${rank//CKPT/$T/ckpt}" -- --ssh-config "$SSHCFG" --kill-grace 4 \
  -np 4 -H fnode1:2,fnode2:2

kill -9 "$F_pid"
killed=$(_now_ms)
wait_bg F 5
assert_eq 137 "$F_rc" "exit status of the killed ferryrun"

wait_for "the checkpoints of ranks 0-2" 4 \
  bash -c "[[ -e $T/ckpt.0 && -e $T/ckpt.1 && -e $T/ckpt.2 ]]"
# Rank 3 is within its grace still.
sleep 1
(($(_now_ms) - killed < 3500)) || fail "too slow to check rank 3 within its grace"
assert_eq 1 "$(count_procs "^$F_sleeper 1000")" "rank 3's sleeper alive within the grace"
wait_gone "$F_tok" 6
waited=$(($(_now_ms) - killed))
((waited >= 3800)) || fail "rank 3 was gone ${waited} ms after ferryrun was killed: before --kill-grace 4"
wait_cluster_idle 5
pass
