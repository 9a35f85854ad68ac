#!/usr/bin/env bash
# 17_host_down: hosts that cannot be reached or cannot start ferryd fail the
# job with one clear line per problem naming the host, and leave nothing
# running on the hosts that were reachable.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

# --- nothing answers at 10.231.0.99 (on the cluster's subnet, no such node).
tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
run_capture A --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --start-timeout 5 \
  -np 2 -H fnode1:1,10.231.0.99:1 sh -c '"$0" 1000; : "$1"' "$sleeper" "$tok"
assert_ne 0 "$A_rc" "ferryrun exit code with an unreachable host"
assert_eq 1 "$(grep -cF 10.231.0.99 "$T/A.err" || true)" "stderr lines naming 10.231.0.99"
(($(count_lines "$T/A.out" '<stdout>:') == 0)) || fail "ranks printed output although a host was down"
echo "17_host_down: unreachable host reported after ${A_secs}s" >&2
wait_gone "$tok" 5
wait_cluster_idle 5

# --- a bare address with -p: the right port works (control), a closed port
# fails fast with one line naming host and port.
run_capture P --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -p 2302 \
  -np 1 -H 10.231.0.12:1 hostname
assert_eq 0 "$P_rc" "ferryrun exit code with -p 2302 (fnode2's second sshd port)"
assert_eq "[0]<stdout>:fnode2" "$P_out" "output with -p 2302"

run_capture C --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -p 2999 --start-timeout 10 \
  -np 1 -H 10.231.0.12:1 hostname
assert_ne 0 "$C_rc" "ferryrun exit code with a closed port"
assert_eq 1 "$(grep -F 10.231.0.12 "$T/C.err" | grep -cF 2999 || true)" \
  "stderr lines naming 10.231.0.12 and port 2999"
assert_eq "" "$C_out" "stdout with a closed port"
wait_cluster_idle 5

# --- ferryd missing on the hosts, and not shipped (--ship-ferryd never; auto would send
# one, see 63_ship_ferryd): one line per host mentioning ferryd.
run_capture D --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --ferryd /nonexistent/ferryd \
  --ship-ferryd never --start-timeout 10 -np 2 -H fnode1:1,fnode2:1 hostname
assert_ne 0 "$D_rc" "ferryrun exit code when ferryd is missing"
for h in fnode1 fnode2; do
  assert_eq 1 "$(grep -F "$h" "$T/D.err" | grep -cF ferryd || true)" "stderr lines naming $h and ferryd"
done
assert_eq "" "$D_out" "stdout when ferryd is missing"
wait_cluster_idle 5
pass
