#!/usr/bin/env bash
# 63_hang_report: a real PyTorch gloo job, 2 hosts x 2 ranks, in which rank 3 stays away from
# its all_reduce while the others wait in it.
# 1. --timeout 20: ferryrun prints every rank's state (host, pid, state, CPU, last output) and
#    stack, the hung rank's Python frame in its sleeping function and the others' in
#    all_reduce, then where the ranks are in short (ranks 0-2 in all_reduce, rank 3 in its
#    sleeping function), aborts the job and exits 124; nothing of the job is left.
# 2. SIGQUIT to ferryrun mid-job (rank 1 naps until the report was checked): the same
#    report, and the job goes on to its normal end (exit 0, every rank's result).
# shellcheck disable=SC2154 # R_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed"
command -v gdb >/dev/null || fail "gdb is not installed (scripts/ferry-dev deps test)"

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/torch_hang.py

# block FILE RANK: the report's block of RANK (its line and its stack lines).
block() {
  awk -v head="ferryrun: rank $2 on " '
    index($0, head) == 1 { on = 1; print; next }
    /^ferryrun: / { on = 0 }
    on { print }' "$1"
}

# 1. --timeout
run_capture R --timeout 150 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  --timeout 20 -x HANG_RANK=3 /usr/bin/python3 "$prog" "$tok"
assert_eq 124 "$R_rc" "ferryrun's exit status after --timeout"
assert_contains "$R_err" "ferryrun: --timeout 20 s reached" "the timeout is said"
assert_contains "$R_err" "ferryrun: state of every rank (--timeout 20 s reached" "report title"
for r in 0 1 2 3; do
  host=fnode$((r / 2 + 1))
  b=$(block "$T/R.err" "$r")
  assert_match "$b" "^ferryrun: rank $r on $host: pid [0-9]+, [a-z]+.*, CPU [0-9]+% .*last output [0-9.]+ s ago" \
    "rank $r's state line"
  assert_contains "$b" "native:" "rank $r's native frames"
  assert_contains "$b" "python:" "rank $r's Python frames"
done
assert_contains "$(block "$T/R.err" 3)" "in stay_away_from_all_reduce" \
  "the hung rank's Python frame"
assert_not_contains "$(block "$T/R.err" 3)" "in all_reduce" "the hung rank is not in all_reduce"
for r in 0 1 2; do
  assert_contains "$(block "$T/R.err" "$r")" "in all_reduce" "rank $r waits in all_reduce"
done
assert_contains "$R_err" "ferryrun: where the ranks are:
ferryrun:   ranks 0-2: all_reduce (torch/distributed/distributed_c10d.py), from torch_hang.py:" \
  "the reading: ranks 0-2 in all_reduce, from the program's own frame"
assert_match "$R_err" "ferryrun:   rank 3: torch_hang.py:[0-9]+ in stay_away_from_all_reduce" \
  "the reading: rank 3 elsewhere"
assert_not_contains "$R_err" "exited with" "the stopped ranks are no failure of their own"
wait_gone "$tok" 10
wait_cluster_idle 10

# 2. SIGQUIT: a report, and the job goes on.
start_bg Q -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  -x HANG_RANK=1 -x NAP_S=120 -x NAP_FILE="$T/nap-over" /usr/bin/python3 "$prog" "$tok"
ready_count() { grep -c '<stdout>:ready$' "$T/Q.out"; }
wait_for "every rank ready" 90 eval '[[ $(ready_count) -eq 4 ]]'
kill -QUIT "$Q_pid"
wait_for "the state report" 60 grep -q '^ferryrun: end of the state report$' "$T/Q.err"
assert_contains "$(cat "$T/Q.err")" "(on request (SIGQUIT); the job goes on" "report title"
assert_contains "$(block "$T/Q.err" 1)" "in stay_away_from_all_reduce" "the napping rank's frame"
touch "$T/nap-over"
wait_bg Q 120
assert_eq 0 "$Q_rc" "ferryrun's exit status after the on-demand report"
for r in 0 1 2 3; do
  assert_eq "done 10" "$(rank_lines "$T/Q.out" "$r" stdout | grep '^done' || true)" \
    "rank $r finished its all_reduce"
done
wait_gone "$tok" 10
wait_cluster_idle 10
pass
