#!/usr/bin/env bash
# 39_hvd_elastic_cooldown: a blacklisted host comes back after its cooldown. The elastic script of
# 36 under `horovodrun --host-discovery-script --blacklist-cooldown-range 2 3` on fnode1 and
# fnode2 (2 slots each). At epoch 1 the worker fnode2[1] exits 3: fnode2 is blacklisted, the 2
# workers of fnode1 go on as a world of 2. Its cooldown is 3 s (horovod: LOW x 2 plus jitter,
# within [LOW, HIGH]); the discovery script still lists fnode2, so once the cooldown is over it is
# a new host again: rank 0 hears of it, the workers reset at their next commit, fnode2 gets 2 new
# workers (started as [4] and [5], ranks 2 and 3 and so tagged: a host back goes last), and all 4
# finish in sync. The
# job ends 0 and nothing of it is left on any host.
# shellcheck disable=SC2154,SC2001
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
require_horovod

elastic_setup fnode1:2 fnode2:2

run_capture E --timeout 240 -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 4 --min-np 2 \
  --gloo-timeout-seconds 15 --blacklist-cooldown-range 2 3 \
  --host-discovery-script "$T/discover.sh" \
  "$HOROVOD_PY" "$prog" "$T/m" 12 1 fnode2:1@1 "$tok"
assert_eq 0 "$E_rc" "ferryrun exit code (a host failed, came back, all finished)"
assert_contains "$E_err" "rank 3 on host fnode2 (local rank 1, pid" "the failed worker is named"
assert_contains "$E_err" "elastic: reset 1: 2 workers on 1 host" "the job goes on without fnode2"
assert_contains "$E_err" "elastic: reset 2: 4 workers on 2 hosts" "fnode2 is back after 3 s"
assert_eq 2 "$(grep -c '^\[[01]\]<stdout>:reset size 2 rank [01]$' "$T/E.out")" \
  "fnode1's workers reset to a world of 2"
assert_eq 2 "$(grep -c '^\[[01]\]<stdout>:reset size 4 rank [01]$' "$T/E.out")" \
  "then to a world of 4, keeping ranks 0 and 1"
# fnode2's first workers are gone (rank 3 died, rank 2 was stopped): 4 finals, no fifth, two of
# them from the new workers, which start no reset.
assert_elastic_finals "$T/E.out" 4
assert_tags_are_ranks "$T/E.out"
assert_eq 2 "$(grep -c '^\[[23]\]<stdout>:final size 4 rank [23] ' "$T/E.out")" \
  "the new workers on fnode2 (started after the cooldown) finished as ranks 2 and 3"
assert_eq "" "$(grep -E '^\[[23]\]<stdout>:reset size 4 ' "$T/E.out" || true)" \
  "ranks 2 and 3 are new workers: none of them reset"
assert_eq 4 "$(grep -c '^\[[0-5]\]<stdout>:epoch 12 size 4 ' "$T/E.out")" \
  "the last epoch ran on 4 workers"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
