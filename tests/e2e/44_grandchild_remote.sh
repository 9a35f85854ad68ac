#!/usr/bin/env bash
# 44_grandchild_remote: a rank on a remote host starts a daemonised grandchild (setsid, its
# own session and process group, stdio closed) and exits 0. When the job ends, the
# grandchild is gone too: ferryd sweeps every process carrying its job tag.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
run_capture R --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  sh -c 'setsid "$0" 1000 </dev/null >/dev/null 2>&1 & sleep 0.5; echo started; : "$1"' \
  "$sleeper" "$tok"
assert_eq 0 "$R_rc" "exit status"
assert_eq 2 "$(grep -c started "$T/R.out")" "both ranks ran"
wait_gone "$tok" 3
wait_cluster_idle 5
pass
