#!/usr/bin/env bash
# 57_restart_always_fails: a rank that raises in every attempt, with --max-restarts 2: exactly
# three attempts, then the failure's status; the report shows the Python error the rank's
# @record wrote to its TORCHELASTIC_ERROR_FILE. No process is left anywhere.
# The raising rank's own status is Python's (1), or 134 when the interpreter aborts at exit
# (SIGABRT from torch's gloo threads): not ferry's to choose. What ferry controls is checked:
# ferryrun exits with the status its own report of the last attempt's failure gives.
# shellcheck disable=SC2154
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed"

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/torch_restart.py
mkdir -p "$T/d"
run_capture F --timeout 240 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  --max-restarts 2 /usr/bin/python3 "$prog" "$T/d" "$tok" 1 0 raise-always
# "ferryrun: attempt 2: rank R on host H (local rank L, pid P) exited with status S." or
# "... was killed by SIGABRT (Aborted)."
report=$(grep -m1 '^ferryrun: attempt 2: rank ' "$T/F.err" || true)
[[ -n $report ]] || fail "no failure report for attempt 2"
if [[ $report =~ \)\ exited\ with\ status\ ([0-9]+)\.$ ]]; then
  reported=${BASH_REMATCH[1]}
elif [[ $report =~ \)\ was\ killed\ by\ SIGABRT\  ]]; then
  reported=134
else
  fail "attempt 2's failure is neither an exit nor SIGABRT: $report"
fi
assert_match "$reported" '^(1|134)$' "the raising rank's status (Python's error exit, or its abort)"
assert_eq "$reported" "$F_rc" "ferryrun's status: the last attempt's failing rank's, as reported"
assert_eq 3 "$(rank_lines "$T/F.out" 0 stdout | grep -c '^attempt [0-9] restart' || true)" \
  "rank 0 started exactly three times"
assert_contains "$F_err" "ferryrun: restarting (1 of 2) on 2 hosts, 4 ranks" "first restart"
assert_contains "$F_err" "ferryrun: restarting (2 of 2) on 2 hosts, 4 ranks" "second restart"
assert_not_contains "$F_err" "restarting (3 of 2)" "no third restart"
assert_contains "$F_err" "ferryrun: not restarting: no restarts left (--max-restarts 2)" \
  "why the job ends"
assert_contains "$F_err" "ferryrun: attempt 2: rank " "the last attempt's failure"
assert_contains "$F_err" "  error: RuntimeError: " "the error file's message in the report"
assert_contains "$F_err" "  traceback:" "and its traceback"
wait_gone "$tok" 5
wait_cluster_idle 5
pass
