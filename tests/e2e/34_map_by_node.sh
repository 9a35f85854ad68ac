#!/usr/bin/env bash
# 34_map_by_node: mpirun's --map-by node puts rank r on host r mod hosts,
# -N n puts exactly n ranks on each host, and --rank-by node numbers
# slot-filled hosts round-robin; LOCAL_RANK, LOCAL_WORLD_SIZE and the Horovod
# cross coordinates follow the placement.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3

tok=$(unique_token)
ln -s "$FERRYRUN" "$T/mpirun"
script='echo "$RANK $(hostname) $LOCAL_RANK $LOCAL_WORLD_SIZE $HOROVOD_CROSS_RANK $HOROVOD_CROSS_SIZE"; : "$0"'

# --map-by node: 0→fnode1 1→fnode2 2→fnode3 3→fnode1 4→fnode2
run_capture N -- "$T/mpirun" --ssh-config "$SSHCFG" -np 5 -H fnode1:2,fnode2:2,fnode3:2 \
  --map-by node sh -c "$script" "$tok"
assert_eq 0 "$N_rc" "mpirun --map-by node exit code"
assert_eq "0 fnode1 0 2 0 3
1 fnode2 0 2 1 3
2 fnode3 0 1 2 3
3 fnode1 1 2 0 2
4 fnode2 1 2 1 2" "$(sort -n "$T/N.out")" "RANK host LOCAL_RANK LOCAL_WORLD_SIZE CROSS_RANK CROSS_SIZE"

# -N 1 with slots to spare: one rank per host, three in all.
run_capture P -- "$T/mpirun" --ssh-config "$SSHCFG" -N 1 -H fnode1:2,fnode2:2,fnode3:2 \
  sh -c "$script" "$tok"
assert_eq 0 "$P_rc" "mpirun -N 1 exit code"
assert_eq "0 fnode1 0 1 0 3
1 fnode2 0 1 1 3
2 fnode3 0 1 2 3" "$(sort -n "$T/P.out")" "ranks with -N 1"

# ferryrun --rank-by node over slot-filled hosts: a gets 2, b gets 1.
run_capture R -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 3 -H fnode1:2,fnode2:2 --rank-by node \
  --tag-style none sh -c "$script" "$tok"
assert_eq 0 "$R_rc" "ferryrun --rank-by node exit code"
assert_eq "0 fnode1 0 2 0 2
1 fnode2 0 1 1 2
2 fnode1 1 2 0 1" "$(sort -n "$T/R.out")" "ranks with --rank-by node"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
