#!/usr/bin/env bash
# 14_exit_codes: the job's exit code is the first failing rank's (128+signal
# for a signal), the report names the rank, its host and the code or signal,
# and the other ranks are terminated: SIGTERM, then SIGKILL after --kill-grace.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

# --- rank 3 of 4 exits 7 while the others sleep.
tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
run_capture A --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  sh -c 'if [ "$RANK" = 3 ]; then exit 7; fi; exec "$0" 1000' "$sleeper"
assert_eq 7 "$A_rc" "ferryrun exit code when rank 3 exits 7"
report=$(grep -E 'rank 3([^0-9]|$)' "$T/A.err" || true)
[[ -n $report ]] || fail "stderr has no line naming 'rank 3'"
assert_contains "$A_err" fnode2 "failure report (host of rank 3)"
grep -qE 'exit code 7|exited with status 7' "$T/A.err" ||
  fail "failure report does not say 'exit code 7' or 'exited with status 7'"
wait_gone "$tok" 5

# --- rank 1 of 2 dies of SIGSEGV.
tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
run_capture S --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  --wdir "$T" sh -c 'if [ "$RANK" = 1 ]; then ulimit -c 0; kill -SEGV $$; fi; exec "$0" 1000' "$sleeper"
assert_eq 139 "$S_rc" "ferryrun exit code when a rank dies of SIGSEGV"
assert_contains "$S_err" SIGSEGV "failure report"
grep -qE 'rank 1([^0-9]|$)' "$T/S.err" || fail "failure report does not name 'rank 1'"
assert_contains "$S_err" fnode2 "failure report (host of rank 1)"
wait_gone "$tok" 5

# --- a rank ignoring SIGTERM is SIGKILLed --kill-grace seconds later. Rank 1
# ignores TERM (inherited by the sleep it execs), then signals readiness; rank 0
# waits for that and exits 3.
tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
ready=$T/ready-$tok
run_capture G --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  --kill-grace 1 sh -c '
    if [ "$RANK" = 1 ]; then trap "" TERM; touch "$1"; exec "$0" 1000; fi
    i=0; while [ ! -e "$1" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
    exit 3' "$sleeper" "$ready"
end_ms=$(_now_ms)
assert_eq 3 "$G_rc" "ferryrun exit code when rank 0 exits 3"
[[ -e $ready ]] || fail "rank 1 never became ready"
ready_ms=$(($(stat -c %.3Y "$ready" | tr -d '.,')))
waited=$((end_ms - ready_ms))
((waited >= 800)) || fail "ferryrun ended ${waited} ms after the TERM-ignoring rank was ready: it must wait --kill-grace 1 before SIGKILL"
((waited <= 15000)) || fail "ferryrun took ${waited} ms to end with --kill-grace 1"
wait_gone "$tok" 5

wait_cluster_idle 5
pass
