#!/usr/bin/env bash
# 63_ship_ferryd: hosts with no ferryd at the configured path get ferryrun's own, sent over
# their SSH session into the user's cache (~/.cache/ferry/<sha256>/ferryd; the simulated
# hosts share one filesystem, as hosts sharing an NFS home do). A second job sends nothing
# and leaves the file untouched; a tampered copy is replaced, not run; two jobs started at
# once with an empty cache both run; a ferryd of another protocol version gets the shipped
# one with auto and is refused in one line with never; an installed ferryd of this build is
# known by its greeting and started at once; a cache folder others may write to is refused
# in one line.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

shipped=$FERRY_BIN/../libexec/ferry/ferryd-$(uname -m)
[[ -f $shipped ]] || fail "the build made no $shipped"
hash=$(sha256sum <"$shipped" || true)
hash=${hash%% *}
[[ -n $hash ]] || fail "cannot hash $shipped"
cache=/root/.cache/ferry/$hash
rm -rf "$cache"
missing=/nonexistent/ferry/ferryd
hosts=fnode1:1,fnode2:1
# Each rank names the ferryd that started it (its parent).
rank_cmd=(sh -c 'echo "$RANK $(readlink /proc/$PPID/exe)"; : "$0"')

tok=$(unique_token)
run_capture A -- "$FERRYRUN" --ssh-config "$SSHCFG" -H "$hosts" --ferryd "$missing" --verbose \
  "${rank_cmd[@]}" "$tok"
assert_eq 0 "$A_rc" "the first job runs ($A_err)"
assert_contains "$A_out" "0 $cache/ferryd" "rank 0 was started by the shipped ferryd"
assert_contains "$A_out" "1 $cache/ferryd" "rank 1 was started by the shipped ferryd"
assert_match "$A_err" "shipped ferryd \([0-9.]+ MiB, $(uname -m), [0-9]+ bytes sent gzipped\)" \
  "--verbose says a host got a shipped ferryd and how long it took"
assert_eq 2 "$(grep -c "the ferryd at $missing ended before its greeting (exit status 127" \
  "$T/A.err" || true)" "--verbose says, for each host, that the installed ferryd was tried first"
cmp -s "$shipped" "$cache/ferryd" || fail "the cached ferryd differs from the shipped file"
assert_eq 700 "$(stat -c %a "$cache")" "the cache folder is 0700"
assert_eq 700 "$(stat -c %a "$(dirname "$cache")")" "ferry's cache folder is 0700"
assert_eq 0 "$(find "$cache" -name '.ferryd.*' | wc -l)" "no temporary file left"
before=$(stat -c '%i %Y %Z' "$cache/ferryd" || true)
[[ -n $before ]] || fail "no $cache/ferryd after the first job"

# Second job: nothing sent, the file untouched.
sleep 1  # so that a rewrite would show in the change time
run_capture B -- "$FERRYRUN" --ssh-config "$SSHCFG" -H "$hosts" --ferryd "$missing" --verbose \
  "${rank_cmd[@]}" "$tok"
assert_eq 0 "$B_rc" "the second job runs ($B_err)"
assert_not_contains "$B_err" "shipped ferryd" "the second job ships nothing"
assert_eq 2 "$(grep -c 'ferryd cached at .*0 bytes sent' "$T/B.err" || true)" \
  "both hosts say 0 bytes sent"
assert_eq "$before" "$(stat -c '%i %Y %Z' "$cache/ferryd")" "the cached file is untouched"

# A tampered copy is replaced before anything runs it. (Put in place by a rename: the
# second job's ferryds may still be exiting, and a running file cannot be written.)
printf '#!/bin/sh\necho tampered >&2; exit 3\n' >"$cache/tampered"
chmod 700 "$cache/tampered"
mv -f "$cache/tampered" "$cache/ferryd"
run_capture C -- "$FERRYRUN" --ssh-config "$SSHCFG" -H "$hosts" --ferryd "$missing" --verbose \
  "${rank_cmd[@]}" "$tok"
assert_eq 0 "$C_rc" "a job after tampering runs ($C_err)"
assert_contains "$C_err" "shipped ferryd" "the tampered copy was replaced by a shipped one"
assert_not_contains "$C_err" "tampered" "the tampered file never ran"
cmp -s "$shipped" "$cache/ferryd" || fail "the cache holds the tampered file"

# A ferryd of another protocol version: auto ships, never refuses in one line.
old="$FERRY_SRC/tests/e2e/data/ferryd-v99"
run_capture D -- "$FERRYRUN" --ssh-config "$SSHCFG" -H "$hosts" --ferryd "$old" --verbose \
  "${rank_cmd[@]}" "$tok"
assert_eq 0 "$D_rc" "auto replaces a ferryd of protocol 99 ($D_err)"
assert_contains "$D_out" "0 $cache/ferryd" "the cached ferryd ran instead"
assert_eq 2 "$(grep -c "the ferryd at $old greets with another protocol version" "$T/D.err" ||
  true)" "each host's ferryd of protocol 99 was known by its greeting"

# The installed ferryd of this build is started at once: no shell program runs.
run_capture G -- "$FERRYRUN" --ssh-config "$SSHCFG" -H "$hosts" --ferryd "$FERRY_BIN/ferryd" \
  --verbose "${rank_cmd[@]}" "$tok"
assert_eq 0 "$G_rc" "the installed ferryd runs ($G_err)"
assert_contains "$G_out" "0 $(readlink -f "$FERRY_BIN/ferryd")" "rank 0 was started by it"
assert_eq 2 "$(grep -c "installed ferryd at $FERRY_BIN/ferryd speaks our protocol" "$T/G.err" ||
  true)" "each host knew the installed ferryd by its greeting"
assert_not_contains "$G_err" "looking for another" "no host ran the shipping program"
run_capture E -- "$FERRYRUN" --ssh-config "$SSHCFG" -H "$hosts" --ferryd "$old" \
  --ship-ferryd never "${rank_cmd[@]}" "$tok"
assert_eq 1 "$E_rc" "never: the old ferryd is refused"
assert_eq 2 "$(grep -c 'protocol version 99' "$T/E.err" || true)" "one line per host"
assert_contains "$E_err" "fnode1" "the line names the host"

# Two jobs at once, empty cache, shared home: both run.
rm -rf "$cache"
start_bg J1 -- "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode1:2,fnode2:2 --ferryd "$missing" \
  "${rank_cmd[@]}" "$tok"
start_bg J2 -- "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode2:2,fnode1:2 --ferryd "$missing" \
  "${rank_cmd[@]}" "$tok"
wait_bg J1 90
wait_bg J2 90
assert_eq 0 "$J1_rc" "the first of two concurrent jobs runs ($(cat "$T/J1.err"))"
assert_eq 0 "$J2_rc" "the second of two concurrent jobs runs ($(cat "$T/J2.err"))"
assert_eq 4 "$(grep -c "$cache/ferryd" "$T/J1.out")" "job 1: four ranks from the shipped ferryd"
assert_eq 4 "$(grep -c "$cache/ferryd" "$T/J2.out")" "job 2: four ranks from the shipped ferryd"
cmp -s "$shipped" "$cache/ferryd" || fail "concurrent shipping left a broken file"

# A cache folder another user could write to is refused, in one line per host.
chmod 0777 "$cache"
run_capture F -- "$FERRYRUN" --ssh-config "$SSHCFG" -H "$hosts" --ferryd "$missing" \
  "${rank_cmd[@]}" "$tok"
chmod 0700 "$cache"
assert_eq 1 "$F_rc" "an open cache folder fails the job"
assert_contains "$F_err" "refusing cache folder $cache" "the line names the folder"
assert_eq 2 "$(grep -c 'refusing cache folder' "$T/F.err" || true)" "one line per host"
rm -rf "$cache"
no_procs_left "$tok"
wait_cluster_idle 5
pass
