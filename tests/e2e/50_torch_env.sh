#!/usr/bin/env bash
# 50_torch_env: a real PyTorch job (gloo backend, env://) over 4 hosts x 2 ranks: an
# all-reduce and one DDP step, each rank checking the result; MASTER_ADDR is the rank-0
# host's address on the chosen interface, MASTER_PORT a port its ferryd found free, the
# interface variables name eth0, and --torch-local-rank-arg appends --local-rank=N.
# shellcheck disable=SC2154,SC2016 # R_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 4
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "python3-torch is not installed"

tok=$(unique_token)
hosts=fnode1:2,fnode2:2,fnode3:2,fnode4:2

# 1. The variables, and the legacy --local-rank argument.
script='echo "env $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE $MASTER_ADDR"
echo "nic $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME $HCCL_SOCKET_IFNAME $HOROVOD_GLOO_IFACE"
echo "port $MASTER_PORT"
echo "args $*"
echo "agent ${TORCHELASTIC_USE_AGENT_STORE-unset}"'
run_capture E -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 8 -H "$hosts" --torch-local-rank-arg \
  sh -c "$script"$'\n'": $tok" sh
assert_eq 0 "$E_rc" "ferryrun exit code (env listing)"
port0=""
for r in 0 1 2 3 4 5 6 7; do
  mapfile -t lines < <(rank_lines "$T/E.out" "$r" stdout)
  assert_eq 5 "${#lines[@]}" "lines of rank $r"
  assert_eq "env $r $((r % 2)) 8 2 $((r / 2)) 4 10.231.0.11" "${lines[0]}" \
    "RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR of rank $r"
  assert_eq "nic =eth0 eth0 =eth0 eth0" "${lines[1]}" "interface variables of rank $r"
  assert_match "${lines[2]}" '^port [0-9]+$' "MASTER_PORT of rank $r"
  [[ -z $port0 ]] && port0=${lines[2]}
  assert_eq "$port0" "${lines[2]}" "MASTER_PORT of rank $r is the job's"
  assert_eq "args --local-rank=$((r % 2))" "${lines[3]}" "--torch-local-rank-arg of rank $r"
  assert_eq "agent unset" "${lines[4]}" "TORCHELASTIC_USE_AGENT_STORE of rank $r"
done

# A user's -x wins over ferry's interface and port defaults.
run_capture X -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  -x NCCL_SOCKET_IFNAME=^docker -x MASTER_PORT=29777 \
  sh -c 'echo "$NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME $MASTER_PORT"'
assert_eq 0 "$X_rc" "ferryrun exit code (-x overrides)"
assert_eq "^docker eth0 29777" "$(rank_lines "$T/X.out" 1 stdout)" "-x wins, the rest stays"

# 2. The real job.
run_capture J --timeout 180 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 8 -H "$hosts" \
  /usr/bin/python3 "$FERRY_SRC/tests/e2e/programs/torch_allreduce.py" "$tok"
assert_eq 0 "$J_rc" "ferryrun exit code (torch job)"
for r in 0 1 2 3 4 5 6 7; do
  line=$(rank_lines "$T/J.out" "$r" stdout | grep '^torch rank' || true)
  assert_match "$line" "^torch rank $r/8 ok allreduce=36 weight=0.5500 host=fnode$((r / 2 + 1)) master=10.231.0.11:" \
    "rank $r result"
done
echo "8-rank torch job (4 hosts x 2, gloo all-reduce + DDP step): ${J_secs}s"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
