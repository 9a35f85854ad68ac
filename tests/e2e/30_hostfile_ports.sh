#!/usr/bin/env bash
# 30_hostfile_ports: a hostfile puts each host on its own SSH port (the
# cluster's sshd also listens on 2300+I): the port= of a line wins over the
# ssh_config's Port, works for bare addresses too, and every rank runs on the
# host and port its line names. A bad line is one error naming file:line.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3

cat >"$T/hosts.txt" <<'HOSTS'
# three hosts, three sshd ports; the alias fnode1 has Port 2222 in ssh_config
fnode1       slots=2 port=2301
10.231.0.12  slots=2 port=2302   # a bare address: no alias, no Port in ssh_config
fnode3:1                          # MPICH's host:N, then ferry's port= on the next line
fnode3       port=2303
HOSTS
# fnode3 appears twice with different ports: two hosts (2222 from ssh_config, 2303).
tok=$(unique_token)
run_capture R -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/hosts.txt" \
  sh -c 'echo "$RANK $LOCAL_RANK $(hostname) ${SSH_CONNECTION##* } $HOROVOD_HOSTNAME"; : "$0"' "$tok"
assert_eq 0 "$R_rc" "ferryrun exit code"
expected="0 0 fnode1 2301 fnode1
1 1 fnode1 2301 fnode1
2 0 fnode2 2302 10.231.0.12
3 1 fnode2 2302 10.231.0.12
4 0 fnode3 2222 fnode3
5 0 fnode3 2303 fnode3:2303"
actual=$(sed 's/^\[[0-9]*\]<stdout>://' "$T/R.out" | sort -n)
assert_eq "$expected" "$actual" "RANK LOCAL_RANK host sshd-port HOROVOD_HOSTNAME per rank"

# A bad port is reported with file:line and the token, exit 2, nothing started.
printf 'fnode1 slots=2\nfnode2 slots=2 port=70000\n' >"$T/bad.txt"
run_capture B -- "$FERRYRUN" --ssh-config "$SSHCFG" --hostfile "$T/bad.txt" true
assert_eq 2 "$B_rc" "ferryrun exit code for a bad hostfile"
assert_eq "ferryrun: $T/bad.txt:2: bad port value '70000' (expected 1-65535)" "$B_err" "error line"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
