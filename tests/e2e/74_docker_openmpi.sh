#!/usr/bin/env bash
# 74_docker_openmpi: an mpi4py job (Debian's python3-mpi4py on Open MPI, in the worker image)
# across the two workers of docker/compose.bridge.yml on a real engine, reached through
# their published ports: each container's ferryd serves PMIx to its ranks, the fences go
# through ferryrun, and Open MPI's own traffic goes container to container over the Docker
# bridge. 4 ranks are one world (allreduce, bcast, allgather of the container names).
# Nothing is left in either container.
# shellcheck disable=SC2154 # P_rc etc. come from run_capture
# shellcheck source=docker_lib.sh
source "$(dirname "$0")/docker_lib.sh"
require_root
require_cluster
require_docker
compose_up bridge  # sets c0, c1
"$DOCKER" exec "$c0" /usr/bin/python3 -c 'from mpi4py import MPI' ||
  fail "mpi4py does not import inside the worker container (image without python3-mpi4py? $FERRY_DOCKER up rebuilds it)"

tok=$(unique_token)
printf '127.0.0.1 slots=2 port=%s ferryd=/opt/ferry/bin/ferryd\n' 2201 2202 >"$T/local.txt"
# Docker's default seccomp profile refuses the cross-memory attach Open MPI's shared-memory
# transport uses for large messages: as in any Docker container, turn it off.
run_capture P --timeout 180 -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new \
  --hostfile "$T/local.txt" -x OMPI_MCA_btl_vader_single_copy_mechanism=none /usr/bin/python3 "$FERRY_SRC/tests/e2e/programs/mpi4py_allreduce.py" "$tok"
assert_eq 0 "$P_rc" "ferryrun exit code (mpi4py in containers)"
for r in 0 1 2 3; do
  assert_eq "mpi4py $r/4 host=docker-worker$((r / 2)) sum=10 bcast=from-0 hosts=2" \
    "$(rank_lines "$T/P.out" "$r" stdout)" "rank $r"
done
wait_ctr_idle 10 "$c0" "$c1"
wait_gone "$tok" 10
pass
