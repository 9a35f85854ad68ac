# shellcheck shell=bash
# Helpers for the real-engine Docker scenarios (tests/e2e/7N_*.sh), on top of lib.sh.
#
# The CTest fixture `docker` (tests/docker/ferry-docker up) has started dockerd and
# built the worker image from docker/Dockerfile; the fixture `cluster` has the
# simulated hosts fnode1..N, which play "another machine" on the LAN: they reach this
# machine at 10.231.0.1 (the cluster bridge's address), as a head node would reach a
# Docker machine. A scenario brings up the shipped compose files (docker/compose.*.yml)
# under a project named ferry-test-MODE and takes them down when it ends.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FERRY_DOCKER=$FERRY_SRC/tests/docker/ferry-docker
# The Docker machine's address as the cluster's hosts see it.
DOCKER_MACHINE_ADDR=10.231.0.1
_DOCKER_PROJECTS=()

_docker_real_cleanup() {
  local p
  for p in "${_DOCKER_PROJECTS[@]}"; do
    _compose_cmd "$p" down -v --remove-orphans >/dev/null 2>&1
  done
  # Whatever else the scenario started: containers and volumes are all ferry-test-*.
  [[ ${FERRY_E2E_KEEP:-0} == 1 ]] || "$FERRY_DOCKER" clean >/dev/null 2>&1
}
on_exit _docker_real_cleanup

# require_docker: the engine runs and the fixture's images exist (failures as root).
require_docker() {
  local env
  env=$("$FERRY_DOCKER" env) || fail "ferry-docker env failed"
  eval "$env"
  DOCKER=$FERRY_DOCKER_CLI
  "$DOCKER" info >/dev/null 2>&1 || fail "no Docker engine answers (start one: $FERRY_DOCKER up)"
  "$DOCKER" image inspect "$FERRY_DOCKER_WORKER_IMAGE" >/dev/null 2>&1 ||
    fail "image $FERRY_DOCKER_WORKER_IMAGE missing ($FERRY_DOCKER up builds it)"
  [[ -r $FERRY_DOCKER_KEY ]] || fail "no client key $FERRY_DOCKER_KEY"
  # The client side of every job: the fixture's key, known_hosts of this test only.
  DCFG=$T/ssh_config
  cat >"$DCFG" <<EOF
Host *
  User root
  IdentityFile $FERRY_DOCKER_KEY
  UserKnownHostsFile $T/known_hosts
EOF
  : >"$T/known_hosts"
}

# _compose_cmd MODE ARGS...: docker-compose on docker/compose.MODE.yml, project
# ferry-test-MODE, with this test's image, key, ports and the test programs mounted.
_compose_cmd() {
  local mode=$1
  shift
  FERRY_WORKER_IMAGE=$FERRY_DOCKER_WORKER_IMAGE FERRY_AUTHORIZED_KEYS=$FERRY_DOCKER_KEY.pub \
    docker-compose -p "ferry-test-$mode" -f "$FERRY_SRC/docker/compose.$mode.yml" \
    -f "$T/compose.test.yml" "$@"
}

# compose_up MODE: the shipped compose file for MODE (bridge|host), its two workers up
# and answering SSH (bridge: published ports 2201, 2202; host: 2222, 2223); c0 and c1 are
# set to their container names. The override only mounts the test programs and, after
# require_horovod, the Horovod build (same paths inside).
compose_up() {
  local mode=$1 vols
  vols="\"$FERRY_SRC/tests/e2e/programs:$FERRY_SRC/tests/e2e/programs:ro\""
  [[ -n ${FERRY_TEST_HOROVOD:-} ]] && vols+=", \"$FERRY_TEST_HOROVOD:$FERRY_TEST_HOROVOD:ro\""
  cat >"$T/compose.test.yml" <<EOF
services:
  worker0:
    volumes: [$vols]
  worker1:
    volumes: [$vols]
EOF
  _DOCKER_PROJECTS+=("$mode")
  _compose_cmd "$mode" up -d --no-build >"$T/compose-$mode.log" 2>&1 ||
    fail "docker-compose up ($mode) failed: $(tail -n 20 "$T/compose-$mode.log")"
  c0=$(ctr "$mode" worker0)
  c1=$(ctr "$mode" worker1)
  [[ -n $c0 && -n $c1 ]] || fail "compose did not start both workers: $(compose "$mode" ps)"
  local port=2201
  [[ $mode == host ]] && port=2222
  wait_ssh 127.0.0.1 "$port"
  wait_ssh 127.0.0.1 "$((port + 1))"
}

# compose MODE ARGS...: docker-compose on the scenario's project.
compose() { _compose_cmd "$@"; }

# ctr MODE SERVICE: the container's name (Compose 1.29: PROJECT_SERVICE_1).
ctr() { compose "$1" ps -q "$2" | head -n 1; }

# wait_ssh ADDR PORT: a banner within 20 s.
_ssh_banner() {
  local line
  exec 3<>"/dev/tcp/$1/$2" || return 1
  read -r -t 2 line <&3 || return 1
  exec 3<&-
  [[ $line == SSH-* ]]
}
wait_ssh() { wait_for "sshd on $1:$2" 20 _ssh_banner "$1" "$2"; }

# ctr_job_procs CID: the container's processes other than its init and sshd listener
# (ferryd, ranks, sshd sessions), as "pid args" lines; empty when idle.
ctr_job_procs() {
  "$DOCKER" top "$1" -eo pid,args 2>/dev/null | awk 'NR > 1' |
    grep -vE '^ *[0-9]+ +(/sbin/docker-init|sshd: .*\[listener\])' || true
}

# wait_ctr_idle SECONDS CID...: nothing of a job left in any of the containers.
wait_ctr_idle() {
  local limit=$1 c left i
  shift
  for ((i = 0; i < limit * 10; i++)); do
    left=""
    for c in "$@"; do
      left+=$(ctr_job_procs "$c")
    done
    [[ -z $left ]] && return 0
    sleep 0.1
  done
  for c in "$@"; do
    echo "left in $c:" >&2
    ctr_job_procs "$c" >&2
  done
  fail "processes left in the containers ${limit} s later"
}

# ctr_kill9_case HOSTFILE CID...: kill -9 of ferryrun while 4 ranks sleep in the
# containers of HOSTFILE; 2 s later nothing of the job may be left in any of them.
# shellcheck disable=SC2154 # K_pid, K_rc come from start_bg, wait_bg
ctr_kill9_case() {
  local hostfile=$1 tok c left=""
  shift
  tok=$(unique_token)
  start_bg K -- "$FERRYRUN" --ssh-config "$DCFG" --hostfile "$hostfile" \
    sh -c 'sleep 1000; : "$1"' sh "$tok"
  wait_procs "$tok" 4 30
  kill -9 "$K_pid"
  wait_bg K 5
  assert_eq 137 "$K_rc" "exit status of the killed ferryrun"
  sleep 2
  for c in "$@"; do
    left+=$(ctr_job_procs "$c")
  done
  assert_eq "" "$left" "processes in the containers 2 s after kill -9 of ferryrun"
}
