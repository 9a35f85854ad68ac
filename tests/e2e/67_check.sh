#!/usr/bin/env bash
# 67_check: ferryrun --check on 3 hosts. fnode2's ferryd (a wrapper, the hostfile's ferryd=)
# finds a python3 without torch: one table, one row per host (reachable, ferryd, cores, NUMA,
# accelerators/slots, interface and speed, preflight, versions), torch marked on fnode2 only,
# exit 0 (the job could start), no rank started. Then one host that cannot be reached: its row
# says so, one line says why, exit 1.
# shellcheck disable=SC2154 # R_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed"

# Each host's ferryd finds Debian's python3 first in its PATH (the one with torch), but
# fnode2's, which runs it without site-packages (-S): no torch there.
for kind in torch notorch; do
  mkdir -p "$T/$kind"
  flag=$([[ $kind == notorch ]] && echo " -S" || true)
  printf '#!/bin/sh\nexec /usr/bin/python3%s "$@"\n' "$flag" >"$T/$kind/python3"
  printf '#!/bin/sh\nPATH=%s:$PATH exec %s "$@"\n' "$T/$kind" "$FERRYD" >"$T/ferryd-$kind"
  chmod +x "$T/$kind/python3" "$T/ferryd-$kind"
done
printf 'fnode1 slots=2 ferryd=%s\nfnode2 slots=2 ferryd=%s\nfnode3 slots=2 ferryd=%s\n' \
  "$T/ferryd-torch" "$T/ferryd-notorch" "$T/ferryd-torch" >"$T/hosts.txt"

run_capture C --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/hosts.txt" --check
assert_eq 0 "$C_rc" "ferryrun --check's exit status (the job could start)"
assert_match "$(head -n1 "$T/C.out")" "^host +reachable +ferryd +cores +NUMA +accelerators/slots +interface +preflight +python3 +torch +NCCL +CUDA +MPI$" \
  "the table's header"
assert_eq 3 "$(grep -c '^fnode' "$T/C.out")" "one row per host"
for n in 1 2 3; do
  row=$(grep "^fnode$n " "$T/C.out" || true)
  assert_match "$row" "^fnode$n +yes +[0-9.]+ +[0-9]+ +[0-9]+ +0/2 +eth0 \([0-9]+ Mb/s\) +ok +3\.[0-9.]+ " \
    "fnode$n's row"
done
assert_match "$(grep '^fnode2 ' "$T/C.out")" " absent \* " "fnode2's missing torch is marked"
for n in 1 3; do
  assert_not_contains "$(grep "^fnode$n " "$T/C.out")" "*" "fnode$n has nothing marked"
  assert_not_contains "$(grep "^fnode$n " "$T/C.out")" "absent" "fnode$n has torch"
done
assert_contains "$C_out" "*: differs between the hosts" "the legend"

printf 'fnode1 slots=2 ferryd=%s\nfnode2 slots=2\nfnode3 slots=2 port=2999\n' "$T/ferryd-torch" \
  >"$T/hosts-bad.txt"
run_capture B --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/hosts-bad.txt" \
  --check
assert_eq 1 "$B_rc" "ferryrun --check's exit status with a host down"
assert_match "$(grep '^fnode3 ' "$T/B.out")" "^fnode3 +no +- " "the unreachable host's row"
grep -q '^fnode3.*2999' "$T/B.out" || fail "no line says why fnode3 was not reached"
assert_match "$(grep '^fnode1 ' "$T/B.out")" "^fnode1 +yes +[0-9.]+ " "a reachable host's row"
wait_cluster_idle 10
pass
