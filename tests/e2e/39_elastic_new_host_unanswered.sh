#!/usr/bin/env bash
# 39_elastic_new_host_unanswered: horovodrun's elastic mode (a discovery script) with workers
# that only sleep (no Horovod needed: a worker that exits 0 ends its round with success), with
# --heartbeat 1. Once both workers run, the script lists two more hosts: fnode3, and
# 10.231.0.253, an address on the cluster's bridge that never answers (a neighbour entry to no
# machine: its SYNs go nowhere). ferryrun opens both before any round counts them (so no worker
# waits for them). fnode3's ferryd is ready and waits for a round (the sleeping workers never
# reset) longer than 3 heartbeats: without a HostSpec it sends none, and is not taken for lost.
# The other connection is still under way when the workers end: the job ends 0 then, that
# connection given up, not once the connect timeout (30 s) has passed; nothing is left on any
# host.
# shellcheck disable=SC2154 # E_rc etc. come from start_bg/wait_bg
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

mute=10.231.0.253
ip neigh replace "$mute" lladdr 02:00:00:00:02:53 dev ferrybr0 nud permanent ||
  fail "cannot add a neighbour entry for $mute on ferrybr0"
tok=$(unique_token)
ln -s "$FERRYRUN" "$T/horovodrun"
printf 'fnode1:1\nfnode2:1\n' >"$T/hosts"
printf '#!/bin/sh\ncat %s\n' "$T/hosts" >"$T/discover.sh"
chmod +x "$T/discover.sh"
mkdir -p "$T/m"

start_bg E -- "$T/horovodrun" --ssh-config "$SSHCFG" --verbose --heartbeat 1 -np 2 --min-np 2 \
  --max-np 4 --host-discovery-script "$T/discover.sh" \
  sh -c "touch '$T/m/'\$HOROVOD_RANK; sleep 8; echo done $tok"
wait_for "both workers" 30 test -e "$T/m/0" -a -e "$T/m/1"
printf 'fnode1:1\nfnode2:1\nfnode3:1\n%s:1\n' "$mute" >"$T/hosts.new"
mv "$T/hosts.new" "$T/hosts"
wait_for "ferryrun to open $mute" 10 grep -q "elastic: opening $mute before it joins" "$T/E.err"
wait_for "fnode3's ferryd" 10 grep -q "elastic: fnode3 is ready to join" "$T/E.err"
wait_bg E 60
ip neigh del "$mute" dev ferrybr0 2>/dev/null || true
assert_eq 0 "$E_rc" "ferryrun exit code (both workers finished)"
assert_eq 2 "$(grep -c "^\[[01]\]<stdout>:done $tok\$" "$T/E.out")" "both workers' last line"
assert_not_contains "$E_err" "elastic: reset" "no round counted the host that never answered"
assert_not_contains "$E_err" "left out" "fnode3, waiting without a HostSpec, was not taken for lost"
((${E_secs%.*} < 20)) ||
  fail "the job took ${E_secs} s: its end waited for the connection to $mute (connect timeout 30 s)"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
