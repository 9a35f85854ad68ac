#!/usr/bin/env bash
# 59_horovod_own_name: Horovod's gloo binds to the address of the host's own name, even with
# HOROVOD_GLOO_IFACE set. On a host whose /etc/hosts lacks its own name, a job started as
# horovodrun fails before its ranks there start, with one line naming the host and the
# name, instead of gloo crashing inside hvd.init(); a name that resolves to another
# machine's address is named with that address. A plain ferryrun job (its ranks need not be
# Horovod's) runs, with one warning line. The cluster's hosts see their own names (the
# check passes everywhere in the other scenarios).
# shellcheck disable=SC2154,SC2016 # A_rc etc. come from run_capture; $(...) is the ranks'
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3
require_horovod

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/hvd_train.py
ln -s "$FERRYRUN" "$T/horovodrun"
# fnode3's /etc/hosts (ip netns bind-mounts this file): rewritten in place, restored at exit.
etc=/etc/netns/fnode3/hosts
[[ -f $etc ]] || fail "no $etc (ferry-cluster gives every host one)"
cp "$etc" "$T/hosts.orig"
restore_hosts() { cat "$T/hosts.orig" >"$etc"; }
on_exit restore_hosts

# Every host resolves its own name to its own address, as its ranks see it.
run_capture R -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 3 -H fnode1:1,fnode2:1,fnode3:1 \
  sh -c 'getent hosts "$(hostname)" | tr -s " "'
assert_eq 0 "$R_rc" "ferryrun exit code (getent)"
for r in 0 1 2; do
  assert_eq "10.231.0.$((11 + r)) fnode$((r + 1))" "$(rank_lines "$T/R.out" "$r" stdout)" \
    "rank $r's own host name, looked up by the rank"
done

# fnode3 without its own name: the horovodrun job fails at once, naming host and name.
grep -vw fnode3 "$T/hosts.orig" >"$etc"
assert_eq "" "$("$FERRY_CLUSTER" exec fnode3 getent hosts fnode3 || true)" "fnode3 on fnode3, after the edit"
run_capture A --timeout 120 -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 4 \
  -H fnode2:2,fnode3:2 -p 2222 "$HOROVOD_PY" "$prog" 1 "$tok"
assert_ne 0 "$A_rc" "horovodrun exit code (fnode3 cannot resolve its name)"
assert_match "$A_err" "rank [23] on host fnode3 \(local rank [01]\) exited with status 127" \
  "the failure block"
assert_contains "$A_err" "reason: Horovod's gloo needs this host's name to resolve to one of its addresses, but 'fnode3' does not resolve here (" \
  "the reason"
assert_contains "$A_err" "add it to /etc/hosts on fnode3" "the reason's fix"
assert_not_contains "$A_err" "Segmentation fault" "horovodrun's stderr"
assert_eq 0 "$(count_lines "$T/A.out" '^\[[23]\]<stdout>:hvd ')" "lines of fnode3's ranks"

# A plain ferryrun job there runs; ferryd warns once.
run_capture B -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode2:1,fnode3:1 hostname
assert_eq 0 "$B_rc" "ferryrun exit code (plain job, fnode3 cannot resolve its name)"
assert_eq "fnode2 fnode3" "$(sed 's/^\[[0-9]\]<stdout>://' "$T/B.out" | sort | tr '\n' ' ' | xargs)" \
  "hosts of the plain job"
assert_eq 1 "$(count_lines "$T/B.err" "fnode3: warning: Horovod's gloo needs this host's name .* 'fnode3' does not resolve here .*Horovod ranks would fail here$")" \
  "warnings about fnode3's name"
assert_not_contains "$B_err" "fnode2: warning" "ferryrun's stderr"

# fnode3's name given fnode2's address: named with that address.
{
  grep -vw fnode3 "$T/hosts.orig"
  echo "10.231.0.12 fnode3"
} >"$etc"
run_capture C --timeout 60 -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 2 \
  -H fnode1:1,fnode3:1 -p 2222 "$HOROVOD_PY" "$prog" 1 "$tok"
assert_ne 0 "$C_rc" "horovodrun exit code (fnode3's name is fnode2's address)"
assert_contains "$C_err" "but 'fnode3' resolves here to 10.231.0.12, not an address of this host: fix /etc/hosts (or DNS) on fnode3" \
  "the reason"

restore_hosts
wait_gone "$tok" 15
wait_cluster_idle 10
pass
