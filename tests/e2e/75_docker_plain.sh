#!/usr/bin/env bash
# 75_docker_plain: images with NO ferry in them (tests/docker/Dockerfile.plain), started
# with plain `docker run`, get ferryrun's own ferryd over SSH:
#  - Debian 11 (glibc 2.31) with only openssh-server, python3 and mpi4py: a 4-rank job
#    across two containers in bridge mode (published ports) and in host mode; every rank's
#    environment and binding right, started by the shipped ferryd (which loads no
#    libstdc++ and no hwloc library), the second job sending nothing; Debian 11's Open MPI
#    (4.1.0 on PMIx 4.0) as one world, and its MPI_Abort code as the job's;
#  - Debian 12 with python3-torch: a real PyTorch gloo all-reduce across two containers,
#    and an Open MPI (mpi4py) job whose PMIx server is the shipped ferryd's, with the
#    image's libpmix2.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_lib.sh
source "$(dirname "$0")/docker_lib.sh"
require_root
require_cluster
require_docker
for img in "$FERRY_DOCKER_PLAIN_BULLSEYE" "$FERRY_DOCKER_PLAIN_BOOKWORM"; do
  "$DOCKER" image inspect "$img" >/dev/null 2>&1 || fail "image $img missing ($FERRY_DOCKER up)"
done
hash=$(sha256sum <"$FERRY_BIN/../libexec/ferry/ferryd-$(uname -m)")
cached=/root/.cache/ferry/${hash%% *}/ferryd

# plain NAME IMAGE [OPTION...] [-- COMMAND...]: a container of the test (the cleanup
# removes it: ferry-test-*).
plain() {
  local name=$1 image=$2 opts=()
  shift 2
  while (($#)) && [[ $1 != -- ]]; do opts+=("$1") && shift; done
  [[ ${1:-} == -- ]] && shift
  "$DOCKER" run -d --name "ferry-test-$name" \
    -v "$FERRY_DOCKER_KEY.pub:/root/.ssh/authorized_keys:ro" \
    -v "$FERRY_SRC/tests/e2e/programs:$FERRY_SRC/tests/e2e/programs:ro" \
    "${opts[@]}" "$image" "$@" >/dev/null || fail "docker run $name failed"
}
show='echo "$(hostname) $RANK $LOCAL_RANK $WORLD_SIZE $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status) $(readlink /proc/$PPID/exe) $(grep -cE "libstdc|libhwloc" /proc/$PPID/maps)"'
# check_job P NAMES...: P's four ranks, two per container, bound one core each.
check_job() {
  local p=$1 n0=$2 n1=$3 r out
  out=$(sort -t']' -k1.2n "$T/$p.out")
  for r in 0 1 2 3; do
    local host=$n0
    ((r >= 2)) && host=$n1
    assert_contains "$out" "[$r]<stdout>:$host $r $((r % 2)) 4 $((r % 2)) $cached 0" \
      "$p: rank $r: host, rank, local rank, size, bound core, shipped ferryd, no libstdc++/hwloc"
  done
}

# mpi4py_job P HOSTFILE NAME WHAT: an mpi4py all-reduce of 4 ranks, two on each of the
# containers NAME0 and NAME1, as one world (Open MPI's direct launch on the shipped ferryd's
# PMIx server, the image's libpmix2); nothing left after it. Uses $tok.
mpi4py_job() {
  local p=$1 hostfile=$2 name=$3 what=$4 r rc_var err_var out_file
  run_capture "$p" --timeout 180 -- "$FERRYRUN" --ssh-config "$DCFG" --hostfile "$hostfile" \
    -x OMPI_MCA_btl_vader_single_copy_mechanism=none /usr/bin/python3 \
    "$FERRY_SRC/tests/e2e/programs/mpi4py_allreduce.py" "$tok"
  rc_var=${p}_rc
  err_var=${p}_err
  assert_eq 0 "${!rc_var}" "mpi4py on plain $what containers (${!err_var})"
  out_file="$T/$p.out"
  for r in 0 1 2 3; do
    assert_eq "mpi4py $r/4 host=$name$((r / 2)) sum=10 bcast=from-0 hosts=2" \
      "$(rank_lines "$out_file" "$r" stdout)" "$what mpi4py rank $r"
  done
  wait_gone "$tok" 10
}

# --- 1. Debian 11, bridge networking, published ports 2211 and 2212.
# Docker's 64 MB /dev/shm hangs Open MPI's shared-memory transport (docs/docker.md).
plain b0 "$FERRY_DOCKER_PLAIN_BULLSEYE" --hostname plain-b0 --shm-size 1g -p 2211:22
plain b1 "$FERRY_DOCKER_PLAIN_BULLSEYE" --hostname plain-b1 --shm-size 1g -p 2212:22
wait_ssh 127.0.0.1 2211
wait_ssh 127.0.0.1 2212
glibc=$("$DOCKER" exec ferry-test-b0 ldd --version | sed -n 1p)  # reads it all: no SIGPIPE under pipefail
assert_contains "$glibc" "2.31" "the container's glibc is Debian 11's"
"$DOCKER" exec ferry-test-b0 sh -c 'command -v ferryd || test -e /opt/ferry' &&
  fail "the plain image has a ferry"
printf '127.0.0.1 slots=2 port=%s\n' 2211 2212 >"$T/bridge.txt"
run_capture B --timeout 120 -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new --verbose \
  --hostfile "$T/bridge.txt" sh -c "$show"
assert_eq 0 "$B_rc" "a job on two plain Debian 11 containers ($B_err)"
assert_eq 2 "$(grep -c 'shipped ferryd' "$T/B.err" || true)" "both containers got a ferryd"
check_job B plain-b0 plain-b1
run_capture B2 --timeout 120 -- "$FERRYRUN" --ssh-config "$DCFG" --verbose \
  --hostfile "$T/bridge.txt" sh -c "$show"
assert_eq 0 "$B2_rc" "the second job ($B2_err)"
assert_eq 2 "$(grep -c 'ferryd cached at .*0 bytes sent' "$T/B2.err" || true)" \
  "the second job sends nothing"
check_job B2 plain-b0 plain-b1

# --- 1b. Debian 11's Open MPI: 4.1.0 on PMIx 4.0, whose server gives its address under
# fewer names than 4.2's. mpi4py as one world across the two containers, PMIx served by
# the shipped ferryd with the image's libpmix2; then a rank's MPI_Abort(7) is the job's exit.
"$DOCKER" exec ferry-test-b0 python3 -c 'from mpi4py import MPI; print(MPI.Get_library_version())' |
  grep -q 'Open MPI v4.1.0' || fail "the Debian 11 image's mpi4py is not on Open MPI 4.1.0"
tok=$(unique_token)
mpi4py_job BM "$T/bridge.txt" plain-b "Debian 11"
run_capture BA --timeout 180 -- "$FERRYRUN" --ssh-config "$DCFG" --hostfile "$T/bridge.txt" \
  -x OMPI_MCA_btl_vader_single_copy_mechanism=none /usr/bin/python3 -c \
  "import sys, time; from mpi4py import MPI; c = MPI.COMM_WORLD; c.Barrier(); c.Abort(7) if c.Get_rank() == 3 else time.sleep(60)" "$tok"
assert_eq 7 "$BA_rc" "Debian 11 Open MPI: MPI_Abort(7) on rank 3 is the job's exit ($BA_err)"
wait_gone "$tok" 10

# --- 2. Debian 11, host networking: sshd on ports 2241 and 2242 of this machine.
plain h0 "$FERRY_DOCKER_PLAIN_BULLSEYE" --network host -- \
  /usr/sbin/sshd -D -e -o UsePAM=no -p 2241
plain h1 "$FERRY_DOCKER_PLAIN_BULLSEYE" --network host -- \
  /usr/sbin/sshd -D -e -o UsePAM=no -p 2242
wait_ssh 127.0.0.1 2241
wait_ssh 127.0.0.1 2242
printf '127.0.0.1 slots=2 port=%s\n' 2241 2242 >"$T/host.txt"
run_capture H --timeout 120 -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new --verbose \
  --hostfile "$T/host.txt" sh -c "$show"
assert_eq 0 "$H_rc" "a job on two plain containers with host networking ($H_err)"
assert_eq 2 "$(grep -c 'shipped ferryd' "$T/H.err" || true)" "both containers got a ferryd"
me=$(hostname)
check_job H "$me" "$me"

# --- 3. Debian 12 with PyTorch, no ferry: a gloo all-reduce across two containers.
# Docker's 64 MB /dev/shm hangs Open MPI's shared-memory transport (docs/docker.md).
plain t0 "$FERRY_DOCKER_PLAIN_BOOKWORM" --hostname plain-t0 --shm-size 1g -p 2213:22
plain t1 "$FERRY_DOCKER_PLAIN_BOOKWORM" --hostname plain-t1 --shm-size 1g -p 2214:22
wait_ssh 127.0.0.1 2213
wait_ssh 127.0.0.1 2214
printf '127.0.0.1 slots=2 port=%s\n' 2213 2214 >"$T/torch.txt"
run_capture P --timeout 180 -- "$FERRYRUN" --ssh-config "$DCFG" --ssh-accept-new \
  --hostfile "$T/torch.txt" /usr/bin/python3 "$FERRY_SRC/tests/e2e/programs/torch_allreduce.py"
assert_eq 0 "$P_rc" "torch job on plain bookworm containers ($P_out $P_err)"
assert_eq 4 "$(grep -c '^\[[0-3]\]<stdout>:torch rank [0-3]/4 ok' "$T/P.out")" "torch ranks ok"

# --- 4. The same containers: Open MPI (mpi4py) direct launch, PMIx served by the shipped
# ferryd from the image's libpmix2.
tok=$(unique_token)
mpi4py_job M "$T/torch.txt" plain-t "Debian 12"
pass
