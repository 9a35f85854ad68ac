#!/usr/bin/env bash
# 76_docker_bridge_preflight: Docker bridge workers as on two machines, on a real engine. Two
# plain containers (no ferry: they get ferryrun's ferryd) on two user-defined bridge networks,
# which Docker isolates from each other as two machines' bridges are: each container's address
# is private to its network, and only its published SSH port is reached. Where the ranks would
# meet (MASTER_ADDR) is then no address the other container can use, and a torch job would hang
# in init_process_group. The preflight fails the launch at once, in one line naming both hosts,
# the address and the likely cause, and starts no rank:
#  - from this machine (127.0.0.1:PORT): MASTER_ADDR is a loopback address;
#  - from another machine (the cluster host fnode1, through 10.231.0.1:PORT): the address is
#    not on rank 0's container (a mapped port), so rank 0's ferryd cannot even listen there.
# No job summary follows: no rank started.
# shellcheck disable=SC2154 # L_rc etc. come from run_capture
# shellcheck source=docker_lib.sh
source "$(dirname "$0")/docker_lib.sh"
require_root
require_cluster
require_docker
"$DOCKER" image inspect "$FERRY_DOCKER_PLAIN_BULLSEYE" >/dev/null 2>&1 ||
  fail "image $FERRY_DOCKER_PLAIN_BULLSEYE missing ($FERRY_DOCKER up)"

nets=(ferry-test-neta ferry-test-netb)
unnet() {
  "$DOCKER" rm -f ferry-test-isoa ferry-test-isob >/dev/null 2>&1 || true
  "$DOCKER" network rm "${nets[@]}" >/dev/null 2>&1 || true
}
on_exit unnet
unnet
for n in "${nets[@]}"; do
  "$DOCKER" network create "$n" >/dev/null || fail "docker network create $n"
done
"$DOCKER" run -d --name ferry-test-isoa --hostname iso-a --network ferry-test-neta \
  -p 2217:22 -v "$FERRY_DOCKER_KEY.pub:/root/.ssh/authorized_keys:ro" \
  "$FERRY_DOCKER_PLAIN_BULLSEYE" >/dev/null || fail "docker run iso-a"
"$DOCKER" run -d --name ferry-test-isob --hostname iso-b --network ferry-test-netb \
  -p 2218:22 -v "$FERRY_DOCKER_KEY.pub:/root/.ssh/authorized_keys:ro" \
  "$FERRY_DOCKER_PLAIN_BULLSEYE" >/dev/null || fail "docker run iso-b"
wait_ssh 127.0.0.1 2217
wait_ssh 127.0.0.1 2218
# The isolation is real: iso-b cannot reach iso-a's address.
addr_a=$("$DOCKER" inspect -f '{{(index .NetworkSettings.Networks "ferry-test-neta").IPAddress}}' \
  ferry-test-isoa)
[[ -n $addr_a ]] || fail "no address for iso-a"
if "$DOCKER" exec ferry-test-isob timeout 3 bash -c "exec 3<>/dev/tcp/$addr_a/22" 2>/dev/null; then
  fail "iso-b reaches iso-a at $addr_a: the two networks are not isolated"
fi

tok=$(unique_token)
# From this machine.
printf '127.0.0.1 slots=1 port=%s\n' 2217 2218 >"$T/local.txt"
run_capture L --timeout 60 -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new \
  --hostfile "$T/local.txt" sh -c "echo ran; : $tok"
assert_eq 1 "$L_rc" "ferryrun's exit status from this machine"
assert_match "$L_err" "ferryrun: preflight: 127\.0\.0\.1:2218 \(leaving by lo\) cannot reach 127\.0\.0\.1:2217 at 127\.0\.0\.1:[0-9]+ \(MASTER_ADDR on 127\.0\.0\.1:2217's lo\): Connection refused; likely cause: a loopback address, which no other host can use \(--no-preflight skips this check\)" \
  "one line naming both containers, the address and the cause"
assert_eq 1 "$(grep -c 'ferryrun: preflight:' "$T/L.err")" "one line"
assert_contains "$L_err" "no network interface connects all hosts" "the network warning came first"
assert_not_contains "$L_out" "ran" "no rank started"
assert_not_contains "$L_err" "job summary" "no summary of ranks that never started"

# From another machine of the LAN.
printf '%s slots=1 port=%s\n' "$DOCKER_MACHINE_ADDR" 2217 "$DOCKER_MACHINE_ADDR" 2218 >"$T/lan.txt"
run_capture N --timeout 60 -- ip netns exec fnode1 "$FERRYRUN" --ssh-config "$DCFG" \
  --ssh-accept-new --hostfile "$T/lan.txt" sh -c "echo ran; : $tok"
assert_eq 1 "$N_rc" "ferryrun's exit status from fnode1"
assert_match "$N_err" "ferryrun: preflight: 10\.231\.0\.1:2217 cannot listen on 10\.231\.0\.1:[0-9]+ \(MASTER_ADDR\), where the other hosts' ranks would meet its rank 0: cannot listen on 10\.231\.0\.1:[0-9]+: Cannot assign requested address; likely cause: the address is not on that host \(NAT, or a container's mapped address\) \(--no-preflight skips this check\)" \
  "rank 0's container cannot listen at the machine's address"
assert_contains "$N_err" "the job did not start (1 of 2 hosts failed the preflight)" "the summary"
assert_not_contains "$N_out" "ran" "no rank started"
wait_ctr_idle 5 ferry-test-isoa ferry-test-isob
wait_gone "$tok" 5
pass
