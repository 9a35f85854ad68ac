#!/usr/bin/env bash
# 69_ship_fallbacks: shipping ferryd where the usual place will not do. Each case is a second
# sshd in fnode2's namespace, in a mount namespace of its own, so that what it changes is seen
# by its sessions only:
#  1. the home's cache is read-only (a read-only bind mount over ~/.cache): the shipped ferryd
#     goes to /tmp/ferry-<uid>/<sha256>/ and runs from there;
#  2. the host is of another architecture (`setarch i686`: uname -m says i686): the launch
#     fails in one line naming the host and the way out; with --ferryd-dir holding a
#     ferryd-i686, that file is the one shipped and run;
#  3. both the home's cache and /tmp/ferry-<uid> are read-only: the launch fails in one line.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
command -v setarch >/dev/null || fail "setarch (util-linux) is not installed"

shipped=$FERRY_BIN/../libexec/ferry/ferryd-$(uname -m)
[[ -f $shipped ]] || fail "the build made no $shipped"
hash=$(sha256sum <"$shipped")
hash=${hash%% *}
uid=$(id -u)
missing=/nonexistent/ferry/ferryd
cluster=${FERRY_CLUSTER_DIR:-/tmp/ferry-cluster}
mkdir -p /root/.cache

# extra_sshd PORT SETUP [WRAPPER...]: fnode2's sshd config on PORT, started in fnode2's
# namespace after the shell commands SETUP (in its own mount namespace), under WRAPPER.
extra_pids=()
extra_sshd() {
  local port=$1 setup=$2
  shift 2
  sed -e "s/^Port .*//" -e "s|^PidFile .*|PidFile $T/sshd-$port.pid|" \
    "$cluster/fnode2/sshd_config" >"$T/sshd-$port.conf"
  echo "Port $port" >>"$T/sshd-$port.conf"
  setsid ip netns exec fnode2 unshare --uts --mount --propagation private \
    sh -c "hostname fnode2 && $setup && exec $* /usr/sbin/sshd -D -f $T/sshd-$port.conf -E $T/sshd-$port.log" \
    </dev/null >"$T/sshd-$port.out" 2>&1 &
  extra_pids+=($!)
  wait_for "the extra sshd on fnode2:$port" 10 \
    ip netns exec fnode2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
}
stop_extra() {
  local p
  for p in "${extra_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  extra_pids=()
  rm -rf "/tmp/ferry-$uid/$hash"
}
on_exit stop_extra
rm -rf "/tmp/ferry-$uid/$hash"
[[ -d /tmp/ferry-$uid ]] && chmod 0700 "/tmp/ferry-$uid"

ro_cache='mount --bind /root/.cache /root/.cache && mount -o remount,ro,bind /root/.cache'
tok=$(unique_token)
rank_cmd=(sh -c 'echo "$RANK $(uname -m) $(readlink /proc/$PPID/exe)"; : "$0"' "$tok")

# --- 1. A read-only home cache.
extra_sshd 2291 "$ro_cache"
# fnode1 runs the installed ferryd: the hosts share one filesystem, and a copy that fnode1 put in
# the home's cache would be found there (read-only is enough to use one).
rm -rf "/root/.cache/ferry/$hash"
printf 'fnode1 slots=1 ferryd=%s\nfnode2 slots=1 port=2291 ferryd=%s\n' "$FERRYD" "$missing" >"$T/ro.txt"
run_capture R --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --ssh-accept-new --verbose \
  --hostfile "$T/ro.txt" "${rank_cmd[@]}"
assert_eq 0 "$R_rc" "the job with fnode2's cache read-only ($R_err)"
assert_eq "1 $(uname -m) /tmp/ferry-$uid/$hash/ferryd" "$(rank_lines "$T/R.out" 1 stdout)" \
  "fnode2's rank was started by the ferryd shipped to /tmp/ferry-$uid"
assert_match "$R_err" "fnode2:2291: shipped ferryd \([^)]*\) to /tmp/ferry-$uid/$hash/ferryd" \
  "--verbose says where it went"
[[ $(stat -c '%u %a' "/tmp/ferry-$uid/$hash") == "$uid 700" ]] ||
  fail "/tmp/ferry-$uid/$hash is not private: $(stat -c '%u %a' "/tmp/ferry-$uid/$hash")"

# --- 2. Another architecture.
extra_sshd 2292 true setarch i686
printf 'fnode1 slots=1\nfnode2 slots=1 port=2292\n' >"$T/arch.txt"
run_capture A --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --ssh-accept-new --ferryd "$missing" \
  --hostfile "$T/arch.txt" "${rank_cmd[@]}"
assert_ne 0 "$A_rc" "an i686 host without a ferryd for it fails"
assert_match "$A_err" "fnode2:2292.*the host is i686 and ferryrun holds a ferryd for $(uname -m) only; give --ferryd-dir DIR with a ferryd-i686 in it" \
  "one line naming the host, its architecture and the way out"
assert_eq 1 "$(grep -c 'the host is i686' "$T/A.err")" "said once"
assert_not_contains "$A_out" "$tok" "no rank started"
# A ferryd for i686 (here the same program with a byte appended, so that its hash differs and
# it is told apart from the x86_64 one; setarch changes only what uname says).
mkdir -p "$T/ferryds"
cp "$shipped" "$T/ferryds/ferryd-$(uname -m)"
{ cat "$shipped" && printf '\n'; } >"$T/ferryds/ferryd-i686"
chmod +x "$T/ferryds"/ferryd-*
h686=$(sha256sum <"$T/ferryds/ferryd-i686")
h686=${h686%% *}
run_capture D --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --ssh-accept-new --verbose --ferryd "$missing" \
  --ferryd-dir "$T/ferryds" --hostfile "$T/arch.txt" "${rank_cmd[@]}"
assert_eq 0 "$D_rc" "with --ferryd-dir ($D_err)"
assert_eq "1 i686 /root/.cache/ferry/$h686/ferryd" "$(rank_lines "$T/D.out" 1 stdout)" \
  "fnode2's rank was started by the ferryd-i686 of --ferryd-dir"
assert_match "$D_err" "fnode2:2292: shipped ferryd \([^)]*, i686, " "--verbose names the architecture"
rm -rf "/root/.cache/ferry/$h686"

# --- 3. Nowhere to put it.
# /tmp/ferry-<uid> read-only too (a read-only tmpfs over it, in that sshd's namespace only).
install -d -m 0700 "/tmp/ferry-$uid"
rm -rf "/root/.cache/ferry/$hash"  # the copy fnode1 got in case 2
extra_sshd 2293 "$ro_cache && mount -t tmpfs -o ro,mode=0700 ferry-ro /tmp/ferry-$uid"
printf 'fnode1 slots=1 ferryd=%s\nfnode2 slots=1 port=2293 ferryd=%s\n' "$FERRYD" "$missing" \
  >"$T/none.txt"
run_capture N --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --ssh-accept-new \
  --hostfile "$T/none.txt" "${rank_cmd[@]}"
assert_ne 0 "$N_rc" "no writable cache: the launch fails"
assert_match "$N_err" "fnode2:2293.*cannot ship ferryd: cannot (create|write in) /tmp/ferry-$uid" \
  "one line naming the host and the last place tried"
assert_eq 1 "$(grep -c 'cannot ship ferryd' "$T/N.err")" "said once"
assert_not_contains "$N_out" "$tok" "no rank started"
wait_gone "$tok" 5
stop_extra
wait_cluster_idle 5
pass
