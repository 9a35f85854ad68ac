#!/usr/bin/env bash
# 45_binding_taskset: ferryd binds each rank to a block of the cores ferryd itself may use.
# Each host's ferryd starts under a different taskset limit (a wrapper named by the
# hostfile's ferryd= key); every rank's own Cpus_allowed_list and OMP_NUM_THREADS must
# follow from that limit and the host's rank count. A user's OMP_NUM_THREADS is kept.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

wrap() {  # wrap NAME CPUS: a ferryd that starts under taskset -c CPUS
  printf '#!/bin/sh\nexec taskset -c %s %s "$@"\n' "$2" "$FERRYD" >"$T/$1"
  chmod +x "$T/$1"
}
wrap ferryd-cpu0 0
wrap ferryd-cpu01 0,1
printf 'fnode1 slots=1 ferryd=%s\nfnode2 slots=2 ferryd=%s\n' \
  "$T/ferryd-cpu0" "$T/ferryd-cpu01" >"$T/hosts"

report='echo "$(hostname) $LOCAL_RANK $OMP_NUM_THREADS $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
run_capture R --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/hosts" -np 3 \
  sh -c "$report"
assert_eq 0 "$R_rc" "exit status"
assert_eq "fnode1 0 1 0" "$(rank_lines "$T/R.out" 0 stdout)" "rank 0: host, local rank, threads, cpus"
assert_eq "fnode2 0 1 0" "$(rank_lines "$T/R.out" 1 stdout)" "rank 1: first core of fnode2's 0,1"
assert_eq "fnode2 1 1 1" "$(rank_lines "$T/R.out" 2 stdout)" "rank 2: second core of fnode2's 0,1"

# The user's thread count wins; --bind-to none leaves the ferryd's whole set.
run_capture U --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/hosts" -np 3 \
  -x OMP_NUM_THREADS=7 --bind-to none sh -c "$report"
assert_eq 0 "$U_rc" "exit status with --bind-to none"
assert_eq "fnode2 1 7 0-1" "$(rank_lines "$T/U.out" 2 stdout)" "rank 2 unbound, user's threads"

# --report-bindings: one line per rank before it starts.
run_capture B --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/hosts" -np 3 \
  --report-bindings true
assert_eq 0 "$B_rc" "exit status with --report-bindings"
assert_eq 3 "$(grep -c 'local_rank' "$T/B.err" || true)" "report lines"
assert_contains "$B_err" "rank 2 local_rank 1: cpus 1" "rank 2's report"
wait_cluster_idle 5
pass
