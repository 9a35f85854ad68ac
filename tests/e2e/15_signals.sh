#!/usr/bin/env bash
# 15_signals: SIGINT to ferryrun ends the job: ferryrun exits non-zero within
# a few seconds and no rank (nor child of a rank) is left on any host.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from start_bg/wait_bg; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

# Each rank is a shell with a sleeping child: the whole process tree must go.
start_sleeper_job F 4 -- --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2
tok=$F_tok

kill -INT "$F_pid"
wait_bg F 10
assert_ne 0 "$F_rc" "ferryrun exit code after SIGINT"
echo "15_signals: ferryrun ended ${F_secs}s after start, exit code $F_rc" >&2

wait_gone "$tok" 5
wait_cluster_idle 5
pass
