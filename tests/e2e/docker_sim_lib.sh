# shellcheck shell=bash
# Helpers for the Docker scenarios (tests/e2e/6N_*.sh), on top of lib.sh.
#
# A Docker scenario sources this file (which sources lib.sh), calls require_root
# and docker_sim_up MODE, which starts the simulated Docker hosts of
# tests/cluster/ferry-docker-sim for this scenario alone and tears them down
# when it ends (FERRY_DOCKER_SIM_KEEP=1 leaves them up). It does not need the
# ferry-cluster hosts (fnode*), and shares no name or address with them.
#
# Environment: as lib.sh, plus FERRY_DOCKER_SIM_DIR (state of the simulation,
# default /tmp/ferry-docker-sim).
#
# After docker_sim_up: DSSHCFG (the simulation's ssh_config), DOCKER_SIM (the
# script), and the FERRY_DOCKER_SIM_* variables of `ferry-docker-sim env`.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DOCKER_SIM=$FERRY_SRC/tests/cluster/ferry-docker-sim
FERRY_DOCKER_SIM_DIR=${FERRY_DOCKER_SIM_DIR:-/tmp/ferry-docker-sim}
export FERRY_DOCKER_SIM_DIR
export DSSHCFG=$FERRY_DOCKER_SIM_DIR/ssh_config
_DOCKER_SIM_STARTED=0

# Takes the simulation down when the test exits (before lib.sh's cleanup).
_docker_e2e_cleanup() {
  if ((_DOCKER_SIM_STARTED)) && [[ ${FERRY_DOCKER_SIM_KEEP:-0} != 1 ]]; then
    "$DOCKER_SIM" down >/dev/null 2>&1
  fi
}
on_exit _docker_e2e_cleanup

# require_ferry: the binaries under test and python3 exist (failures, not skips).
require_ferry() {
  [[ -x $FERRYRUN ]] || fail "ferryrun not built: $FERRYRUN"
  [[ -x $FERRYD ]] || fail "ferryd not built: $FERRYD"
  [[ -n $PY ]] || fail "python3 not found"
}

# docker_sim_up all|bridge|host: build the simulated Docker hosts for this
# scenario (replacing any earlier simulation) and load their environment.
docker_sim_up() {
  require_ferry
  _DOCKER_SIM_STARTED=1
  "$DOCKER_SIM" up "$1" >"$T/sim-up.log" 2>&1 ||
    fail "ferry-docker-sim up $1 failed: $(tail -n 20 "$T/sim-up.log")"
  local env
  env=$("$DOCKER_SIM" env) || fail "ferry-docker-sim env failed"
  eval "$env"
}

# sim_field CTR N: field N of container CTR in the simulation's table
# (1 name, 2 mode, 3 machine netns, 4 machine address, 5 port reached at,
# 6 container address, 7 sshd port inside).
sim_field() {
  awk -v c="$1" -v n="$2" '$1 == c {print $n}' "$FERRY_DOCKER_SIM_CONTAINERS_FILE"
}

# sim_hostfile MODE FILE: the simulation's hostfile for MODE (bridge|host), one
# line per container (`<machine address> slots=2 port=<port>`), with
# ferryd=<path> added as an image that installs it elsewhere would need.
sim_hostfile() {
  local src
  case $1 in
    bridge) src=$FERRY_DOCKER_SIM_BRIDGE_HOSTFILE ;;
    host) src=$FERRY_DOCKER_SIM_HOST_HOSTFILE ;;
    *) fail "sim_hostfile: bridge or host, not '$1'" ;;
  esac
  {
    echo "# $1-mode containers of ferry-docker-sim"
    sed "s|\$|  ferryd=$FERRYD|" "$src"
  } >"$2"
}

# in_ctr CTR CMD...: run CMD inside container (or machine dmachI) CTR.
in_ctr() {
  "$DOCKER_SIM" exec "$@"
}

# tcp_open_from NAME ADDR PORT: whether a TCP connection from inside container
# or machine NAME to ADDR:PORT succeeds within 2 s (dropped packets time out).
tcp_open_from() {
  in_ctr "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null
}

# sim_leftovers: every live process inside the simulated containers other than
# their sshd listeners (ferryd, ranks, sshd sessions), one line each. A
# container's processes are those in its UTS namespace (host-mode containers
# share their machine's network namespace). One find(1) for all: forks are
# slow on a loaded machine.
sim_leftovers() {
  local ctr uts link path pid st
  declare -A owner=() listener_of=()
  while read -r ctr _; do
    uts=$(cat "$FERRY_DOCKER_SIM_DIR/$ctr/uts" 2>/dev/null || true)
    [[ -n $uts ]] || continue
    owner[$uts]=$ctr
    listener_of[$ctr]=$(cat "$FERRY_DOCKER_SIM_DIR/$ctr/sshd.pid" 2>/dev/null || true)
  done <"$FERRY_DOCKER_SIM_CONTAINERS_FILE"
  while read -r link path; do
    uts=${link//[^0-9]/}
    ctr=${owner[$uts]:-}
    [[ -n $ctr ]] || continue
    pid=${path#/proc/}
    pid=${pid%%/*}
    [[ $pid == "${listener_of[$ctr]}" ]] && continue
    st=$(cat "/proc/$pid/stat" 2>/dev/null || true)
    st=${st##*) }
    [[ -z $st || $st == Z* ]] && continue
    echo "  $ctr pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
  done < <(find /proc/[0-9]*/ns/uts -maxdepth 0 -printf '%l %p\n' 2>/dev/null)
  return 0
}

# wait_sim_idle SECONDS: wait until no container runs anything but its sshd
# listener: no ferryd, no rank, no ssh session of a finished job.
wait_sim_idle() {
  wait_no_leftovers sim_leftovers "simulated containers" "$1"
}

# ferry_has_rendezvous: whether this ferryrun has the rendezvous and NIC choice
# integration; its --help then lists --network-interface.
ferry_has_rendezvous() {
  # Not `--help | grep -q`: grep -q closing the pipe early makes the pipeline fail under
  # pipefail (SIGPIPE), which would read as "not listed".
  local help
  help=$("$FERRYRUN" --help 2>&1) || true
  grep -q -- '--network-interface' <<<"$help"
}

# skip_without_rendezvous WHAT: exit 77 with a clear message unless
# ferry_has_rendezvous.
skip_without_rendezvous() {
  if ! ferry_has_rendezvous; then
    echo "SKIP: $TEST_NAME: $1 needs ferryrun's rendezvous and NIC choice: '$FERRYRUN --help' does not list --network-interface yet"
    exit 77
  fi
}

# Options of ferryrun for the two cases below (a scenario whose ranks cannot meet at rank 0's
# address sets SIM_FERRYRUN_OPTS=(--no-preflight)).
SIM_FERRYRUN_OPTS=()

# sim_rank_exit_case HOSTFILE RANK CODE HOST: a job over HOSTFILE in which rank RANK exits
# CODE after 0.5 s while every other rank sleeps. ferryrun must exit CODE, its report must
# name the rank and HOST (the rank's address:port), and every other rank must be stopped:
# nothing of the job is left in any container.
# shellcheck disable=SC2154 # E_rc and E_err come from run_capture
sim_rank_exit_case() {
  local hostfile=$1 rank=$2 code=$3 host=$4 tok sleeper
  tok=$(unique_token)
  sleeper=$(sleeper_for "$tok")
  # shellcheck disable=SC2016 # $RANK and $0..$2 are the rank shell's
  run_capture E --timeout 60 -- "$FERRYRUN" --ssh-config "$DSSHCFG" --hostfile "$hostfile" \
    "${SIM_FERRYRUN_OPTS[@]}" --kill-grace 2 sh -c 'if [ "$RANK" = "$1" ]; then sleep 0.5; exit "$2"; fi; exec "$0" 1000' \
    "$sleeper" "$rank" "$code"
  assert_eq "$code" "$E_rc" "ferryrun exit code when rank $rank exits $code"
  grep -qE "rank $rank([^0-9]|\$)" "$T/E.err" || fail "the failure report does not name rank $rank"
  assert_contains "$E_err" "$host" "failure report (host of rank $rank)"
  wait_gone "$tok" 10
  wait_sim_idle 10
}

# sim_kill9_case HOSTFILE: kill -9 of ferryrun while 8 ranks sleep over HOSTFILE's four
# containers. It exits 137; its connections close, and every ferryd must then kill its
# ranks and exit: nothing of the job is left in any container.
# shellcheck disable=SC2154 # K_pid, K_tok, K_rc come from start_sleeper_job, wait_bg
sim_kill9_case() {
  local ferryds
  start_sleeper_job K 8 -- --ssh-config "$DSSHCFG" --hostfile "$1" "${SIM_FERRYRUN_OPTS[@]}"
  ferryds=$(sim_leftovers | grep -c ferryd || true)
  ((ferryds >= 4)) || fail "expected a ferryd in each of the 4 containers, found $ferryds:
$(sim_leftovers)"
  kill -9 "$K_pid"
  wait_bg K 5
  assert_eq 137 "$K_rc" "exit status of the killed ferryrun"
  wait_gone "$K_tok" 10
  wait_sim_idle 10
}
