#!/usr/bin/env bash
# 21_protocol_mismatch: a host whose ferryd speaks another protocol version is refused with
# one clear line naming the host and both versions; nothing starts anywhere (with
# --ship-ferryd never: auto would send ferryrun's own, see 63_ship_ferryd).
# shellcheck disable=SC2154
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
old="$FERRY_SRC/tests/e2e/data/ferryd-v99"
hf="$T/hosts"
printf 'fnode1 slots=1\nfnode2 slots=1 ferryd=%s\n' "$old" >"$hf"
run_capture R --timeout 30 -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$hf" -np 2 \
  --ship-ferryd never sh -c ': "$0"; sleep 100' "$tok"
assert_eq 1 "$R_rc" "exit status"
assert_contains "$R_err" "fnode2" "the line names the host"
assert_contains "$R_err" "protocol version 99" "the line names the remote version"
assert_eq 1 "$(grep -c 'protocol version' "$T/R.err" || true)" "one line for the one bad host"
assert_not_contains "$R_err" "fnode1:" "the good host is not reported"
no_procs_left "$tok"
wait_cluster_idle 5
pass
