#!/usr/bin/env bash
# 66_mpi_spawn: MPI_Comm_spawn with Open MPI across the simulated hosts. Two ranks (one per
# host, 3 slots each) spawn four children: they take the free slots in host order (two on
# each host), get their value over the intercommunicator, and their lines are tagged [spawn1:R]
# ([2,R] in Open MPI's tag style). A child is bound to the next free core.
# MPI_Comm_spawn_multiple's commands get their MPI_APPNUM. With no free slot the spawn is
# refused in one line naming --oversubscribe, and with it the children share the slots; an
# MPI_Info naming a host is refused. A child that fails fails the job and is named in the
# report. kill -9 of ferryrun during a spawn (the children not yet in
# MPI_Init) and while children run, kill -9 of a ferryd, and Ctrl-C leave nothing on any host.
# mpi4py.futures: an MPIPoolExecutor per rank (its workers spawned), one of no given size
# (MPI_UNIVERSE_SIZE less the world: the slots of the hosts that run ranks), and the static
# world of `python3 -m mpi4py.futures`, across hosts.
# shellcheck disable=SC2154 # S_rc etc. come from run_capture and start_bg
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
command -v mpicc.openmpi >/dev/null ||
  fail "mpicc.openmpi is not installed (apt-get install libopenmpi-dev)"
"$PY" -c 'import mpi4py.futures' 2>/dev/null ||
  fail "mpi4py is not installed (apt-get install python3-mpi4py)"
mpicc.openmpi -O2 -o "$T/mpi_spawn" "$FERRY_SRC/tests/e2e/programs/mpi_spawn.c" ||
  fail "mpicc.openmpi could not build mpi_spawn.c"
two=(--ssh-config "$SSHCFG" -np 2 -H "fnode1:2,fnode2:2" --map-by node)

# Four children on the free slots, two per host, tagged as spawned.
run_capture S --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:3,fnode2:3 \
  --map-by node --verbose "$T/mpi_spawn" 4
assert_eq 0 "$S_rc" "ferryrun exit code (2 ranks spawn 4)"
assert_eq "parent 0/2 on fnode1: 4 children" "$(rank_lines "$T/S.out" 0 stdout)" "rank 0"
assert_eq "parent 1/2 on fnode2: 4 children" "$(rank_lines "$T/S.out" 1 stdout)" "rank 1"
for c in 0 1 2 3; do
  assert_eq "child $c/4 on fnode$((c / 2 + 1)) got 42 appnum 0" \
    "$(rank_lines "$T/S.out" "spawn1:$c" stdout)" "child $c, on a free slot in host order"
done
assert_contains "$S_err" "MPI_Comm_spawn by rank 0 on fnode1: 4 process(es) as spawn 1" \
  "--verbose says where the children went"
echo "2 ranks spawned 4 processes across 2 hosts: ${S_secs}s"

run_capture O --timeout 120 -- "$FERRYRUN" "${two[@]}" --tag-style openmpi "$T/mpi_spawn" 2
assert_eq 0 "$O_rc" "ferryrun exit code (Open MPI's tags)"
assert_contains "$O_out" "[2,1]<stdout>:child 1/2 on fnode2" "a child's tag in Open MPI's style"
assert_contains "$O_out" "[1,0]<stdout>:parent 0/2" "a rank's tag in Open MPI's style"

# A child is bound as the job's rules bind the next local process: one core each
# (PE=1), the rank on core 0, its child on core 1 (the hosts have 2).
run_capture B --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 1 -H fnode1:2 \
  --map-by slot:PE=1 "$T/mpi_spawn" 1 affinity
assert_eq 0 "$B_rc" "ferryrun exit code (a bound child)"
assert_contains "$B_out" "[0]<stdout>:parent 0 cpus 0" "the rank on the first core"
assert_contains "$B_out" "[spawn1:0]<stdout>:child 0 cpus 1" "its child on the next core"

# MPI_Comm_spawn_multiple: two commands, 1 and 2 copies; MPI_APPNUM tells them apart.
run_capture M --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 1 -H fnode1:4 \
  "$T/mpi_spawn" 1+2
assert_eq 0 "$M_rc" "ferryrun exit code (MPI_Comm_spawn_multiple)"
assert_eq "child 0/3 on fnode1 got 42 appnum 0" "$(rank_lines "$T/M.out" spawn1:0 stdout)" \
  "the first command's copy"
assert_eq "child 2/3 on fnode1 got 42 appnum 1" "$(rank_lines "$T/M.out" spawn1:2 stdout)" \
  "the second command's second copy"

# No free slot: refused in one line; --oversubscribe lets the children share the slots.
run_capture N --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  "$T/mpi_spawn" 2
assert_ne 0 "$N_rc" "ferryrun exit code (no free slot)"
assert_contains "$N_err" "ferryrun: MPI_Comm_spawn by rank 0 on fnode1: asks for 2 process(es), but the job's hosts have 0 free slot(s) (--oversubscribe" \
  "the refusal"
# Placement by host name would be quietly wrong: refused in one line, the spawn fails.
run_capture I --timeout 120 -- "$FERRYRUN" "${two[@]}" "$T/mpi_spawn" 2 host
assert_ne 0 "$I_rc" "ferryrun exit code (info key host)"
assert_contains "$I_err" "ferryrun: MPI_Comm_spawn by rank 0 on fnode1: the info key 'host' is not supported" \
  "the refusal names the key"
run_capture V --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  --oversubscribe "$T/mpi_spawn" 3
assert_eq 0 "$V_rc" "ferryrun exit code (--oversubscribe)"
assert_eq 3 "$(grep -c '^\[spawn1:[0-2]\]<stdout>:child [0-2]/3 on fnode[12] got 42' "$T/V.out" || true)" \
  "three children on two hosts of one slot each"

# A child that fails fails the job, named as what it is.
run_capture F --timeout 120 -- "$FERRYRUN" "${two[@]}" "$T/mpi_spawn" 2 child-fails
assert_eq 3 "$F_rc" "ferryrun exit code (a child exited 3)"
assert_contains "$F_err" "spawned process 1:1 on host fnode2" "the failed child is named"
wait_cluster_idle 10

# Faults while children run: nothing may be left on any host.
# all_ready P: job P's 2 ranks and 2 children said ready.
all_ready() { (($(grep -c 'ready$' "$T/$1.out" || true) >= 4)); }
# hold_job P ARGS...: start a holding job and wait until all its processes are ready.
hold_job() {
  local p=$1
  shift
  start_bg "$p" "$FERRYRUN" "$@" "$T/mpi_spawn" 2 hold
  wait_for "$p: every process ready" 60 all_ready "$p"
}
# kill -9 of ferryrun inside MPI_Comm_spawn: the children wait before MPI_Init.
start_bg G "$FERRYRUN" "${two[@]}" "$T/mpi_spawn" 2 slow-child
children_waiting() { (($(grep -c 'child waiting$' "$T/G.out" || true) >= 2)); }
wait_for "G: the children started" 60 children_waiting
kill -9 "$G_pid"
wait_bg G 10
assert_eq 137 "$G_rc" "exit status of ferryrun killed during a spawn"
wait_cluster_idle 10

hold_job K "${two[@]}"
kill -9 "$K_pid"
wait_bg K 10
assert_eq 137 "$K_rc" "exit status of the killed ferryrun"
wait_cluster_idle 10

hold_job D "${two[@]}" --kill-grace 1
kill_ferryd_during D fnode2

hold_job C "${two[@]}" --kill-grace 1
kill -INT "$C_pid"
wait_bg C 20
assert_eq 130 "$C_rc" "exit status after Ctrl-C"
wait_cluster_idle 10

# mpi4py.futures: each rank's pool of 2 workers (spawned on the free slots: the first pool's
# on fnode1, the other's on fnode2, whichever rank asks first), and a static world of 4
# across both hosts.
futures=$FERRY_SRC/tests/e2e/programs/mpi4py_futures.py
run_capture P --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:3,fnode2:3 \
  --map-by node "$PY" "$futures" pool 2
assert_eq 0 "$P_rc" "ferryrun exit code (MPIPoolExecutor)"
assert_match "$(rank_lines "$T/P.out" 0 stdout)" \
  "^futures pool rank=0 sum=1240 hosts=fnode[12] worker_world=2$" "rank 0's pool, on one host"
assert_match "$(rank_lines "$T/P.out" 1 stdout)" \
  "^futures pool rank=1 sum=1240 hosts=fnode[12] worker_world=2$" "rank 1's pool, on one host"
assert_eq "fnode1 fnode2" "$(sed -n 's/.*hosts=\([^ ]*\) .*/\1/p' "$T/P.out" | sort | xargs)" \
  "the two pools on the two hosts' free slots"
# A pool of no given size takes MPI_UNIVERSE_SIZE less the world: the slots of the hosts that
# run ranks (fnode1's 3; fnode2 runs none, so it is not counted), 2 workers.
run_capture Q --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 1 -H fnode1:3,fnode2:3 \
  "$PY" "$futures" pool
assert_eq 0 "$Q_rc" "ferryrun exit code (MPIPoolExecutor sized by the universe)"
assert_eq "futures pool rank=0 sum=1240 hosts=fnode1 worker_world=2" \
  "$(rank_lines "$T/Q.out" 0 stdout)" "the pool's size from MPI_UNIVERSE_SIZE"
run_capture W --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  "$PY" -m mpi4py.futures "$futures" world
assert_eq 0 "$W_rc" "ferryrun exit code (python3 -m mpi4py.futures)"
assert_eq "futures world rank=0 sum=1240 hosts=fnode1,fnode2 worker_world=4" \
  "$(rank_lines "$T/W.out" 0 stdout)" "the static world's master"
wait_cluster_idle 10
pass
