#!/usr/bin/env bash
# 32_slurm: inside a (fake) Slurm allocation, with no host option, ferryrun
# takes the hosts from SLURM_JOB_NODELIST and their slots from
# SLURM_TASKS_PER_NODE, in every personality; -H still wins; bad Slurm
# variables are one line naming the variable, exit 2. The allocation is only
# its variables, its "nodes" the SSH test cluster: --launcher ssh (the real
# Slurm and its srun launcher are the 8N_ scenarios').
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3

tok=$(unique_token)
ln -s "$FERRYRUN" "$T/mpirun"
slurm=(env SLURM_JOB_NODELIST='fnode[1-3]' SLURM_TASKS_PER_NODE='2(x2),1' SLURM_JOB_ID=4242)
ssh=(--launcher ssh --ssh-config "$SSHCFG")
script='echo "$RANK $LOCAL_RANK $(hostname) $WORLD_SIZE"; : "$0"'
expected="0 0 fnode1 5
1 1 fnode1 5
2 0 fnode2 5
3 1 fnode2 5
4 0 fnode3 5"

run_capture R -- "${slurm[@]}" "$FERRYRUN" "${ssh[@]}" sh -c "$script" "$tok"
assert_eq 0 "$R_rc" "ferryrun exit code in the allocation"
assert_eq "$expected" "$(sed 's/^\[[0-9]*\]<stdout>://' "$T/R.out" | sort -n)" "ranks from Slurm"

run_capture M -- "${slurm[@]}" "$T/mpirun" "${ssh[@]}" sh -c "$script" "$tok"
assert_eq 0 "$M_rc" "mpirun exit code in the allocation"
assert_eq "$expected" "$(sort -n "$T/M.out")" "mpirun ranks from Slurm (untagged)"

run_capture H -- "${slurm[@]}" "$FERRYRUN" "${ssh[@]}" -H fnode3:2 sh -c "$script" "$tok"
assert_eq 0 "$H_rc" "ferryrun exit code with -H in the allocation"
assert_eq "0 0 fnode3 2
1 1 fnode3 2" "$(sed 's/^\[[0-9]*\]<stdout>://' "$T/H.out" | sort -n)" "-H wins over Slurm"

run_capture B -- env SLURM_JOB_NODELIST='fnode[1-3]' SLURM_TASKS_PER_NODE='2(x2)' \
  "$FERRYRUN" --ssh-config "$SSHCFG" true
assert_eq 2 "$B_rc" "exit code with mismatched Slurm variables"
assert_match "$B_err" "^ferryrun: SLURM_TASKS_PER_NODE '2\(x2\)' gives 2 counts for the 3 nodes" "error line"
assert_eq 1 "$(wc -l <"$T/B.err")" "error lines"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
