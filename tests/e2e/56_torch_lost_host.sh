#!/usr/bin/env bash
# 56_torch_lost_host: the same DDP job on 4 hosts x 2 ranks with --min-hosts 3; mid-job the sshd
# session serving fnode4 is killed. The job goes on with fnode1..3: WORLD_SIZE 6, ranks
# numbered 0..5, resumed from the checkpoint, not counted as a restart; it ends 0, and nothing
# of it is left on fnode4 (nor anywhere).
# shellcheck disable=SC2154
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed"

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/torch_restart.py
mkdir -p "$T/c"
start_bg F -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 8 -H fnode1:2,fnode2:2,fnode3:2,fnode4:2 \
  --min-hosts 3 --kill-grace 2 /usr/bin/python3 "$prog" "$T/c" "$tok" -1 -1 none 1.5
# Mid-job: once the first epoch is checkpointed.
wait_for "the first checkpoint" 120 test -e "$T/c/ckpt.pt"
victim=$(pids_on_host fnode4 "sshd: root@notty")
[[ -n $victim ]] || fail "no sshd session found on fnode4"
# shellcheck disable=SC2086
kill -9 $victim

wait_bg F 180
assert_eq 0 "$F_rc" "ferryrun exit code (a host lost, the others go on)"
assert_contains "$F_err" "ferryrun: attempt 0: lost host fnode4" "the loss is reported"
assert_contains "$F_err" "ferryrun: continuing without fnode4 on 3 hosts, 6 ranks" \
  "the job goes on with the hosts that are left"
assert_not_contains "$F_err" "restarting" "a lost host is not a restart"
for r in 0 1 2 3 4 5; do
  assert_match "$(rank_lines "$T/F.out" "$r" stdout)" \
    "attempt 1 restart 0 world 6 rank $r resumes at epoch [1-3]" "rank $r of the second attempt"
done
assert_eq "" "$(grep -E '^\[[67]\].*attempt 1' "$T/F.out" || true)" "no rank 6 or 7 in attempt 1"
assert_match "$(rank_lines "$T/F.out" 0 stdout | grep '^final' || true)" '^final w=\[' \
  "the job finished on 3 hosts"
# fnode4's ferryd lost its input: it stopped its ranks and exited.
assert_eq "" "$(pids_on_host fnode4 "$tok")" "nothing of the job left on fnode4"
assert_eq "" "$(pids_on_host fnode4 ferryd)" "no ferryd left on fnode4"
wait_gone "$tok" 5
wait_cluster_idle 5
pass
