#!/usr/bin/env bash
# 24_output_route: output leaves sshd out. Every host reached over SSH is offered a direct
# route back to ferryrun; once it has sent 1 MiB of output, its ferryd connects (the
# handshake under a per-host secret) and sends its frames there, sealed. Shown here: both hosts take the route and every rank's
# output arrives whole and in order; a host that cannot connect back (its firewall resets
# every new outgoing TCP connection) keeps its output on SSH, nothing lost, and --verbose
# says why; FERRY_OUTPUT_ROUTE=ssh offers no route at all.
# shellcheck disable=SC2154 # A_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
command -v nft >/dev/null || fail "nft is not installed"

walled=fnode2
unwall() { ip netns exec "$walled" nft delete table inet ferry_e2e_route 2>/dev/null || true; }
on_exit unwall

expected=$(seq 1 400000)
check_ranks() {  # check_ranks P WHAT
  local r
  for r in 0 1 2 3; do
    [[ $(rank_lines "$T/$1.out" "$r" stdout) == "$expected" ]] ||
      fail "$2: rank $r's output is not seq 1 400000, whole and in order"
  done
  assert_eq 0 "$(grep -cv '^\[[0-3]\]<stdout>:' "$T/$1.out" || true)" "$2: untagged lines"
}
# ferryd opens its route after 1 MiB of output: each host's first half (2 x 1.3 MB) goes
# over SSH, and in the pause the route opens (or fails), so the second half takes it.
job=(--ssh-config "$SSHCFG" --verbose -np 4 -H fnode1:2,fnode2:2
  sh -c 'seq 1 200000; sleep 1; seq 200001 400000')

# Both hosts connect back.
run_capture A -- "$FERRYRUN" "${job[@]}"
assert_eq 0 "$A_rc" "ferryrun exit code (routes)"
assert_eq 2 "$(grep -c 'output on a direct route from' "$T/A.err")" "hosts whose output took the route"
check_ranks A "routes"

# fnode2 cannot open any TCP connection: its output stays on SSH. (Its ranks could not reach
# rank 0 either, which the data network's preflight would report: these ranks meet nowhere,
# so it is off.)
ip netns exec "$walled" nft -f - <<'NFT' || fail "nft rules for $walled"
table inet ferry_e2e_route {
  chain output {
    type filter hook output priority 0; policy accept;
    ct state new meta l4proto tcp reject with tcp reset
  }
}
NFT
run_capture B -- "$FERRYRUN" --no-preflight "${job[@]}"
assert_eq 0 "$B_rc" "ferryrun exit code (fnode2 walled)"
assert_match "$(grep 'output on a direct route from' "$T/B.err")" "^ferryrun: fnode1:" \
  "the one host on a route"
assert_eq 1 "$(grep -c 'output on a direct route from' "$T/B.err")" "hosts on a route (fnode2 walled)"
assert_match "$(grep 'output stays on SSH' "$T/B.err")" \
  "^fnode2: output stays on SSH: cannot reach ferryrun: " "why fnode2's output stayed on SSH"
check_ranks B "fnode2 walled"
unwall

# Turned off.
run_capture C -- env FERRY_OUTPUT_ROUTE=ssh "$FERRYRUN" "${job[@]}"
assert_eq 0 "$C_rc" "ferryrun exit code (FERRY_OUTPUT_ROUTE=ssh)"
assert_eq 0 "$(grep -c 'output on a direct route' "$T/C.err" || true)" "routes with FERRY_OUTPUT_ROUTE=ssh"
check_ranks C "FERRY_OUTPUT_ROUTE=ssh"
wait_cluster_idle 5
pass
