#!/usr/bin/env bash
# 70_docker_image: the worker image and compose files on a real Docker engine
# (docker.io 20.10, docker-compose 1.29), as a new user meets them:
#  - the image was built offline by both builders (the fixture did it; here: BuildKit
#    fetched no frontend image, and took the classic image's binaries through
#    FERRY_BINARIES without compiling), starts under its own default environment, and
#    the ferryd its ferryrun ships needs nothing beyond glibc;
#  - both compose files (and the NVIDIA override) pass `docker-compose config`;
#  - no key mounted: the container stops, saying what to mount;
#  - the entrypoint hands PATH and the framework variables (NCCL_*) to SSH sessions;
#  - host keys: a container recreated with its host-key volume keeps its key (the same
#    known_hosts works); recreated without it, ferryrun refuses the changed key with one
#    line that says what to do;
#  - with dockerd running (FORWARD policy DROP, br_netfilter), the test cluster's own
#    bridge still forwards between its hosts.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_lib.sh
source "$(dirname "$0")/docker_lib.sh"
require_root
require_cluster
require_docker

# --- 1. Both builders, offline.
for img in "$FERRY_DOCKER_WORKER_IMAGE" "$FERRY_DOCKER_WORKER_IMAGE_BUILDKIT"; do
  "$DOCKER" image inspect "$img" >/dev/null 2>&1 || fail "image $img was not built"
done
[[ -f $FERRY_DOCKER_DIR/build-buildkit.log ]] || fail "no BuildKit build log"
assert_not_contains "$(cat "$FERRY_DOCKER_DIR/build-buildkit.log")" "docker/dockerfile" \
  "BuildKit build (must not fetch a Dockerfile frontend image)"
# The BuildKit build took the classic image's binaries (FERRY_BINARIES) and compiled nothing.
assert_not_contains "$(cat "$FERRY_DOCKER_DIR/build-buildkit.log")" "cmake --build" \
  "BuildKit build with FERRY_BINARIES (the build stage is skipped)"
sums=()
for img in "$FERRY_DOCKER_WORKER_IMAGE" "$FERRY_DOCKER_WORKER_IMAGE_BUILDKIT"; do
  sums+=("$("$DOCKER" run --rm --entrypoint sha256sum "$img" /opt/ferry/bin/ferryd /opt/ferry/bin/ferryrun)")
done
[[ ${sums[0]} == *"/opt/ferry/bin/ferryrun"* ]] || fail "no ferryrun in $FERRY_DOCKER_WORKER_IMAGE: ${sums[0]}"
assert_eq "${sums[0]}" "${sums[1]}" "ferryd and ferryrun of the two images"
# The ferryd the image's ferryrun ships to hosts without ferry (its unity build) needs
# nothing beyond glibc, as the suite's own build's (check-glibc-floor).
cid=$("$DOCKER" create "$FERRY_DOCKER_WORKER_IMAGE")
"$DOCKER" cp "$cid:/opt/ferry/libexec/ferry/ferryd-x86_64" "$T/shipped-ferryd" >/dev/null
"$DOCKER" rm "$cid" >/dev/null
run_capture G -- "$FERRY_SRC/tests/lint/check-glibc-floor" "$T/shipped-ferryd"
assert_eq 0 "$G_rc" "the image's shipped ferryd on a plain host ($G_out)"

# --- 2. Compose files, with Debian's Compose 1.29.
touch "$T/key.pub"
for f in compose.bridge.yml compose.host.yml; do
  run_capture C -- env FERRY_AUTHORIZED_KEYS="$T/key.pub" \
    docker-compose -f "$FERRY_SRC/docker/$f" config -q
  assert_eq 0 "$C_rc" "docker-compose config $f ($C_err)"
  run_capture C -- env FERRY_AUTHORIZED_KEYS="$T/key.pub" \
    docker-compose -f "$FERRY_SRC/docker/$f" -f "$FERRY_SRC/docker/compose.nvidia.yml" config -q
  assert_eq 0 "$C_rc" "docker-compose config $f + compose.nvidia.yml ($C_err)"
done

# --- 3. No key: the container stops with its message.
name=ferry-test-nokey
"$DOCKER" run -d --name "$name" "$FERRY_DOCKER_WORKER_IMAGE" >/dev/null
# (A limit, not a speed check: once, right after the image was built, 20 s were not enough;
# the state and log say why should it happen again.)
for ((i = 0; i < 600; i++)); do
  [[ $("$DOCKER" inspect -f '{{.State.Running}}' "$name" 2>&1) == false ]] && break
  sleep 0.1
done
[[ $("$DOCKER" inspect -f '{{.State.Running}}' "$name" 2>&1) == false ]] ||
  fail "container $name did not stop within 60 s: state $("$DOCKER" inspect -f '{{json .State}}' "$name" 2>&1); log: $("$DOCKER" logs "$name" 2>&1 | tail -n 5)"
assert_eq 1 "$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$name")" "exit code without a key"
assert_contains "$("$DOCKER" logs "$name" 2>&1)" "no public key to log in with: mount one at /etc/ferry/authorized_keys" \
  "message without a key"

# --- 4. The default environment (no FERRY_SSH_ENV), a key, a host-key volume: sshd
# runs, and a ferry job over it finds ferryd on the PATH the image set.
port=2291
keyvol=ferry-test-hostkeys
start_keyed() { # NAME [VOLUME]
  local vol=()
  [[ -n ${2:-} ]] && vol=(-v "$2:/etc/ssh/host_keys")
  "$DOCKER" run -d --init --name "$1" -p "$port:2222" "${vol[@]}" -e NCCL_DEBUG=INFO \
    -v "$FERRY_DOCKER_KEY.pub:/etc/ferry/authorized_keys:ro" "$FERRY_DOCKER_WORKER_IMAGE" >/dev/null
  wait_ssh 127.0.0.1 "$port"
}
start_keyed ferry-test-keyed "$keyvol"
echo "127.0.0.1 slots=1 port=$port ferryd=/opt/ferry/bin/ferryd" >"$T/hosts.txt"
run_capture J -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new --hostfile "$T/hosts.txt" \
  sh -c 'echo "$(hostname) $RANK $WORLD_SIZE $NCCL_DEBUG $PATH"'
assert_eq 0 "$J_rc" "job on the keyed container ($J_err)"
cid=$("$DOCKER" inspect -f '{{.Config.Hostname}}' ferry-test-keyed)
assert_match "$J_out" "^\[0\]<stdout>:$cid 0 1 INFO /opt/ferry/bin:" "rank in the container, image PATH and NCCL_ variables"
wait_ctr_idle 5 ferry-test-keyed
# The same address without a port of its own stays this machine, whatever the global -p.
run_capture G -- "$FERRYRUN" --ssh-config "$DCFG" -H 127.0.0.1:1 -p "$port" hostname
assert_eq 0 "$G_rc" "job on 127.0.0.1 with a global -p ($G_err)"
assert_eq "[0]<stdout>:$(hostname)" "$G_out" "127.0.0.1 with only a global -p is this machine"

# --- 5. Recreated with the volume: same key, the same known_hosts works (no
# --ssh-accept-new now).
"$DOCKER" rm -f ferry-test-keyed >/dev/null
start_keyed ferry-test-keyed "$keyvol"
run_capture K -- "$FERRYRUN" --ssh-config "$DCFG" --hostfile "$T/hosts.txt" true
assert_eq 0 "$K_rc" "job after re-creation with the host-key volume ($K_err)"

# --- 6. Recreated without it: a new key, refused even with --ssh-accept-new, and the
# line says how to fix it.
"$DOCKER" rm -f ferry-test-keyed >/dev/null
start_keyed ferry-test-keyed
run_capture N -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new --hostfile "$T/hosts.txt" true
assert_ne 0 "$N_rc" "exit code with a changed host key"
assert_contains "$N_err" "host key CHANGED" "changed-key message"
assert_contains "$N_err" "ssh-keygen -R '[127.0.0.1]:$port'" "changed-key message names the fix"
assert_eq 1 "$(grep -c 'host key CHANGED' "$T/N.err")" "changed-key report: one line"
wait_ctr_idle 5 ferry-test-keyed
"$DOCKER" rm -f ferry-test-keyed ferry-test-nokey >/dev/null
"$DOCKER" volume rm "$keyvol" >/dev/null

# --- 7. dockerd's FORWARD DROP does not cut the cluster's bridge: fnode2 reaches a
# listener on fnode1 (bridged, so it passes FORWARD).
assert_eq "-P FORWARD DROP" "$(iptables -S FORWARD | head -n 1)" "FORWARD policy under dockerd"
tok=$(unique_token)
start_bg L -- "$FERRY_CLUSTER" exec fnode1 "$PY" -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 29511)); s.listen(4); s.settimeout(30)
while True:
    c = s.accept()[0]; c.sendall(b"hello\n"); c.close()' "$tok"
wait_for "listener on fnode1:29511" 10 "$FERRY_CLUSTER" exec fnode1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/29511'
run_capture F -- "$FERRY_CLUSTER" exec fnode2 "$PY" -c '
import socket
s = socket.create_connection(("fnode1", 29511), timeout=5); print(s.recv(16).decode().strip())'
assert_eq "hello" "$F_out" "fnode2 → fnode1 across the cluster bridge with dockerd running"
kill "$L_pid" 2>/dev/null || true
wait_gone "$tok" 5
pass
