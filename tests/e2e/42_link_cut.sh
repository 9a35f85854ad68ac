#!/usr/bin/env bash
# 42_link_cut: one host's link goes down mid-job (its veth is set down): no FIN, no RST, the
# TCP connection just goes silent. With --heartbeat 1, ferryrun declares the host lost
# after 3 silent seconds and aborts; the cut-off ferryd stops hearing ferryrun and kills its
# ranks on its own. Nothing is left anywhere.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
start_bg F -- "$FERRYRUN" --ssh-config "$SSHCFG" --heartbeat 1 --kill-grace 1 -np 4 \
  -H fnode1:2,fnode2:2 sh -c '"$0" 1000; : "$1"' "$sleeper" "$tok"
wait_procs "^$sleeper 1000" 4 30

restore() { ip netns exec fnode2 ip link set eth0 up 2>/dev/null || true; }
on_exit restore
ip netns exec fnode2 ip link set eth0 down

wait_bg F 15
restore
assert_eq 255 "$F_rc" "exit status when a host's link is cut"
assert_contains "$F_err" "lost host fnode2" "the report names the lost host"
assert_match "$F_err" "heartbeat|keepalive" "the report says how the loss was detected"
# fnode2's ferryd notices on its own: 3 heartbeats missed, then its ranks go.
wait_gone "$tok" 8
pass
