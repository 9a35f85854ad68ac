#!/usr/bin/env bash
# 27_restart_tmpdir: a restartable job (--max-restarts, --min-hosts) gives its ranks error
# files (TORCHELASTIC_ERROR_FILE) in a private directory each ferryd makes under $TMPDIR.
# Whatever the job's end, none of these directories is left: a job that succeeds (its ferryds
# wait for a next attempt until ferryrun leaves), here and on a remote host, and a ferryd
# killed with SIGKILL while its rank runs (its guard removes the directory).
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $VARs are the ranks'
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 1

tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
# A remote ferryd with its own $TMPDIR.
printf '#!/bin/sh\nTMPDIR=%s/rtmp; export TMPDIR\nexec %s "$@"\n' "$T" "$FERRYD" >"$T/ferryd-tmp"
chmod 755 "$T/ferryd-tmp"
mkdir -p "$T/tmp" "$T/rtmp"

# empty_dir DIR: true when DIR holds nothing.
empty_dir() { [[ -z $(ls -A "$1") ]]; }

for flag in --max-restarts --min-hosts; do
  for layout in local remote; do
    if [[ $layout == local ]]; then
      dir=$T/tmp hosts=()
    else
      dir=$T/rtmp hosts=(--ssh-config "$SSHCFG" -H fnode1:1 --ferryd "$T/ferryd-tmp")
    fi
    run_capture R --timeout 60 -- env TMPDIR="$T/tmp" "$FERRYRUN" "${hosts[@]}" -np 1 "$flag" 1 \
      sh -c 'echo "$TORCHELASTIC_ERROR_FILE"; : "$0"' "$tok"
    assert_eq 0 "$R_rc" "$flag, $layout: exit status"
    assert_match "$(rank_lines "$T/R.out" 0 stdout)" "^$dir/ferry-errors-[^/]+/" \
      "$flag, $layout: the rank's error file"
    wait_for "$flag, $layout: ferryd's directory under $dir removed" 5 empty_dir "$dir"
    wait_cluster_idle 5
  done
done

# A ferryd killed while its rank runs: the host is lost, the job restarts (a new ferryd, a
# new directory), and the killed one's directory goes all the same.
start_bg K -- env TMPDIR="$T/tmp" "$FERRYRUN" -np 1 --max-restarts 1 \
  sh -c '"$0" 1000; : "$1"' "$sleeper" "$tok"
wait_procs "^$sleeper 1000" 1 30
first=$(ls "$T/tmp")
[[ $first == ferry-errors-* ]] || fail "expected one ferryd directory in $T/tmp, found '$first'"
ferryd=$(pgrep -P "$K_pid" -f -- "--stdio" || true)
[[ -n $ferryd ]] || fail "no local ferryd under ferryrun (pid $K_pid)"
kill -9 "$ferryd"
wait_for "the killed ferryd's directory removed" 5 test ! -e "$T/tmp/$first"
wait_procs "^$sleeper 1000" 1 30  # the restart
kill -TERM "$K_pid"
wait_bg K 15
wait_gone "$tok" 5
wait_for "every ferryd directory removed" 5 empty_dir "$T/tmp"
pass
