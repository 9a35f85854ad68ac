#!/usr/bin/env bash
# ferry-worker-entrypoint: the only thing a ferry worker container runs. It
# prepares and then becomes sshd (key-only, on $SSH_PORT); ferryrun reaches the
# container through it and starts ferryd and the ranks itself.
#
#   SSH_PORT                  port sshd listens on (default 2222). In host
#                             networking it must differ from the machine's own
#                             sshd (22) and from other containers' ports.
#   SSH_AUTHORIZED_KEYS       public keys allowed to log in as root (the
#                             text of an authorized_keys file), and/or
#   FERRY_AUTHORIZED_KEYS_FILE  a mounted authorized_keys file (default
#                             /etc/ferry/authorized_keys). One of them is required.
#   FERRY_HOST_KEY_DIR        where the SSH host key lives (default
#                             /etc/ssh/host_keys). Mount a volume there, or a
#                             recreated container gets a new key and every
#                             client's known_hosts refuses it. A missing key is
#                             generated once.
#   FERRY_SSH_ENV             names of variables of this container's
#                             environment that SSH sessions (ferryd, the ranks)
#                             get too. sshd starts sessions with a fresh
#                             environment, so the image's ENV (PATH to CUDA or
#                             conda, LD_LIBRARY_PATH, ...) would be lost. Default:
#                             PATH LD_LIBRARY_PATH and every variable starting
#                             with one of NVIDIA_ CUDA_ NCCL_ ROCM_ HIP_ ASCEND_
#                             HCCL_ CONDA_ VIRTUAL_ENV PYTHONPATH.
#   FERRY_SSHD_CONFIG         base sshd_config (default /etc/ferry/sshd_config)
#   FERRY_RUN_DIR             runtime files: pid, assembled authorized_keys
#                             (default /run/ferry)
#
# `ferry-worker-entrypoint --health` exits 0 when sshd accepts connections on
# $SSH_PORT (the image's HEALTHCHECK).
set -euo pipefail

port=${SSH_PORT:-2222}
key_dir=${FERRY_HOST_KEY_DIR:-/etc/ssh/host_keys}
keys_file=${FERRY_AUTHORIZED_KEYS_FILE:-/etc/ferry/authorized_keys}
base_config=${FERRY_SSHD_CONFIG:-/etc/ferry/sshd_config}
run_dir=${FERRY_RUN_DIR:-/run/ferry}
sshd=${FERRY_SSHD:-/usr/sbin/sshd}

die() {
  echo "ferry-worker: $*" >&2
  exit 1
}

if [[ ${1:-} == --health ]]; then
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  read -r -t 5 banner <&3
  [[ $banner == SSH-* ]]
  exit
fi
(($# == 0)) || die "takes no arguments (it only runs sshd); got: $* (for a shell: docker run --entrypoint bash ...)"

if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
  die "SSH_PORT must be a port number, got '$port'"
fi

# Authorized keys: assembled into one root-owned file that sshd's StrictModes
# accepts whatever the mounted file's ownership is.
umask 077
mkdir -p "$run_dir" /run/sshd
chmod 755 "$run_dir"
keys=$run_dir/authorized_keys
: >"$keys"
if [[ -r $keys_file ]]; then
  grep -E '^[[:space:]]*[^#[:space:]]' "$keys_file" >>"$keys" || true
fi
if [[ -n ${SSH_AUTHORIZED_KEYS:-} ]]; then
  printf '%s\n' "$SSH_AUTHORIZED_KEYS" >>"$keys"
fi
grep -qE '^[[:space:]]*(ssh-|ecdsa-|sk-)' "$keys" ||
  die "no public key to log in with: mount one at $keys_file or set SSH_AUTHORIZED_KEYS (passwords are disabled)"
chmod 600 "$keys"

# Host key: from the volume, generated on first start.
mkdir -p "$key_dir"
host_key=$key_dir/ssh_host_ed25519_key
if [[ ! -s $host_key ]]; then
  ssh-keygen -q -t ed25519 -N '' -C "ferry-worker@$(hostname)" -f "$host_key"
  echo "ferry-worker: generated host key $(ssh-keygen -l -f "$host_key.pub" | awk '{print $2}') in $key_dir" >&2
fi

# SSH sessions get the container's environment for the variables named.
# (A plain CPU container has none of the framework variables: matching none is normal.)
wanted=${FERRY_SSH_ENV:-}
if [[ -z $wanted ]]; then
  wanted="PATH LD_LIBRARY_PATH"
  for name in $(compgen -e); do
    [[ $name =~ ^(NVIDIA_|CUDA_|NCCL_|ROCM_|HIP_|ASCEND_|HCCL_|CONDA_|VIRTUAL_ENV|PYTHONPATH) ]] &&
      wanted+=" $name"
  done
fi
setenv=""
for name in $wanted; do
  [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ && -n ${!name+x} ]] || continue
  value=${!name}
  # sshd_config quoting cannot carry these; skip rather than corrupt.
  if [[ $value == *'"'* || $value == *$'\n'* || $value == *\\* ]]; then
    echo "ferry-worker: not passing $name to SSH sessions (its value has a quote, backslash or newline)" >&2
    continue
  fi
  setenv+=" \"$name=$value\""
done

args=(-D -e -f "$base_config"
  -o "Port=$port"
  -o "HostKey=$host_key"
  -o "AuthorizedKeysFile=$keys"
  -o "PidFile=$run_dir/sshd.pid")
if [[ -n $setenv ]]; then
  args+=(-o "SetEnv=${setenv# }")
fi

"$sshd" -t "${args[@]}" || die "sshd rejected its configuration (see above)"
echo "ferry-worker: sshd on port $port, host key $host_key" >&2
exec "$sshd" "${args[@]}"
