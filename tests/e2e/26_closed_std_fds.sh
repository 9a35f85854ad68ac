#!/usr/bin/env bash
# 26_closed_std_fds: ferryrun started with stdin, stdout or stderr closed (a shell's <&-,
# >&-, 2>&-). The first fd ferryrun opens must not become one of them: with stdin closed,
# rank 0 reads nothing (not the counter of ferryrun's eventfd); with stdout closed, rank
# output is not written into ferryrun's own fds and the job still ends well; with all three
# closed, the local ferryd and its ranks run the job as usual.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster

# closed RC_VAR OUT ERR REDIRECTS -- cmd...: runs cmd with the named fds closed (REDIRECTS:
# any of "0", "1", "2"); the others go to $T/OUT and $T/ERR.
closed() {
  local var=$1 out=$T/$2 err=$T/$3 which=$4 rc=0
  shift 5
  LAST_CAPTURE=""
  case $which in
    0) timeout -k 5 60 "$@" <&- >"$out" 2>"$err" || rc=$? ;;
    1) timeout -k 5 60 "$@" </dev/null >&- 2>"$err" || rc=$? ;;
    012) timeout -k 5 60 "$@" <&- >&- 2>&- || rc=$? ;;
  esac
  printf -v "$var" '%s' "$rc"
}

# stdin closed: rank 0 reads end of file at once.
closed IN_rc in.out in.err 0 -- "$FERRYRUN" -np 1 \
  "$PY" -c 'import sys; d = sys.stdin.buffer.read(); print("read", len(d), d.hex())'
assert_eq 0 "$IN_rc" "exit status with stdin closed"
assert_eq "[0]<stdout>:read 0 " "$(cat "$T/in.out")" "what rank 0 read from a closed stdin"

# stdout closed: stderr lines still come, the per-rank file has the stdout bytes, exit 0.
closed OUT_rc out.out out.err 1 -- "$FERRYRUN" -np 2 --output-filename "$T/o1" \
  sh -c 'i=0; while [ $i -lt 200 ]; do echo "out $i"; i=$((i+1)); done; echo "err $RANK" >&2'
assert_eq 0 "$OUT_rc" "exit status with stdout closed"
assert_eq "[0]<stderr>:err 0
[1]<stderr>:err 1" "$(sort "$T/out.err")" "stderr with stdout closed"
assert_eq 200 "$(wc -l <"$T/o1/rank.0/stdout")" "rank 0's stdout file with stdout closed"
assert_eq "out 199" "$(tail -n 1 "$T/o1/rank.1/stdout")" "rank 1's last line"

# All three closed: the job runs and ends well; only the per-rank files tell.
closed ALL_rc all.out all.err 012 -- "$FERRYRUN" -np 2 --output-filename "$T/o3" \
  sh -c 'echo "out $RANK"; echo "err $RANK" >&2; wc -c'
assert_eq 0 "$ALL_rc" "exit status with stdin, stdout and stderr closed"
for r in 0 1; do
  assert_eq "out $r
0" "$(cat "$T/o3/rank.$r/stdout")" "rank $r's stdout with everything closed"
  assert_eq "err $r" "$(cat "$T/o3/rank.$r/stderr")" "rank $r's stderr with everything closed"
done

# ferryd on its own, its fds closed: it says nothing harmful and exits at once (stdin reads
# as end of file), instead of serving whatever fd took the place of its stdin.
rc=0
timeout -k 5 10 "$FERRYD" --stdio <&- >&- 2>&- || rc=$?
assert_eq 1 "$rc" "ferryd's exit status with its fds closed (end of input before a job)"
wait_cluster_idle 5
pass
