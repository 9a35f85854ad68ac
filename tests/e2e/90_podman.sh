#!/usr/bin/env bash
# 90_podman: the Docker scenarios of the README on Debian's Podman 4.3, as root and as an
# ordinary user (rootless). The workers are a plain Debian 12 with openssh-server (made by
# mmdebstrap, imported once): nothing of ferry is in them, ferryrun ships ferryd over SSH.
# As root:
#   1. bridge networking: two containers on Podman's default network, their sshd published
#      on ports of this machine; a 4-rank job runs (each rank on its container's hostname,
#      the preflight between the containers passes; ferryd on the one started with --cpus 1
#      sees that quota); kill -9 of ferryrun during a job
#      leaves no rank in either container;
#   2. host networking: two containers sharing this machine's network, sshd on two ports;
#   3. compose: docker-compose (1.29) against Podman's Docker API (podman system service)
#      starts the two workers of tests/podman/compose.yml; a job runs across them.
# As the user ferrypod (rootless: user namespace, slirp4netns):
#   4. bridge networking on a network of the user's (containers on the default rootless
#      network cannot reach each other), published ports, the authorized_keys file owned by
#      the user (it is root in the container); a job runs;
#   5. host networking;
#   6. compose: docker-compose against the user's own Podman API (its default network is a
#      network of the user's: the workers reach each other).
# Everything the scenario started (containers, networks, the API service, the user's
# Podman processes) is gone at its end.
# shellcheck disable=SC2154 # B_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
for tool in podman mmdebstrap slirp4netns newuidmap docker-compose; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/ferry-dev deps test)"
done
tok=$(unique_token)
image=localhost/ferry-podman:bookworm
user=ferrypod
# A podman that lacks CAP_SYS_RESOURCE (this one, when the machine is itself a container)
# cannot raise the open-files and process limits to Podman's defaults: ask for these.
limits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
# crun (Podman's default runtime here) refuses a machine whose cgroups are hybrid with a
# controller left on the v2 hierarchy ("cgroups in hybrid mode not supported": v1
# controllers mounted, hugetlb not among them, so v2 holds it); runc (docker.io's) runs
# there. Every podman of the scenario, root's and the user's, is told so by a containers.conf.
if [[ -n $(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null) ]] && command -v runc >/dev/null; then
  printf '[engine]\nruntime = "runc"\n' >"$T/containers.conf"
  chmod 644 "$T/containers.conf"
  export CONTAINERS_CONF=$T/containers.conf
fi
# shellcheck disable=SC2016 # expanded in the container
sshd_cmd='ssh-keygen -A >/dev/null && mkdir -p /run/sshd && exec /usr/sbin/sshd -D -e -p "${SSHD_PORT:-2222}" -o UsePAM=no'

cleanup_podman() (  # a subshell: nothing in it stops the scenario
  set +e
  podman ps -aq --filter "label=ferry-test=$tok" | xargs -r podman rm -f >/dev/null 2>&1
  podman network rm -f "ferry-test-$tok" >/dev/null 2>&1
  [[ -n ${service_pid:-} ]] && kill "$service_pid" 2>/dev/null
  if id "$user" >/dev/null 2>&1; then
    as_user podman ps -aq --filter "label=ferry-test=$tok" 2>/dev/null | xargs -r -n 20 \
      runuser -u "$user" -- env XDG_RUNTIME_DIR="$xdg" HOME="$home" podman rm -f >/dev/null 2>&1
    as_user podman network rm -f "ferry-test-$tok" >/dev/null 2>&1
    pkill -u "$user" 2>/dev/null  # its Podman pause process and slirp4netns
  fi
  [[ -n ${tun_mode:-} ]] && chmod "$tun_mode" /dev/net/tun
  exit 0
)
on_exit cleanup_podman
# sweep_dead_runs PODMAN...: remove what an earlier run of this scenario left (killed
# half-way, or on a machine restored from a snapshot): its containers would hold the ports
# published here, and Podman would still send them there. A container says which run made
# it (label ferry-test-pid); one of a run still going stops this one instead.
sweep_dead_runs() {
  local id pid t toks=()
  while IFS='|' read -r id pid t; do
    [[ -n $id ]] || continue
    if [[ $pid =~ ^[0-9]+$ && $pid != "$$" && $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == *90_podman* ]]; then
      fail "containers of another run of this scenario (pid $pid) hold its ports; let it end first"
    fi
    [[ $pid == "$$" ]] && continue
    "$@" rm -f "$id" >/dev/null 2>&1
    toks+=("$t")
  done < <("$@" ps -a --filter label=ferry-test \
    --format '{{.ID}}|{{index .Labels "ferry-test-pid"}}|{{index .Labels "ferry-test"}}' 2>/dev/null)
  for t in "${toks[@]}"; do
    "$@" network rm -f "ferry-test-$t" "ferrytest${t}_default" >/dev/null 2>&1
  done
  ((${#toks[@]} == 0)) || echo "90_podman: removed ${#toks[@]} container(s) left by an earlier run" >&2
  return 0
}
sweep_dead_runs podman

# The worker image, once per machine.
if ! podman image exists "$image"; then
  mmdebstrap --quiet --variant=minbase --include=openssh-server,iproute2,procps bookworm - \
    2>"$T/mmdebstrap.log" | podman import -q - "$image" >/dev/null ||
    fail "making $image failed: $(tail -5 "$T/mmdebstrap.log")"
fi

ssh-keygen -q -t ed25519 -N '' -f "$T/key"
cat >"$T/ssh_config" <<EOF
Host *
  User root
  IdentityFile $T/key
  IdentitiesOnly yes
  UserKnownHostsFile $T/known_hosts
  StrictHostKeyChecking accept-new
  LogLevel ERROR
EOF
# worker NAME PORT [PODMAN-RUN-OPTIONS...]: a worker whose sshd listens on PORT (in the
# container), as root.
worker() {
  local name=$1 port=$2
  shift 2
  podman run -d --name "$name-$tok" --label "ferry-test=$tok" --label "ferry-test-pid=$$" \
    "${limits[@]}" --hostname "$name" \
    -e SSHD_PORT="$port" -v "$T/key.pub:/root/.ssh/authorized_keys:ro" "$@" "$image" \
    sh -c "$sshd_cmd" >/dev/null || fail "podman run $name failed"
}
# hostfile FILE PORT...: a hostfile of 127.0.0.1 at those ports, 2 slots each.
hostfile() {
  local f=$1 p
  shift
  : >"$f"
  for p in "$@"; do echo "127.0.0.1 slots=2 port=$p" >>"$f"; done
}
# wait_sshd PORT...: until each port answers with an SSH banner.
wait_sshd() {
  local p i
  for p in "$@"; do
    for ((i = 0; i < 100; i++)); do
      timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p && head -c 4 <&3" 2>/dev/null | grep -q SSH &&
        break
      sleep 0.1
    done
    ((i < 100)) || fail "no sshd on port $p"
  done
}
# job NAME HOSTFILE HOST0 HOST1 [FERRYRUN-OPTIONS...]: a 4-rank job; each rank says where it
# runs; ranks 0-1 on HOST0, 2-3 on HOST1.
job() {
  local name=$1 hf=$2 h0=$3 h1=$4 r
  shift 4
  run_capture "$name" -- "$FERRYRUN" --ssh-config "$T/ssh_config" --hostfile "$hf" "$@" \
    sh -c "echo \"rank \$RANK of \$WORLD_SIZE on \$(hostname) $tok\""
  local rc_var=${name}_rc out_var=${name}_out
  assert_eq 0 "${!rc_var}" "job $name"
  for r in 0 1 2 3; do
    local h=$h0
    ((r >= 2)) && h=$h1
    assert_contains "${!out_var}" "[$r]<stdout>:rank $r of 4 on $h $tok" "job $name: rank $r's line"
  done
}

# 1. Root, bridge networking.
worker pb0 2222 -p 2451:2222
worker pb1 2222 -p 2452:2222 --cpus 1
wait_sshd 2451 2452
hostfile "$T/bridge" 2451 2452
job B "$T/bridge" pb0 pb1
assert_contains "$B_err" "pb1: warning: 2 local ranks on a 1-CPU quota" \
  "ferryd reads the CPU quota Podman's --cpus set"
# kill -9 of ferryrun during a job: its ferryds see their SSH sessions end and stop the ranks.
start_bg K -- "$FERRYRUN" --ssh-config "$T/ssh_config" --hostfile "$T/bridge" \
  sh -c "echo up $tok; exec sleep 300"
wait_for "every rank's start" 30 sh -c "[ \$(grep -c 'up $tok' '$T/K.out') = 4 ]"
kill -9 "$K_pid"
for c in pb0 pb1; do
  for ((i = 0; i < 100; i++)); do
    podman exec "$c-$tok" pgrep -f "sleep 300" >/dev/null || break
    sleep 0.1
  done
  ((i < 100)) || fail "a rank is left in $c after kill -9 of ferryrun: $(podman exec "$c-$tok" ps -ef)"
done

# 2. Root, host networking.
worker ph0 2461 --network host
worker ph1 2462 --network host
wait_sshd 2461 2462
hostfile "$T/host" 2461 2462
job H "$T/host" ph0 ph1

# 3. Compose against Podman's Docker API.
podman system service --time=0 "unix://$T/podman.sock" >"$T/service.log" 2>&1 &
service_pid=$!
for ((i = 0; i < 100; i++)); do [[ -S $T/podman.sock ]] && break; sleep 0.1; done
export DOCKER_HOST=unix://$T/podman.sock FERRY_PODMAN_IMAGE=$image FERRY_PODMAN_KEY=$T/key.pub \
  FERRY_PODMAN_PORT0=2471 FERRY_PODMAN_PORT1=2472 FERRY_PODMAN_LABEL=$tok FERRY_PODMAN_PID=$$
compose=(docker-compose -p "ferrytest$tok" -f "$FERRY_SRC/tests/podman/compose.yml")
"${compose[@]}" up -d >"$T/compose.log" 2>&1 || fail "docker-compose up failed: $(tail -5 "$T/compose.log")"
wait_sshd 2471 2472
hostfile "$T/compose" 2471 2472
job C "$T/compose" cw0 cw1
"${compose[@]}" down >>"$T/compose.log" 2>&1 || fail "docker-compose down failed: $(tail -5 "$T/compose.log")"
unset DOCKER_HOST
kill "$service_pid"
wait "$service_pid" 2>/dev/null || true
service_pid=
pgrep -f "$T/podman.sock" >/dev/null && fail "Podman's API service is still running after its stop"

# 4. Rootless.
id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
grep -q "^$user:" /etc/subuid || echo "$user:300000:65536" >>/etc/subuid
grep -q "^$user:" /etc/subgid || echo "$user:300000:65536" >>/etc/subgid
uid=$(id -u "$user") home=$(getent passwd "$user" | cut -d: -f6) xdg=/run/user/$(id -u "$user")
# With none of the user's processes running, what its runtime folder holds was left by a run
# that was killed (a reboot empties /run/user): Podman would take the pid its pause process
# left there for a live one ("invalid internal status") and do nothing.
if [[ -d $xdg ]] && ! pgrep -u "$user" >/dev/null; then rm -rf "${xdg:?}"/*; fi
mkdir -p "$xdg" && chown "$user:" "$xdg" && chmod 700 "$xdg"
as_user() {
  runuser -u "$user" -- env XDG_RUNTIME_DIR="$xdg" HOME="$home" ${CONTAINERS_CONF:+CONTAINERS_CONF="$CONTAINERS_CONF"} "$@"
}
# slirp4netns needs /dev/net/tun open to users (Debian's default, 0666; some machines 0600).
tun_mode=$(stat -c %a /dev/net/tun)
if [[ $tun_mode == 666 ]]; then tun_mode=""; else chmod 666 /dev/net/tun; fi
# Podman 4.3 without fuse-overlayfs gives rootless users the vfs driver, which copies the whole
# image for every container: native overlay (kernel 5.13 or newer) for a user it sets up.
if [[ ! -e $home/.config/containers/storage.conf && ! -d $home/.local/share/containers ]]; then
  mkdir -p "$home/.config/containers"
  printf '[storage]\ndriver = "overlay"\n' >"$home/.config/containers/storage.conf"
  chown -R "$user:" "$home/.config"
fi
sweep_dead_runs as_user podman
as_user podman image exists "$image" 2>/dev/null ||
  podman save "$image" | as_user podman load -q >/dev/null 2>&1 || fail "loading $image for $user failed"
# The key as the user's own file: root in the container, so sshd's StrictModes takes it.
mkdir -p "$T/user" && cp "$T/key.pub" "$T/user/key.pub" && chown -R "$user:" "$T/user"
as_user podman network create "ferry-test-$tok" >/dev/null 2>&1 || fail "podman network create (rootless)"
uworker() {
  local name=$1 port=$2
  shift 2
  as_user podman run -d --name "$name-$tok" --label "ferry-test=$tok" --label "ferry-test-pid=$$" \
    "${limits[@]}" \
    --hostname "$name" -e SSHD_PORT="$port" -v "$T/user/key.pub:/root/.ssh/authorized_keys:ro" \
    "$@" "$image" sh -c "$sshd_cmd" >"$T/uworker.log" 2>&1 ||
    fail "rootless podman run $name failed: $(tail -3 "$T/uworker.log")"
}
uworker ub0 2222 --network "ferry-test-$tok" -p 2481:2222
uworker ub1 2222 --network "ferry-test-$tok" -p 2482:2222
wait_sshd 2481 2482
hostfile "$T/ubridge" 2481 2482
job U "$T/ubridge" ub0 ub1
assert_contains "$(as_user podman exec "ub0-$tok" cat /proc/self/uid_map 2>/dev/null)" "$uid" \
  "the rootless container's root is $user"

# 5. Rootless, host networking.
uworker uh0 2491 --network host
uworker uh1 2492 --network host
wait_sshd 2491 2492
hostfile "$T/uhost" 2491 2492
job UH "$T/uhost" uh0 uh1

# 6. Rootless compose: docker-compose against the user's own Podman API.
as_user podman system service --time=0 "unix://$xdg/podman-$tok.sock" >"$T/uservice.log" 2>&1 &
service_pid=$!
for ((i = 0; i < 100; i++)); do [[ -S $xdg/podman-$tok.sock ]] && break; sleep 0.1; done
export DOCKER_HOST=unix://$xdg/podman-$tok.sock FERRY_PODMAN_KEY=$T/user/key.pub \
  FERRY_PODMAN_PORT0=2473 FERRY_PODMAN_PORT1=2474
"${compose[@]}" up -d >"$T/ucompose.log" 2>&1 ||
  fail "rootless docker-compose up failed: $(tail -5 "$T/ucompose.log")"
wait_sshd 2473 2474
hostfile "$T/ucompose" 2473 2474
job UC "$T/ucompose" cw0 cw1
"${compose[@]}" down >>"$T/ucompose.log" 2>&1 ||
  fail "rootless docker-compose down failed: $(tail -5 "$T/ucompose.log")"
unset DOCKER_HOST
cleanup_podman
wait_gone "$tok" 10  # conmon and the containers' processes name the token too
pass
