#!/usr/bin/env bash
# 20_kill9_ferryd: SIGKILL of one host's ferryd. Its ranks must die with it (guard process,
# PR_SET_PDEATHSIG), ferryrun must report the lost host in one block and exit 255, and the
# other host's ranks must be stopped too.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

start_sleeper_job F 4 -- --ssh-config "$SSHCFG" --kill-grace 1 -np 4 -H fnode1:2,fnode2:2

victim=$(ferryd_of fnode2)
[[ -n $victim ]] || fail "no ferryd found on fnode2:
$(cluster_leftovers)"
kill -9 "$victim"

wait_bg F 15
assert_eq 255 "$F_rc" "exit status when a host's ferryd dies"
assert_contains "$F_err" "lost host fnode2" "the report names the lost host"
assert_eq 1 "$(grep -c 'lost host' "$T/F.err" || true)" "one report block"
wait_gone "$F_tok" 3
wait_cluster_idle 5
pass
