#!/usr/bin/env bash
# 68_fast_network: hosts with two networks: eth0, the one ferryrun reaches them on (1 Gb/s
# here), and fast0 on a second bridge (25 Gb/s; the speeds come from a fake sysfs through
# FERRY_TEST_SYSFS_NET, as veths all read 10000). ferry picks fast0 for MASTER_ADDR and the
# frameworks' interface variables, --verbose says why, the preflight passes on it; an NCCL-style
# --network-interface (prefix, ^exclusion) still decides, passed on as written. When fnode2's
# firewall drops connections that others open to its fast0 (it can still open its own), the
# preflight's second round (each host's own address, where gloo, NCCL and MPI ranks listen for
# each other) fails the launch in one line naming both hosts and fnode2's address, where a
# gloo job would hang.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

# shellcheck source=../cluster/forward_rule.sh
source "$FERRY_SRC/tests/cluster/forward_rule.sh"
unplug() {
  ip netns exec fnode2 nft delete table inet ferry_e2e_peer 2>/dev/null || true
  forward_revoke ferryfast
  ip link del ferryfast 2>/dev/null || true
  for i in 1 2; do ip link del "ffast$i" 2>/dev/null || true; done
}
on_exit unplug
unplug
ip link add ferryfast type bridge
ip link set ferryfast up
forward_allow ferryfast  # bridged traffic meets the FORWARD chain (Docker's DROP policy)
for i in 1 2; do
  ip link add "ffast$i" type veth peer name fast0 netns "fnode$i"
  ip link set "ffast$i" master ferryfast
  ip link set "ffast$i" up
  ip -n "fnode$i" addr add "10.241.0.1$i/24" dev fast0
  ip -n "fnode$i" link set fast0 up
done
# Not `ip ... | grep -q`: grep closing the pipe early kills ip with SIGPIPE, and pipefail
# turns that into a failure (it did, once, in CI).
[[ $(ip -n fnode2 addr show fast0) == *" 10.241.0.12/24 "* ]] || fail "fast0 of fnode2 has no address"

for n in eth0 fast0; do mkdir -p "$T/sysnet/$n" && echo 1 >"$T/sysnet/$n/type"; done
echo 1000 >"$T/sysnet/eth0/speed"
echo 25000 >"$T/sysnet/fast0/speed"
printf '#!/bin/sh\nFERRY_TEST_SYSFS_NET=%s exec %s "$@"\n' "$T/sysnet" "$FERRYD" >"$T/ferryd-fast"
chmod +x "$T/ferryd-fast"
printf 'fnode1 slots=1 ferryd=%s\nfnode2 slots=1 ferryd=%s\n' "$T/ferryd-fast" "$T/ferryd-fast" \
  >"$T/hosts.txt"

tok=$(unique_token)
show='echo "$NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME $HCCL_SOCKET_IFNAME $MASTER_ADDR"'
run_capture F -- "$FERRYRUN" --ssh-config "$SSHCFG" --verbose --hostfile "$T/hosts.txt" \
  sh -c "$show"$'\n'": $tok"
assert_eq 0 "$F_rc" "ferryrun exit code (two networks)"
for r in 0 1; do
  assert_eq "=fast0 fast0 =fast0 10.241.0.11" "$(rank_lines "$T/F.out" "$r" stdout)" \
    "rank $r uses the faster network"
done
assert_contains "$F_err" "network: preferred 10.241.0.0/24 (25000 Mb/s) over 10.231.0.0/24 (1000 Mb/s), the network ferryrun reached the hosts on" \
  "--verbose says why"
assert_match "$F_err" "preflight: every host reached fnode1 at 10\.241\.0\.11:[0-9]+" \
  "the preflight ran on the faster network"

# NCCL's syntax: a prefix is passed on as written; an exclusion leaves the choice to ferry.
run_capture P -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/hosts.txt" \
  --network-interface eth sh -c "$show"
assert_eq 0 "$P_rc" "ferryrun exit code (--network-interface eth)"
assert_eq "eth eth0 eth 10.231.0.11" "$(rank_lines "$T/P.out" 1 stdout)" "a prefix"
run_capture X -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/hosts.txt" \
  --network-interface '^fast' sh -c "$show"
assert_eq 0 "$X_rc" "ferryrun exit code (--network-interface ^fast)"
assert_eq "^fast eth0 ^fast 10.231.0.11" "$(rank_lines "$T/X.out" 1 stdout)" "an exclusion"

# fnode2 accepts nothing new on fast0; the connections it opens itself still work.
ip netns exec fnode2 nft -f - <<'NFT' || fail "nft rules for fnode2"
table inet ferry_e2e_peer {
  chain input {
    type filter hook input priority 0; policy accept;
    iifname "fast0" ct state new drop
  }
}
NFT
run_capture W --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --verbose \
  --hostfile "$T/hosts.txt" sh -c "echo ran; : $tok"
assert_eq 1 "$W_rc" "ferryrun exit code (fnode2's fast0 closed to others)"
assert_match "$W_err" "preflight: every host reached fnode1 at 10\.241\.0\.11:[0-9]+" \
  "the first round (rank 0's address) passes: fnode2 can still connect out"
assert_match "$W_err" "ferryrun: preflight: fnode1 \(leaving by fast0\) cannot reach fnode2 at 10\.241\.0\.12:[0-9]+ \(fnode2's own address on fast0, where its ranks listen for their peers: gloo, NCCL, MPI\): no answer within 3\.0 s; likely cause: packets are dropped on the way: a firewall, or no route back \(--no-preflight skips this check\)" \
  "the second round names fnode1, fnode2 and fnode2's own address"
assert_eq 1 "$(grep -c 'ferryrun: preflight: .* cannot' "$T/W.err")" "one line: only fnode2's address"
assert_contains "$W_err" "1 of 2 hosts failed the preflight" "the summary"
assert_not_contains "$W_out" "ran" "no rank started"
ip netns exec fnode2 nft delete table inet ferry_e2e_peer
run_capture V -- "$FERRYRUN" --ssh-config "$SSHCFG" --verbose --hostfile "$T/hosts.txt" \
  sh -c "echo ran; : $tok"
assert_eq 0 "$V_rc" "ferryrun exit code (the wall removed)"
assert_match "$V_err" "preflight: every host reached the next one's own address on the chosen interface \(a ring of 2 hosts, [0-9]+ ms\)" \
  "--verbose says the second round passed"
wait_gone "$tok" 5
wait_cluster_idle 5
pass
