#!/usr/bin/env bash
# 68_detach: jobs that outlive their terminal, on 2 simulated hosts. `ferryrun --detach` run in
# a pseudo-terminal returns once every rank started, printing the job's id; the terminal then
# goes away, and later `ferry logs` / `ferry attach` find every line the ranks wrote. `ferry
# wait` exits with the status ferryrun would have (a failing rank's, with the failure report
# in the journal); `ferry stop` ends a job with the SIGTERM grace of Ctrl-C (asked through the
# job's control socket, which another user cannot use); kill -9 of a
# detached front end leaves nothing on any host and the job reads as lost; two jobs run at
# once; a small --journal-max keeps the newest lines with a marker. `--nohup` keeps a job
# through its terminal's hangup, its output going on into the journal. Bad input: one line,
# exit 2.
# shellcheck disable=SC2154 # X_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

export XDG_STATE_HOME=$T/state
FERRY=$FERRY_BIN/ferry
IN_PTY=$FERRY_SRC/tests/e2e/programs/in_pty.py
tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
HOSTS=(--ssh-config "$SSHCFG" -H fnode1:1,fnode2:1)

# A detached job started from a terminal that then goes away: 30 lines a rank, 0.1 s apart.
run_capture D --timeout 60 -- "$IN_PTY" "$T/D.tty" -- "$FERRYRUN" --detach "${HOSTS[@]}" \
  sh -c 'for i in $(seq 1 30); do echo "line $i of $RANK on $(hostname)"; '"$sleeper"' 0.1; done'
assert_eq 0 "$D_rc" "ferryrun --detach exit status"
id=$(head -1 "$T/D.tty" | tr -d '\r')
assert_match "$id" '^[0-9a-f]{8}$' "the job's id, first on the terminal"
assert_contains "$(cat "$T/D.tty")" "ferry attach $id" "how to follow it"
assert_contains "$(stat -c %a "$XDG_STATE_HOME/ferry/jobs")" "700" "the jobs directory is private"
run_capture PS --timeout 10 -- "$FERRY" ps
assert_match "$PS_out" "$id +running +- +2 " "ferry ps: running, 2 ranks"
# Two viewers attached at once: each sees every line, then the job's status when it ends.
"$FERRY" attach "$id" --since all >"$T/A2.out" 2>"$T/A2.err" &
viewer=$!
"$FERRY" logs -f "$id" >"$T/LF.out" 2>"$T/LF.err" &
follower=$!
# A viewer that leaves with Ctrl-C: exit 0, the job runs on (the others see it to the end).
"$FERRY" attach "$id" >"$T/AC.out" 2>"$T/AC.err" &
leaver=$!
wait_for "the leaving viewer's first line" 20 grep -q "line" "$T/AC.out"
kill -INT "$leaver"
wait "$leaver" || fail "ferry attach left with Ctrl-C exited $?"
assert_contains "$(cat "$T/AC.err")" "detached from job $id; it runs on" "Ctrl-C detaches"
run_capture A --timeout 60 -- "$FERRY" attach "$id" --since all
assert_eq 0 "$A_rc" "ferry attach: the job's status once it ended"
wait "$viewer" || fail "the second viewer's ferry attach exited $?"
wait "$follower" || fail "ferry logs -f exited $?"
assert_eq 60 "$(grep -c "<stdout>:line" "$T/LF.out")" "ferry logs -f: every line, to the job's end"
for r in 0 1; do
  for out in "$T/A.out" "$T/A2.out"; do
    assert_eq 30 "$(grep -c "^\[$r\]<stdout>:line [0-9]* of $r on fnode$((r + 1))$" "$out")" \
      "rank $r: every line, to $(basename "$out")"
  done
done
run_capture L --timeout 10 -- "$FERRY" logs "${id:0:4}" --rank 1
assert_eq 30 "$(grep -c "^\[1\]<stdout>:line" "$T/L.out")" "ferry logs --rank 1 (id prefix)"
assert_eq 0 "$(grep -c "^\[0\]" "$T/L.out")" "no other rank's lines"
run_capture W --timeout 10 -- "$FERRY" wait "$id"
assert_eq 0 "$W_rc" "ferry wait on an ended job"

# ferry wait: a failing rank's status, its report in the journal. Two jobs at once.
F=$("$FERRYRUN" --detach "${HOSTS[@]}" sh -c "$sleeper 1; [ \$RANK = 1 ] && exit 3; $sleeper 30" 2>/dev/null)
S=$("$FERRYRUN" --detach "${HOSTS[@]}" sh -c "trap 'echo term \$RANK; exit 0' TERM; echo up \$RANK; $sleeper 60 & wait" 2>/dev/null)
assert_ne "$F" "$S" "two jobs, two ids"
run_capture FW --timeout 60 -- "$FERRY" wait "$F"
assert_eq 3 "$FW_rc" "ferry wait: the failing rank's status"
run_capture FL --timeout 10 -- "$FERRY" logs "$F"
assert_contains "$FL_out" "rank 1 on host fnode2" "the failure report in the journal"
assert_contains "$FL_out" "exited with status 3" "the failure report in the journal"

# ferry stop: SIGTERM to the ranks (they say so), SIGKILL only after the grace.
wait_for "the second job's ranks are up" 20 sh -c "[ \$(grep -c '^\[.\]<stdout>:up' \"$XDG_STATE_HOME/ferry/jobs/$S/console.log\") = 2 ]"
run_capture ST --timeout 10 -- "$FERRY" stop "$S"
assert_eq 0 "$ST_rc" "ferry stop"
run_capture ST2 --timeout 10 -- "$FERRY" stop "$S"
assert_eq 2 "$ST2_rc" "a second ferry stop"
run_capture SW --timeout 60 -- "$FERRY" wait "$S"
assert_eq 143 "$SW_rc" "a stopped job's status (128+SIGTERM, as Ctrl-C's 130)"
run_capture SL --timeout 10 -- "$FERRY" logs "$S"
assert_contains "$SL_out" "term 0" "rank 0 got SIGTERM"
assert_contains "$SL_out" "term 1" "rank 1 got SIGTERM"
wait_gone "$tok" 20

# kill -9 of a detached front end: its hosts end the ranks; the record reads lost.
K=$("$FERRYRUN" --detach --heartbeat 1 "${HOSTS[@]}" "$sleeper" 300 2>/dev/null)
wait_for "both sleepers run" 20 sh -c "[ \$(pgrep -fc -- '$tok') -ge 2 ]"
kpid=$(sed -n 's/.*"pid": \([0-9]*\).*/\1/p' "$XDG_STATE_HOME/ferry/jobs/$K/job.json")
kill -9 "$kpid"
wait_gone "$tok" 30
run_capture KP --timeout 10 -- "$FERRY" ps
assert_match "$KP_out" "$K +lost " "ferry ps: the killed job is lost"
run_capture KW --timeout 10 -- "$FERRY" wait "$K"
assert_eq 255 "$KW_rc" "ferry wait on a lost job"

# A small journal keeps the newest lines, with a marker where older ones went.
R=$("$FERRYRUN" --detach --journal-max 64K --ssh-config "$SSHCFG" -H fnode1 \
  sh -c 'i=0; while [ $i -lt 30000 ]; do echo "row $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; i=$((i+1)); done' 2>/dev/null)
run_capture RW --timeout 60 -- "$FERRY" wait "$R"
assert_eq 0 "$RW_rc" "the chatty job"
run_capture RL --timeout 10 -- "$FERRY" logs "$R"
assert_match "$(head -1 "$T/RL.out")" '^ferry: \[[0-9]+ bytes of older output were dropped' "the marker"
assert_contains "$(tail -1 "$T/RL.out")" "row 29999 x" "the last line is kept"
# Every line whole: after the marker, only the rank's rows.
if tail -n +2 "$T/RL.out" | grep -vqxE '\[0\]<stdout>:row [0-9]+ x+'; then
  fail "a cut or foreign line in the journal: $(tail -n +2 "$T/RL.out" | grep -vxE '\[0\]<stdout>:row [0-9]+ x+' | head -3)"
fi
jsize=$(cat "$XDG_STATE_HOME"/ferry/jobs/"$R"/console*.log | wc -c)
# The bound may be passed by the console's writes made before the rotation ran (a few
# 64 KiB writes at most), never by the 3 MB the job wrote.
((jsize <= 65536 + 262144)) || fail "journal of $jsize bytes over --journal-max 64K (+ a few writes)"
((jsize >= 32768)) || fail "journal of only $jsize bytes: rotated too eagerly"

# ferry attach --signal: USR1 reaches every rank through the front end; the job goes on.
U=$("$FERRYRUN" --detach "${HOSTS[@]}" sh -c "trap 'echo usr1 \$RANK' USR1; echo up \$RANK; \
  while :; do $sleeper 60 & wait; done" 2>/dev/null)
wait_for "the signalled job's ranks are up" 20 sh -c "[ \$(grep -c '^\[.\]<stdout>:up' \"$XDG_STATE_HOME/ferry/jobs/$U/console.log\") = 2 ]"
run_capture SG --timeout 10 -- "$FERRY" attach "$U" --signal USR1
assert_eq 0 "$SG_rc" "ferry attach --signal USR1"
wait_for "both ranks got USR1" 20 sh -c "[ \$(grep -c '^\[.\]<stdout>:usr1' \"$XDG_STATE_HOME/ferry/jobs/$U/console.log\") = 2 ]"
run_capture SGP --timeout 10 -- "$FERRY" ps
assert_match "$SGP_out" "$U +running " "the job goes on after USR1"
"$FERRY" stop "$U" 2>/dev/null
run_capture SGW --timeout 60 -- "$FERRY" wait "$U"
assert_eq 143 "$SGW_rc" "then stopped"
wait_gone "$tok" 20

# A lost host ends a detached job as it ends an attached one: 255, the report in the journal.
LH=$("$FERRYRUN" --detach --heartbeat 1 --kill-grace 1 "${HOSTS[@]}" "$sleeper" 1000 2>/dev/null)
wait_procs "^$sleeper 1000" 2 30
restore_link() { ip netns exec fnode2 ip link set eth0 up 2>/dev/null || true; }
on_exit restore_link
ip netns exec fnode2 ip link set eth0 down
run_capture LW --timeout 60 -- "$FERRY" wait "$LH"
restore_link
assert_eq 255 "$LW_rc" "a detached job that lost a host"
assert_contains "$(cat "$XDG_STATE_HOME/ferry/jobs/$LH/console.log")" "lost host fnode2" \
  "the report in the journal names the lost host"
wait_gone "$tok" 15

# A full disk under the journal: the record says so, the job runs to its end.
mkdir -p "$T/small"
mount -t tmpfs -o size=256k ferry-e2e-small "$T/small" || fail "cannot mount a small tmpfs"
full=$(XDG_STATE_HOME=$T/small "$FERRYRUN" --detach --ssh-config "$SSHCFG" -H fnode1 \
  sh -c 'i=0; while [ $i -lt 20000 ]; do echo "fill $i yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"; i=$((i+1)); done; echo done >"$0"' "$T/full.done" 2>/dev/null)
run_capture FU --timeout 60 -- env XDG_STATE_HOME="$T/small" "$FERRY" wait "$full"
assert_eq 0 "$FU_rc" "a job whose journal filled the disk ran to its end"
[[ -e $T/full.done ]] || fail "the rank did not finish its output"
assert_contains "$(cat "$T/small/ferry/jobs/$full/job.json")" "No space left on device" \
  "the record says why the journal stopped"
umount "$T/small"

# --max-restarts: a detached job restarts as an attached one does.
rm -f "$T/once"
RS=$("$FERRYRUN" --detach --max-restarts 1 "${HOSTS[@]}" \
  sh -c 'if [ "$RANK" = 1 ] && mkdir "$0" 2>/dev/null; then exit 5; fi; "$1" 1; echo ok $RANK' \
  "$T/once" "$sleeper" 2>/dev/null)
run_capture RSW --timeout 60 -- "$FERRY" wait "$RS"
assert_eq 0 "$RSW_rc" "the restarted job's status"
assert_contains "$(cat "$XDG_STATE_HOME/ferry/jobs/$RS/console.log")" "ok 1" "the second attempt"

# Another user can neither read the jobs nor stop one: the jobs directory keeps them from the
# control socket, and the socket's peer check answers them even where the modes were opened.
O=$("$FERRYRUN" --detach "${HOSTS[@]}" "$sleeper" 60 2>/dev/null)
sock=$XDG_STATE_HOME/ferry/jobs/$O/control.sock
[[ -S $sock ]] || fail "no control socket at $sock"
assert_eq 600 "$(stat -c %a "$sock")" "the control socket's mode"
run_capture NB --timeout 10 -- runuser -u nobody -- env XDG_STATE_HOME="$XDG_STATE_HOME" "$FERRY" stop "$O"
assert_eq 2 "$NB_rc" "ferry stop as another user"
run_capture NBS --timeout 10 -- runuser -u nobody -- env XDG_STATE_HOME="$XDG_STATE_HOME" "$FERRY" attach "$O" --signal TERM
assert_eq 2 "$NBS_rc" "ferry attach --signal as another user"
chmod 755 "$T" "$XDG_STATE_HOME" "$XDG_STATE_HOME/ferry" "$XDG_STATE_HOME/ferry/jobs" "$XDG_STATE_HOME/ferry/jobs/$O"
chmod 666 "$sock"
run_capture NBC --timeout 10 -- runuser -u nobody -- python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
try:
    s.sendall(b"stop\n")
except BrokenPipeError:
    pass  # refused and closed before the request was written: the answer stays readable
print(s.recv(200).decode().strip())' "$sock"
assert_eq "refused: this job belongs to another user" "$NBC_out" "the peer check"
chmod 700 "$XDG_STATE_HOME/ferry/jobs" "$XDG_STATE_HOME/ferry/jobs/$O"
chmod 600 "$sock"
run_capture OS --timeout 10 -- "$FERRY" attach "$O" --signal QUIT
assert_eq 0 "$OS_rc" "its owner asks for the state report"
wait_for "the state report in the journal" 20 grep -q "on request (SIGQUIT)" "$XDG_STATE_HOME/ferry/jobs/$O/console.log"
run_capture NBP --timeout 10 -- "$FERRY" ps
assert_match "$NBP_out" "$O +running " "the job runs on"
"$FERRY" stop "$O" 2>/dev/null
run_capture OW --timeout 60 -- "$FERRY" wait "$O"
assert_eq 143 "$OW_rc" "stopped by its owner"

# --nohup: the terminal goes away after the first lines; the job goes on into the journal.
run_capture N --timeout 60 -- "$IN_PTY" --hangup-on "tick 3 of" "$T/N.tty" -- "$FERRYRUN" \
  --nohup "${HOSTS[@]}" sh -c 'for i in $(seq 1 20); do echo "tick $i of $RANK"; '"$sleeper"' 0.1; done'
assert_eq 0 "$N_rc" "in_pty closed the terminal"
nid=$(grep -o "job [0-9a-f]\{8\}" "$T/N.tty" | head -1 | cut -d' ' -f2)
assert_match "$nid" '^[0-9a-f]{8}$' "--nohup names its job"
run_capture NW --timeout 60 -- "$FERRY" wait "$nid"
assert_eq 0 "$NW_rc" "the job survived the hangup"
run_capture NL --timeout 10 -- "$FERRY" logs "$nid"
for r in 0 1; do
  assert_eq 20 "$(grep -c "^\[$r\]<stdout>:tick [0-9]* of $r$" "$T/NL.out")" "--nohup rank $r: every line"
done

# Bad input: one line, exit 2.
assert_refused "--detach --stdin 0" "a detached job has no terminal to read from" \
  "$FERRYRUN" --detach --stdin 0 "${HOSTS[@]}" true
assert_refused "unknown id" "no job 'ffffffff'" "$FERRY" attach ffffffff
assert_refused "attach to an ended job" "job $F has ended (status 3)" "$FERRY" attach "$F"
assert_refused "stop an ended job" "job $F has ended" "$FERRY" stop "$F"
chmod 777 "$XDG_STATE_HOME/ferry/jobs"
assert_refused "a jobs directory others may write" "writable by others" "$FERRYRUN" --detach "${HOSTS[@]}" true
chmod 700 "$XDG_STATE_HOME/ferry/jobs"
chown nobody "$XDG_STATE_HOME/ferry/jobs"
assert_refused "a jobs directory of another user" "not by you" "$FERRY" ps
chown root "$XDG_STATE_HOME/ferry/jobs"

wait_gone "$tok" 10
wait_cluster_idle 10
pass
