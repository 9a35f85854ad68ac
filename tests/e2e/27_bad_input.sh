#!/usr/bin/env bash
# 27_bad_input: what can be known to be wrong before a job starts is refused in one line
# with exit status 2, and nothing runs: an output directory another user controls (a
# planted symlink must never be followed), one that cannot be written, a job larger than
# the limits. ferryd's own bad input gets one "ferryd: ..." line; a rank that cannot start
# is reported with the real reason.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster

# refused P WHAT -- cmd...: cmd must exit 2 with one line on stderr containing WHAT, print
# nothing on stdout, and start no rank (a rank would create $T/ran).
refused() {
  local p=$1 what=$2
  shift 3
  rm -f "$T/ran"
  run_capture "$p" --timeout 30 -- "$@"
  local rc_var="${p}_rc" err_var="${p}_err" out_var="${p}_out"
  assert_eq 2 "${!rc_var}" "$p: exit status"
  assert_eq 1 "$(wc -l <"$T/$p.err")" "$p: lines on stderr"
  assert_contains "${!err_var}" "$what" "$p: the message"
  assert_eq "" "${!out_var}" "$p: stdout"
  [[ ! -e $T/ran ]] || fail "$p: a rank ran"
}
MARK=(sh -c ': >"$0"; echo x' "$T/ran")

# A directory another user made, writable by all, with rank.0/stdout a symlink to a file of
# root's: refused, and the file is untouched.
planted=$T/planted
mkdir -p "$planted/rank.0"
echo "root's data" >"$T/victim"
ln -s "$T/victim" "$planted/rank.0/stdout"
chown -R nobody "$planted"
chmod 777 "$planted" "$planted/rank.0"
refused PLANT "--output-filename $planted: directory $planted" -- \
  "$FERRYRUN" -np 1 --output-filename "$planted" "${MARK[@]}"
assert_eq "root's data" "$(cat "$T/victim")" "the symlink's target"
# Owned by nobody but not writable by others: still refused below /tmp.
chmod 755 "$planted"
refused OWNER "belongs to nobody" -- "$FERRYRUN" -np 1 --output-filename "$planted" "${MARK[@]}"

# Paths that cannot hold the files.
echo x >"$T/file"
refused FILE "$T/file is not a directory" -- "$FERRYRUN" -np 1 --output-filename "$T/file" "${MARK[@]}"
refused PROC "cannot create files in /proc" -- "$FERRYRUN" -np 1 --output-filename /proc "${MARK[@]}"
mkdir "$T/ro"
mount -t tmpfs -o ro,size=1m,mode=0755 ferry-e2e-ro "$T/ro"
rc=0
# In a subshell, so that the mount goes away even when the check fails.
(refused RO "cannot create files in $T/ro: Read-only file system" -- \
  "$FERRYRUN" -np 1 --output-filename "$T/ro" "${MARK[@]}") || rc=$?
umount "$T/ro"
((rc == 0)) || exit "$rc"

# A good directory: made for root only, the files exact.
run_capture GOOD -- "$FERRYRUN" -np 1 --output-filename "$T/new/out" printf 'no newline'
assert_eq 0 "$GOOD_rc" "exit status with a fresh output directory"
assert_eq 700 "$(stat -c %a "$T/new")" "mode of a directory ferryrun made"
assert_eq "no newline" "$(cat "$T/new/out/rank.0/stdout")" "per-rank file"

# Sizes: refused up front, in a moment, naming the limit.
refused HUGE "-np: 1000000 is out of range (1 to 65536)" -- "$FERRYRUN" -np 1000000 true
refused HOST "40000 ranks on host localhost: a host has at most 8192" -- \
  "$FERRYRUN" -np 40000 true
refused SLOTS "ranks: a job has at most 65536" -- \
  "$FERRYRUN" -H "a:9000,b:9000,c:9000,d:9000,e:9000,f:9000,g:9000,h:9000" true

refused CPUS "--cpus-per-rank 100: this machine has" -- \
  "$FERRYRUN" -np 1 --cpus-per-rank 100 "${MARK[@]}"
refused EMPTY "the command is an empty word" -- "$FERRYRUN" -np 1 ""

# A rank that cannot start: the reason as the user would put it.
run_capture DIR -- "$FERRYRUN" -np 1 /tmp
assert_contains "$DIR_err" "cannot execute '/tmp': is a directory" "a directory as the command"
printf '#!/nonexistent/interp\n' >"$T/script.sh"
chmod 755 "$T/script.sh"
run_capture INTERP -- "$FERRYRUN" -np 1 "$T/script.sh"
assert_contains "$INTERP_err" "interpreter /nonexistent/interp of script $T/script.sh not found" \
  "a script whose interpreter is missing"

# Environment settings that cannot be used are said, once, and the job runs.
run_capture ENVW -- env FERRY_SSH_IO_THREADS=banana "$FERRYRUN" -np 1 echo ok
assert_eq 0 "$ENVW_rc" "exit status with FERRY_SSH_IO_THREADS=banana"
assert_eq "ferryrun: warning: FERRY_SSH_IO_THREADS='banana' ignored (expected a whole number from -1 to 64)" \
  "$ENVW_err" "the warning"

# ferryd: one "ferryd: ..." line for each kind of bad input. ferryd_says P RC WHAT INPUT
# -- cmd...: cmd reads the file INPUT, must exit RC with one line matching "ferryd: .*WHAT".
ferryd_says() {
  local p=$1 want_rc=$2 what=$3 input=$4
  shift 5
  run_capture "$p" --stdin "$input" --timeout 10 -- "$@"
  local rc_var="${p}_rc" err_var="${p}_err"
  assert_eq "$want_rc" "${!rc_var}" "$p: ferryd's exit status"
  assert_eq 1 "$(wc -l <"$T/$p.err")" "$p: lines on ferryd's stderr"
  assert_match "${!err_var}" "^ferryd: .*$what" "$p: ferryd's message"
}
ferryd_says BOGUS 2 "--bogus" /dev/null -- "$FERRYD" --bogus
printf '\x10\x00\x00\x00\x02abc' >"$T/cut"  # a frame of 16 bytes, 5 of them sent
# Through a pipe, as ferryd's stdin is over SSH.
piped=(sh -c 'cat | "$0" --stdio' "$FERRYD")
ferryd_says CUT 1 "input ended inside a frame" "$T/cut" -- "${piped[@]}"
printf '\x10\x00' >"$T/half"  # half a frame header
ferryd_says HALF 1 "input ended inside a frame" "$T/half" -- "${piped[@]}"
printf '\x07\x00\x00\x00\x06\x02\x00\x00\x00hi' >"$T/stdin-first"  # Stdin "hi", no HostSpec
ferryd_says EARLY 1 "input ended before the HostSpec, after stdin for its job" "$T/stdin-first" -- \
  "${piped[@]}"
ferryd_says PORT 1 "FERRY_CONNECT_PORT='99999' is not a port \(1 to 65535\)" /dev/null -- \
  env FERRY_CONNECT_SECRET=s FERRY_CONNECT_PORT=99999 "$FERRYD" --connect
wait_cluster_idle 5
pass
