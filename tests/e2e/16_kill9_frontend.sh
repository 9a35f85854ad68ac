#!/usr/bin/env bash
# 16_kill9_frontend: ferryrun killed with SIGKILL cannot clean up; its SSH
# connections close, and each ferryd must then kill its ranks and exit itself.
# Within 2 s (plus a 3 s margin) nothing of the job may be left on any host.
# shellcheck disable=SC2154,SC2016 # P_pid etc. come from start_bg; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

start_sleeper_job F 4 -- --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2
tok=$F_tok
ferryds=$(cluster_leftovers | grep -c ferryd || true)
((ferryds >= 2)) || fail "expected a ferryd on each of the 2 hosts, found $ferryds:
$(cluster_leftovers)"

kill -9 "$F_pid"
wait_bg F 5
assert_eq 137 "$F_rc" "exit status of the killed ferryrun"

wait_gone "$tok" 2
wait_cluster_idle 5
pass
