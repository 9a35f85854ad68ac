#!/usr/bin/env bash
# 64_preflight: the data network's preflight before any rank starts.
# 1. fnode3's firewall drops what it sends to fnode1 (rank 0's host) but SSH: the launch fails
#    in one line naming fnode3, fnode1, the address:port, the interfaces and the likely cause
#    (where a torch job would hang until its timeout); no rank started, nothing is left.
#    The same with --sync of a tree the hosts lack: the preflight goes on while the files do
#    (each ferryd answers it once its copy is in place), and the same one line comes.
# 2. --no-preflight: the same job starts (its ranks need no network).
# 3. Without the wall, --verbose says every host reached rank 0's address.
# shellcheck disable=SC2154 # R_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
command -v nft >/dev/null || fail "nft is not installed"

unwall() { ip netns exec fnode3 nft delete table inet ferry_e2e_pf 2>/dev/null || true; }
on_exit unwall
ip netns exec fnode3 nft -f - <<'NFT' || fail "nft rules for fnode3"
table inet ferry_e2e_pf {
  chain output {
    type filter hook output priority 0; policy accept;
    ip daddr 10.231.0.11 tcp dport != 2222 drop
  }
}
NFT
if ip netns exec fnode3 timeout 3 bash -c 'exec 3<>/dev/tcp/10.231.0.11/2302' 2>/dev/null; then
  fail "the wall of fnode3 lets port 2302 of fnode1 through"
fi

tok=$(unique_token)
hosts=fnode1:1,fnode2:1,fnode3:1
run_capture F --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 3 -H "$hosts" \
  sh -c "echo ran; : $tok"
assert_eq 1 "$F_rc" "ferryrun's exit status when the preflight fails"
assert_match "$F_err" "ferryrun: preflight: fnode3 \(leaving by eth0\) cannot reach fnode1 at 10\.231\.0\.11:[0-9]+ \(MASTER_ADDR on fnode1's eth0\): no answer within 3\.0 s; likely cause: packets are dropped on the way: a firewall, or no route back \(--no-preflight skips this check\)" \
  "the one line of the failure"
assert_eq 1 "$(grep -c 'ferryrun: preflight:' "$T/F.err")" "one line: only fnode3 failed"
assert_contains "$F_err" "1 of 3 hosts failed the preflight" "the summary"
assert_not_contains "$F_out" "ran" "no rank started"
echo "preflight failure reported after ${F_secs}s"
wait_gone "$tok" 5
wait_cluster_idle 5

tree="$T/tree"
mkdir -p "$tree/sub"
for i in $(seq 1 40); do head -c 30000 /dev/urandom >"$tree/sub/f$i"; done
echo "$tok" >"$tree/token"
run_capture S --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --verbose -np 3 -H "$hosts" \
  --sync "$tree" sh -c "echo ran; : $tok"
assert_eq 1 "$S_rc" "ferryrun's exit status when the preflight fails during a sync"
for h in fnode1 fnode2 fnode3; do
  assert_match "$S_err" "ferryrun: sync: $h: sent 41 files \([0-9.]+ [KM]iB\); the ranks start in " \
    "$h got the tree"
done
assert_match "$S_err" "ferryrun: preflight: fnode3 \(leaving by eth0\) cannot reach fnode1 at 10\.231\.0\.11:[0-9]+ \(MASTER_ADDR on fnode1's eth0\): no answer within 3\.0 s" \
  "the one line of the failure, with --sync"
assert_contains "$S_err" "1 of 3 hosts failed the preflight" "the summary, with --sync"
assert_not_contains "$S_out" "ran" "no rank started, with --sync"
wait_gone "$tok" 5
wait_cluster_idle 5

run_capture N --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --no-preflight -np 3 -H "$hosts" \
  sh -c "echo ran; : $tok"
assert_eq 0 "$N_rc" "ferryrun's exit status with --no-preflight"
assert_eq 3 "$(grep -c 'ran$' "$T/N.out")" "every rank ran"

unwall
run_capture V --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --verbose -np 3 -H "$hosts" \
  sh -c "echo ran; : $tok"
assert_eq 0 "$V_rc" "ferryrun's exit status without the wall"
assert_match "$V_err" "ferryrun: preflight: every host reached fnode1 at 10\.231\.0\.11:[0-9]+ \([0-9]+ ms\)" \
  "--verbose says the preflight passed"
wait_gone "$tok" 5
wait_cluster_idle 5
pass
