#!/usr/bin/env bash
# 35_program_names: ferryrun called as mpirun or horovodrun names itself so in
# every message it writes (failure report, connection error, bad hostfile), and
# per-rank output files are numbered with the digits of the ranks launched, not
# of the slots the hosts offer (-N 1 on 12 slots gives rank.0, not rank.00).
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3

tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
ln -s "$FERRYRUN" "$T/mpirun"
ln -s "$FERRYRUN" "$T/horovodrun"

# only_lines_of FILE PREFIX: FILE is not empty and every line starts with PREFIX.
only_lines_of() {
  [[ -s $1 ]] || fail "$(basename "$1") is empty"
  assert_eq 0 "$(grep -cv "^$2" "$1" || true)" "lines of $(basename "$1") not starting '$2'"
}

# --- the failure report of a rank that exits 3, as mpirun.
run_capture F -- "$T/mpirun" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 --kill-grace 1 \
  sh -c 'if [ "$RANK" = 1 ]; then exit 3; fi; "$0" 30' "$sleeper"
assert_eq 3 "$F_rc" "mpirun exit code"
assert_contains "$F_err" "mpirun: rank 1 on host fnode2 (local rank 0" "mpirun's failure report"
assert_not_contains "$F_err" "ferryrun" "mpirun's stderr"
wait_gone "$tok" 10

# --- a connection error (a closed port), as horovodrun: every line is horovodrun's.
run_capture C --timeout 60 -- "$T/horovodrun" --ssh-config "$SSHCFG" -p 2999 --start-timeout 10 \
  -np 1 -H 10.231.0.12:1 hostname
assert_eq 1 "$C_rc" "horovodrun exit code with a closed port"
only_lines_of "$T/C.err" "horovodrun: "
assert_contains "$C_err" "2999" "the connection error"

# --- a bad hostfile line, as mpirun.
printf 'fnode1 slots=2\nfnode2 slots=x\n' >"$T/bad"
run_capture B -- "$T/mpirun" -hostfile "$T/bad" -np 2 hostname
assert_eq 2 "$B_rc" "mpirun exit code with a bad hostfile"
only_lines_of "$T/B.err" "mpirun: $T/bad:2: "

# --- -N 1 on hosts with 12 slots: 3 ranks, so one digit in the file names.
run_capture N -- "$FERRYRUN" --ssh-config "$SSHCFG" -N 1 -H fnode1:4,fnode2:4,fnode3:4 \
  --output-filename "$T/n" sh -c 'echo "r$RANK"; : "$0"' "$tok"
assert_eq 0 "$N_rc" "ferryrun -N 1 exit code"
assert_eq "rank.0 rank.1 rank.2" "$(cd "$T/n" && echo *)" "per-rank folders with -N 1"
for r in 0 1 2; do
  assert_eq "r$r" "$(cat "$T/n/rank.$r/stdout")" "rank.$r/stdout"
done

# --- horovodrun -np 3 on 16 slots: rank.0..rank.2 as horovodrun names them.
run_capture H -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 3 -H fnode1:16 \
  --output-filename "$T/h" sh -c 'echo "r$RANK"; : "$0"' "$tok"
assert_eq 0 "$H_rc" "horovodrun -np 3 exit code"
assert_eq "rank.0 rank.1 rank.2" "$(cd "$T/h" && echo *)" "per-rank folders with -np 3"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
