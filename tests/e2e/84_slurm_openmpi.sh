#!/usr/bin/env bash
# 84_slurm_openmpi: an Open MPI program inside a Slurm allocation, started by ferryrun with no
# host list: the ferryds come from one srun step (--mpi=none: no Slurm MPI plugin) and serve
# PMIx themselves, so the ranks form one world across the nodes (where, left to Open MPI's
# own detection, each would be a singleton: the step's variables are not the ranks').
# Nothing is left on any node.
# shellcheck disable=SC2154 # S_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_slurm 2
command -v mpicc.openmpi >/dev/null ||
  fail "mpicc.openmpi is not installed (apt-get install libopenmpi-dev)"

tok=$(unique_token)
mpicc.openmpi -O2 -o "$T/mpi_world" "$FERRY_SRC/tests/e2e/programs/mpi_world.c" ||
  fail "mpicc.openmpi could not build mpi_world.c"

run_capture S --timeout 180 -- salloc -N2 --ntasks-per-node=2 "$FERRYRUN" --verbose \
  "$T/mpi_world" "$tok"
assert_eq 0 "$S_rc" "ferryrun exit code (Open MPI under salloc)"
assert_contains "$S_err" "one srun step for 2 node(s)" "the ferryds came from srun"
host_of() { rank_lines "$T/S.out" "$1" stdout | sed -n 's/.* host=\(snode[0-9]*\) ok$/\1/p'; }
h0=$(host_of 0)
h2=$(host_of 2)
assert_match "$h0" '^snode[0-9]+$' "rank 0's node"
assert_ne "$h0" "$h2" "two nodes"
for r in 0 1 2 3; do
  h=$h0
  ((r >= 2)) && h=$h2
  assert_eq "mpi world $r/4 local $((r % 2))/2 host=$h ok" "$(rank_lines "$T/S.out" "$r" stdout)" \
    "rank $r in one world of 4"
done
wait_gone "$tok" 10
wait_slurm_idle 10
pass
