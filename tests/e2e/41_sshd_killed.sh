#!/usr/bin/env bash
# 41_sshd_killed: the sshd serving one host's connection dies mid-job. ferryrun reports the
# lost host in one block and exits 255; that host's ferryd loses its input and kills its
# ranks; the other host's ranks are stopped too. Nothing is left anywhere.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

start_sleeper_job F 4 -- --ssh-config "$SSHCFG" --kill-grace 1 -np 4 -H fnode1:2,fnode2:2

# The per-connection sshd ("sshd: root@notty") of fnode2, not its listener.
victim=$(pids_on_host fnode2 "sshd: root@notty")
[[ -n $victim ]] || fail "no sshd session found on fnode2"
# shellcheck disable=SC2086
kill -9 $victim

wait_bg F 15
assert_eq 255 "$F_rc" "exit status when a host's connection dies"
assert_contains "$F_err" "lost host fnode2" "the report names the lost host"
wait_gone "$F_tok" 3
wait_cluster_idle 5
pass
