# shellcheck shell=bash
# Shared helpers for ferry's end-to-end scenarios (tests/e2e/NN_name.sh).
#
# A scenario sources this file, calls require_root and require_cluster, runs the
# real ferryrun against the simulated cluster (tests/cluster/ferry-cluster), makes
# assertions, checks that nothing of the job is left, and ends with `pass`.
#
# Environment (CTest sets the first four):
#   FERRY_BIN          folder with ferryrun and ferryd (default: <src>/build/bin)
#   FERRY_SRC          source tree (default: derived from this file's location)
#   FERRY_CLUSTER_DIR  state dir of the cluster (default: /tmp/ferry-cluster)
#   FERRY_SLURM_DIR    state dir of the Slurm cluster (tests/cluster/ferry-slurm; default:
#                      /tmp/ferry-slurm), for the scenarios 8N_* (require_slurm)
#   FERRY_E2E_TIMEOUT  limit in seconds for one captured command (default: 120)
#   FERRY_E2E_KEEP=1   keep the per-test temp dir $T (its path is printed)
#
# Processes inside the cluster's namespaces share the root PID namespace, so
# pgrep from here sees every rank and ferryd on every simulated host.

set -euo pipefail

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FERRY_SRC=${FERRY_SRC:-$(cd "$E2E_DIR/../.." && pwd)}
FERRY_BIN=${FERRY_BIN:-$FERRY_SRC/build/bin}
FERRY_CLUSTER_DIR=${FERRY_CLUSTER_DIR:-/tmp/ferry-cluster}
FERRY_CLUSTER=$FERRY_SRC/tests/cluster/ferry-cluster
FERRY_SLURM_DIR=${FERRY_SLURM_DIR:-/tmp/ferry-slurm}
FERRY_SLURM=$FERRY_SRC/tests/cluster/ferry-slurm
FERRY_E2E_TIMEOUT=${FERRY_E2E_TIMEOUT:-120}
# For the scenarios: the binaries under test and the cluster's ssh config.
FERRYRUN=$FERRY_BIN/ferryrun
FERRYD=$FERRY_BIN/ferryd
SSHCFG=$FERRY_CLUSTER_DIR/ssh_config
export FERRYRUN FERRYD SSHCFG
TEST_NAME=$(basename "$0" .sh)
# The same interpreter on every simulated host and here (data is recomputed).
PY=$(command -v /usr/bin/python3 || command -v python3 || true)
export FERRY_SRC FERRY_BIN FERRY_CLUSTER_DIR FERRY_SLURM_DIR

# Per-test temp dir, on the filesystem every simulated host shares.
T=$(mktemp -d "/tmp/ferry-e2e.$TEST_NAME.XXXXXX")
chmod 755 "$T"
: >"$T/.tokens"
: >"$T/.bgpids"
LAST_CAPTURE=""

# When this scenario began, in clock ticks since boot (the unit of /proc/PID/stat's start
# time): its cleanup ends only processes that started after it.
E2E_START_TICKS=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%d", $1 * hz}' /proc/uptime)

# _started_here PID...: those of the PIDs that started after this scenario began.
_started_here() {
  local pid start
  for pid in "$@"; do
    start=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $20}')
    [[ -n $start ]] && ((start >= E2E_START_TICKS)) && echo "$pid"
  done
}

# _e2e_cleanup [STATUS]: ends what the test left and exits with STATUS (default: $?).
_e2e_cleanup() {
  local rc=${1:-$?} pid tok pids
  set +e
  # Background commands this test started (start_bg), by their recorded pid.
  while read -r pid; do
    [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
  done <"$T/.bgpids"
  # Processes carrying one of this test's random tokens: leftovers of a failed
  # scenario must not disturb the next one.
  while read -r tok; do
    [[ -n $tok ]] || continue
    pids=$(pgrep -f -- "$tok")
    # shellcheck disable=SC2086
    [[ -n $pids ]] && kill -9 $pids 2>/dev/null
  done <"$T/.tokens"
  # A failed scenario may leave ferryds or sshd sessions on the simulated hosts:
  # clear them so the next scenario starts clean (the listeners stay). Only what started
  # after the scenario began: nothing of a job someone else runs on the cluster.
  if ((rc != 0 && rc != 77)) && [[ -n ${FERRY_CLUSTER_NODES:-} ]]; then
    # shellcheck disable=SC2046 # one pid per word
    pids=$(_started_here $(cluster_leftovers | awk '{print $3}' | tr -d ':'))
    # shellcheck disable=SC2086
    [[ -n $pids ]] && kill -9 $pids 2>/dev/null
  fi
  # The same on the Slurm cluster: its jobs, then what runs on its nodes but slurmd.
  if ((rc != 0 && rc != 77)) && [[ -n ${FERRY_SLURM_NODES:-} ]]; then
    pids=$(squeue -h -o %A 2>/dev/null)
    # shellcheck disable=SC2086
    [[ -n $pids ]] && timeout 10 scancel $pids 2>/dev/null
    # shellcheck disable=SC2046 # one pid per word
    pids=$(_started_here $(slurm_leftovers | awk '$1 != "job" {print $3}' | tr -d ':'))
    # shellcheck disable=SC2086
    [[ -n $pids ]] && kill -9 $pids 2>/dev/null
  fi
  if [[ ${FERRY_E2E_KEEP:-0} == 1 ]]; then
    echo "kept test dir: $T" >&2
  else
    rm -rf "$T"
  fi
  exit "$rc"
}
# on_exit 'COMMAND': runs COMMAND when the test exits, for whatever reason, before the cleanup
# above (in the order given, errexit off, the test's exit status kept): what a scenario
# changed that must be put back (a firewall, a link, a host's /etc/hosts, a terminal).
_E2E_ON_EXIT=()
on_exit() { _E2E_ON_EXIT+=("$1"); }
_e2e_exit() {
  local rc=$? c
  set +e
  for c in "${_E2E_ON_EXIT[@]}"; do eval "$c"; done
  _e2e_cleanup "$rc"
}
trap _e2e_exit EXIT

# ---------------------------------------------------------------- verdicts

# _state_report P: when the background command P (start_bg) is a ferryrun still running, its
# state report (SIGQUIT: every rank's state, native and Python stacks; the job goes on), so
# that a scenario that failed waiting on a job shows where its ranks were.
_state_report() {
  local pid_var="${1}_pid" pid i
  pid=${!pid_var:-}
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */ferryrun ]] || return 0
  kill -QUIT "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 300; i++)); do
    grep -q ': end of the state report$' "$T/$1.err" 2>/dev/null && break
    sleep 0.1
  done
  echo "--- state report of the job still running (SIGQUIT to ferryrun, pid $pid):"
  _state_report_text "$T/$1.err" 300
}

# _state_report_text FILE LINES: the state reports ferryrun printed in FILE (its stderr), their
# last LINES lines.
_state_report_text() {
  awk '/: state of every rank/ { on = 1 } on { print } /: end of the state report$/ { on = 0 }' \
    "$1" | tail -n "$2" | cut -c1-300 || true
}

# fail MSG: print FAIL: MSG (and the last captured command's output) and exit 1.
fail() {
  echo "FAIL: $TEST_NAME: $*" >&2
  [[ -z $LAST_CAPTURE ]] || _state_report "$LAST_CAPTURE" >&2
  if [[ -n $LAST_CAPTURE && -f $T/$LAST_CAPTURE.cmd ]]; then
    {
      echo "--- last command: $(cat "$T/$LAST_CAPTURE.cmd")"
      echo "--- exit code: $(cat "$T/$LAST_CAPTURE.rc" 2>/dev/null || echo '?')"
      echo "--- stdout (last 20 lines, cut at 300 chars):"
      tail -n 20 "$T/$LAST_CAPTURE.out" 2>/dev/null | cut -c1-300
      echo "--- stderr (last 40 lines, cut at 300 chars):"
      tail -n 40 "$T/$LAST_CAPTURE.err" 2>/dev/null | cut -c1-300
      echo "---"
    } >&2
  fi
  exit 1
}

# pass: the last line of every scenario.
pass() {
  echo "PASS: $TEST_NAME"
}

# require_root: skip (exit 77) unless root; the cluster needs namespaces and sshd.
require_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: $TEST_NAME needs root (simulated cluster: network namespaces, sshd)"
    exit 77
  fi
}

# require_cluster: load the cluster's env (FERRY_CLUSTER_NODES, ...) and check
# that it is running and that the binaries exist. Missing pieces are failures.
require_cluster() {
  [[ -f $FERRY_CLUSTER_DIR/ssh_config && -f $FERRY_CLUSTER_DIR/nodes ]] ||
    fail "no cluster in $FERRY_CLUSTER_DIR (start one: $FERRY_CLUSTER up)"
  local env
  env=$("$FERRY_CLUSTER" env) || fail "ferry-cluster env failed"
  eval "$env"
  "$FERRY_CLUSTER" status >"$T/.cluster-status" 2>&1 ||
    fail "cluster in $FERRY_CLUSTER_DIR is not healthy: $(tr '\n' ';' <"$T/.cluster-status")"
  [[ -x $FERRYRUN ]] || fail "ferryrun not built: $FERRYRUN"
  [[ -x $FERRYD ]] || fail "ferryd not built: $FERRYD"
  [[ -n $PY ]] || fail "python3 not found"
}

# require_slurm [N]: load the Slurm cluster's env (SLURM_CONF, PATH with its client
# wrappers so that srun, salloc, sbatch, squeue... reach it and resolve snodeI,
# FERRY_SLURM_NODES, FERRY_SLURM_HEAD_ADDR, ...; see ferry-slurm env) and check that it
# runs, with at least N nodes. Slurm variables of an outer job are dropped first.
require_slurm() {
  [[ -f $FERRY_SLURM_DIR/nodes ]] ||
    fail "no Slurm cluster in $FERRY_SLURM_DIR (start one: $FERRY_SLURM up)"
  local env
  env=$("$FERRY_SLURM" env) || fail "ferry-slurm env failed"
  unset "${!SLURM_@}"
  eval "$env"
  "$FERRY_SLURM" status >"$T/.slurm-status" 2>&1 ||
    fail "Slurm cluster in $FERRY_SLURM_DIR is not healthy: $(tr '\n' ';' <"$T/.slurm-status")"
  ((FERRY_SLURM_NODES >= ${1:-1})) ||
    fail "scenario needs $1 Slurm nodes, cluster has $FERRY_SLURM_NODES ($FERRY_SLURM up $1)"
}

# require_horovod: the scenario runs real Horovod (horovod.torch on Debian's
# python3-torch). Found through $FERRY_TEST_HOROVOD (a PYTHONPATH entry holding the
# horovod package) or an installed module; without either the scenario is skipped
# (Horovod is not a Debian package). Sets HOROVOD_PY (the Python to run ranks with)
# and exports PYTHONPATH so ranks started by ferryd find the module.
require_horovod() {
  HOROVOD_PY=/usr/bin/python3
  if [[ -n ${FERRY_TEST_HOROVOD:-} ]]; then
    [[ -d $FERRY_TEST_HOROVOD/horovod ]] ||
      fail "FERRY_TEST_HOROVOD=$FERRY_TEST_HOROVOD has no horovod/ package"
    export PYTHONPATH=$FERRY_TEST_HOROVOD${PYTHONPATH:+:$PYTHONPATH}
  fi
  if ! "$HOROVOD_PY" -c 'import horovod.torch' >"$T/.horovod-import" 2>&1; then
    [[ -z ${FERRY_TEST_HOROVOD:-} ]] ||
      fail "horovod.torch does not import from $FERRY_TEST_HOROVOD: $(tail -n1 "$T/.horovod-import")"
    echo "SKIP: $TEST_NAME needs real Horovod (horovod.torch for $HOROVOD_PY): install it, or set" \
      "FERRY_TEST_HOROVOD to the dist-packages folder of a Horovod build (PyTorch + gloo)"
    exit 77
  fi
}

# make_in_ns: for --sync scenarios, sets MNT ($T/src, made) and writes $in_ns ($T/in_ns):
# `"$in_ns" TREE CMD...` runs CMD in a mount namespace of its own where TREE is copied onto a
# tmpfs at $MNT; the hosts see the empty directory, so what they get of it comes by --sync.
make_in_ns() {
  MNT=$T/src
  mkdir -p "$MNT"
  in_ns=$T/in_ns
  cat >"$in_ns" <<EOS
#!/bin/sh
if [ -z "\$FERRY_E2E_IN_NS" ]; then FERRY_E2E_IN_NS=1 exec unshare -m --propagation private "\$0" "\$@"; fi
unset FERRY_E2E_IN_NS
tree=\$1; shift
mount -t tmpfs ferry-e2e-sync "$MNT" && cp -a "\$tree/." "$MNT/" && exec "\$@"
EOS
  chmod +x "$in_ns"
}

# elastic_setup HOST:SLOTS...: the scaffolding of a horovodrun elastic scenario in $T: a
# `horovodrun` link to ferryrun, a discovery script $T/discover.sh printing $T/hosts (written
# with the given hosts, one a line; a scenario may replace it to change what is discovered),
# $T/m for the training script's marks; sets tok (a unique token) and prog (the script).
elastic_setup() {
  tok=$(unique_token)
  prog=$FERRY_SRC/tests/e2e/programs/hvd_elastic.py
  ln -s "$FERRYRUN" "$T/horovodrun"
  printf '%s\n' "$@" >"$T/hosts"
  printf '#!/bin/sh\ncat %s\n' "$T/hosts" >"$T/discover.sh"
  chmod +x "$T/discover.sh"
  mkdir -p "$T/m"
}

# elastic_workers: how many workers of the scenario run now, on all hosts (the training
# script's processes; ferryrun's own command line starts elsewhere).
elastic_workers() {
  pgrep -fc "^$HOROVOD_PY $prog .*$tok\$" || true
}

# require_nodes N: the scenario needs at least N simulated hosts.
# The elastic test program's "final" lines in FILE (any worker's tag): exactly N of them, in a
# world of N, ranks 0..N-1 once each, in sync, all with one set of weights.
assert_elastic_finals() {
  local file=$1 n=$2 finals
  finals=$(sed -n 's/^\[[0-9]*\]<stdout>:final //p' "$file" | sort)
  assert_eq "$n" "$(grep -c . <<<"$finals")" "$n workers finished"
  assert_eq "$n" "$(grep -c "^size $n rank [0-$((n - 1))] insync True" <<<"$finals")" \
    "$n workers finished in sync"
  assert_eq "$(seq 0 $((n - 1)) | xargs)" "$(awk '{print $4}' <<<"$finals" | sort -n | xargs)" \
    "ranks 0..$((n - 1)), once each"
  assert_eq 1 "$(sed 's/.*w=//' <<<"$finals" | sort -u | wc -l)" "one set of weights"
}

# assert_hvd_train FILE WHAT NP PREFIX FIRST: tests/e2e/programs/hvd_train.py's lines in FILE
# for NP ranks, 2 per host, rank r on host PREFIX(r/2+FIRST): each rank's Horovod topology and
# collectives, and one set of weights after training.
assert_hvd_train() {
  local file=$1 what=$2 np=$3 prefix=$4 first=$5 r line gather="" after
  for ((r = 0; r < np; r++)); do gather+="${gather:+,}$r:$((r % 2))"; done
  for ((r = 0; r < np; r++)); do
    line=$(rank_lines "$file" "$r" stdout | grep '^hvd topo ' || true)
    assert_eq "hvd topo rank=$r local_rank=$((r % 2)) cross_rank=$((r / 2)) size=$np local_size=2 cross_size=$((np / 2)) host=$prefix$((r / 2 + first))" \
      "$line" "$what: rank $r's Horovod topology"
    line=$(rank_lines "$file" "$r" stdout | grep '^hvd ops ' || true)
    assert_eq "hvd ops rank=$r allreduce=$((np * (np - 1) / 2)) allgather=$gather broadcast=$((100 + np - 1))" \
      "$line" "$what: rank $r's collectives"
  done
  after=$(sed -n 's/.*hvd weights .* after=\([0-9a-f]*\)$/\1/p' "$file" | sort | uniq -c)
  assert_match "$after" "^ *$np [0-9a-f]{16}\$" "$what: weights after training (count digest)"
}

require_nodes() {
  ((${FERRY_CLUSTER_NODES:-0} >= $1)) ||
    fail "scenario needs $1 cluster hosts, cluster has ${FERRY_CLUSTER_NODES:-0} (ferry-cluster up $1)"
}

assert_eq() {
  local expected=$1 actual=$2 what=${3:-value}
  [[ $expected == "$actual" ]] ||
    fail "$what: expected '$expected', got '$actual'"
}

assert_ne() {
  local unexpected=$1 actual=$2 what=${3:-value}
  [[ $unexpected != "$actual" ]] || fail "$what: must not be '$actual'"
}

assert_contains() {
  local haystack=$1 needle=$2 what=${3:-output}
  [[ $haystack == *"$needle"* ]] || fail "$what does not contain '$needle'"
}

assert_not_contains() {
  local haystack=$1 needle=$2 what=${3:-output}
  [[ $haystack != *"$needle"* ]] || fail "$what contains '$needle' but must not"
}

# assert_match STRING ERE WHAT
assert_match() {
  local s=$1 re=$2 what=${3:-value}
  [[ $s =~ $re ]] || fail "$what: '$s' does not match /$re/"
}

# assert_lines_count FILE N WHAT: FILE has exactly N lines.
assert_lines_count() {
  local n
  n=$(wc -l <"$1")
  assert_eq "$2" "$n" "${3:-number of lines in $(basename "$1")}"
}

# count_lines FILE ERE: number of lines of FILE matching the extended regex.
count_lines() {
  grep -cE -- "$2" "$1" || true
}

# ---------------------------------------------------------------- running

# _now_ms: wall clock in milliseconds.
_now_ms() {
  local us=${EPOCHREALTIME//[^0-9]/}
  echo $((10#$us / 1000))
}

# _secs_since MS: seconds since _now_ms returned MS, two decimals.
_secs_since() {
  local d=$(($(_now_ms) - $1))
  printf '%d.%02d' $((d / 1000)) $((d % 1000 / 10))
}

# unique_token: a random word to put into a job's command line, so that leftover
# checks can pgrep -f for exactly this job's processes. Registered for cleanup.
unique_token() {
  local tok
  tok="ftok$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  echo "$tok" >>"$T/.tokens"
  echo "$tok"
}

# sleeper_for TOKEN: path of a `sleep` whose command line carries TOKEN (a
# symlink in $T, visible on every simulated host). `$(sleeper_for $tok) 1000`
# shows up in pgrep -f $tok even when a shell forks it as a child.
sleeper_for() {
  local p=$T/sleep-$1
  [[ -e $p ]] || ln -s "$(command -v sleep)" "$p"
  echo "$p"
}

# run_capture P [--stdin FILE] [--timeout S] -- cmd...
# Runs cmd with stdout → $T/P.out, stderr → $T/P.err, and sets P_rc (exit code),
# P_out and P_err (contents, trailing newlines stripped; files over 4 MB are
# not loaded: read $T/P.out), P_secs (wall time). Stdin is /dev/null unless
# given. A command running past the timeout is stopped and the test fails, saying
# where it stood (_hang_report).
run_capture() {
  local p=$1 stdin=/dev/null limit=$FERRY_E2E_TIMEOUT rc start end
  shift
  while (($#)); do
    case $1 in
      --stdin) stdin=$2; shift 2 ;;
      --timeout) limit=$2; shift 2 ;;
      --) shift; break ;;
      *) fail "run_capture: unexpected argument '$1' (missing --?)" ;;
    esac
  done
  [[ $p =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || fail "run_capture: bad prefix '$p'"
  LAST_CAPTURE=$p
  printf '%q ' "$@" >"$T/$p.cmd"
  start=$(_now_ms)
  rc=0
  # Past the limit: SIGQUIT (ferryrun prints the state of every rank and goes on; anything
  # else ends), SIGKILL 10 s later. A second after the SIGQUIT, what runs is noted: every
  # process, and the stacks of a ferryrun still there (its loop stuck, if it said nothing).
  local shell=$$
  (
    trap 'kill "${nap:-}" "${gdb_pid:-}" 2>/dev/null; exit 0' TERM
    sleep $((limit + 1)) &
    nap=$!
    wait "$nap" || true
    ps -eo pid,ppid,stat,etimes,wchan:24,args --forest >"$T/$p.ps" 2>&1 || true
    for t in $(pgrep -P "$shell" -x timeout); do
      for c in $(pgrep -P "$t"); do
        [[ $(readlink "/proc/$c/exe" 2>/dev/null) == */ferryrun ]] || continue
        command -v gdb >/dev/null || continue
        timeout 8 gdb -p "$c" -batch -ex 'set pagination off' -ex 'thread apply all bt' \
          >>"$T/$p.stacks" 2>&1 &
        gdb_pid=$!
        wait "$gdb_pid" || true
      done
    done
  ) </dev/null >/dev/null 2>&1 &
  local watchdog=$!
  timeout -s QUIT -k 10 "$limit" "$@" <"$stdin" >"$T/$p.out" 2>"$T/$p.err" || rc=$?
  kill "$watchdog" 2>/dev/null || true
  wait "$watchdog" 2>/dev/null || true
  end=$(_now_ms)
  echo "$rc" >"$T/$p.rc"
  printf -v "${p}_rc" '%s' "$rc"
  printf -v "${p}_secs" '%s' "$(_secs_since "$start")"
  if (($(stat -c %s "$T/$p.out") <= 4000000)); then
    printf -v "${p}_out" '%s' "$(cat "$T/$p.out")"
  else
    printf -v "${p}_out" '%s' ""
  fi
  if (($(stat -c %s "$T/$p.err") <= 4000000)); then
    printf -v "${p}_err" '%s' "$(cat "$T/$p.err")"
  else
    printf -v "${p}_err" '%s' ""
  fi
  if ((end - start >= limit * 1000)); then
    _hang_report "$p" >&2
    fail "command did not finish within ${limit}s"
  fi
}

# _hang_report P: what run_capture saw of command P that ran past its limit: ferryrun's state
# report (asked by SIGQUIT) and the ferry and rank processes then running, on any host.
_hang_report() {
  echo "--- state report (SIGQUIT at the limit):"
  _state_report_text "$T/$1.err" 200
  echo "--- processes at the limit (ferry's and the scenario's):"
  { grep -E "ferry|$T|PID" "$T/$1.ps" 2>/dev/null || true; } | grep -v -- "ps -eo" |
    head -n 80 | cut -c1-300 || true
  [[ -s $T/$1.stacks ]] || return 0
  echo "--- ferryrun's threads at the limit (gdb):"
  grep -E '^Thread|^#' "$T/$1.stacks" | head -n 150 | cut -c1-250 || true
}

# start_bg P -- cmd...: start cmd in the background (stdout/stderr to $T/P.out,
# $T/P.err, stdin /dev/null) with SIGINT/SIGQUIT at their defaults (a
# non-interactive shell would start it with them ignored); sets P_pid.
start_bg() {
  local p=$1
  shift
  [[ ${1:-} == -- ]] && shift
  LAST_CAPTURE=$p
  printf '%q ' "$@" >"$T/$p.cmd"
  env --default-signal=INT,QUIT "$@" </dev/null >"$T/$p.out" 2>"$T/$p.err" &
  local pid=$!
  echo "$pid" >>"$T/.bgpids"
  printf -v "${p}_pid" '%s' "$pid"
  printf -v "${p}_start" '%s' "$(_now_ms)"
}

# wait_bg P SECONDS: wait for the background command P to exit, at most
# SECONDS; sets P_rc, P_out, P_err, P_secs (since start_bg). Fails on timeout.
wait_bg() {
  local p=$1 secs=$2 pid_var="${1}_pid" start_var="${1}_start" deadline rc=0
  local pid=${!pid_var}
  deadline=$(($(_now_ms) + secs * 1000))
  while kill -0 "$pid" 2>/dev/null && [[ $(ps -o stat= -p "$pid" 2>/dev/null) != Z* ]]; do
    if (($(_now_ms) > deadline)); then
      fail "background command $p (pid $pid) still running after ${secs}s"
    fi
    sleep 0.1
  done
  wait "$pid" || rc=$?
  echo "$rc" >"$T/$p.rc"
  printf -v "${p}_rc" '%s' "$rc"
  printf -v "${p}_secs" '%s' "$(_secs_since "${!start_var}")"
  printf -v "${p}_out" '%s' "$(head -c 4000000 "$T/$p.out")"
  printf -v "${p}_err" '%s' "$(head -c 4000000 "$T/$p.err")"
}

# wait_for DESCRIPTION SECONDS cmd...: poll cmd (every 0.1 s) until it succeeds.
wait_for() {
  local what=$1 secs=$2 deadline
  shift 2
  deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${secs}s waiting for: $what"
    sleep 0.1
  done
}

# count_procs PATTERN: how many processes match pgrep -f PATTERN.
count_procs() {
  pgrep -c -f -- "$1" || true
}

# wait_procs PATTERN N SECONDS: wait until at least N processes match.
wait_procs() {
  local pattern=$1 n=$2 secs=$3 deadline=$((SECONDS + $3))
  while (($(count_procs "$pattern") < n)); do
    ((SECONDS < deadline)) ||
      fail "expected $n processes matching '$pattern' within ${secs}s, found $(count_procs "$pattern")"
    sleep 0.1
  done
}

# start_sleeper_job P N [--rank SCRIPT] -- FERRYRUN_ARG...: the long job of the scenarios
# that interrupt one. Starts `ferryrun FERRYRUN_ARG... sh -c SCRIPT SLEEPER TOKEN` in the
# background (start_bg P), with a fresh unique_token TOKEN and its sleeper_for SLEEPER;
# SCRIPT runs the sleeper as `"$0" 1000` (default '"$0" 1000; : "$1"': the token makes
# the rank's shell findable too). Returns once N sleepers run (30 s at most). Sets P_tok
# and P_sleeper, besides start_bg's P_pid.
start_sleeper_job() {
  # shellcheck disable=SC2016 # $0 and $1 are the rank shell's
  local p=$1 n=$2 script='"$0" 1000; : "$1"' tok sleeper
  shift 2
  while (($#)); do
    case $1 in
      --rank) script=$2; shift 2 ;;
      --) shift; break ;;
      *) fail "start_sleeper_job: unexpected argument '$1' (missing --?)" ;;
    esac
  done
  tok=$(unique_token)
  sleeper=$(sleeper_for "$tok")
  printf -v "${p}_tok" '%s' "$tok"
  printf -v "${p}_sleeper" '%s' "$sleeper"
  start_bg "$p" -- "$FERRYRUN" "$@" sh -c "$script" "$sleeper" "$tok"
  wait_procs "^$sleeper 1000" "$n" 30
}

# pids_on_host HOST PATTERN: the processes matching pgrep -f PATTERN that run on the
# simulated host HOST (fnodeI), one pid a line.
pids_on_host() {
  local pid
  for pid in $(pgrep -f -- "$2"); do
    if [[ $(_host_of_pid "$pid") == "$1" ]]; then
      echo "$pid"
    fi
  done
}

# _describe_procs PATTERN: the matching processes with the host they run on.
_describe_procs() {
  local pid host
  for pid in $(pgrep -f -- "$1"); do
    host=$(_host_of_pid "$pid")
    echo "  pid $pid on $host: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
  done
}

# _host_of_pid PID: fnodeI if PID runs in that node's network namespace, snodeI if in
# that Slurm node's (namespace fsnodeI).
_host_of_pid() {
  local pid=$1 ns i
  ns=$(readlink "/proc/$pid/ns/net" 2>/dev/null || echo "?")
  for ((i = 1; i <= ${FERRY_CLUSTER_NODES:-16}; i++)); do
    if [[ -e /run/netns/fnode$i && $(stat -L -c %i "/run/netns/fnode$i") == "${ns//[^0-9]/}" ]]; then
      echo "fnode$i"
      return
    fi
  done
  for ((i = 1; i <= ${FERRY_SLURM_NODES:-0}; i++)); do
    if [[ -e /run/netns/fsnode$i && $(stat -L -c %i "/run/netns/fsnode$i") == "${ns//[^0-9]/}" ]]; then
      echo "snode$i"
      return
    fi
  done
  echo "local"
}

# ferryd_of HOST: the pid of the job's ferryd on HOST (not its guard, a forked child with the
# same command line, named ferryd-guard: the one whose parent is sshd); "" when none runs.
ferryd_of() {
  local pid
  for pid in $(pids_on_host "$1" "ferryd --stdio"); do
    [[ $(ps -o comm= -p "$(ps -o ppid= -p "$pid" | tr -d ' ')") == sshd ]] && echo "$pid"
  done
  return 0
}

# kill_ferryd_during P HOST: kill -9 HOST's ferryd while the background job P runs: P ends
# with 255, its report names the lost host, and nothing is left on any host.
kill_ferryd_during() {
  local p=$1 host=$2 victim rc_var="${1}_rc" err_var="${1}_err"
  victim=$(ferryd_of "$host")
  [[ -n $victim ]] || fail "no ferryd found on $host:
$(cluster_leftovers)"
  kill -9 "$victim"
  wait_bg "$p" 20
  assert_eq 255 "${!rc_var}" "exit status when $host's ferryd dies"
  assert_contains "${!err_var}" "lost host $host" "the report names the lost host"
  wait_cluster_idle 10
}

# wait_gone PATTERN SECONDS: poll until no process matches pgrep -f PATTERN;
# on timeout fail, listing them and where they run.
wait_gone() {
  local pattern=$1 secs=$2 deadline
  deadline=$(($(_now_ms) + secs * 1000))
  while pgrep -f -- "$pattern" >/dev/null; do
    if (($(_now_ms) > deadline)); then
      fail "processes matching '$pattern' still alive after ${secs}s:
$(_describe_procs "$pattern")"
    fi
    sleep 0.1
  done
}

# no_procs_left PATTERN: fail now if any process matches pgrep -f PATTERN.
no_procs_left() {
  if pgrep -f -- "$1" >/dev/null; then
    fail "processes matching '$1' left:
$(_describe_procs "$1")"
  fi
}

# cluster_leftovers: every process inside the simulated hosts other than their
# sshd listeners (ferryd, ranks, sshd sessions), one line each; zombies skipped.
cluster_leftovers() {
  local i listener pid stat
  for ((i = 1; i <= ${FERRY_CLUSTER_NODES:-0}; i++)); do
    listener=$(cat "$FERRY_CLUSTER_DIR/fnode$i/sshd.pid" 2>/dev/null || echo "")
    for pid in $(ip netns pids "fnode$i" 2>/dev/null); do
      [[ $pid == "$listener" ]] && continue
      stat=$(ps -o stat= -p "$pid" 2>/dev/null || true)
      [[ -z $stat || $stat == Z* ]] && continue
      echo "  fnode$i pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
    done
  done
}

# slurm_leftovers: the Slurm cluster's jobs (`job ID NAME STATE`), then every process on
# its nodes other than their slurmd (slurmstepd, tasks, ferryd), one line each; zombies
# skipped.
slurm_leftovers() {
  local i slurmd pid stat
  squeue -h -o 'job %A %j %T' 2>/dev/null | sed 's/^/  /'
  for ((i = 1; i <= ${FERRY_SLURM_NODES:-0}; i++)); do
    slurmd=$(cat "$FERRY_SLURM_DIR/run/slurmd-snode$i.pid" 2>/dev/null || echo "")
    for pid in $(ip netns pids "fsnode$i" 2>/dev/null); do
      [[ $pid == "$slurmd" ]] && continue
      stat=$(ps -o stat= -p "$pid" 2>/dev/null || true)
      [[ -z $stat || $stat == Z* ]] && continue
      echo "  snode$i pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
    done
  done
}

# wait_slurm_idle SECONDS: wait until the Slurm cluster has no job and its nodes run
# nothing but their slurmd.
wait_slurm_idle() {
  wait_no_leftovers slurm_leftovers "Slurm nodes" "$1"
}

# wait_no_leftovers LISTER WHERE SECONDS: poll LISTER (a function printing one line per
# leftover process, such as cluster_leftovers) until it prints nothing; on timeout fail
# with its lines, saying "WHERE still run processes".
wait_no_leftovers() {
  local lister=$1 where=$2 secs=$3 deadline=$((SECONDS + $3)) left
  while :; do
    left=$("$lister")
    [[ -z $left ]] && return 0
    ((SECONDS < deadline)) ||
      fail "$where still run processes ${secs}s after the job ended:
$left"
    sleep 0.2
  done
}

# wait_cluster_idle SECONDS: wait until no host runs anything but its sshd
# listener: no ferryd, no rank, no ssh session of a finished job.
wait_cluster_idle() {
  wait_no_leftovers cluster_leftovers "simulated hosts" "$1"
}

# rank_lines FILE R STREAM: the payloads of rank R's lines on STREAM
# (stdout|stderr) in FILE, prefix "[R]<STREAM>:" removed.
# assert_tags_are_ranks FILE: every line of tests/e2e/programs/hvd_elastic.py in FILE that names
# its worker's Horovod rank ("reset|epoch N|final size S rank R", "dying rank R") is tagged [R]:
# ferryrun tags a worker's lines with its rank in the current world, also after a reset that gave
# it another one.
assert_tags_are_ranks() {
  local file=$1 pairs
  pairs=$(sed -nE 's/^\[([0-9]+)\]<stdout>:((reset|epoch [0-9]+|final) size [0-9]+ rank|dying rank) ([0-9]+)( .*)?$/\1 \4/p' "$file")
  [[ -n $pairs ]] || fail "no line of the elastic program that names its rank in $file"
  assert_eq "" "$(awk '$1 != $2 {print "[" $1 "] says rank " $2}' <<<"$pairs" | head -3)" \
    "every worker's line is tagged with its current rank"
}

rank_lines() {
  sed -n "s/^\[$2\]<$3>://p" "$1"
}

# assert_refused LABEL TEXT COMMAND...: the command is refused as bad input: exit status 2
# and one line on stderr containing TEXT.
assert_refused() {
  local label=$1 text=$2
  shift 2
  run_capture B --timeout 60 -- "$@"
  assert_eq 2 "$B_rc" "$label: exit status"
  assert_eq 1 "$(wc -l <"$T/B.err")" "$label: one line"
  assert_contains "$B_err" "$text" "$label: the message"
}

# build_appnum: programs/mpi_appnum.c built with Open MPI's and MPICH's compilers, as
# $T/appnum_ompi and $T/appnum_mpich (the MPMD and rank-file scenarios run it).
build_appnum() {
  local prog=$FERRY_SRC/tests/e2e/programs/mpi_appnum.c
  command -v mpicc.openmpi >/dev/null || fail "mpicc.openmpi is not installed (apt-get install libopenmpi-dev)"
  command -v mpicc.mpich >/dev/null || fail "mpicc.mpich is not installed (apt-get install mpich)"
  mpicc.openmpi -O2 -o "$T/appnum_ompi" "$prog" || fail "mpicc.openmpi could not build mpi_appnum.c"
  mpicc.mpich -O2 -o "$T/appnum_mpich" "$prog" || fail "mpicc.mpich could not build mpi_appnum.c"
}
