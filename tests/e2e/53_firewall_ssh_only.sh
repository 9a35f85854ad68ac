#!/usr/bin/env bash
# 53_firewall_ssh_only: hosts whose firewall drops every inbound port but SSH still
# rendezvous, because KV and PMI traffic travels through ferryd over the SSH connection:
# the Horovod KV client on 3 firewalled hosts, and an MPICH program that only uses PMI
# (MPI_Init + MPI_Finalize, one rank per host: no rank-to-rank connection).
# shellcheck disable=SC2154 # R_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
command -v nft >/dev/null || fail "nft is not installed"

walled=(fnode1 fnode2 fnode3)
unwall() {
  for n in "${walled[@]}"; do ip netns exec "$n" nft delete table inet ferry_e2e 2>/dev/null || true; done
}
on_exit unwall
for n in "${walled[@]}"; do
  ip netns exec "$n" nft -f - <<'NFT' || fail "nft rules for $n"
table inet ferry_e2e {
  chain input {
    type filter hook input priority 0; policy drop;
    iif lo accept
    ct state established,related accept
    tcp dport 2222 accept
  }
}
NFT
done
# The wall holds: SSH on 2222 answers, sshd's other port (2300+I) does not.
ip netns exec fnode1 timeout 5 bash -c 'exec 3<>/dev/tcp/10.231.0.12/2222' ||
  fail "port 2222 of fnode2 is not reachable through the firewall"
if ip netns exec fnode1 timeout 3 bash -c 'exec 3<>/dev/tcp/10.231.0.12/2302' 2>/dev/null; then
  fail "the firewall of fnode2 lets port 2302 through"
fi

# These ranks never connect to each other, so the preflight of the data network (which the
# walls would fail: 64_preflight) is skipped.
tok=$(unique_token)
run_capture K --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" --no-preflight -np 5 \
  -H fnode1:2,fnode2:2,fnode3:1 "$PY" "$FERRY_SRC/tests/e2e/programs/gloo_kv_client.py" "$tok"
assert_eq 0 "$K_rc" "ferryrun exit code (KV behind firewalls)"
for r in 0 1 2 3 4; do
  line=$(rank_lines "$T/K.out" "$r" stdout | grep '^kv rank' || true)
  assert_match "$line" "^kv rank $r/5 ok " "rank $r rendezvous behind the firewall"
done

if command -v mpicc.mpich >/dev/null; then
  cat >"$T/pmi_only.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  int rank, size, len;
  char host[MPI_MAX_PROCESSOR_NAME];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &len);
  printf("pmi rank %d/%d on %s\n", rank, size, host);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
C
  mpicc.mpich -O2 -o "$T/pmi_only" "$T/pmi_only.c" || fail "mpicc.mpich: pmi_only.c"
  run_capture M --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --no-preflight -np 3 \
    -H fnode1:1,fnode2:1,fnode3:1 "$T/pmi_only" "$tok"
  assert_eq 0 "$M_rc" "ferryrun exit code (PMI behind firewalls)"
  for r in 0 1 2; do
    assert_eq "pmi rank $r/3 on fnode$((r + 1))" "$(rank_lines "$T/M.out" "$r" stdout)" "rank $r"
  done
fi

wait_gone "$tok" 5
wait_cluster_idle 5
pass
