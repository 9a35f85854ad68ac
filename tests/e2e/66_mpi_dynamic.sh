#!/usr/bin/env bash
# 66_mpi_dynamic: MPI's dynamic-process calls between the ranks of one Open MPI job, through
# ferryd's PMIx server and the front end's name service and collectives: the first half of
# the job publishes a port (MPI_Publish_name), the second looks it up, the halves meet with
# MPI_Comm_accept/MPI_Comm_connect, reduce across the intercommunicator, disconnect, and the
# name is unpublished (a later lookup fails). With the halves on separate hosts and with each
# half spread over both hosts. Two jobs publishing the same service name at once each find
# their own. A rank killed while the others wait to connect fails the job, and nothing is
# left on any host.
# shellcheck disable=SC2154 # C_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
command -v mpicc.openmpi >/dev/null ||
  fail "mpicc.openmpi is not installed (apt-get install libopenmpi-dev)"
mpicc.openmpi -O2 -o "$T/mpi_connect" "$FERRY_SRC/tests/e2e/programs/mpi_connect.c" ||
  fail "mpicc.openmpi could not build mpi_connect.c"
svc="ferry-svc-$(unique_token)"

# expect_connected FILE: the 4 ranks' lines: halves of 2, each summing the other's ranks.
expect_connected() {
  local r want
  for r in 0 1 2 3; do
    if ((r < 2)); then want="half=0 remote=2 got=7"; else want="half=1 remote=2 got=3"; fi
    assert_eq "connect $r/4 $want ok" "$(rank_lines "$1" "$r" stdout)" "rank $r"
  done
}

# The halves on separate hosts: every accept/connect exchange and collective crosses them.
run_capture C --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  --verbose "$T/mpi_connect" "$svc"
assert_eq 0 "$C_rc" "ferryrun exit code (halves on two hosts)"
expect_connected "$T/C.out"
assert_match "$C_err" "PMIx: [0-9]+ fence\(s\) across hosts, [0-9]+ rank data request\(s\) forwarded, [1-9][0-9]* connect, disconnect or partial fence\(s\)" \
  "the connect and disconnect went through the front end"
echo "accept/connect across two hosts: ${C_secs}s"

# Each half on both hosts (round robin): a host holds ranks of both sides.
run_capture R --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  --map-by node "$T/mpi_connect" "$svc"
assert_eq 0 "$R_rc" "ferryrun exit code (--map-by node)"
expect_connected "$T/R.out"

# Two jobs, one service name: each job's names are its own (a shared directory would refuse
# the second publish, or hand one job the other's port).
start_bg J1 "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 "$T/mpi_connect" "$svc"
start_bg J2 "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode2:2,fnode1:2 "$T/mpi_connect" "$svc"
wait_bg J1 120
wait_bg J2 120
assert_eq 0 "$J1_rc" "first of two concurrent jobs"
assert_eq 0 "$J2_rc" "second of two concurrent jobs"
expect_connected "$T/J1.out"
expect_connected "$T/J2.out"

# A rank dies (SIGKILL) while the others wait in accept/connect: the job fails with it.
run_capture K --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  "$T/mpi_connect" "$svc" die
assert_ne 0 "$K_rc" "ferryrun exit code (a rank killed)"
assert_contains "$K_err" "rank 3" "the killed rank is named"
wait_cluster_idle 30
pass
