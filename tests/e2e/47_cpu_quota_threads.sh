#!/usr/bin/env bash
# 47_cpu_quota_threads: a CPU quota (docker --cpus, a Kubernetes CPU limit) lowers the
# thread variables the real ferryd gives each rank, not its cpus. ferryd reads its cgroup
# through FERRY_TEST_DEVICE_ROOT, here fake cgroup v2 and v1 trees holding only the cgroup files;
# a tree without them (as in 46) means no quota. Local host, no SSH.
# shellcheck disable=SC2154,SC2016 # I_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

show='echo "$OMP_NUM_THREADS/$MKL_NUM_THREADS $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'

# No cgroup files: the threads follow the cores ferryd may use, as before.
plain=$T/plain
mkdir -p "$plain/dev"
run_capture N --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$plain" "$FERRYRUN" -np 1 sh -c "$show"
assert_eq 0 "$N_rc" "ferryrun exit code (no quota)"
read -r free_threads free_cpus <<<"$(rank_lines "$T/N.out" 0 stdout)"
free_threads=${free_threads%%/*}
assert_match "$free_threads" '^[0-9]+$' "threads without a quota"
assert_not_contains "$N_err" "CPU quota" "stderr without a quota"

# cgroup v2, a container with a private cgroup namespace and --cpus=1.
v2=$T/v2
mkdir -p "$v2/proc/self" "$v2/sys/fs/cgroup"
echo "0::/" >"$v2/proc/self/cgroup"
echo "100000 100000" >"$v2/sys/fs/cgroup/cpu.max"
run_capture Q --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$v2" "$FERRYRUN" -np 1 --verbose \
  --report-bindings sh -c "$show"
assert_eq 0 "$Q_rc" "ferryrun exit code (v2 quota)"
assert_eq "1/1 $free_cpus" "$(rank_lines "$T/Q.out" 0 stdout)" "threads and cpus under a 1-CPU quota"
assert_contains "$Q_err" "CPU quota 1 CPU (cgroup v2 /sys/fs/cgroup/cpu.max: 100000/100000)" \
  "--verbose names the quota"
if ((free_threads > 1)); then
  assert_contains "$Q_err" "rank 0 local_rank 0: " "report line"
  assert_contains "$Q_err" ", 1 thread (CPU quota 1)" "report line names the quota"
else
  echo "note: ferryd may use 1 core here; the quota cannot lower the thread count"
fi

# The user's value still wins.
run_capture U --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$v2" "$FERRYRUN" -np 1 \
  -x OMP_NUM_THREADS=5 sh -c "$show"
assert_eq 0 "$U_rc" "ferryrun exit code (user OMP_NUM_THREADS)"
assert_eq "5/1 $free_cpus" "$(rank_lines "$T/U.out" 0 stdout)" "user's OMP_NUM_THREADS kept"

# cgroup v1 as Docker shows it: the host's path in /proc/self/cgroup, the container's
# cgroup at the mount root; 1.5 CPUs for 2 ranks is less than one CPU each.
v1=$T/v1
mkdir -p "$v1/proc/self" "$v1/sys/fs/cgroup/cpu,cpuacct"
printf '5:memory:/docker/0123abcd\n4:cpu,cpuacct:/docker/0123abcd\n' >"$v1/proc/self/cgroup"
echo 150000 >"$v1/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"
echo 100000 >"$v1/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"
run_capture V --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$v1" "$FERRYRUN" -np 2 sh -c "$show"
assert_eq 0 "$V_rc" "ferryrun exit code (v1 quota)"
for r in 0 1; do
  assert_match "$(rank_lines "$T/V.out" "$r" stdout)" '^1/1 ' "rank $r threads under 1.5 CPUs"
done
if ((free_threads > 1)); then  # on one core the cores' own oversubscription warning comes first
  assert_contains "$V_err" "2 local ranks on a 1.5-CPU quota: oversubscribed" "v1 quota warning"
  assert_contains "$V_err" "cgroup v1 /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us" "v1 source"
fi
pass
