#!/usr/bin/env bash
# 11_local_env: ranks on localhost are started without SSH and get their
# placement variables, -x variables, --wdir, and ferryrun's cwd by default.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster

# Placement variables, one rank per line.
run_capture R -- "$FERRYRUN" -np 4 -H localhost:4 \
  "$PY" -c 'import os;print(os.environ["RANK"], os.environ["LOCAL_RANK"], os.environ["WORLD_SIZE"])'
assert_eq 0 "$R_rc" "ferryrun exit code"
assert_lines_count "$T/R.out" 4 "stdout lines"
for r in 0 1 2 3; do
  assert_eq "$r $r 4" "$(rank_lines "$T/R.out" "$r" stdout)" "RANK LOCAL_RANK WORLD_SIZE of rank $r"
done

# -x VAR=val sets, -x VAR passes ferryrun's own value.
tok=$(unique_token)
run_capture X -- env HOME="/nonexistent/home-$tok" "$FERRYRUN" -np 2 -H localhost:2 \
  -x FOO=bar -x HOME sh -c 'echo "FOO=$FOO HOME=$HOME"'
assert_eq 0 "$X_rc" "ferryrun exit code with -x"
for r in 0 1; do
  assert_eq "FOO=bar HOME=/nonexistent/home-$tok" "$(rank_lines "$T/X.out" "$r" stdout)" "-x variables of rank $r"
done

# --wdir D
run_capture W -- "$FERRYRUN" -np 2 -H localhost:2 --wdir /tmp pwd
assert_eq 0 "$W_rc" "ferryrun exit code with --wdir"
for r in 0 1; do
  assert_eq /tmp "$(rank_lines "$T/W.out" "$r" stdout)" "pwd of rank $r with --wdir /tmp"
done

# Default working directory: ferryrun's own.
mkdir "$T/cwd-$tok"
want=$(cd -P "$T/cwd-$tok" && pwd)
run_capture D -- sh -c 'cd "$1" && shift && exec "$@"' sh "$T/cwd-$tok" \
  "$FERRYRUN" -np 2 -H localhost:2 pwd
assert_eq 0 "$D_rc" "ferryrun exit code without --wdir"
for r in 0 1; do
  assert_eq "$want" "$(rank_lines "$T/D.out" "$r" stdout)" "default working directory of rank $r"
done

wait_gone "$tok" 5
pass
