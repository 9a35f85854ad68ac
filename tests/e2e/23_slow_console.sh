#!/usr/bin/env bash
# 23_slow_console: a console that stops reading for 10 s (ferryrun's stdout a full pipe)
# holds the job back but breaks nothing. With --heartbeat 1 a host silent for 3 s is lost
# and a ferryd that hears nothing from ferryrun for 3 s stops its ranks; neither may
# happen: ferryrun exits 0 and every rank's output arrives whole, in order, tagged. Nor
# may ferryrun hoard what waits: it stops reading the hosts, so its memory stays bounded.
# One host is this machine (a forked ferryd, no SSH), two are reached over SSH. Twice:
# the SSH sessions on ferryrun's loop, and on I/O threads of their own.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

[[ -x /usr/bin/time ]] || fail "/usr/bin/time not found (apt-get install time)"

tok=$(unique_token)
lines=1200000  # about 12 MB a rank: far more than the pipe, ferryrun and ferryd hold
# The SSH sessions on ferryrun's loop (this machine's default), then on I/O threads of
# their own, which must stop taking a host's output as well.
for threads in -1 2; do
  export FERRY_SSH_IO_THREADS=$threads
  run_capture R --timeout 120 -- bash -c 'set -o pipefail; "$@" | (sleep 10; cat)' slow-console \
    /usr/bin/time -f 'ferryrun peak RSS %M KiB' "$FERRYRUN" --ssh-config "$SSHCFG" --heartbeat 1 \
    -np 3 -H localhost:1,fnode1:1,fnode2:1 sh -c 'seq -f "r$RANK %.0f" 1 "$0"; : "$1"' "$lines" "$tok"
  echo "23_slow_console: 3 x $lines lines behind a 10 s stall in ${R_secs}s (FERRY_SSH_IO_THREADS=$threads);" \
    "$(grep -a 'peak RSS' "$T/R.err" || true)" >&2

  assert_eq 0 "$R_rc" "ferryrun exit code"
  assert_not_contains "$R_err" "lost host" "ferryrun's stderr"
  assert_not_contains "$R_err" "heartbeat" "ferryrun's stderr"
  assert_not_contains "$R_err" "no word from ferryrun" "ferryrun's stderr"
  assert_eq 0 "$(grep -cav '^\[[012]\]<stdout>:' "$T/R.out" || true)" "untagged or torn lines"
  # Reading on regardless, ferryrun would hold nearly all of it (over 100 MiB); it stops
  # reading the hosts once 8 MiB wait for the console.
  rss=$(sed -n 's/^ferryrun peak RSS \([0-9]*\) KiB$/\1/p' "$T/R.err")
  [[ -n $rss ]] || fail "no peak RSS line from /usr/bin/time"
  ((rss < 64 * 1024)) || fail "ferryrun's peak RSS was $rss KiB: it kept reading the hosts"
  for r in 0 1 2; do
    want=$(seq -f "r$r %.0f" 1 "$lines" | sha256sum)
    got=$(rank_lines "$T/R.out" "$r" stdout | sha256sum)
    assert_eq "$want" "$got" "sha256 of rank $r's stdout"
  done
done
unset FERRY_SSH_IO_THREADS

wait_gone "$tok" 5
wait_cluster_idle 5
pass
