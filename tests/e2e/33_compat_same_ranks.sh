#!/usr/bin/env bash
# 33_compat_same_ranks: one job written as a horovodrun line, an mpirun line
# (argv[0] links to ferryrun, and --compat) and a ferryrun line gives every rank
# the same RANK, LOCAL_RANK and host. Each personality keeps its own output
# form (horovodrun tags [r]<stdout>:, mpirun prints untagged unless
# --tag-output) and its own environment rules (horovodrun forwards the
# launcher's environment and turns tunables into HOROVOD_*; mpirun exports
# only -x). Per-rank files follow each launcher's layout.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3

tok=$(unique_token)
ln -s "$FERRYRUN" "$T/horovodrun"
ln -s "$FERRYRUN" "$T/mpirun"
script='echo "$RANK $LOCAL_RANK $(hostname) $HOROVOD_RANK $OMPI_COMM_WORLD_RANK fwd=${E2E_FORWARDED:-} fus=${HOROVOD_FUSION_THRESHOLD:-} x=${E2E_X:-}"; : "$0"'
expected_ranks="0 0 fnode1
1 1 fnode1
2 0 fnode2
3 1 fnode2
4 0 fnode3"
# RANK LOCAL_RANK host, sorted by rank, from "payload" lines.
ranks_of() { awk '{print $1, $2, $3}' | sort -n; }

# horovodrun -np 5 -H fnode1:2,fnode2:2,fnode3:1 -p 2222 ...
run_capture HVD -- env E2E_FORWARDED=yes "$T/horovodrun" --ssh-config "$SSHCFG" -np 5 \
  -H fnode1:2,fnode2:2,fnode3:1 -p 2222 --fusion-threshold-mb 16 --output-filename "$T/hvd" \
  sh -c "$script" "$tok"
assert_eq 0 "$HVD_rc" "horovodrun exit code"
assert_eq 5 "$(count_lines "$T/HVD.out" '^\[[0-4]\]<stdout>:[0-4] ')" "horovodrun tagged lines"
hvd=$(sed 's/^\[[0-9]*\]<stdout>://' "$T/HVD.out")
assert_eq "$expected_ranks" "$(ranks_of <<<"$hvd")" "horovodrun: RANK LOCAL_RANK host"
assert_eq 5 "$(grep -c 'fwd=yes fus=16777216 x=$' <<<"$hvd")" \
  "horovodrun ranks with the forwarded variable and HOROVOD_FUSION_THRESHOLD"
for r in 0 1 2 3 4; do
  [[ -f $T/hvd/rank.$r/stdout ]] || fail "horovodrun --output-filename: no $T/hvd/rank.$r/stdout"
done
assert_match "$(cat "$T/hvd/rank.3/stdout")" '^3 1 fnode2 ' "horovodrun rank.3/stdout"

# mpirun -np 5 --host ... --mca plm_rsh_args "-p 2222" -x E2E_X=1 ...
run_capture MPI -- env E2E_FORWARDED=yes "$T/mpirun" --ssh-config "$SSHCFG" -np 5 \
  --host fnode1:2,fnode2:2,fnode3:1 --mca plm_rsh_args "-p 2222" -x E2E_X=1 \
  -output-filename "$T/ompi" sh -c "$script" "$tok"
assert_eq 0 "$MPI_rc" "mpirun exit code"
assert_eq 5 "$(count_lines "$T/MPI.out" '^[0-4] ')" "mpirun untagged lines"
assert_eq "$expected_ranks" "$(ranks_of <"$T/MPI.out")" "mpirun: RANK LOCAL_RANK host"
assert_eq 5 "$(grep -c 'fwd= fus= x=1$' "$T/MPI.out")" "mpirun ranks: only -x exported"
[[ -f $T/ompi/1/rank.4/stdout ]] || fail "mpirun --output-filename: no $T/ompi/1/rank.4/stdout"

# ferryrun --compat mpirun with --tag-output, hosts from a hostfile (Open MPI form).
printf 'fnode1 slots=2\nfnode2 slots=2\nfnode3 slots=1\n' >"$T/hosts"
run_capture CMP -- "$FERRYRUN" --compat mpirun --ssh-config "$SSHCFG" -np 5 \
  -hostfile "$T/hosts" --tag-output sh -c "$script" "$tok"
assert_eq 0 "$CMP_rc" "ferryrun --compat mpirun exit code"
assert_eq 5 "$(count_lines "$T/CMP.out" '^\[1,[0-4]\]<stdout>:[0-4] ')" "--tag-output lines"
assert_eq "$expected_ranks" "$(sed 's/^\[1,[0-9]*\]<stdout>://' "$T/CMP.out" | ranks_of)" \
  "ferryrun --compat mpirun: RANK LOCAL_RANK host"

# The same job as a plain ferryrun line.
run_capture FR -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 5 -H fnode1:2,fnode2:2,fnode3:1 \
  sh -c "$script" "$tok"
assert_eq 0 "$FR_rc" "ferryrun exit code"
assert_eq "$expected_ranks" "$(sed 's/^\[[0-9]*\]<stdout>://' "$T/FR.out" | ranks_of)" \
  "ferryrun: RANK LOCAL_RANK host"

# Per-rank file names as the real Open MPI writes them (padding), when it is installed.
if command -v mpirun.openmpi >/dev/null; then
  mpirun.openmpi --allow-run-as-root --oversubscribe --output-filename "$T/real" -np 10 true
  run_capture PAD -- "$T/mpirun" -np 10 -H localhost:10 --output-filename "$T/ours" true
  assert_eq 0 "$PAD_rc" "mpirun -np 10 --output-filename exit code"
  assert_eq "$(cd "$T/real/1" && echo *)" "$(cd "$T/ours/1" && echo *)" \
    "per-rank folders of mpirun.openmpi and ferry's mpirun, 10 ranks"
else
  echo "33_compat_same_ranks: mpirun.openmpi not installed; file names not compared" >&2
fi

wait_gone "$tok" 5
wait_cluster_idle 5
pass
