#!/usr/bin/env bash
# 82_slurm_faults: ferryrun's daemons started by srun leave nothing behind:
#  - kill -9 of ferryrun inside salloc: every rank on every node gone within seconds;
#  - scancel of the job: the same;
#  - a job that may lose a host (--min-hosts 2 on 3 nodes): kill -9 of one ferryd, and the
#    job goes on (attempt 1) on the two other ferryds of the same step, ends 0. Under srun's
#    --kill-on-bad-exit Slurm would have killed them too: ferryrun starts such a step with
#    --kill-on-bad-exit=0 --no-kill. srun's "lacks support for cpu binding" is not shown;
#  - a node dies mid-job (its slurmd and the step's slurmstepd killed): its ferryd stops its
#    ranks, ferryrun reports the lost host as for SSH (exit 255), the other ranks are stopped.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_slurm 4

tok=$(unique_token)
sleeper=$(sleeper_for "$tok")

# ranks_on NODE: how many of this test's ranks run on Slurm node NODE (snodeI).
ranks_on() {
  local n=0 pid ns
  ns=$(stat -L -c %i "/run/netns/f$1")
  for pid in $(pgrep -f -- "^$sleeper 1000"); do
    [[ $(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null) == "$ns" ]] && n=$((n + 1))
  done
  echo "$n"
}

# --- 1. kill -9 of ferryrun.
start_bg K -- salloc -N4 --ntasks-per-node=2 "$FERRYRUN" --kill-grace 1 sh -c '"$0" 1000; : "$1"' \
  "$sleeper" "$tok"
wait_procs "^$sleeper 1000" 8 30
assert_eq 2 "$(ranks_on snode3)" "two ranks on snode3 (the job has every node)"
frontend=$(pgrep -f -- "^$FERRYRUN --kill-grace 1 sh -c" | sed -n 1p)
[[ -n $frontend ]] || fail "ferryrun not found"
kill -9 "$frontend"
wait_gone "^$sleeper 1000" 8
wait_bg K 30
wait_slurm_idle 15

# --- 2. scancel of the job.
start_bg C -- salloc -N2 --ntasks-per-node=2 "$FERRYRUN" --kill-grace 1 sh -c '"$0" 1000; : "$1"' \
  "$sleeper" "$tok"
wait_procs "^$sleeper 1000" 4 30
jobid=$(squeue -h -o '%A' | sed -n 1p)
[[ -n $jobid ]] || fail "no Slurm job found"
scancel "$jobid"
wait_gone "^$sleeper 1000" 8
wait_bg C 30
wait_slurm_idle 15

# ferryd_on NODE: the pid of the ferryd (not its guard) on Slurm node NODE.
ferryd_on() {
  local pid ns
  ns=$(stat -L -c %i "/run/netns/f$1")
  for pid in $(pgrep -x ferryd); do
    if [[ $(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null) == "$ns" ]]; then echo "$pid"; fi
  done
}

# --- 3. One ferryd lost, --min-hosts 2 on 3 nodes.
# Attempt 0: every rank sleeps (its command line carries the token). Attempt 1: each rank
# waits for $T/go, says where it runs and ends.
prog='if [ "${FERRY_ATTEMPT:-0}" = 0 ]; then exec "$0" 1000; fi
while [ ! -e "$1" ]; do sleep 0.1; done
echo "attempt $FERRY_ATTEMPT rank $RANK of $WORLD_SIZE on $(hostname)"; : "$2"'
start_bg M -- salloc -N3 --ntasks-per-node=1 "$FERRYRUN" --min-hosts 2 --kill-grace 1 --tag-style none \
  sh -c "$prog" "$sleeper" "$T/go" "$tok"
wait_procs "^$sleeper 1000" 3 30
lost=snode2
fd=$(ferryd_on $lost)
[[ -n $fd ]] || fail "no ferryd on $lost"
others=()
for n in $FERRY_SLURM_HOSTNAMES; do
  [[ $n == "$lost" ]] && continue
  p=$(ferryd_on "$n")
  [[ -n $p ]] && others+=("$p")
done
assert_eq 2 "${#others[@]}" "ferryds on the two other nodes"
kill -9 "$fd"
wait_for "ferryrun going on without $lost" 30 grep -q "continuing without $lost" "$T/M.err"
wait_gone "^$sleeper 1000" 8
# Attempt 1 runs on the ferryds the step started: Slurm did not end them when one failed.
for p in "${others[@]}"; do
  kill -0 "$p" 2>/dev/null || fail "ferryd $p of the step is gone after the loss of $lost"
done
touch "$T/go"

wait_bg M 60
assert_eq 0 "$M_rc" "ferryrun's exit status (one node lost, --min-hosts 2)"
assert_contains "$M_err" "lost host $lost" "the lost node is reported"
assert_contains "$M_err" "continuing without $lost on 2 hosts, 2 ranks" "the job goes on"
assert_eq 2 "$(grep -c '^attempt 1 rank [01] of 2 on snode' "$T/M.out" || true)" \
  "both ranks of attempt 1 ran"
assert_not_contains "$(cat "$T/M.out")" "on $lost" "nothing ran on the lost node again"
assert_not_contains "$M_err" "lacks support for cpu binding" "srun's binding notice is not shown"
wait_slurm_idle 15

# --- 4. A node dies mid-job.
start_bg D -- salloc -N2 --ntasks-per-node=2 "$FERRYRUN" --kill-grace 1 sh -c '"$0" 1000; : "$1"' \
  "$sleeper" "$tok"
wait_procs "^$sleeper 1000" 4 30
victim=""
for n in $FERRY_SLURM_HOSTNAMES; do
  if (($(ranks_on "$n") > 0)); then victim=$n; fi
done
[[ -n $victim ]] || fail "no node runs ranks"
for pid in $(ip netns pids "f$victim"); do
  case $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) in
    slurmd* | slurmstepd*) kill -9 "$pid" ;;
  esac
done
wait_bg D 30
assert_eq 255 "$D_rc" "exit status when a node dies"
assert_contains "$D_err" "lost host $victim" "the report names the lost node"
wait_gone "^$sleeper 1000" 8
# The node stays dead for Slurm: the scenarios after this one get the whole cluster back.
"$FERRY_SLURM" up "$FERRY_SLURM_NODES" --cpus "$(cat "$FERRY_SLURM_DIR/cpus")" >"$T/slurm-up.log" 2>&1 ||
  fail "ferry-slurm up after the dead node: $(tail -n 3 "$T/slurm-up.log" | tr '\n' ';')"
pass
