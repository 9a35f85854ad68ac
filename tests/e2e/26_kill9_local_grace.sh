#!/usr/bin/env bash
# 26_kill9_local_grace: 25_kill9_frontend_grace for the ranks on this machine, whose ferryd
# ferryrun forked itself (no SSH). ferryrun killed with SIGKILL: that ferryd reads the end of
# its stream and gives its ranks SIGTERM and the job's --kill-grace before SIGKILL, as a
# remote ferryd does: ranks that checkpoint on SIGTERM finish doing so, a rank that ignores
# SIGTERM is killed once the grace is over, and nothing of the job is left. Once with every
# rank here, once with this machine beside a remote host.
# shellcheck disable=SC2154,SC2016 # F_pid etc. come from start_sleeper_job; $VARs are the ranks'
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 1

# Rank 1 ignores SIGTERM (its sleeper too); the others take 1 s to "checkpoint" on it.
rank='if [ "$RANK" = 1 ]; then trap "" TERM; else trap "sleep 1; touch CKPT.$RANK; exit 0" TERM; fi
"$0" 1000 & wait; : "$1"'
for layout in local mixed; do
  rm -f "$T"/ckpt.*
  if [[ $layout == local ]]; then
    np=2 ckpts=(0) hosts=()
  else
    np=3 ckpts=(0 2) hosts=(--ssh-config "$SSHCFG" -H "localhost:2,fnode1:1")
  fi
  start_sleeper_job F "$np" --rank "${rank//CKPT/$T/ckpt}" -- "${hosts[@]}" --kill-grace 4 -np "$np"
  kill -9 "$F_pid"
  wait_bg F 5
  assert_eq 137 "$F_rc" "$layout: exit status of the killed ferryrun"
  for r in "${ckpts[@]}"; do
    wait_for "$layout: the checkpoint of rank $r" 4 test -e "$T/ckpt.$r"
  done
  # Rank 1 runs here, within its grace still.
  assert_eq 1 "$(count_procs "^$F_sleeper 1000")" "$layout: rank 1's sleeper alive within the grace"
  wait_gone "$F_tok" 6
  wait_cluster_idle 5
done
pass
