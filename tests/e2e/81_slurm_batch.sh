#!/usr/bin/env bash
# 81_slurm_batch: ferryrun inside real Slurm jobs, with no host list:
#  - an sbatch job of 4 nodes x 2 tasks: 8 ranks, rank r on snode(r/2+1), the job's
#    variables kept and the step's (SLURM_PROCID, SLURM_STEP_ID, ...) gone, the daemons
#    started by one srun step (--verbose says so), no job secret in any rank;
#  - salloc -N2 with real PyTorch (gloo all-reduce and a DDP step) across the nodes;
#  - --launcher ssh inside an allocation still reaches SSH hosts (the SSH test cluster);
#  - --launcher slurm outside an allocation: one line, exit 2.
# Nothing is left on any node.
# shellcheck disable=SC2154,SC2016 # B_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_slurm 4
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed"

tok=$(unique_token)

# --- 1. sbatch, 4 nodes x 2 tasks.
{
  echo '#!/bin/bash'
  echo '#SBATCH -N4 --ntasks-per-node=2'
  echo "#SBATCH -o $T/job.out -e $T/job.err"
  printf '%q --verbose sh -c %q\n' "$FERRYRUN" \
    'echo "at $(hostname) rank $RANK local $LOCAL_RANK of $WORLD_SIZE job ${SLURM_JOB_ID:-none} procid ${SLURM_PROCID:-unset} step ${SLURM_STEP_ID:-unset} ntasks ${SLURM_NTASKS:-unset} secret ${FERRY_CONNECT_SECRET:-unset}"; : '"$tok"
} >"$T/job.sh"
run_capture B -- sbatch --wait "$T/job.sh"
assert_eq 0 "$B_rc" "sbatch --wait exit code (ferryrun's)"
job=$(sed -n 's/^Submitted batch job //p' <<<"$B_out")
for r in 0 1 2 3 4 5 6 7; do
  assert_eq "at snode$((r / 2 + 1)) rank $r local $((r % 2)) of 8 job $job procid unset step unset ntasks unset secret unset" \
    "$(rank_lines "$T/job.out" "$r" stdout)" "rank $r's node and variables"
done
assert_contains "$(cat "$T/job.err")" "launcher: slurm (inside Slurm job $job" "the launcher chosen"
assert_contains "$(cat "$T/job.err")" "one srun step for 4 node(s): snode1,snode2,snode3,snode4" \
  "one step for every node"

# --- 2. salloc -N2, real PyTorch across the nodes.
run_capture P --timeout 180 -- salloc -N2 --ntasks-per-node=2 "$FERRYRUN" \
  /usr/bin/python3 "$FERRY_SRC/tests/e2e/programs/torch_allreduce.py" "$tok"
assert_eq 0 "$P_rc" "ferryrun exit code (torch under salloc)"
# Which two nodes salloc gave is Slurm's choice: ranks 0-1 share one, 2-3 the other, and
# MASTER_ADDR is rank 0's node's address.
host_of() { rank_lines "$T/P.out" "$1" stdout | sed -n 's/^torch rank .* host=\(snode[0-9]*\) .*/\1/p'; }
h0=$(host_of 0)
h2=$(host_of 2)
assert_match "$h0" '^snode[0-9]+$' "rank 0's node"
assert_eq "$h0" "$(host_of 1)" "ranks 0 and 1 share a node"
assert_eq "$h2" "$(host_of 3)" "ranks 2 and 3 share a node"
assert_ne "$h0" "$h2" "two nodes"
for r in 0 1 2 3; do
  assert_match "$(rank_lines "$T/P.out" "$r" stdout | grep '^torch rank' || true)" \
    "^torch rank $r/4 ok allreduce=10 weight=.* master=10.233.0.$((10 + ${h0#snode})):" \
    "rank $r's torch result"
done

# --- 3. Inside an allocation, --launcher ssh reaches hosts over SSH.
run_capture S -- salloc -N1 "$FERRYRUN" --verbose --launcher ssh --ssh-config "$SSHCFG" \
  -np 2 -H fnode1:1,fnode2:1 sh -c 'echo "on $(hostname)"; : '"$tok"
assert_eq 0 "$S_rc" "ferryrun --launcher ssh inside salloc"
assert_eq "on fnode1" "$(rank_lines "$T/S.out" 0 stdout)" "rank 0 over SSH"
assert_eq "on fnode2" "$(rank_lines "$T/S.out" 1 stdout)" "rank 1 over SSH"
assert_contains "$S_err" "launcher: ssh (--launcher ssh)" "the launcher asked for"

# --- 4. --launcher slurm outside an allocation.
run_capture O -- env -u SLURM_JOB_ID "$FERRYRUN" --launcher slurm -np 1 true
assert_eq 2 "$O_rc" "--launcher slurm outside an allocation"
assert_eq "ferryrun: --launcher slurm: not inside a Slurm allocation (no SLURM_JOB_ID, or no srun on PATH)" \
  "$O_err" "its one line"

wait_gone "$tok" 5
wait_slurm_idle 10
pass
