#!/usr/bin/env bash
# 48_device_env_per_host: a job file's per-host devices (`[[hosts]] devices = [...]`, the
# translation of DeepSpeed's `--include a:0,1@b:2,3`) reach each host's ferryd: the ranks
# of each host see that host's devices, not the job's `[defaults] devices`; `--devices` on
# the command line replaces both. Two hosts that are both this machine (`localhost` and
# `127.0.0.1`: two names, no SSH), each with a fake tree of four Ascend NPUs
# (FERRY_TEST_DEVICE_ROOT, as in 46).
# shellcheck disable=SC2154,SC2016 # I_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

root=$T/devroot
mkdir -p "$root/dev"
: >"$root/dev/davinci_manager"
for i in 0 1 2 3; do : >"$root/dev/davinci$i"; done

cat >"$T/job.toml" <<'TOML'
command = ["sh", "-c", "echo \"$ASCEND_RT_VISIBLE_DEVICES/$DEVICE_ID\""]

[defaults]
devices = [3]        # the job's list: every host that names none of its own

[[hosts]]
name = "localhost"
slots = 2
devices = [0, 1]

[[hosts]]
name = "127.0.0.1"
slots = 2
devices = [2, 3]
TOML

# Each host's ranks share that host's list; DEVICE_ID is the rank's place in it.
run_capture P --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$root" "$FERRYRUN" --config "$T/job.toml"
assert_eq 0 "$P_rc" "ferryrun exit code (per-host devices)"
assert_eq "0,1/0" "$(rank_lines "$T/P.out" 0 stdout)" "rank 0 on localhost"
assert_eq "0,1/1" "$(rank_lines "$T/P.out" 1 stdout)" "rank 1 on localhost"
assert_eq "2,3/0" "$(rank_lines "$T/P.out" 2 stdout)" "rank 2 on 127.0.0.1"
assert_eq "2,3/1" "$(rank_lines "$T/P.out" 3 stdout)" "rank 3 on 127.0.0.1"

# --devices on the command line is every host's list, over the job file's.
run_capture C --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$root" "$FERRYRUN" --config "$T/job.toml" \
  --devices 1,2
assert_eq 0 "$C_rc" "ferryrun exit code (--devices)"
for r in 0 1 2 3; do
  assert_eq "1,2/$((r % 2))" "$(rank_lines "$T/C.out" "$r" stdout)" "rank $r with --devices"
done
pass
