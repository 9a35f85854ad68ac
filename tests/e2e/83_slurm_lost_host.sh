#!/usr/bin/env bash
# 83_slurm_lost_host: a job that may lose a host (--min-hosts) keeps its other nodes under
# Slurm. srun's --kill-on-bad-exit would end every ferryd of the step once one of them
# failed; ferryrun starts the step without it (--kill-on-bad-exit=0 --no-kill) whenever a
# lost host is survivable, so:
#  - kill -9 of the ferryd on one of 3 nodes with --min-hosts 2: ferryrun reports the lost
#    node and the job goes on (attempt 1) on the two others, whose ferryds were not killed,
#    and ends 0;
#  - srun's "cluster configuration lacks support for cpu binding" (this cluster has no
#    task/affinity plugin) is not shown to the user.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_slurm 3

tok=$(unique_token)
sleeper=$(sleeper_for "$tok")

# ferryd_on NODE: the pid of the ferryd (not its guard) on Slurm node NODE.
ferryd_on() {
  local pid ns
  ns=$(stat -L -c %i "/run/netns/f$1")
  for pid in $(pgrep -x ferryd); do
    [[ $(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null) == "$ns" ]] && echo "$pid"
  done
}

# Attempt 0: every rank sleeps (its command line carries the token). Attempt 1: each rank
# waits for $T/go, says where it runs and ends.
prog='if [ "${FERRY_ATTEMPT:-0}" = 0 ]; then exec "$0" 1000; fi
while [ ! -e "$1" ]; do sleep 0.1; done
echo "attempt $FERRY_ATTEMPT rank $RANK of $WORLD_SIZE on $(hostname)"; : "$2"'
start_bg M -- salloc -N3 --ntasks-per-node=1 "$FERRYRUN" --min-hosts 2 --kill-grace 1 \
  sh -c "$prog" "$sleeper" "$T/go" "$tok"
wait_procs "^$sleeper 1000" 3 30
victim=snode2
fd=$(ferryd_on $victim)
[[ -n $fd ]] || fail "no ferryd on $victim"
others=()
for n in $FERRY_SLURM_HOSTNAMES; do
  [[ $n == "$victim" ]] && continue
  p=$(ferryd_on "$n")
  [[ -n $p ]] && others+=("$p")
done
assert_eq 2 "${#others[@]}" "ferryds on the two other nodes"
kill -9 "$fd"
wait_for "ferryrun going on without $victim" 30 grep -q "continuing without $victim" "$T/M.err"
wait_gone "^$sleeper 1000" 8
# Attempt 1 runs on the ferryds the step started: Slurm did not end them when one failed.
for p in "${others[@]}"; do
  kill -0 "$p" 2>/dev/null || fail "ferryd $p of the step is gone after the loss of $victim"
done
touch "$T/go"

wait_bg M 60
assert_eq 0 "$M_rc" "ferryrun's exit status (one node lost, --min-hosts 2)"
assert_contains "$M_err" "lost host $victim" "the lost node is reported"
assert_contains "$M_err" "continuing without $victim on 2 hosts, 2 ranks" "the job goes on"
assert_eq 2 "$(grep -c '^attempt 1 rank [01] of 2 on snode' "$T/M.out" || true)" \
  "both ranks of attempt 1 ran"
assert_not_contains "$(cat "$T/M.out")" "on $victim" "nothing ran on the lost node again"
assert_not_contains "$M_err" "lacks support for cpu binding" "srun's binding notice is not shown"
assert_not_contains "$M_err" "srun: error" "srun reported no error"
wait_slurm_idle 15
pass
