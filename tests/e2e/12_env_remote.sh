#!/usr/bin/env bash
# 12_env_remote: ranks on remote hosts get the framework variables matching
# their placement (PyTorch, Horovod, Open MPI names), one MASTER_ADDR for the
# whole job that every host can resolve, and -x variables across SSH.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
script='echo "$RANK $LOCAL_RANK $GROUP_RANK $HOROVOD_HOSTNAME $OMPI_COMM_WORLD_RANK $MASTER_ADDR"
echo "sizes $WORLD_SIZE $LOCAL_WORLD_SIZE $HOROVOD_RANK $HOROVOD_SIZE $HOROVOD_LOCAL_RANK $OMPI_COMM_WORLD_SIZE $OMPI_COMM_WORLD_LOCAL_RANK"
echo "host $(hostname)"
echo "port $MASTER_PORT"
echo "x $FOO $FERRY_E2E_TOKEN"
if getent ahostsv4 "$MASTER_ADDR" >/dev/null; then echo "resolves yes"; else echo "resolves no"; fi'
run_capture R -- env FERRY_E2E_TOKEN="$tok" "$FERRYRUN" --ssh-config "$SSHCFG" \
  -np 4 -H fnode1:2,fnode2:2 -x FOO=bar -x FERRY_E2E_TOKEN sh -c "$script"$'\n'": $tok"
assert_eq 0 "$R_rc" "ferryrun exit code"
assert_lines_count "$T/R.out" 24 "stdout lines (6 per rank)"

master=""
for r in 0 1 2 3; do
  mapfile -t lines < <(rank_lines "$T/R.out" "$r" stdout)
  assert_eq 6 "${#lines[@]}" "number of lines of rank $r"
  read -r rank lrank group hhost orank addr <<<"${lines[0]}"
  host="fnode$((r / 2 + 1))"
  assert_eq "$r" "$rank" "RANK of rank $r"
  assert_eq "$((r % 2))" "$lrank" "LOCAL_RANK of rank $r"
  assert_eq "$((r / 2))" "$group" "GROUP_RANK of rank $r"
  assert_eq "$host" "$hhost" "HOROVOD_HOSTNAME of rank $r"
  assert_eq "$r" "$orank" "OMPI_COMM_WORLD_RANK of rank $r"
  [[ -n ${addr:-} ]] || fail "MASTER_ADDR of rank $r is empty"
  if [[ $addr == localhost || $addr == 127.* || $addr == ::1 ]]; then
    fail "MASTER_ADDR of rank $r is '$addr': loopback cannot reach rank 0 from another host"
  fi
  if [[ -z $master ]]; then master=$addr; fi
  assert_eq "$master" "$addr" "MASTER_ADDR of rank $r (same for all ranks)"
  assert_eq "sizes 4 2 $r 4 $((r % 2)) 4 $((r % 2))" "${lines[1]}" \
    "WORLD_SIZE LOCAL_WORLD_SIZE HOROVOD_RANK HOROVOD_SIZE HOROVOD_LOCAL_RANK OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_RANK of rank $r"
  assert_eq "host $host" "${lines[2]}" "hostname seen by rank $r"
  assert_match "${lines[3]}" '^port [0-9]+$' "MASTER_PORT of rank $r"
  assert_eq "x bar $tok" "${lines[4]}" "-x variables of rank $r"
  assert_eq "resolves yes" "${lines[5]}" "MASTER_ADDR '$addr' resolvable on $host"
done

wait_gone "$tok" 5
wait_cluster_idle 5
pass
