#!/usr/bin/env bash
# 51_mpich_pmi: an MPICH program (compiled here with mpicc.mpich) over 3 hosts, started by
# ferryrun alone (ferryd's PMI-1 server, no hydra): MPI_Allreduce and a ring of
# MPI_Sendrecv, each rank checking. MPI_Abort(..., 7) aborts the job with 7 and says so;
# a rank that leaves after MPI_Init without MPI_Finalize counts as failed even with exit 0.
# shellcheck disable=SC2154 # R_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
command -v mpicc.mpich >/dev/null || fail "mpicc.mpich is not installed (apt-get install mpich)"

tok=$(unique_token)
mpicc.mpich -O2 -o "$T/mpi_ring" "$FERRY_SRC/tests/e2e/programs/mpi_ring.c" ||
  fail "mpicc.mpich could not build mpi_ring.c"
cat >"$T/early_exit.c" <<'C'
#include <mpi.h>
#include <unistd.h>
int main(int argc, char** argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  /* Every rank is past its address exchange first: rank 1 leaving during it would make
     the others fail in MPI (UCX endpoint timeout) and race rank 1's report. */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) _exit(0); /* leaves inside MPI: no MPI_Finalize */
  sleep(60);               /* the others wait, outside MPI, until the job is aborted */
  MPI_Finalize();
  return 0;
}
C
mpicc.mpich -O2 -o "$T/early_exit" "$T/early_exit.c" || fail "mpicc.mpich: early_exit.c"
hosts=fnode1:2,fnode2:2,fnode3:2

run_capture M --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 6 -H "$hosts" \
  "$T/mpi_ring" "$tok"
assert_eq 0 "$M_rc" "ferryrun exit code (mpi_ring)"
for r in 0 1 2 3 4 5; do
  assert_eq "mpi rank $r/6 ok allreduce=21 host=fnode$((r / 2 + 1))" \
    "$(rank_lines "$T/M.out" "$r" stdout)" "rank $r"
done
echo "6-rank MPICH job (3 hosts): ${M_secs}s"

# An MPICH user's unchanged mpiexec line (hydra's flags) through the mpiexec link: an MPICH
# hostfile (-f), -ppn, -genv, -l ("[rank] " tags).
ln -s "$FERRYRUN" "$T/mpiexec"
printf 'fnode1:2\nfnode2:2\nfnode3:2\n' >"$T/hosts.mpich"
run_capture H --timeout 120 -- "$T/mpiexec" --ssh-config "$SSHCFG" -f "$T/hosts.mpich" -n 6 \
  -ppn 2 -genv FERRY_HYDRA_VAR seen -l sh -c 'echo "var=$FERRY_HYDRA_VAR"; exec "$0" "$@"' \
  "$T/mpi_ring" "$tok"
assert_eq 0 "$H_rc" "mpiexec link exit code (hydra's flags)"
for r in 0 1 2 3 4 5; do
  assert_eq "$(printf '[%s] var=seen\n[%s] mpi rank %s/6 ok allreduce=21 host=fnode%s' "$r" "$r" \
    "$r" "$((r / 2 + 1))")" "$(grep -F "[$r] " "$T/H.out")" "rank $r through mpiexec -f -ppn -genv -l"
done

run_capture A --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 6 -H "$hosts" \
  "$T/mpi_ring" --abort 3 "$tok"
assert_eq 7 "$A_rc" "ferryrun exit code after MPI_Abort(..., 7)"
assert_contains "$A_err" "rank 3 on host fnode2" "the failure block names the rank and host"
assert_contains "$A_err" "MPI_Abort" "the failure block says MPI_Abort"
assert_contains "$A_err" "exit code 7" "the failure block gives the code"

run_capture F --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 \
  -H fnode1:2,fnode2:2 "$T/early_exit" "$tok"
assert_ne 0 "$F_rc" "ferryrun exit code when a rank skips MPI_Finalize"
assert_contains "$F_err" "rank 1 on host fnode1" "the failure block names rank 1"
assert_contains "$F_err" "before PMI_Finalize" "the reason is the PMI connection"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
