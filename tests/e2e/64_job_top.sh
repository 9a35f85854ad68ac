#!/usr/bin/env bash
# 64_job_top: ferryrun --top in a real terminal (tmux), 2 hosts x 2 ranks.
# 1. 80x24: once the ranks run, the screen holds one row per rank (host, state, CPU, last
#    line) and fits the terminal; s sorts by host, / filters to fnode2 (ranks 2 and 3 only),
#    h shows one row per host, o shows rank 2's last lines, q goes back, q leaves the view:
#    the lines the ranks printed meanwhile come out on the console, the job ends well (exit
#    0) and the terminal's settings are as before (stty).
# 2. 200x30: the devices column shows; the job ends while the view is up: the view closes by
#    itself, every rank's lines and the exit status follow.
# 3. --top without a terminal, or with --detach: one line, exit 2.
# 4. ferry top ID of a detached job: its rows, rank 0's output (o), q leaves with exit 0 and
#    the job runs on; a job that ends under the view is said so (exit 0); an ended job is
#    refused in one line (exit 2).
# Each job runs until the test has seen what it waits for (view_rank.sh's @FILE), not for a
# time the view must keep within on a loaded machine. Nothing of any job is left on the hosts.
# shellcheck disable=SC2154 # N_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
command -v tmux >/dev/null || fail "tmux is not installed (scripts/ferry-dev deps test)"

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/view_rank.sh
# Each terminal has a tmux server of its own: a new session on the socket of a server that is
# still going away fails with "server exited unexpectedly".
sock=ferry-e2e-$$ term=0
tm() { tmux -L "$sock-$term" "$@"; }
next_term() {  # ends this terminal's server, if any; tm then names a fresh one
  tm kill-server 2>/dev/null || true
  term=$((term + 1))
}
# The terminals' servers go first, then lib.sh's cleanup.
# shellcheck disable=SC2016 # expanded when the test exits
on_exit 'for ((i = 0; i <= term; i++)); do tmux -L "$sock-$i" kill-server 2>/dev/null; done'
screen() { tm capture-pane -p -t view; }
wait_screen() {  # wait_screen WHAT TEXT: until the screen holds TEXT
  local deadline=$((SECONDS + 40))
  until screen | grep -qF -- "$2"; do
    ((SECONDS < deadline)) || fail "timed out waiting for $1 on the screen:
$(screen)"
    sleep 0.2
  done
}
# wait_rows: until every rank's row shows it sampled (run or sleep, not start).
wait_rows() {
  local deadline=$((SECONDS + 40)) r s ok
  while :; do
    s=$(screen) ok=1
    for r in 0 1 2 3; do grep -Eq "^ +$r fnode$((r / 2 + 1)) +(run|sleep)" <<<"$s" || ok=0; done
    ((ok)) && return 0
    ((SECONDS < deadline)) || fail "timed out waiting for every rank's first sample:
$s"
    sleep 0.2
  done
}
# has_line TEXT ERE WHAT: some line of TEXT matches ERE.
has_line() { grep -Eq -- "$2" <<<"$1" || fail "$3: no line matches /$2/ in:
$1"; }
# start_view COLUMNS ROWS SECONDS|@FILE MODES: ferryrun --top in a fresh terminal of that
# size; the shell then prints EXIT=status and whether stty's settings are those from before.
start_view() {
  next_term
  tm new-session -d -s view -x "$1" -y "$2" "cd $T; before=\$(stty -g); $FERRYRUN --ssh-config $SSHCFG -np 4 -H fnode1:2,fnode2:2 --top $prog $tok $3 $4; echo EXIT=\$?; [ \"\$(stty -g)\" = \"\$before\" ] && echo STTY=same || echo STTY=changed; sleep 600"
}

# 1. 80x24, keys.
start_view 80 24 "@$T/end1" bibb
wait_screen "the view" "4 of 4 ranks running on 2 hosts"
wait_screen "rank 3's last line" "rank 3 busy ftok"
wait_rows  # each host's first sample
s=$(screen)
assert_eq 24 "$(screen | wc -l)" "the screen's lines"
assert_eq 0 "$(awk 'length($0) > 80' <<<"$s" | wc -l)" "no line wider than 80 columns"
for r in 0 1 2 3; do
  has_line "$s" "^ +$r fnode$((r / 2 + 1)) +(run|sleep)" "rank $r's row"
done
has_line "$s" "^ +1 fnode1 +sleep +[0-5] " "the idle rank sleeps, near 0% CPU"
tm send-keys -t view s
wait_screen "the sort by host" "s sort (host)"
tm send-keys -t view / f n o d e 2 Enter
wait_screen "the filter" "/ filter (fnode2)"
s=$(screen)
assert_not_contains "$s" " fnode1 " "the filter leaves fnode1's ranks out"
has_line "$s" "^ +2 fnode2" "rank 2 shown"
has_line "$s" "^ +3 fnode2" "rank 3 shown"
tm send-keys -t view h
wait_screen "one row per host" "HOST         RANKS"
has_line "$(screen)" "^ fnode2 +2 " "fnode2's row counts its 2 ranks"
tm send-keys -t view h o
wait_screen "rank 2's output" "output of rank 2"
has_line "$(screen)" "^rank 2 busy $tok" "rank 2's lines"
tm send-keys -t view q
wait_screen "the table again" "LAST LINE"
tm send-keys -t view q
wait_screen "the console after the view" "[2]<stdout>:rank 2 busy $tok"
assert_not_contains "$(screen)" "LAST LINE" "the view is gone"
touch "$T/end1"
wait_screen "the job's end" "EXIT=0"
wait_screen "the shell's stty check after it" "STTY="  # a line later: its own write
s=$(screen)
assert_contains "$s" "STTY=same" "the terminal's settings are as before"
for r in 0 1 2 3; do assert_contains "$(tm capture-pane -p -t view -S -400)" "[$r]<stdout>:rank $r done" "rank $r's end on the console"; done
tm kill-server  # its shell's command line names the token too
wait_gone "$tok" 10
wait_cluster_idle 10

# 2. 200x30: the devices column; the job ends under the view.
start_view 200 30 "@$T/end2" bbbb
wait_screen "the wide view" "DEVICES"
s=$(screen)
assert_eq 0 "$(awk 'length($0) > 200' <<<"$s" | wc -l)" "no line wider than 200 columns"
touch "$T/end2"
wait_screen "the job's end" "EXIT=0"
wait_screen "the shell's stty check after it" "STTY="  # a line later: its own write
all=$(tm capture-pane -p -t view -S -400)
assert_contains "$all" "STTY=same" "the terminal's settings are as before"
for r in 0 1 2 3; do assert_contains "$all" "[$r]<stdout>:rank $r done" "rank $r's end on the console"; done
assert_not_contains "$(screen)" "LAST LINE" "the view closed with the job"
tm kill-server
wait_gone "$tok" 10
wait_cluster_idle 10

# 3. No terminal; --detach.
run_capture N -- "$FERRYRUN" -np 1 --top true
assert_eq 2 "$N_rc" "--top without a terminal"
assert_eq "ferryrun: --top needs a terminal: stdin and stdout must be one" "$N_err" "the one line"
run_capture D -- "$FERRYRUN" -np 1 --top --detach true
assert_eq 2 "$D_rc" "--top with --detach"
assert_contains "$D_err" "--top shows the job on this terminal; --detach leaves it" "the one line"

# 4. ferry top of a detached job.
export XDG_STATE_HOME=$T/state
FERRY=$(dirname "$FERRYRUN")/ferry
id=$("$FERRYRUN" --ssh-config "$SSHCFG" --detach -np 4 -H fnode1:2,fnode2:2 \
  "$prog" "$tok" "@$T/end4" bibb)
[[ $id =~ ^[0-9a-f]+$ ]] || fail "ferryrun --detach gave no job id: '$id'"
next_term
tm new-session -d -s view -x 100 -y 20 "XDG_STATE_HOME=$XDG_STATE_HOME $FERRY top $id; echo EXIT=\$?; sleep 600"
wait_screen "the detached job's rows" "4 of 4 ranks running on 2 hosts"
wait_screen "its last lines" "rank 3 busy $tok"
wait_screen "the ranks' first samples" "sleep        0"
s=$(screen)
for r in 0 1 2 3; do has_line "$s" "^ +$r fnode$((r / 2 + 1)) +(run|sleep)" "rank $r's row (ferry top)"; done
assert_contains "$s" "ferry top  job $id  4 of 4 ranks" "the job named"
tm send-keys -t view o
wait_screen "rank 0's output" "output of rank 0"
wait_screen "rank 0's lines" "rank 0 busy $tok"
tm send-keys -t view q q
wait_screen "ferry top's end" "EXIT=0"
assert_eq running "$("$FERRY" ps | awk -v id="$id" '$1 == id { print $2 }')" "the job runs on after the view"
# The job ends under a second view.
next_term
tm new-session -d -s view -x 100 -y 20 "XDG_STATE_HOME=$XDG_STATE_HOME $FERRY top $id; echo EXIT=\$?; sleep 600"
wait_screen "the second view" "4 of 4 ranks running on 2 hosts"
touch "$T/end4"
wait_screen "the end under the view" "EXIT=0"
assert_contains "$(screen)" "ferry: job $id has ended (status 0)" "the end said"
tm kill-server
run_capture E -- "$FERRY" top "$id"
assert_eq 2 "$E_rc" "ferry top of an ended job"
assert_eq "ferry: job $id has ended (status 0); 'ferry logs $id' shows its output" "$E_err" "the one line"
wait_gone "$tok" 10
wait_cluster_idle 10
pass
