#!/usr/bin/env bash
# 57_restart_always_fails: a rank that raises in every attempt, with --max-restarts 2: exactly
# three attempts, then the failure's status; the report shows the Python error the rank's
# @record wrote to its TORCHELASTIC_ERROR_FILE. No process is left anywhere.
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
assert_eq 1 "$F_rc" "the last attempt's status"
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
