#!/usr/bin/env bash
# 69_pool: the warm pool on 4 simulated hosts. `ferry up` keeps one `ferryd --pool` per host
# behind one SSH connection each, and its `ferryd --fork-server`, which forks the jobs' ferryds; 20 jobs in a row and 3 at once go through it (no SSH
# session of their own), each checked like any job: every rank's line with its variables and
# one core, exit codes, a --sync tree (once checked with the pool's watch on, each host's kept
# copy is taken on the watch's word; one changed behind its back is mended), an MPI world (mpi4py over PMIx), --timeout, a restart,
# --check. Jobs at once do not see each other's output or signals. A `ferryd --pool` killed on a host is started again by the
# next job (--verbose says so); a job's ferryd killed loses that host as usual; a fork server
# killed: that host's ferryds are exec'd again; kill -9 of
# ferryrun or of the pool leaves no rank, and the pool's ferryds end with its connections; a
# stale pool is passed over. The pool's socket refuses another user; it ends itself after
# --idle; `ferry down` ends it. `ferry up` takes a hostfile with -p, or a job file. Bad input:
# one line.
# shellcheck disable=SC2154 # X_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4

export XDG_STATE_HOME=$T/state
FERRY=$FERRY_BIN/ferry
tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
# The pool's name carries the token: a failed scenario's cleanup ends the pool too.
NAME=p$tok
POOLS=$XDG_STATE_HOME/ferry/pools
UP=(--ssh-config "$SSHCFG" -H "fnode1,fnode2,fnode3,fnode4")
JOB=(--ssh-config "$SSHCFG" -H "fnode1:2,fnode2:2,fnode3:2,fnode4:2")

pool_pid() { sed -n "s/.* pool $1: pid \([0-9]*\),.*/\1/p" "$POOLS/$1/pool.log" | tail -1; }
pool_ferryds() { pgrep -c -f "ferryd --pool" || true; }
# The ferryds the pools' fork servers started and that still run: one spare per host (started
# ahead of the next job) once no job runs.
pool_children() {
  local n=0 p parent
  for p in $(pgrep -f "ferryd --stdio"); do
    parent=$(ps -o ppid= -p "$p" | tr -d ' ')
    [[ -n $parent && $(ps -o args= -p "$parent") == *"ferryd --fork-server"* ]] && n=$((n + 1))
  done
  echo "$n"
}
spares_only() { [[ $(pool_children) == 4 ]]; }
# job_ferryd HOST SLEEPER: the ferryd of the job whose rank runs SLEEPER on HOST (the rank's
# shell is its child).
job_ferryd() {
  local rank shell
  rank=$(pids_on_host "$1" "^$2 1000" | head -1)
  shell=$(ps -o ppid= -p "$rank" | tr -d ' ')
  ps -o ppid= -p "$shell" | tr -d ' '
}
# SSH logins the hosts' sshd accepted so far.
ssh_logins() { cat "$FERRY_CLUSTER_DIR"/fnode*/sshd.log | grep -c "Accepted publickey" || true; }

# Bad input: one line each, nothing started.
assert_refused "--idle 5x" "ferry up: --idle: bad time '5x'" "$FERRY" up --idle 5x "${UP[@]}"
assert_refused "--name a/b" "ferry up: --name: bad pool name 'a/b'" "$FERRY" up --name 'a/b' "${UP[@]}"
assert_refused "no host" "ferry up: no remote host to keep" "$FERRY" up
assert_refused "--pool nosuch" "ferryrun: --pool nosuch: no such pool runs" \
  "$FERRYRUN" --pool nosuch "${JOB[@]}" true
assert_refused "--pool and --no-pool" "--no-pool: choose one" \
  "$FERRYRUN" --pool "$NAME" --no-pool "${JOB[@]}" true
run_capture B6 --timeout 10 -- "$FERRY" down "$NAME"
assert_eq 1 "$B6_rc" "ferry down of no pool"
assert_contains "$B6_err" "ferry down: no pool $NAME runs" "ferry down of no pool says so"

# Up: 4 hosts, one ferryd --pool each, the socket private.
run_capture UP --timeout 60 -- "$FERRY" up --name "$NAME" --idle 300s "${UP[@]}"
assert_eq 0 "$UP_rc" "ferry up"
assert_contains "$UP_out" "pool $NAME: 4 of 4 host(s) up" "ferry up's report"
assert_eq 700 "$(stat -c %a "$POOLS/$NAME")" "the pool's directory is private"
assert_eq 600 "$(stat -c %a "$POOLS/$NAME/pool.sock")" "the pool's socket"
for i in 1 2 3 4; do
  assert_eq 1 "$(pids_on_host "fnode$i" "ferryd --pool" | wc -l)" "one ferryd --pool on fnode$i"
  server=$(pids_on_host "fnode$i" "ferryd --fork-server")
  assert_eq 1 "$(echo "$server" | wc -w)" "one fork server on fnode$i"
  assert_eq "$(pids_on_host "fnode$i" "ferryd --pool")" "$(ps -o ppid= -p "$server" | tr -d ' ')" \
    "fnode$i: the fork server is its ferryd --pool's"
done
run_capture PS --timeout 10 -- "$FERRY" pools
for i in 1 2 3 4; do assert_contains "$PS_out" "fnode$i up" "ferry pools: fnode$i up"; done
logins=$(ssh_logins)

# 20 jobs in a row through the pool (found without --pool), each checked; every fifth fails.
check_job() {  # P EXPECTED_RC
  local p=$1 want=$2 r out rc_var="${1}_rc"
  assert_eq "$want" "${!rc_var}" "job $p: exit status"
  out=$T/$p.out
  for r in 0 1 2 3 4 5 6 7; do
    assert_eq "r=$r w=8 lr=$((r % 2)) h=fnode$((r / 2 + 1)) cpus=1" "$(rank_lines "$out" "$r" stdout | grep "^r=")" \
      "job $p: rank $r's line"
  done
}
# shellcheck disable=SC2016 # the rank's shell expands them
RANK_LINE='echo "r=$RANK w=$WORLD_SIZE lr=$LOCAL_RANK h=$(hostname) cpus=$(nproc)"'
for i in $(seq 1 20); do
  code=0
  ((i % 5 == 0)) && code=3
  run_capture J --timeout 60 -- "$FERRYRUN" --verbose "${JOB[@]}" \
    sh -c "$RANK_LINE; [ \$RANK = 5 ] && { $sleeper 1; exit $code; }; exit 0"
  check_job J "$code"
  assert_eq 4 "$(grep -c "through pool $NAME (warm, no SSH)" "$T/J.err")" "job $i: every host through the pool"
done
assert_eq "$logins" "$(ssh_logins)" "no SSH login of the jobs' own (the hosts' sshd logs)"
assert_eq 20 "$(grep -c "fnode1: job ferryrun-[0-9]* on stream" "$POOLS/$NAME/pool.log")" \
  "the pool's log: 20 jobs on fnode1"
wait_for "no job's ferryd left, a spare on each host" 15 spares_only
assert_eq 4 "$(pool_ferryds)" "the pool's ferryds stay"

# --sync through the pool: the tree reaches every host's own cache over the pool's connection.
mkdir -p "$T/tree/sub"
echo "synced $tok" >"$T/tree/sub/f.txt"
# shellcheck disable=SC2016 # the rank's shell expands them
run_capture SY --timeout 60 -- "$FERRYRUN" --verbose --sync "$T/tree" "${JOB[@]}" \
  sh -c 'echo "$(hostname) $(cat sub/f.txt)"'
assert_eq 0 "$SY_rc" "--sync through the pool"
assert_eq 4 "$(grep -c "through pool $NAME (warm, no SSH)" "$T/SY.err")" "--sync: every host through the pool"
for r in 0 1 2 3 4 5 6 7; do
  assert_eq "fnode$((r / 2 + 1)) synced $tok" "$(rank_lines "$T/SY.out" "$r" stdout)" "--sync: rank $r"
done

# Through the pool, a tree unchanged since the launch before is not read again (the pool
# watches it), an edited one is; a host's spare changed after its job is not taken as it was.
for run in SY2 SY3 SY4; do
  [[ $run == SY3 ]] && echo "edited $tok" >"$T/tree/sub/f.txt"
  if [[ $run == SY4 ]]; then
    wait_for "no job's ferryd left" 15 spares_only
    # shellcheck disable=SC2016 # the rank's shell expands them
    "$FERRYRUN" --no-pool --ssh-config "$SSHCFG" -H fnode1 sh -c \
      'for f in ~/.cache/ferry/sync/spares/*/sub/f.txt; do echo tampered >"$f"; done' ||
      fail "cannot tamper with fnode1's spares"
  fi
  run_capture "$run" --timeout 60 -- "$FERRYRUN" --verbose --sync "$T/tree" "${JOB[@]}" cat sub/f.txt
  rc_var="${run}_rc"
  assert_eq 0 "${!rc_var}" "--sync through the pool ($run)"
  want="synced $tok"
  [[ $run != SY2 ]] && want="edited $tok"
  for r in 0 1 2 3 4 5 6 7; do
    assert_eq "$want" "$(rank_lines "$T/$run.out" "$r" stdout)" "--sync through the pool ($run): rank $r"
  done
done
assert_contains "$(cat "$T/SY2.err")" "the tree not read: unchanged since the launch before" \
  "an unchanged tree is not read again"
assert_not_contains "$(cat "$T/SY3.err")" "the tree not read" "an edited tree is read again"
# fnode1's kept copies were changed behind the pool's back: its watch does not vouch for them,
# the ferryd's own check finds the change, and the copy is mended.
assert_match "$(grep "sync: fnode1: sent" "$T/SY4.err")" "\(a kept copy, 1 of its entries mended; " \
  "a tampered copy is mended"
# The tree itself was unchanged: its list came from the snapshot, decoded for fnode1 alone.
assert_contains "$(cat "$T/SY4.err")" "the tree not read: unchanged since the launch before" \
  "the list a host lacking the tree gets comes from the pool's snapshot"
# Once a host's kept copy has been checked with the pool's watch on (at idle priority, after
# its job), the next job takes it on the watch's word, without a stat of its own.
watched_hosts() {
  grep -c "the ranks start in .*(a kept copy, untouched as the pool's watch saw it; " "$T/SW.err" || true
}
for _ in $(seq 1 20); do
  run_capture SW --timeout 60 -- "$FERRYRUN" --verbose --sync "$T/tree" "${JOB[@]}" cat sub/f.txt
  assert_eq 0 "$SW_rc" "--sync through the pool (SW)"
  for r in 0 1 2 3 4 5 6 7; do
    assert_eq "edited $tok" "$(rank_lines "$T/SW.out" "$r" stdout)" "--sync on the watch's word: rank $r"
  done
  [[ $(watched_hosts) == 4 ]] && break
  sleep 0.5
done
assert_eq 4 "$(watched_hosts)" "every host's copy taken on the pool watch's word"

# An MPI world through the pool (Open MPI's PMIx, served by the jobs' ferryds).
if "$PY" -c 'from mpi4py import MPI' 2>/dev/null; then
  run_capture M --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 \
    -H fnode1:1,fnode2:1,fnode3:1,fnode4:1 "$PY" "$FERRY_SRC/tests/e2e/programs/mpi4py_allreduce.py" "$tok"
  assert_eq 0 "$M_rc" "mpi4py through the pool"
  for r in 0 1 2 3; do
    assert_eq "mpi4py $r/4 host=fnode$((r + 1)) sum=10 bcast=from-0 hosts=4" \
      "$(rank_lines "$T/M.out" "$r" stdout)" "mpi4py rank $r"
  done
else
  fail "python3-mpi4py is not installed (apt-get install python3-mpi4py)"
fi

# --timeout through the pool: exit 124, nothing left.
run_capture TO --timeout 60 -- "$FERRYRUN" --timeout 2 "${JOB[@]}" "$sleeper" 1000
assert_eq 124 "$TO_rc" "--timeout through the pool"
wait_gone "$sleeper" 10

# 3 jobs at once: each sees only its own ranks' lines; SIGTERM to one leaves the others.
for k in 1 2 3; do
  start_bg C$k -- "$FERRYRUN" "${JOB[@]}" sh -c "echo job$k \$RANK; $sleeper 2; $RANK_LINE"
done
wait_procs "^$sleeper 2" 24 30
start_bg K -- "$FERRYRUN" "${JOB[@]}" sh -c "echo jobK \$RANK; exec $sleeper 1000"
wait_procs "^$sleeper 1000" 8 30
kill -TERM "$K_pid"
for k in 1 2 3; do
  wait_bg C$k 60
  check_job C$k 0
  assert_eq 8 "$(grep -c "<stdout>:job$k " "$T/C$k.out")" "job $k: its 8 ranks' lines"
  assert_eq 8 "$(grep -c "<stdout>:job" "$T/C$k.out")" "job $k: no other job's lines"
done
wait_bg K 30
assert_ne 0 "$K_rc" "the job given SIGTERM"
wait_gone "$sleeper 1000" 10
run_capture PJ --timeout 10 -- "$FERRY" pools
assert_contains "$PJ_out" "0 job stream(s) open" "no stream left open"

# A restart through the pool: rank 1 fails the first attempt (the others wait in it), the second
# runs through.
run_capture RS --timeout 60 -- "$FERRYRUN" --max-restarts 1 "${JOB[@]}" \
  sh -c "if [ \$FERRY_ATTEMPT = 0 ]; then [ \$RANK = 1 ] && exit 3; exec $sleeper 1000; fi; $RANK_LINE"
assert_eq 0 "$RS_rc" "the restarted job's status"
for r in 0 1 2 3 4 5 6 7; do
  assert_eq "r=$r w=8 lr=$((r % 2)) h=fnode$((r / 2 + 1)) cpus=1" \
    "$(rank_lines "$T/RS.out" "$r" stdout)" "restarted job: rank $r's line"
done
assert_contains "$RS_err" "restart" "the restart is said"
# --check through the pool: every host described, nothing started.
run_capture CK --timeout 60 -- "$FERRYRUN" --check "${JOB[@]}" true
assert_eq 0 "$CK_rc" "--check through the pool"
for i in 1 2 3 4; do assert_contains "$CK_out$CK_err" "fnode$i" "--check names fnode$i"; done

# A ferryd --pool killed on fnode2: the next job starts it again (said under --verbose).
kill -9 "$(pids_on_host fnode2 "ferryd --pool")"
wait_for "the pool sees fnode2 down" 20 sh -c "'$FERRY' pools | grep -q 'fnode2 down'"
run_capture R --timeout 60 -- "$FERRYRUN" --verbose "${JOB[@]}" sh -c "$RANK_LINE"
check_job R 0
assert_contains "$R_err" "fnode2: through pool $NAME (repaired" "the repair, under --verbose"
assert_eq 1 "$(pids_on_host fnode2 "ferryd --pool" | wc -l)" "fnode2's ferryd --pool again"
assert_eq 1 "$(pids_on_host fnode2 "ferryd --fork-server" | wc -l)" "and its fork server"

# A job's own ferryd killed: that host is lost as usual; nothing left.
start_sleeper_job L 8 -- "${JOB[@]}"
kill -9 "$(job_ferryd fnode3 "$L_sleeper")"
wait_bg L 30
assert_ne 0 "$L_rc" "a job whose ferryd was killed"
assert_contains "$L_err" "lost host fnode3" "the lost host named"
wait_gone "$L_sleeper" 15

# kill -9 of ferryrun during a job: its ranks end on every host; the pool stays.
start_sleeper_job F 8 -- "${JOB[@]}"
kill -9 "$F_pid"
wait_gone "$F_sleeper" 15
wait_for "no job's ferryd left" 15 spares_only
assert_eq 4 "$(pool_ferryds)" "the pool outlives a killed job"

# Another user cannot use the pool: the directory keeps them out, and the socket's peer
# check refuses them even where the directory lets them through.
probe='import socket,sys
s=socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect:", e.strerror); sys.exit(0)
try:
    s.sendall(b"open fnode1:2222 x\n")
except BrokenPipeError:
    pass  # the pool may refuse and close before the request is written: its answer stays readable
print(s.recv(200).decode().strip())'
run_capture U1 --timeout 10 -- runuser -u nobody -- "$PY" -c "$probe" "$POOLS/$NAME/pool.sock"
assert_contains "$U1_out" "connect: Permission denied" "the directory keeps another user out"
chmod 755 "$XDG_STATE_HOME" "$XDG_STATE_HOME/ferry" "$POOLS" "$POOLS/$NAME"
chmod 666 "$POOLS/$NAME/pool.sock"
run_capture U2 --timeout 10 -- runuser -u nobody -- "$PY" -c "$probe" "$POOLS/$NAME/pool.sock"
chmod 700 "$XDG_STATE_HOME/ferry" "$POOLS" "$POOLS/$NAME"
chmod 600 "$POOLS/$NAME/pool.sock"
assert_eq "refused: this pool belongs to another user" "$U2_out" "the socket refuses another uid"
assert_contains "$(cat "$POOLS/$NAME/pool.log")" "refused a connection of uid $(id -u nobody)" "logged"

# A fork server killed (fnode3's): its spare ends with it, the next spare there is exec'd by
# ferryd --pool itself, and the jobs go on.
# fnode3's ferryds started by its ferryd --pool itself (not by a fork server).
exec_spare_on_fnode3() {
  local p n=0
  for p in $(pids_on_host fnode3 "ferryd --stdio"); do
    [[ $(ps -o args= -p "$(ps -o ppid= -p "$p" | tr -d ' ')") == *"ferryd --pool"* ]] && n=$((n + 1))
  done
  [[ $n == 1 ]]
}
three_forked_one_exec_spare() { exec_spare_on_fnode3 && [[ $(pool_children) == 3 ]]; }
kill -9 "$(pids_on_host fnode3 "ferryd --fork-server")"
wait_for "an exec'd spare on fnode3" 15 exec_spare_on_fnode3
run_capture FS --timeout 60 -- "$FERRYRUN" "${JOB[@]}" sh -c "$RANK_LINE"
check_job FS 0
wait_for "a spare on each host, fnode3's exec'd" 15 three_forked_one_exec_spare

# kill -9 of the pool during a job: the job loses its hosts, no rank is left, and the pool's
# ferryds end with their connections.
start_sleeper_job P 8 -- "${JOB[@]}"
kill -9 "$(pool_pid "$NAME")"
wait_bg P 30
assert_ne 0 "$P_rc" "a job whose pool was killed"
assert_contains "$P_err" "the warm pool's connection ended" "the reason"
wait_gone "$P_sleeper" 15
wait_cluster_idle 20
# Its socket is left behind: a job passes it over and reaches the hosts itself.
run_capture S --timeout 60 -- "$FERRYRUN" --verbose "${JOB[@]}" sh -c "$RANK_LINE"
check_job S 0
assert_not_contains "$S_err" "through pool" "a dead pool is passed over"

# Idle: the pool ends itself after --idle without a job, its ferryds with it.
run_capture UP2 --timeout 60 -- "$FERRY" up --name "$NAME" --idle 3s "${UP[@]}"
assert_eq 0 "$UP2_rc" "ferry up over a dead pool's directory"
run_capture I --timeout 60 -- "$FERRYRUN" "${JOB[@]}" sh -c "$RANK_LINE"
check_job I 0
pid=$(pool_pid "$NAME")
wait_for "the idle pool's end" 20 sh -c "! kill -0 $pid"
assert_contains "$(cat "$POOLS/$NAME/pool.log")" "no job for 3 s: ending" "the log says why"
wait_cluster_idle 20

# ferry up reads hosts as ferryrun does: a hostfile with -p, and a job file's hosts. A job
# naming the same hosts the same way goes through that pool.
printf 'fnode1 slots=2\nfnode2 slots=2\n' >"$T/hostfile"
run_capture HF --timeout 60 -- "$FERRY" up --name "hf$tok" --idle 300s --ssh-config "$SSHCFG" \
  --hostfile "$T/hostfile" -p 2222
assert_eq 0 "$HF_rc" "ferry up --hostfile -p"
assert_contains "$HF_out" "pool hf$tok: 2 of 2 host(s) up" "ferry up --hostfile: its hosts"
run_capture HJ --timeout 60 -- "$FERRYRUN" --verbose --ssh-config "$SSHCFG" -p 2222 \
  -H fnode1:2,fnode2:2 true
assert_eq 0 "$HJ_rc" "a job on the hostfile pool's hosts"
assert_eq 2 "$(grep -c "through pool hf$tok (warm, no SSH)" "$T/HJ.err")" "both through the hostfile's pool"
run_capture HD --timeout 30 -- "$FERRY" down "hf$tok"
assert_eq 0 "$HD_rc" "ferry down of the hostfile's pool"
printf '[[hosts]]\nname = "fnode3"\nport = 2222\n\n[[hosts]]\nname = "fnode4"\nport = 2222\n' >"$T/job.toml"
run_capture TF --timeout 60 -- "$FERRY" up --name "tf$tok" --idle 300s --ssh-config "$SSHCFG" \
  --config "$T/job.toml"
assert_eq 0 "$TF_rc" "ferry up --config"
assert_contains "$TF_out" "pool tf$tok: 2 of 2 host(s) up" "ferry up --config: its hosts"
run_capture TJ --timeout 60 -- "$FERRYRUN" --verbose --ssh-config "$SSHCFG" --config "$T/job.toml" \
  -np 2 true
assert_eq 0 "$TJ_rc" "a job from the same job file"
assert_eq 2 "$(grep -c "through pool tf$tok (warm, no SSH)" "$T/TJ.err")" "both through the job file's pool"
run_capture TD --timeout 30 -- "$FERRY" down "tf$tok"
assert_eq 0 "$TD_rc" "ferry down of the job file's pool"
wait_cluster_idle 20

# The default pool, of 3 hosts: a job on 4 goes through it for those 3 and reaches fnode4
# itself; ferry up again over it is fine, ferry down ends it.
UP3HOSTS=(--ssh-config "$SSHCFG" -H "fnode1,fnode2,fnode3")
run_capture UP3 --timeout 60 -- "$FERRY" up --idle 300s "${UP3HOSTS[@]}"
assert_eq 0 "$UP3_rc" "ferry up (default pool)"
run_capture PART --timeout 60 -- "$FERRYRUN" --verbose "${JOB[@]}" sh -c "$RANK_LINE"
check_job PART 0
assert_eq 3 "$(grep -c "through pool default (warm, no SSH)" "$T/PART.err")" "3 hosts through the pool"
assert_not_contains "$PART_err" "fnode4: through pool" "fnode4 reached directly"
run_capture UP4 --timeout 60 -- "$FERRY" up "${UP3HOSTS[@]}"
assert_contains "$UP4_out" "pool default runs already" "a running pool is reused"
assert_refused "another pool's hosts" "ferry up: pool default runs already without fnode9" \
  "$FERRY" up --ssh-config "$SSHCFG" -H fnode1,fnode9
pid=$(pool_pid default)
run_capture D --timeout 30 -- "$FERRY" down
assert_eq 0 "$D_rc" "ferry down"
assert_contains "$D_out" "ferry down: pool default ended" "ferry down's line"
wait_for "the pool's end" 20 sh -c "! kill -0 $pid"
wait_cluster_idle 20
pass
