#!/usr/bin/env bash
# 59_own_name_dns: a host whose own name is not in its /etc/hosts and whose DNS server never
# answers (an air-gapped host with a stale resolv.conf). ferryd looks its name up for
# Horovod's gloo before a job's ranks; that lookup waits on the DNS server (here 30 s), and
# it used to hold up every job there. Now a plain job's ranks start at once, the job ends
# while the lookup is still unanswered (the DNS server got the query and never replied), and
# fnode3 says in one warning line that its name's lookup had not returned. A horovodrun
# job there waits for the answer; interrupted meanwhile, it ends at once, nothing left.
# shellcheck disable=SC2154 # J_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3

tok=$(unique_token)
etc=/etc/netns/fnode3/hosts
[[ -f $etc ]] || fail "no $etc (ferry-cluster gives every host one)"
cp "$etc" "$T/hosts.orig"
# fnode3's resolver asks a server on its own loopback that takes queries and never answers;
# one try of 30 s, longer than the job may take.
printf 'nameserver 127.0.0.1\noptions timeout:30 attempts:1\n' >"$T/resolv.conf"
dns_pid=""
restore() {
  cat "$T/hosts.orig" >"$etc"
  "$FERRY_CLUSTER" exec fnode3 umount /etc/resolv.conf 2>/dev/null || true
  [[ -z $dns_pid ]] || kill "$dns_pid" 2>/dev/null || true
}
on_exit restore

grep -vw fnode3 "$T/hosts.orig" >"$etc"
"$FERRY_CLUSTER" exec fnode3 mount --bind "$T/resolv.conf" /etc/resolv.conf
"$FERRY_CLUSTER" exec fnode3 python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
open(sys.argv[1] + ".ready", "w").close()
with open(sys.argv[1], "a") as log:
    while True:
        data, _ = s.recvfrom(4096)
        labels, i = [], 12
        while i < len(data) and data[i]:
            labels.append(data[i + 1:i + 1 + data[i]].decode(errors="replace"))
            i += 1 + data[i]
        log.write("query " + ".".join(labels) + "\n")
        log.flush()
' "$T/dns.log" &
dns_pid=$!
wait_for "the silent DNS server on fnode3" 10 test -e "$T/dns.log.ready"
assert_eq "" "$("$FERRY_CLUSTER" exec fnode3 getent -s files hosts fnode3 || true)" \
  "fnode3 in fnode3's /etc/hosts, after the edit"

# The plain job ends within 20 s, long before the lookup would return.
run_capture J --timeout 20 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode2:1,fnode3:1 \
  sh -c 'hostname; : '"$tok"
assert_eq 0 "$J_rc" "ferryrun exit code (fnode3's name unanswered)"
assert_eq "fnode2 fnode3" "$(sed 's/^\[[0-9]\]<stdout>://' "$T/J.out" | sort | tr '\n' ' ' | xargs)" \
  "hosts of the job"
assert_match "$(cat "$T/dns.log")" "query fnode3" "the queries the DNS server got (and never answered)"
assert_eq 1 "$(count_lines "$T/J.err" "^fnode3: warning: Horovod's gloo needs this host's name to resolve to one of its addresses, but looking 'fnode3' up had not returned after 500 ms \(a DNS server that does not answer\?\): add it to /etc/hosts on fnode3; Horovod ranks would fail here$")" \
  "fnode3's warning"
assert_not_contains "$J_err" "fnode2: warning" "ferryrun's stderr"

# A horovodrun job: fnode3's rank waits for the answer (a bad name fails it, as gloo would).
# Interrupted meanwhile, that rank is reported as never started, and fnode3's ferryd leaves
# at once, not when its lookup returns (30 s after it began).
ln -s "$FERRYRUN" "$T/horovodrun"
: >"$T/dns.log"
start_bg H -- "$T/horovodrun" --ssh-config "$SSHCFG" -np 2 -H fnode2:1,fnode3:1 \
  sh -c 'sleep 100; : '"$tok"
wait_for "fnode2's rank" 20 pgrep -f "sleep 100; : $tok"
wait_for "fnode3's lookup of its name" 20 grep -q "query fnode3" "$T/dns.log"
kill -INT "$H_pid"
wait_bg H 20
assert_eq 130 "$H_rc" "horovodrun exit code after SIGINT"
assert_match "$H_err" "fnode3 +1 +[0-9.]+ s +[0-9.]+ s +[0-9]+ KiB +SIGKILL \(rank 1\)" \
  "fnode3's rank in the summary: never started"
assert_not_contains "$H_err" "did not end after SIGKILL" "horovodrun's stderr"
wait_gone "$tok" 15
# (the cluster is not idle yet: the DNS server is the test's) no ferryd is left
wait_for "the job's ferryds to leave" 10 bash -c '! pgrep -f "[f]erryd --stdio"'

restore
dns_pid=""
wait_gone "$tok" 15
wait_cluster_idle 10
pass
