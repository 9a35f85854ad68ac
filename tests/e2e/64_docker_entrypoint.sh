#!/usr/bin/env bash
# 64_docker_entrypoint: the worker image's own entrypoint (docker/entrypoint.sh)
# and sshd_config (docker/sshd_config), run as the main process of a simulated
# bridge-mode container instead of the simulation's sshd -- what `docker run`
# of the image would start, minus the image. It must:
#  - refuse to start without a public key;
#  - serve key-only SSH on SSH_PORT (a password login is not even offered);
#  - generate a host key once into its volume and reuse it when the container
#    is re-created, so known_hosts stays valid;
#  - hand the container's environment (PATH, LD_LIBRARY_PATH, NCCL_*) to the
#    SSH sessions, so ferryd and the ranks see the image's CUDA/conda paths;
#  - answer its HEALTHCHECK (--health);
# and a ferry job over it and three other containers works, leaving nothing.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_sim_lib.sh
source "$(dirname "$0")/docker_sim_lib.sh"
require_root
docker_sim_up bridge

entrypoint=$FERRY_SRC/docker/entrypoint.sh
sshd_config=$FERRY_SRC/docker/sshd_config
[[ -x $entrypoint ]] || fail "$entrypoint missing or not executable"
volume=$T/hostkeys-dctr1b
mkdir -p "$volume"
pubkey=$(cat "$FERRY_DOCKER_SIM_IDENTITY.pub")
fakecuda=$T/opt-cuda
mkdir -p "$fakecuda/bin" "$fakecuda/lib"

# --- 1. No key, no start.
run_capture N --timeout 20 -- env -i PATH="$PATH" SSH_PORT=2299 FERRY_RUN_DIR="$T/run-nokey" \
  FERRY_AUTHORIZED_KEYS_FILE=/nonexistent FERRY_HOST_KEY_DIR="$T/nokey-keys" \
  FERRY_SSHD_CONFIG="$sshd_config" "$entrypoint"
assert_eq 1 "$N_rc" "entrypoint exit code without a public key"
assert_contains "$N_err" "no public key" "entrypoint's message without a key"

# start_worker: (re)create dctr1b running the entrypoint, image-like env.
start_worker() {
  # env -i inside, after the simulation has put FERRY_DOCKER_SIM_RUN_DIR in place.
  "$DOCKER_SIM" replace dctr1b bash -c 'exec env -i PATH="$1" LD_LIBRARY_PATH="$2" \
      NCCL_DEBUG=INFO SSH_PORT=2222 SSH_AUTHORIZED_KEYS="$3" FERRY_HOST_KEY_DIR="$4" \
      FERRY_SSHD_CONFIG="$5" FERRY_AUTHORIZED_KEYS_FILE=/nonexistent \
      FERRY_RUN_DIR="$FERRY_DOCKER_SIM_RUN_DIR" "$0"' \
    "$entrypoint" "$fakecuda/bin:$PATH" "$fakecuda/lib" "$pubkey" "$volume" "$sshd_config" \
    >"$T/replace.log" 2>&1 || fail "could not start the entrypoint in dctr1b: $(cat "$T/replace.log")"
}
start_worker
[[ -s $volume/ssh_host_ed25519_key ]] || fail "the entrypoint wrote no host key into its volume $volume"
key1=$(awk '{print $2}' "$volume/ssh_host_ed25519_key.pub")

# A client config of our own: the simulation's known_hosts, minus dctr1b's old key.
known=$T/known_hosts
grep -v '^\[10\.232\.0\.11\]:2202 \|^\[dctr1b\]:2202 ' "$FERRY_DOCKER_SIM_KNOWN_HOSTS" >"$known"
sed "s|$FERRY_DOCKER_SIM_KNOWN_HOSTS|$known|" "$DSSHCFG" >"$T/ssh_config"
hostfile=$T/hosts.txt
sim_hostfile bridge "$hostfile"
job=("$FERRYRUN" --ssh-config "$T/ssh_config" --hostfile "$hostfile")

# --- 2. Key-only: the server offers no password method.
run_capture P --timeout 20 -- ssh -F "$T/ssh_config" -o BatchMode=yes -o PubkeyAuthentication=no \
  -o PreferredAuthentications=password,keyboard-interactive -o StrictHostKeyChecking=no \
  -o UserKnownHostsFile=/dev/null -p 2202 10.232.0.11 true
assert_ne 0 "$P_rc" "ssh exit code for a password login"
assert_match "$P_err" 'Permission denied \(publickey\)' "ssh's refusal (only publickey offered)"

# --- 3. The first job records the new host key (--ssh-accept-new); every rank
# on dctr1b gets the container's environment through sshd.
run_capture A -- "${job[@]}" --ssh-accept-new \
  sh -c 'echo "$(hostname) ${PATH%%:*} ${LD_LIBRARY_PATH:-none} ${NCCL_DEBUG:-none}"'
assert_eq 0 "$A_rc" "ferryrun exit code over the entrypoint's sshd"
for r in 2 3; do
  assert_eq "dctr1b $fakecuda/bin $fakecuda/lib INFO" "$(rank_lines "$T/A.out" "$r" stdout)" \
    "rank $r on dctr1b: hostname, PATH's first entry, LD_LIBRARY_PATH, NCCL_DEBUG"
done
assert_eq "dctr2a" "$(rank_lines "$T/A.out" 4 stdout | cut -d' ' -f1)" "rank 4's host"
grep -q "$key1" "$known" || fail "--ssh-accept-new did not record dctr1b's generated host key"
wait_sim_idle 10

# --- 4. Health check, from inside the container, as Docker runs it.
run_capture H --timeout 20 -- "$DOCKER_SIM" exec dctr1b env SSH_PORT=2222 "$entrypoint" --health
assert_eq 0 "$H_rc" "entrypoint --health exit code"

# --- 5. Re-created with the same volume: same key, accepted without
# --ssh-accept-new.
start_worker
assert_eq "$key1" "$(awk '{print $2}' "$volume/ssh_host_ed25519_key.pub")" "host key after re-creation"
run_capture B -- "${job[@]}" sh -c 'echo "$(hostname)"'
assert_eq 0 "$B_rc" "ferryrun exit code after re-creating dctr1b"
assert_eq 2 "$(count_lines "$T/B.out" '^\[[23]\]<stdout>:dctr1b$')" "ranks 2 and 3 on dctr1b"
wait_sim_idle 10
pass
