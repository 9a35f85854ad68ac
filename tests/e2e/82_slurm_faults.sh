#!/usr/bin/env bash
# 82_slurm_faults: ferryrun's daemons started by srun leave nothing behind:
#  - kill -9 of ferryrun inside salloc: every rank on every node gone within seconds;
#  - scancel of the job: the same;
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
frontend=$(pgrep -f -- "^$FERRYRUN --kill-grace 1 sh -c" | head -1)
[[ -n $frontend ]] || fail "ferryrun not found"
kill -9 "$frontend"
wait_gone "^$sleeper 1000" 8
wait_bg K 30
wait_slurm_idle 15

# --- 2. scancel of the job.
start_bg C -- salloc -N2 --ntasks-per-node=2 "$FERRYRUN" --kill-grace 1 sh -c '"$0" 1000; : "$1"' \
  "$sleeper" "$tok"
wait_procs "^$sleeper 1000" 4 30
jobid=$(squeue -h -o '%A' | head -1)
[[ -n $jobid ]] || fail "no Slurm job found"
scancel "$jobid"
wait_gone "^$sleeper 1000" 8
wait_bg C 30
wait_slurm_idle 15

# --- 3. A node dies mid-job.
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
pass
