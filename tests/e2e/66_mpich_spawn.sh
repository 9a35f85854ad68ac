#!/usr/bin/env bash
# 66_mpich_spawn: MPICH's way of spawning (PMI-1's PMI_Spawn_multiple) across the simulated
# hosts, driven by MPICH's own PMI client (simple_pmi.c, linked from Debian's libmpich.a: the
# code MPICH's MPI_Comm_spawn calls). Rank 0 of two (one per host, 3 slots each) spawns two
# commands, 1 and 3 copies: the children take the free slots in host order, form their own
# process group (own KVS name, rank, size and appnum, PMI_SPAWNED), read the parent's preput
# pair, meet in their own barrier and see each other's puts; the info key wdir is honoured, the
# parents' barrier stays theirs. With no free slot the spawn is refused (rc != 0 to the rank,
# one line naming --oversubscribe), and with --oversubscribe the children share the slots. The
# info key host is refused in one line. A spawned process spawns in turn. A child that fails
# fails the job and is named; kill -9 of ferryrun or of a ferryd and Ctrl-C while children
# run leave nothing on any host. The parents see MPI_UNIVERSE_SIZE: the slots of the hosts that run ranks.
#
# Debian 12's MPICH 4.0.2 (ch4:ucx) fails MPI_Comm_spawn inside MPICH before any PMI command
# is sent, under its own hydra as under ferry: a real MPI_Comm_spawn cannot be run here, so its
# PMI client is driven directly.
# shellcheck disable=SC2154 # S_rc etc. come from run_capture and start_bg
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
libmpich=$(dpkg -L libmpich-dev 2>/dev/null | grep '/libmpich\.a$' | head -1)
[[ -n $libmpich ]] || fail "libmpich.a is not installed (apt-get install libmpich-dev)"
cc -O2 -o "$T/pmi_spawn" "$FERRY_SRC/tests/e2e/programs/pmi_spawn.c" "$libmpich" ||
  fail "cc could not build pmi_spawn.c against $libmpich"

# Two commands, 1 and 3 copies, on the free slots: two per host.
run_capture S --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:3,fnode2:3 \
  --map-by node --verbose "$T/pmi_spawn" parent 1 3
assert_eq 0 "$S_rc" "ferryrun exit code (rank 0 spawns 1 + 3)"
assert_eq "$(printf 'parent 0/2 spawn rc=0\nparent 0/2 spawned=0 sees 2/2 universe 6')" \
  "$(rank_lines "$T/S.out" 0 stdout)" "rank 0: the spawn, then its own group's barrier"
assert_eq "parent 1/2 spawned=0 sees 2/2 universe 6" "$(rank_lines "$T/S.out" 1 stdout)" \
  "rank 1 (the universe: the slots of the hosts that run ranks)"
assert_eq "child 0/4 app 0 arg a spawned=1 own-kvs=1 sees 4/4 on fnode1 in /tmp" \
  "$(rank_lines "$T/S.out" spawn1:0 stdout)" "the first command's copy, in its info wdir"
for c in 1 2 3; do
  assert_eq "child $c/4 app 1 arg b spawned=1 own-kvs=1 sees 4/4 on fnode$((c / 2 + 1)) in -" \
    "$(rank_lines "$T/S.out" "spawn1:$c" stdout)" "child $c, of the second command"
done
assert_contains "$S_err" "MPI_Comm_spawn by rank 0 on fnode1: 4 process(es) as spawn 1 (PMI process group" \
  "--verbose says where the children went"
echo "rank 0 spawned 4 processes across 2 hosts through PMI-1: ${S_secs}s"

# A spawned process spawns in turn: its own child is a group of its own, on the last free slot
# (the parents hold theirs until it runs: a rank that ended frees its slot).
run_capture G --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:3,fnode2:3 \
  --map-by node --verbose -x "PMI_SPAWN_MARK=$T/nested" "$T/pmi_spawn" parent 1 2 nest
assert_eq 0 "$G_rc" "ferryrun exit code (a nested spawn)"
[[ -e $T/nested ]] || fail "the spawned child's child did not get PMI_SPAWN_MARK (-x)"
assert_eq "$(printf 'child 1 spawn rc=0\nchild 1/3 app 1 arg b spawned=1 own-kvs=1 sees 3/3 on fnode1 in -')" \
  "$(rank_lines "$T/G.out" spawn1:1 stdout)" "the spawning child"
assert_eq "child 0/1 app 0 arg c spawned=1 own-kvs=1 sees 1/1 on fnode2 in -" \
  "$(rank_lines "$T/G.out" spawn2:0 stdout)" "its child, in a group of its own"
assert_contains "$G_err" "MPI_Comm_spawn by spawned process 1:1 on fnode1: 1 process(es) as spawn 2" \
  "--verbose names the spawning child"

# No free slot: refused, the rank hears rc != 0 (and exits 3 here); --oversubscribe shares.
run_capture N --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  "$T/pmi_spawn" parent 1 1
assert_eq 3 "$N_rc" "ferryrun exit code (no free slot; the rank gave up with 3)"
assert_contains "$N_out" "[0]<stdout>:parent 0/2 spawn rc=-1" "the rank is told the spawn failed"
assert_contains "$N_err" "ferryrun: MPI_Comm_spawn by rank 0 on fnode1: asks for 2 process(es), but the job's hosts have 0 free slot(s) (--oversubscribe" \
  "the refusal"
run_capture V --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  --oversubscribe "$T/pmi_spawn" parent 1 2
assert_eq 0 "$V_rc" "ferryrun exit code (--oversubscribe)"
assert_eq 3 "$(grep -c '^\[spawn1:[0-2]\]<stdout>:child [0-2]/3 app [01] arg [ab] spawned=1 own-kvs=1 sees 3/3 on fnode[12]' "$T/V.out" || true)" \
  "three children on two hosts of one slot each"

# Placement by host name would be quietly wrong: refused in one line.
run_capture H --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:3,fnode2:3 \
  --map-by node "$T/pmi_spawn" parent 1 1 host
assert_eq 3 "$H_rc" "ferryrun exit code (info key host)"
assert_contains "$H_err" "MPI_Comm_spawn by rank 0 on fnode1: the info key 'host' is not supported" \
  "the refusal names the key"

# A child that fails fails the job, named as what it is.
run_capture F --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:3,fnode2:3 \
  --map-by node "$T/pmi_spawn" parent 1 2 crash
assert_eq 5 "$F_rc" "ferryrun exit code (a child exited 5)"
assert_match "$F_err" "spawned process 1:[12] on host fnode[12]" "the failed child is named"
assert_contains "$F_err" "job summary: 2 ranks and 3 spawned processes on 2 hosts" \
  "the summary counts the children"
# Whichever child crashed first: the other may be ended by the abort before it crashes.
assert_match "$F_err" "fnode[12]  [01] \+[12] spawned .* 5 \(spawn1:[12]\)" \
  "a child's exit in its host's line"
wait_cluster_idle 10

# Faults while children run: nothing may be left on any host.
# hold_job P ARGS...: start a job whose 2 b children hold, and wait until both said ready.
hold_job() {
  local p=$1
  shift
  start_bg "$p" "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:3,fnode2:3 --map-by node \
    "$@" "$T/pmi_spawn" parent 1 2 hold
  # shellcheck disable=SC2016 # $1 and $2 belong to the inner sh
  wait_for "$p: the children run" 60 sh -c '[ "$(grep -c "ready$" "$1" || true)" -ge 2 ]' _ \
    "$T/$p.out"
}
hold_job K
kill -9 "$K_pid"
wait_bg K 10
assert_eq 137 "$K_rc" "exit status of the killed ferryrun"
wait_cluster_idle 10

hold_job D --kill-grace 1
kill_ferryd_during D fnode2

hold_job C --kill-grace 1
kill -INT "$C_pid"
wait_bg C 20
assert_eq 130 "$C_rc" "exit status after Ctrl-C"
wait_cluster_idle 10
pass
