#!/usr/bin/env bash
# 54_nic_choice: hosts that also carry a docker0 bridge (the same 172.17.0.1/16 on each,
# the classic trap: a "common subnet" nothing routes) and a veth pair: ferry picks eth0
# for NCCL/gloo/HCCL/Horovod, --verbose says why, --network-interface overrides, and an
# interface no host has gives a warning before launch. Open MPI's btl_tcp_if_include and
# _exclude, as subnets, choose the same way.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

nodes=(fnode1 fnode2)
unplug() {
  for n in "${nodes[@]}"; do
    ip -n "$n" link del ferryveth0 2>/dev/null || true
    ip -n "$n" link del docker0 2>/dev/null || true
  done
}
on_exit unplug
i=0
for n in "${nodes[@]}"; do
  i=$((i + 1))
  ip -n "$n" link add docker0 type bridge
  ip -n "$n" addr add 172.17.0.1/16 dev docker0
  ip -n "$n" link add ferryveth0 type veth peer name ferryveth1
  ip -n "$n" link set ferryveth0 master docker0
  ip -n "$n" addr add "172.17.0.$((i + 1))/16" dev ferryveth1
  for l in docker0 ferryveth0 ferryveth1; do ip -n "$n" link set "$l" up; done
done
# ferryveth1 is named like no virtual interface ferry knows, holds an address in the
# bridge's subnet and is up on both hosts: the chooser must still prefer eth0, the
# interface ferryrun reached each host on.

tok=$(unique_token)
show='echo "$NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME $HCCL_SOCKET_IFNAME $HOROVOD_GLOO_IFACE $TP_SOCKET_IFNAME $MASTER_ADDR"'
run_capture C -- "$FERRYRUN" --ssh-config "$SSHCFG" --verbose -np 4 -H fnode1:2,fnode2:2 \
  sh -c "$show"$'\n'": $tok"
assert_eq 0 "$C_rc" "ferryrun exit code"
for r in 0 1 2 3; do
  assert_eq "=eth0 eth0 =eth0 eth0 eth0 10.231.0.11" "$(rank_lines "$T/C.out" "$r" stdout)" \
    "interface variables of rank $r"
done
assert_contains "$C_err" "network: chose eth0" "--verbose explains the choice"
assert_contains "$C_err" "docker0" "--verbose lists the bridge it left out"
assert_not_contains "$C_err" "warning" "no warning when a good interface exists"

# The user's choice wins. (ferryveth1's subnet is not routed between the hosts: the preflight
# would fail the launch, as 64_preflight shows; these ranks only print, so it is skipped.)
run_capture O -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  --network-interface ferryveth1 --no-preflight sh -c "$show"
assert_eq 0 "$O_rc" "ferryrun exit code (--network-interface)"
assert_match "$(rank_lines "$T/O.out" 1 stdout)" "^=ferryveth1 ferryveth1 =ferryveth1 ferryveth1 ferryveth1 " \
  "--network-interface ferryveth1"

# An interface nobody has: warned about before the ranks start; the user's word still goes.
run_capture W -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  --network-interface nosuch9 sh -c 'echo "nic=${NCCL_SOCKET_IFNAME-unset}"'
assert_eq 0 "$W_rc" "ferryrun exit code (unknown interface)"
assert_contains "$W_err" "warning" "a warning for an interface no host has"
assert_contains "$W_err" "nosuch9" "the warning names it"
assert_eq "nic==nosuch9" "$(rank_lines "$T/W.out" 0 stdout)" "the named interface is passed on"

# Open MPI's interface settings through the mpirun link, as subnets (Open MPI takes a.b.c.d/n
# as well as names): each host's interface with an address in one of them, by name for NCCL.
ln -s "$FERRYRUN" "$T/mpirun"
want="=ferryveth1 ferryveth1 =ferryveth1 ferryveth1 ferryveth1 172.17.0.2"
run_capture S -- "$T/mpirun" --ssh-config "$SSHCFG" -np 2 -H fnode1,fnode2 --no-preflight \
  --mca btl_tcp_if_include 172.17.0.2/32,172.17.0.3/32 sh -c "$show"
assert_eq 0 "$S_rc" "mpirun link exit code (btl_tcp_if_include subnets)"
assert_eq 2 "$(grep -cxF "$want" "$T/S.out" || true)" "the interface in the subnets, on both hosts"
run_capture X -- "$T/mpirun" --ssh-config "$SSHCFG" -np 2 -H fnode1,fnode2 --no-preflight \
  --mca btl_tcp_if_exclude 10.231.0.0/24 sh -c "$show"
assert_eq 0 "$X_rc" "mpirun link exit code (btl_tcp_if_exclude subnet)"
# Without eth0's subnet only the bridges are left, which the chooser refuses (each host's own
# private network): the warning lists each host's interfaces without eth0.
assert_contains "$X_err" "no network interface connects all hosts" "eth0's subnet excluded"
assert_contains "$X_err" "fnode1: docker0 172.17.0.1/16; ferryveth1 172.17.0.2/16; reached at" \
  "the hosts' interfaces, eth0 left out"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
