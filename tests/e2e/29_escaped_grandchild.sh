#!/usr/bin/env bash
# 29_escaped_grandchild: a rank starts a grandchild that clears its environment (no job tag)
# and calls setsid (a session and process group of its own), then the rank exits 0. Neither
# the tag nor the process group finds it; ferryd, the subreaper of everything below it, does
# (the orphan became its child): when the job ends, the grandchild is gone too. Also through
# a double fork, and with ferryd forked here and started over SSH.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $0 is the rank shell's
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
escape='env -i setsid "$0" 1000 </dev/null >/dev/null 2>&1 &
(env -i setsid "$0" 1001 </dev/null >/dev/null 2>&1 &) ; sleep 0.5; echo started; : "$1"'
for layout in local remote; do
  hosts=()
  [[ $layout == remote ]] && hosts=(--ssh-config "$SSHCFG" -H "fnode1:1,fnode2:1")
  run_capture R --timeout 60 -- "$FERRYRUN" "${hosts[@]}" -np 2 sh -c "$escape" "$sleeper" "$tok"
  assert_eq 0 "$R_rc" "$layout: exit status"
  assert_eq 2 "$(grep -c started "$T/R.out")" "$layout: both ranks ran"
  wait_gone "$tok" 3
  wait_cluster_idle 5
done
pass
