#!/usr/bin/env bash
# 55_torch_restart: a real PyTorch DDP job (gloo, 4 hosts x 2 ranks) that checkpoints every
# epoch; rank 3 calls os._exit(1) at epoch 2 of the first attempt. With --max-restarts 1 the
# whole job starts again over the same connections, resumes from the checkpoint and ends 0
# with the weights of a run without the failure; each rank's file gets an attempt marker.
# Without --max-restarts the job fails as before. Nothing is left anywhere.
# shellcheck disable=SC2154 # R_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed"

tok=$(unique_token)
hosts=fnode1:2,fnode2:2,fnode3:2,fnode4:2
prog=$FERRY_SRC/tests/e2e/programs/torch_restart.py
mkdir -p "$T/ref" "$T/a" "$T/b"
job() { echo "$FERRYRUN" --ssh-config "$SSHCFG" -np 8 -H "$hosts"; }

# The weights of a run without the failure.
# shellcheck disable=SC2046
run_capture R --timeout 180 -- $(job) /usr/bin/python3 "$prog" "$T/ref" "$tok" 3 2 none
assert_eq 0 "$R_rc" "ferryrun exit code (reference run)"
ref=$(rank_lines "$T/R.out" 0 stdout | grep '^final w=' || true)
assert_match "$ref" '^final w=\[' "the reference run's weights"

# 1. One restart allowed: rank 3 fails once, the job resumes from epoch 2 and ends 0.
# shellcheck disable=SC2046
run_capture A --timeout 240 -- $(job) --max-restarts 1 --output-filename "$T/files" \
  /usr/bin/python3 "$prog" "$T/a" "$tok" 3 2 exit-once
assert_eq 0 "$A_rc" "ferryrun exit code (one restart)"
assert_contains "$A_err" "ferryrun: attempt 0: rank " "the failure report names the attempt"
assert_contains "$A_err" "ferryrun: restarting (1 of 1) on 4 hosts, 8 ranks" "the restart line"
assert_contains "$(rank_lines "$T/A.out" 3 stdout)" "rank 3 fails now (os._exit)" "rank 3 failed"
for r in 0 1 2 3 4 5 6 7; do
  assert_contains "$(rank_lines "$T/A.out" "$r" stdout)" \
    "attempt 1 restart 1 world 8 rank $r resumes at epoch 2" "rank $r of the second attempt"
done
assert_eq "$ref" "$(rank_lines "$T/A.out" 0 stdout | grep '^final w=' || true)" \
  "the weights after a restart are those of a run without the failure"
assert_eq 1 "$(grep -c -- '^--- ferry: attempt 1 ---$' "$T/files/rank.3/stdout")" \
  "rank 3's file holds both attempts, with one marker"
assert_contains "$(cat "$T/files/rank.3/stdout")" "rank 3 fails now" "the first attempt's output kept"

# 2. No restarts: the first failure ends the job, as before.
# shellcheck disable=SC2046
run_capture B --timeout 180 -- $(job) /usr/bin/python3 "$prog" "$T/b" "$tok" 3 2 exit-once
assert_eq 1 "$B_rc" "ferryrun exit code (no restarts)"
assert_not_contains "$B_err" "restarting" "no restart without --max-restarts"
assert_not_contains "$B_out" "attempt 1" "no second attempt"
echo "reference ${R_secs}s, with one restart ${A_secs}s"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
