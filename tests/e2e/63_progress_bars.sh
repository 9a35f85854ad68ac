#!/usr/bin/env bash
# 63_progress_bars: real tqdm bars on 4 ranks over 2 hosts. On a pseudo-terminal (script(1))
# rank 0's bar is drawn in place while its loop runs (the loop waits until the test saw its
# 5/10 state), and each bar's final state stays; into a pipe and into a file only the final
# state of each bar arrives, tagged, never torn. A prompt (a line without its newline that
# sits) reaches the console while its rank waits.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
"$PY" -c 'import tqdm' 2>/dev/null || fail "python3-tqdm is not installed (scripts/ferry-dev test_pkgs)"
prog=$FERRY_SRC/tests/e2e/programs/tqdm_bars.py
job=("$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2)

# On a terminal: script gives ferryrun a pseudo-terminal as stdout and stderr.
printf -v cmd '%q ' "${job[@]}" "$PY" "$prog" "$T/go"
start_bg S -- script -qfec "$cmd" "$T/tty.out"
if ! wait_for "rank 0's bar at 5/10 on the terminal" 60 \
  grep -qaE '\[0\]<stderr>:r0: +50%' "$T/tty.out"; then
  touch "$T/go"
  fail "rank 0's bar did not reach the terminal while its loop ran"
fi
touch "$T/go"
wait_bg S 60
assert_eq 0 "$S_rc" "exit status on a terminal"
tty=$(tr -d '\r' <"$T/tty.out")
assert_contains "$tty" $'\e[K' "the bar is erased before it is redrawn"
for r in 0 1 2 3; do
  assert_match "$tty" "\[$r\]<stderr>:r$r: 100%\|#+\| 10/10" "rank $r's final state"
  assert_match "$tty" "\[$r\]<stdout>:done $r" "rank $r's done line"
done

# Into a pipe: only the final states, one line per bar, and every other line.
run_capture P -- sh -c "$(printf '%q ' "${job[@]}" "$PY" "$prog") 2>&1 | cat"
assert_eq 0 "$P_rc" "exit status into a pipe"
assert_eq 4 "$(grep -c '<stderr>:r[0-3]:' "$T/P.out")" "bar lines into the pipe (final states only)"
assert_eq 4 "$(grep -cE '<stderr>:r([0-3]): 100%\|#+\| 10/10' "$T/P.out")" "final states"
assert_eq 0 "$(grep -c $'\r' "$T/P.out")" "carriage returns into the pipe"
assert_eq 4 "$(grep -cE '^\[([0-3])\]<stdout>:done \1$' "$T/P.out")" "done lines"

# Into a file, as run_capture writes it.
run_capture F -- "${job[@]}" "$PY" "$prog"
assert_eq 0 "$F_rc" "exit status into a file"
assert_eq 4 "$(grep -c '<stderr>:r[0-3]:' "$T/F.err")" "bar lines into the file"
assert_eq 0 "$(grep -c '50%' "$T/F.err")" "intermediate states into the file"

# A prompt: rank 2 (on fnode2) writes "Continue? " and waits; it shows while it waits.
start_bg Q -- "${job[@]}" sh -c '[ "$RANK" = 2 ] || exit 0; printf "Continue? "
  while [ ! -e "$1" ]; do sleep 0.1; done; echo yes' sh "$T/go2"
if ! wait_for "the prompt on the console" 30 grep -q '^\[2\]<stdout>:Continue? ' "$T/Q.out"; then
  touch "$T/go2"
  fail "a waiting prompt did not reach the console"
fi
touch "$T/go2"
wait_bg Q 30
assert_eq 0 "$Q_rc" "exit status of the prompt job"
assert_eq "[2]<stdout>:Continue? yes" "$Q_out" "the prompt's line, whole"
wait_cluster_idle 10
pass
