#!/usr/bin/env bash
# 39_hvd_elastic_back_unreachable: a host back from its cooldown is opened again before any
# round counts it. horovodrun's elastic mode over fixed hosts (`-H fnode1:2,fnode2:2 --min-np 2
# --blacklist-cooldown-range 2 3`) runs the elastic script of 36; at epoch 1 the worker
# fnode2[1] exits 3, fnode2 is blacklisted for 2-3 s and fnode1's 2 workers go on as a world of 2.
# 1. By the end of the cooldown fnode2 refuses new SSH connections (a firewall in its namespace):
#    it is left out with one line, to be tried again later, and fnode1's workers finish as a
#    world of 2; the job ends 0. Were fnode2 put in the world before its ferryd was reached,
#    fnode1's workers would wait for its workers in gloo's rendezvous until its timeout, which
#    ends them and the job (255).
# 2. The same job (--verbose) from a hostfile that gives fnode2 port 2302 (the cluster's sshds
#    also listen on 2300+I), fnode2's port 2222 walled from the start: once its cooldown is
#    over fnode2's ferryd is opened again, at its own port, then the round takes it with 2 new
#    workers, and all 4 finish in sync.
# Nothing of either job is left on any host.
# shellcheck disable=SC2154,SC2119 # E_rc etc. come from run_capture; elastic_setup takes no hosts here
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
require_horovod
command -v nft >/dev/null || fail "nft is not installed"

unwall() { ip netns exec fnode2 nft delete table inet ferry_e2e_back 2>/dev/null || true; }
# wall: fnode2 refuses new connections to its port 2222 (SSH's, in the cluster's ssh_config).
wall() {
  ip netns exec fnode2 nft -f - <<'NFT' || fail "nft rules for fnode2"
table inet ferry_e2e_back {
  chain input {
    type filter hook input priority 0; policy accept;
    tcp dport 2222 ct state new reject with tcp reset
  }
}
NFT
}
on_exit unwall
elastic_setup  # fixed hosts: no listing
# Horovod's workers see a peer's death within gloo's timeout (30 s by default): 15 s here.
hvd=("$T/horovodrun" --ssh-config "$SSHCFG" -np 4 --min-np 2 --max-np 4
  --blacklist-cooldown-range 2 3 --gloo-timeout-seconds 15)

# 1. fnode2 unreachable once its cooldown is over.
start_bg E -- "${hvd[@]}" -H fnode1:2,fnode2:2 "$HOROVOD_PY" "$prog" "$T/m" 12 1 fnode2:1@1 "$tok"
wait_for "the job going on without fnode2" 120 grep -q "elastic: reset 1: 2 workers on 1 host" "$T/E.err"
wall
wait_bg E 120
assert_eq 0 "$E_rc" "ferryrun exit code (fnode2 left out, fnode1's workers finished)"
assert_match "$E_err" "elastic: fnode2 is left out for now \(.*\); tried again in 30 s" \
  "the host back from its cooldown that cannot be reached is left out, in one line"
assert_not_contains "$E_err" "elastic: reset 2:" "no round counted fnode2 again"
assert_elastic_finals "$T/E.out" 2
unwall
wait_gone "$tok" 10

# 2. fnode2 reachable at its own port: opened first, then taken by a round.
tok=$(unique_token)
rm -rf "$T/m" && mkdir -p "$T/m"
printf 'fnode1 slots=2\nfnode2 slots=2 port=2302\n' >"$T/hostfile"
wall
run_capture B --timeout 240 -- "${hvd[@]}" --hostfile "$T/hostfile" --verbose "$HOROVOD_PY" \
  "$prog" "$T/m" 12 1 fnode2:1@1 "$tok"
assert_eq 0 "$B_rc" "ferryrun exit code (fnode2 back after its cooldown)"
back=$(grep -n "elastic: fnode2 is back; opening it before a round counts it" "$T/B.err" | head -1)
reset=$(grep -n "elastic: reset 2: 4 workers on 2 hosts" "$T/B.err" | head -1)
[[ -n $back && -n $reset ]] || fail "fnode2 is not opened again and taken back: $(tail -20 "$T/B.err")"
((${back%%:*} < ${reset%%:*})) || fail "the round took fnode2 before its ferryd was opened again"
assert_elastic_finals "$T/B.out" 4
wait_gone "$tok" 10
wait_cluster_idle 10
pass
