#!/usr/bin/env bash
# 67_job_extras: what a training job asks of its launcher besides the console, on 4 ranks
# over 2 hosts: variables by pattern (-x 'NAME_*'), from an env file and the whole
# environment (--env-all); per-rank values in the arguments (--expand-args) and the old
# --local_rank=N spelling; SIGUSR1 and SIGUSR2 sent to ferryrun reach every rank and the job
# goes on; the job summary per rank.
# shellcheck disable=SC2154,SC2016
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
job=("$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2)

export FERRYE2E_NCCL_A=alpha FERRYE2E_NCCL_B=beta FERRYE2E_OTHER=no
printf '# training settings\nLR=0.5\nexport FERRYE2E_NCCL_B="from file"\n' >"$T/vars.env"
run_capture E -- "${job[@]}" --env-file "$T/vars.env" -x 'FERRYE2E_NCCL_*' \
  sh -c 'echo "$RANK $LR $FERRYE2E_NCCL_A $FERRYE2E_NCCL_B ${FERRYE2E_OTHER:-unset}"'
assert_eq 0 "$E_rc" "exit status (patterns, env file)"
for r in 0 1 2 3; do
  assert_contains "$E_out" "[$r]<stdout>:$r 0.5 alpha beta unset" "rank $r's variables"
done
run_capture A -- "${job[@]}" --env-all sh -c 'echo "$RANK ${FERRYE2E_OTHER:-unset} $HOME"'
assert_eq 0 "$A_rc" "exit status (--env-all)"
assert_eq 4 "$(grep -c ' no /' "$T/A.out")" "every rank has the variable, and a HOME"

run_capture X -- "${job[@]}" --expand-args --torch-local-rank-arg=underscore \
  sh -c 'echo "$RANK: $1 $2"' '{rank}' 'r{rank}/{local_rank}/{node_rank}/{world_size}:{{x}}'
assert_eq 0 "$X_rc" "exit status (--expand-args)"
assert_eq $'[0]<stdout>:0: r0/0/0/4:{x} --local_rank=0\n[1]<stdout>:1: r1/1/0/4:{x} --local_rank=1\n[2]<stdout>:2: r2/0/1/4:{x} --local_rank=0\n[3]<stdout>:3: r3/1/1/4:{x} --local_rank=1' \
  "$(sort "$T/X.out")" "each rank's arguments"
run_capture M -- "${job[@]}" --expand-args sh -c 'echo "$0"' 'tcp://{master_addr}:{master_port}'
assert_eq 0 "$M_rc" "exit status ({master_addr})"
mp=$(grep -m1 -o "tcp://.*" "$T/M.out" || true)
assert_match "$mp" '^tcp://[^:]+:[0-9]+$' "{master_addr}:{master_port}"

# SIGUSR1 then SIGUSR2: every rank gets each, the job goes on and ends 0.
tok=$(unique_token)
start_bg U -- "${job[@]}" --summary=ranks sh -c '
  trap "echo usr1 \$RANK" USR1; trap "echo usr2 \$RANK; exit 0" USR2
  touch "$1/ready.$RANK"; while :; do sleep 0.1; done' "$tok" "$T"
wait_for "4 ranks ready" 30 sh -c '[ "$(ls "$1" | grep -c "^ready\.")" -eq 4 ]' sh "$T"
kill -USR1 "$U_pid"
wait_for "4 ranks got SIGUSR1" 30 sh -c '[ "$(grep -c "usr1" "$1")" -eq 4 ]' sh "$T/U.out"
kill -USR2 "$U_pid"
wait_bg U 30
assert_eq 0 "$U_rc" "exit status after SIGUSR1 and SIGUSR2"
assert_eq 4 "$(grep -c '<stdout>:usr2 ' "$T/U.out")" "ranks that got SIGUSR2"
assert_contains "$U_err" "job summary: 4 ranks on 2 hosts" "the summary's heading"
assert_eq 4 "$(grep -cE '^  [0-3] +fnode[12] .* 0$' "$T/U.err")" "one summary line per rank"
wait_cluster_idle 10
pass
