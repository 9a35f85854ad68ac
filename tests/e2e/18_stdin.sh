#!/usr/bin/env bash
# 18_stdin: ferryrun's stdin goes to rank 0 only (here on a remote host), byte
# for byte; every other rank reads EOF at once.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
printf 'hello\n' >"$T/in.txt"
run_capture R --timeout 60 --stdin "$T/in.txt" -- "$FERRYRUN" --ssh-config "$SSHCFG" \
  -np 2 -H fnode1:2 sh -c 'read x; echo "got:$x"; : "$0"' "$tok"
assert_eq 0 "$R_rc" "ferryrun exit code"
assert_eq "got:hello" "$(rank_lines "$T/R.out" 0 stdout)" "rank 0 stdin"
assert_eq "got:" "$(rank_lines "$T/R.out" 1 stdout)" "rank 1 stdin (EOF)"

# 2 MB of binary data to rank 0 on fnode1; rank 1 on fnode2 sees none.
head -c 2000000 /dev/urandom >"$T/in.bin"
want=$(sha256sum <"$T/in.bin" | cut -d' ' -f1)
empty=$(sha256sum </dev/null | cut -d' ' -f1)
run_capture B --timeout 60 --stdin "$T/in.bin" -- "$FERRYRUN" --ssh-config "$SSHCFG" \
  -np 2 -H fnode1:1,fnode2:1 sh -c 'sha256sum | cut -d" " -f1; : "$0"' "$tok"
assert_eq 0 "$B_rc" "ferryrun exit code (binary stdin)"
assert_eq "$want" "$(rank_lines "$T/B.out" 0 stdout)" "sha256 of the stdin rank 0 read"
assert_eq "$empty" "$(rank_lines "$T/B.out" 1 stdout)" "sha256 of the stdin rank 1 read"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
