#!/usr/bin/env bash
# 65_openmpi_pmix: Open MPI programs (Debian's default MPI, compiled here with
# mpicc.openmpi) run as one job under ferryrun alone, through ferryd's PMIx server: 8 ranks
# on 4 hosts see one world (distinct ranks, allgather, allreduce, alltoall, a ring), and
# MPI_COMM_TYPE_SHARED groups exactly the ranks of each host, sharing memory. An unchanged
# mpirun line through the `mpirun` link passes --mca settings on, and --prefix as Open MPI's
# install prefix. MPI_Abort(..., 7) ends the
# job with 7; a rank killed mid-job, or leaving after MPI_Init without MPI_Finalize (exit
# 0), fails it. A restart (--max-restarts) runs the next attempt as one world again, and
# with Open MPI's asynchronous modex each peer's data is fetched on demand (direct modex)
# across hosts. ferryd loads libpmix only when a rank connects: a job that runs no MPI
# program leaves it unloaded. The PSM transports of adapters the hosts lack are left out
# (unless the user chose). Nothing is left on any host, the PMIx servers' directories
# included.
# shellcheck disable=SC2154 # W_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4
command -v mpicc.openmpi >/dev/null ||
  fail "mpicc.openmpi is not installed (apt-get install libopenmpi-dev)"

tok=$(unique_token)
mpicc.openmpi -O2 -o "$T/mpi_world" "$FERRY_SRC/tests/e2e/programs/mpi_world.c" ||
  fail "mpicc.openmpi could not build mpi_world.c"
hosts=fnode1:2,fnode2:2,fnode3:2,fnode4:2
pmix_dirs() { find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'ferry-pmix-*' 2>/dev/null | sort; }
dirs_before=$(pmix_dirs)

# One world of 8.
run_capture W --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 8 -H "$hosts" \
  "$T/mpi_world" "$tok"
assert_eq 0 "$W_rc" "ferryrun exit code (8 Open MPI ranks)"
for r in 0 1 2 3 4 5 6 7; do
  assert_eq "mpi world $r/8 local $((r % 2))/2 host=fnode$((r / 2 + 1)) ok" \
    "$(rank_lines "$T/W.out" "$r" stdout)" "rank $r"
done
echo "8-rank Open MPI job (4 hosts): ${W_secs}s"

# ferryd loads libpmix only when an Open MPI rank connects: the ferryds of a job whose
# ranks never call MPI_Init have none mapped, those of an Open MPI job do (a rank's parent
# is its ferryd).
run_capture N --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  sh -c 'echo "uri=${PMIX_SERVER_URI41:+set} libpmix=$(grep -c libpmix /proc/$PPID/maps)"'
assert_eq 0 "$N_rc" "ferryrun exit code (no MPI)"
assert_eq 2 "$(grep -c 'uri=set libpmix=0$' "$T/N.out" || true)" \
  "ranks given the server's address, their ferryds without libpmix"
run_capture Y --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  sh -c '"$0" "$1" >/dev/null && echo "libpmix=$(grep -c libpmix /proc/$PPID/maps)"' \
  "$T/mpi_world" "$tok"
assert_eq 0 "$Y_rc" "ferryrun exit code (Open MPI, then a look at ferryd)"
assert_eq 2 "$(grep -c 'libpmix=[1-9]' "$T/Y.out" || true)" \
  "the ferryds of an Open MPI job loaded libpmix when its ranks connected"

# Round-robin placement: the shared communicator follows the hosts, not rank blocks.
run_capture R --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  --map-by node "$T/mpi_world" "$tok"
assert_eq 0 "$R_rc" "ferryrun exit code (--map-by node)"
for r in 0 1 2 3; do
  assert_eq "mpi world $r/4 local $((r / 2))/2 host=fnode$((r % 2 + 1)) ok" \
    "$(rank_lines "$T/R.out" "$r" stdout)" "rank $r by node"
done

# An unchanged Open MPI command line through the mpirun link: --mca and -x reach the ranks.
ln -s "$FERRYRUN" "$T/mpirun"
run_capture M --timeout 120 -- "$T/mpirun" --mca plm_rsh_args "-F $SSHCFG" -np 8 -H "$hosts" \
  --mca btl ^openib -mca btl_tcp_if_include eth0 "$T/mpi_world" "$tok"
assert_eq 0 "$M_rc" "mpirun link exit code"
# (untagged, as mpirun prints without --tag-output)
assert_eq "$(for r in 0 1 2 3 4 5 6 7; do echo "mpi world $r/8 local $((r % 2))/2 host=fnode$((r / 2 + 1)) ok"; done)" \
  "$(sort -t/ -k1.11n "$T/M.out")" "8 ranks in one world through the mpirun link"
run_capture E --timeout 60 -- "$T/mpirun" --mca plm_rsh_args "-F $SSHCFG" -np 2 \
  -H fnode1,fnode2 --mca btl ^openib -mca btl_tcp_if_include eth0 \
  sh -c 'echo "btl=$OMPI_MCA_btl if=$OMPI_MCA_btl_tcp_if_include nccl=$NCCL_SOCKET_IFNAME"'
assert_eq 0 "$E_rc" "mpirun link exit code (environment)"
assert_eq 2 "$(grep -c '^btl=^openib if=eth0 nccl==eth0$' "$T/E.out" || true)" \
  "--mca values as OMPI_MCA_* and the interface for NCCL too (=eth0: exactly that name)"
# An older script's line: Open MPI 1.x spellings mpirun 4.1 still takes, display flags and a
# flag that changes nothing here. -bynode places rank r on host r mod 2, as --map-by node.
run_capture O --timeout 60 -- "$T/mpirun" --mca plm_rsh_args "-F $SSHCFG" -np 4 \
  -H fnode1:2,fnode2:2 -bynode -bind-to-core -display-allocation -display-map -use-regexp \
  "$T/mpi_world" "$tok"
assert_eq 0 "$O_rc" "mpirun link exit code (older spellings)"
for r in 0 1 2 3; do
  assert_eq "mpi world $r/4 local $((r / 2))/2 host=fnode$((r % 2 + 1)) ok" \
    "$(grep -x "mpi world $r/4 .*" "$T/O.out")" "rank $r by node (-bynode)"
done
assert_contains "$O_err" "mpirun: allocated hosts: 2, slots: 4" "--display-allocation"
assert_eq 4 "$(grep -Ec '^fnode[12]: .* rank [0-3] local_rank [01]: cpus ' "$T/O.err" || true)" \
  "--display-map: one line per rank"

# The transports a host lacks are not loaded: the simulated hosts have no Omni-Path or
# TrueScale adapter, so the PSM2 and PSM MTLs (whose libraries spend 0.1 s each calibrating
# the clock as they load) join what Debian's parameter file excludes. A setting of the
# user's wins, here through the mpirun link.
files_mtl=$(sed -n 's/^[[:space:]]*mtl[[:space:]]*=[[:space:]]*//p' \
  /etc/openmpi/openmpi-mca-params.conf | tail -n 1)
want_mtl="^${files_mtl#^}${files_mtl:+,}psm2,psm"
show_mtl='echo "mtl=$OMPI_MCA_mtl"; exec "$0" "$1"'
run_capture V --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  -x OMPI_MCA_mtl_base_verbose=10 sh -c "$show_mtl" "$T/mpi_world" "$tok"
assert_eq 0 "$V_rc" "ferryrun exit code (mtl verbose)"
for r in 0 1; do
  assert_eq "$(printf 'mtl=%s\nmpi world %s/2 local 0/1 host=fnode%s ok' "$want_mtl" "$r" \
    "$((r + 1))")" "$(rank_lines "$T/V.out" "$r" stdout)" "rank $r: mtl, one world"
done
assert_contains "$V_err" "opening mtl components" "Open MPI's mtl framework said what it loads"
assert_not_contains "$V_err" "found loaded component psm" "no PSM library loaded"
run_capture U --timeout 60 -- "$T/mpirun" --mca plm_rsh_args "-F $SSHCFG" -np 2 \
  -H fnode1,fnode2 --mca mtl ^ofi --mca mtl_base_verbose 10 sh -c "$show_mtl" "$T/mpi_world" "$tok"
assert_eq 0 "$U_rc" "mpirun link exit code (the user's mtl)"
assert_eq 2 "$(grep -c '^mtl=^ofi$' "$T/U.out" || true)" "the user's mtl, unchanged"
assert_contains "$U_err" "found loaded component psm2" "Open MPI loaded what the user left in"

# --prefix as Open MPI's mpirun reads it: where Open MPI lives on the hosts. The ranks get its
# bin first on PATH (a program found only there runs, on every host) and its lib first on
# LD_LIBRARY_PATH, over an exported value; ferryd stays the usual one (none is under the
# prefix, and none may be shipped here). The prefix's lib is Debian's Open MPI's.
mkdir -p "$T/ompi/bin"
ln -s /usr/lib/x86_64-linux-gnu/openmpi/lib "$T/ompi/lib"
# shellcheck disable=SC2016 # expanded by the probe, on the rank's host
printf '#!/bin/sh\necho "path=${PATH%%%%:*} ld=$LD_LIBRARY_PATH"\nexec "$@"\n' >"$T/ompi/bin/prefix_probe"
chmod +x "$T/ompi/bin/prefix_probe"
run_capture P --timeout 60 -- "$T/mpirun" --mca plm_rsh_args "-F $SSHCFG" --ship-ferryd never \
  --prefix "$T/ompi/" -np 4 -H fnode1:2,fnode2:2 -x LD_LIBRARY_PATH=/elsewhere --tag-output \
  prefix_probe "$T/mpi_world" "$tok"
assert_eq 0 "$P_rc" "mpirun link exit code (--prefix)"
for r in 0 1 2 3; do
  assert_eq "$(printf 'path=%s ld=%s\nmpi world %s/4 local %s/2 host=fnode%s ok' "$T/ompi/bin" \
    "$T/ompi/lib:/elsewhere" "$r" "$((r % 2))" "$((r / 2 + 1))")" \
    "$(sed -n "s/^\[1,$r\]<stdout>://p" "$T/P.out")" "rank $r: the prefix's bin and lib first, one world"
done

# MPI_Abort(MPI_COMM_WORLD, 7) on rank 5: the job ends with 7.
run_capture A --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 8 -H "$hosts" \
  "$T/mpi_world" --abort 5 "$tok"
assert_eq 7 "$A_rc" "ferryrun exit code after MPI_Abort(..., 7)"
assert_contains "$A_err" "rank 5 on host fnode3" "the failure block names the rank and host"
assert_contains "$A_err" "MPI_Abort" "the failure block says MPI_Abort"
wait_gone "$tok" 10

# A restarted job (--max-restarts) registers a fresh namespace: the second attempt is one world.
run_capture X --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  --max-restarts 1 "$T/mpi_world" --abort-first 1 "$tok"
assert_eq 0 "$X_rc" "ferryrun exit code after a restart"
assert_contains "$X_err" "restarting (1 of 1)" "the first attempt failed and restarted"
for r in 0 1 2 3; do
  assert_eq "mpi world $r/4 local $((r % 2))/2 host=fnode$((r / 2 + 1)) ok" \
    "$(rank_lines "$T/X.out" "$r" stdout)" "rank $r after the restart"
done

# Direct modex: without the fence at MPI_Init, each peer's data is fetched when first needed,
# from its host's ferryd through ferryrun.
run_capture D --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" --verbose -np 4 \
  -H fnode1:2,fnode2:2 -x OMPI_MCA_pmix_base_async_modex=1 -x OMPI_MCA_pmix_base_collect_data=0 "$T/mpi_world" "$tok"
assert_eq 0 "$D_rc" "ferryrun exit code (direct modex)"
for r in 0 1 2 3; do
  assert_eq "mpi world $r/4 local $((r % 2))/2 host=fnode$((r / 2 + 1)) ok" \
    "$(rank_lines "$T/D.out" "$r" stdout)" "rank $r with direct modex"
done
assert_match "$D_err" "PMIx: [0-9]+ fence\(s\) across hosts, [1-9][0-9]* rank data request\(s\) forwarded" \
  "the peers' data went host to host on demand"

# A rank killed mid-job ends the job.
run_capture K --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  "$T/mpi_world" --kill 2 --hang "$tok"
assert_ne 0 "$K_rc" "ferryrun exit code when a rank is killed"
assert_contains "$K_err" "rank 2 on host fnode2" "the failure names the killed rank"
wait_gone "$tok" 10

# Leaving after MPI_Init without MPI_Finalize, with status 0, fails the rank.
run_capture F --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  "$T/mpi_world" --no-finalize 1 --hang "$tok"
assert_ne 0 "$F_rc" "ferryrun exit code when a rank skips MPI_Finalize"
assert_contains "$F_err" "rank 1 on host fnode1" "the failure block names rank 1"
assert_contains "$F_err" "without calling MPI_Finalize" "the reason"

wait_gone "$tok" 10
wait_cluster_idle 5
# Only new ones count: a ferryd removes the directories of dead ferryds (stale) as it starts.
assert_eq "" "$(comm -13 <(echo "$dirs_before") <(pmix_dirs))" "no PMIx server directory left behind"
pass
