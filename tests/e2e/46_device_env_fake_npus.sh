#!/usr/bin/env bash
# 46_device_env_fake_npus: on a host with Ascend NPUs (a fake /dev tree, as ferryd reads
# it through FERRY_TEST_DEVICE_ROOT), every rank gets its NPU and the Ascend rank variables
# from the real ferryrun and ferryd: RANK_ID/RANK_SIZE, ASCEND_RT_VISIBLE_DEVICES, and
# DEVICE_ID/ASCEND_DEVICE_ID as the index inside the visible list. Local host, no SSH.
# shellcheck disable=SC2154,SC2016 # I_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

root=$T/devroot
mkdir -p "$root/dev"
: >"$root/dev/davinci_manager"
for i in 0 1 2 3; do : >"$root/dev/davinci$i"; done
show='echo "$RANK_ID/$RANK_SIZE/$ASCEND_RT_VISIBLE_DEVICES/$DEVICE_ID/$ASCEND_DEVICE_ID"'

# One NPU per rank, isolated: each rank sees only its own, as index 0.
run_capture I --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$root" "$FERRYRUN" -np 4 \
  --isolate-devices sh -c "$show"
assert_eq 0 "$I_rc" "ferryrun exit code (isolated)"
for r in 0 1 2 3; do
  assert_eq "$r/4/$r/0/0" "$(rank_lines "$T/I.out" "$r" stdout)" "rank $r (isolated)"
done

# Shared list: every rank sees all four; DEVICE_ID is its place in that list.
run_capture S --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$root" "$FERRYRUN" -np 2 \
  sh -c "$show"
assert_eq 0 "$S_rc" "ferryrun exit code (shared)"
assert_eq "0/2/0,1,2,3/0/0" "$(rank_lines "$T/S.out" 0 stdout)" "rank 0 (shared)"
assert_eq "1/2/0,1,2,3/1/1" "$(rank_lines "$T/S.out" 1 stdout)" "rank 1 (shared)"

# A user's own DEVICE_ID wins, and then ferry sets neither device variable.
run_capture U --timeout 60 -- env FERRY_TEST_DEVICE_ROOT="$root" "$FERRYRUN" -np 1 \
  -x DEVICE_ID=3 sh -c "$show"
assert_eq 0 "$U_rc" "ferryrun exit code (user DEVICE_ID)"
assert_eq "0/1/0,1,2,3/3/" "$(rank_lines "$T/U.out" 0 stdout)" "rank 0 (user DEVICE_ID)"
pass
