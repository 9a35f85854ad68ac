#!/usr/bin/env bash
# 60_docker_bridge: one job over two Docker machines in bridge networking, two
# containers each (tests/cluster/ferry-docker-sim), launched from a hostfile of
# `<machine address> slots=2 port=<mapped port>` lines. Every container drops
# all inbound traffic except its SSH port and its address is routable only on
# its own machine: ferry needs nothing else. Output, placement, exit codes,
# Ctrl-C, kill -9 of ferryrun and the no-leftover checks must all work, from
# the head and from inside a container; ssh_config aliases work too.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_sim_lib.sh
source "$(dirname "$0")/docker_sim_lib.sh"
require_root
docker_sim_up bridge

# --- 1. Only the mapped SSH ports are reachable.
# The head has no route to container addresses (asked of the routing table:
# no packet is sent).
for addr in 172.31.1.2 172.31.2.2; do
  route=$(ip route get "$addr" 2>&1 || true)
  assert_not_contains "$route" fdbr0 "route from the head to container address $addr"
done
# A listener on tcp/29500 inside dctr1a (what a rank's NCCL/gloo would open):
# reachable from inside the container, dropped from its own machine, while
# the SSH port answers.
tok=$(unique_token)
start_bg L -- "$DOCKER_SIM" exec dctr1a "$PY" -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 29500)); s.listen(16); s.settimeout(60)
while True:
    s.accept()[0].close()' "$tok"
wait_for "listener on 29500 inside dctr1a" 10 tcp_open_from dctr1a 127.0.0.1 29500
tcp_open_from dmach1 172.31.1.2 2222 || fail "dctr1a's sshd (172.31.1.2:2222) not reachable from its machine"
! tcp_open_from dmach1 172.31.1.2 29500 ||
  fail "dctr1a's firewall lets tcp/29500 in: the test would not prove that only SSH is needed"
# Container to container across machines: private addresses do not route;
# the other machine's mapped port does.
! tcp_open_from dctr1a 172.31.2.2 2222 || fail "dctr1a reaches dctr2a's private address: not bridge mode"
tcp_open_from dctr1a 10.232.0.12 2201 || fail "dctr1a cannot reach dctr2a through 10.232.0.12:2201"
kill "$L_pid" 2>/dev/null || true
wait_gone "$tok" 5

# --- 2. A job of 8 ranks: each container runs its two, output comes back
# tagged, HOROVOD_HOSTNAME is address:port (entries share an address). No rank
# here connects to another: the preflight, which would fail (2b), is skipped.
hostfile=$T/hosts.txt
sim_hostfile bridge "$hostfile"
SIM_FERRYRUN_OPTS=(--no-preflight)
run_capture R -- "$FERRYRUN" --ssh-config "$DSSHCFG" --hostfile "$hostfile" --no-preflight \
  sh -c 'echo "$(hostname) $RANK $LOCAL_RANK $HOROVOD_HOSTNAME $HOROVOD_CROSS_RANK"; echo "err $RANK" >&2'
assert_eq 0 "$R_rc" "ferryrun exit code"
ctrs=(dctr1a dctr1b dctr2a dctr2b)
labels=(10.232.0.11:2201 10.232.0.11:2202 10.232.0.12:2201 10.232.0.12:2202)
expected=""
for r in 0 1 2 3 4 5 6 7; do
  h=$((r / 2))
  expected+="${ctrs[h]} $r $((r % 2)) ${labels[h]} $h"$'\n'
done
actual=$(rank_lines "$T/R.out" '[0-7]' stdout | sort -k2n)
assert_eq "${expected%$'\n'}" "$actual" "hostname, rank, local rank, HOROVOD_HOSTNAME, cross rank"
assert_lines_count "$T/R.out" 8 "stdout lines"
for r in 0 1 2 3 4 5 6 7; do
  assert_eq "err $r" "$(rank_lines "$T/R.err" "$r" stderr)" "rank $r's stderr line"
done
wait_sim_idle 10

# --- 2b. The preflight: rank 0's MASTER_ADDR is not an address the other
# machine's containers reach (NAT), so the launch fails before any rank starts,
# in one line per host, instead of a torch job hanging.
run_capture P --timeout 60 -- "$FERRYRUN" --ssh-config "$DSSHCFG" --hostfile "$hostfile" \
  sh -c 'echo ran'
assert_eq 1 "$P_rc" "ferryrun exit code when the preflight fails"
assert_match "$P_err" "ferryrun: preflight: [^ ]+ (cannot listen on|\(leaving by [a-z0-9]+\) cannot reach [^ ]+ at) [0-9.]+:[0-9]+ \(MASTER_ADDR" \
  "the preflight's line names the hosts and the address"
assert_contains "$P_err" "likely cause: " "the line gives the likely cause"
assert_contains "$P_err" "failed the preflight)" "the summary line"
assert_not_contains "$P_out" "ran" "no rank started"
echo "preflight over the NATed bridge: ${P_secs}s"
wait_sim_idle 10

# --- 3. Rank 5 (dctr2a) exits 7: that is the job's exit code, the report names
# it and its host, and every other rank is stopped.
sim_rank_exit_case "$hostfile" 5 7 10.232.0.12:2201

# --- 4. Ctrl-C to ferryrun reaches every rank through the NATed connections.
start_sleeper_job C 8 -- --ssh-config "$DSSHCFG" --hostfile "$hostfile" --no-preflight
kill -INT "$C_pid"
wait_bg C 20
assert_eq 130 "$C_rc" "ferryrun exit code after SIGINT"
wait_gone "$C_tok" 10
wait_sim_idle 10

# --- 5. kill -9 of ferryrun: the connections close, every ferryd kills its
# ranks and exits.
sim_kill9_case "$hostfile"

# --- 6. ssh_config aliases (Host dctr1a → machine address + mapped port):
# each container is its own name, so HOROVOD_HOSTNAME is that name.
run_capture A -- "$FERRYRUN" --ssh-config "$DSSHCFG" --no-preflight -np 4 \
  -H dctr1a:1,dctr1b:1,dctr2a:1,dctr2b:1 \
  sh -c 'echo "$(hostname) $HOROVOD_HOSTNAME"'
assert_eq 0 "$A_rc" "ferryrun exit code (aliases)"
actual=$(sort "$T/A.out" | tr '\n' ';')
assert_eq "[0]<stdout>:dctr1a dctr1a;[1]<stdout>:dctr1b dctr1b;[2]<stdout>:dctr2a dctr2a;[3]<stdout>:dctr2b dctr2b;" \
  "$actual" "hostnames and HOROVOD_HOSTNAME through aliases"
wait_sim_idle 10

# --- 7. ferryrun inside a container (users often launch from container 0):
# it reaches its own machine's mapped ports (hairpin NAT) and the other
# machine's, with the same hostfile.
run_capture I -- "$DOCKER_SIM" exec dctr1a "$FERRYRUN" --ssh-config "$DSSHCFG" --no-preflight \
  --hostfile "$hostfile" sh -c 'echo "$(hostname) $RANK"'
assert_eq 0 "$I_rc" "ferryrun exit code inside dctr1a"
assert_lines_count "$T/I.out" 8 "stdout lines (launched inside dctr1a)"
for r in 0 1 2 3 4 5 6 7; do
  assert_eq "${ctrs[r / 2]} $r" "$(rank_lines "$T/I.out" "$r" stdout)" "rank $r (launched inside dctr1a)"
done
wait_sim_idle 10
pass
