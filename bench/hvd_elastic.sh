#!/usr/bin/env bash
# bench/hvd_elastic.sh: two elastic Horovod jobs under real horovodrun and under ferry's horovodrun
# personality, side by side, interleaved, ROUNDS times (default 3), and their wall times.
#
#   sudo flock -o /tmp/ferry-cluster.lock bench/hvd_elastic.sh [ROUNDS]
#
# Needs the simulated cluster up with at least 4 hosts (tests/cluster/ferry-cluster up 4), a
# built ferryrun (FERRY_BIN, default build/bin) and Horovod with PyTorch and gloo
# (FERRY_TEST_HOROVOD: its dist-packages folder, or an installed module).
#
# The job: tests/e2e/programs/hvd_elastic.py (hvd.elastic.run, TorchState, a commit per epoch),
# 4 epochs of 1 s on fnode2..fnode4 x 2 slots, found by a discovery script; at epoch 1 the worker
# fnode3[1] exits 3, fnode3 is dropped, the 4 others reset and finish. Both launchers get the same
# command line:
#
#   horovodrun -np 6 --min-np 2 --host-discovery-script D -p 2222 --network-interface eth0 \
#       python3 hvd_elastic.py DIR 4 1 fnode3:1@1 TOKEN
#
# The second job grows: 6 epochs of 1 s, starting on fnode2 and fnode3 (-np 4 --min-np 2
# --max-np 6); once epoch 1 is committed the discovery script lists fnode4 too, the launcher
# tells rank 0, the workers reset and 2 new ones start on fnode4; 6 workers finish in sync.
#
# Both run in fnode1's namespace (a head node on the hosts' network: real horovodrun serves its
# rendezvous on its own eth0); real horovodrun finds `ssh` on PATH as a wrapper adding the
# cluster's ssh_config, ferry gets --ssh-config. Every run must end 0 with 4 workers of a world
# of 4 finishing in sync, else the script fails.
set -euo pipefail
rounds=${1:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${FERRY_BIN:-$src/build/bin}
cluster=${FERRY_CLUSTER_DIR:-/tmp/ferry-cluster}
py=/usr/bin/python3
[[ -n ${FERRY_TEST_HOROVOD:-} ]] && export PYTHONPATH=$FERRY_TEST_HOROVOD${PYTHONPATH:+:$PYTHONPATH}
$py -c 'import horovod.torch' || { echo "hvd_elastic: horovod.torch does not import" >&2; exit 1; }
[[ -e /run/netns/fnode4 ]] || { echo "hvd_elastic: no cluster with 4 hosts" >&2; exit 1; }
work=$(mktemp -d /tmp/ferry-hvd-elastic.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
mkdir "$work/wrap"
printf '#!/bin/sh\nexec /usr/bin/ssh -F %s/ssh_config "$@"\n' "$cluster" >"$work/wrap/ssh"
chmod +x "$work/wrap/ssh"
ln -s "$bin/ferryrun" "$work/horovodrun"

run() {  # run LAUNCHER ROUND SCENARIO (fail|grow): prints the wall time in seconds
  local who=$1 n=$2 what=$3 dir=$work/$1.$2.$3 tok start end rc=0 want job
  tok="ftok$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
  mkdir "$dir"
  printf '#!/bin/sh\ncat %s/hosts\n' "$dir" >"$dir/discover.sh"
  chmod +x "$dir/discover.sh"
  if [[ $what == fail ]]; then
    printf 'fnode2:2\nfnode3:2\nfnode4:2\n' >"$dir/hosts"
    job=(-np 6 --min-np 2 --host-discovery-script "$dir/discover.sh" -p 2222
      --network-interface eth0 "$py" "$src/tests/e2e/programs/hvd_elastic.py" "$dir" 4 1
      fnode3:1@1 "$tok")
    want='final size 4 rank [0-3] insync True'
  else
    printf 'fnode2:2\nfnode3:2\n' >"$dir/hosts"
    job=(-np 4 --min-np 2 --max-np 6 --host-discovery-script "$dir/discover.sh" -p 2222
      --network-interface eth0 "$py" "$src/tests/e2e/programs/hvd_elastic.py" "$dir" 6 1 "$tok")
    want='final size 6 rank [0-5] insync True'
    (
      for ((i = 0; i < 3000; i++)); do [[ -e $dir/epoch-1 ]] && break; sleep 0.1; done
      printf 'fnode2:2\nfnode3:2\nfnode4:2\n' >"$dir/hosts.new"
      mv "$dir/hosts.new" "$dir/hosts"
    ) >/dev/null 2>&1 &
  fi
  start=$(date +%s.%N)
  if [[ $who == horovodrun ]]; then
    ip netns exec fnode1 env PATH="$work/wrap:$PATH" timeout 300 \
      "$py" -m horovod.runner.launch "${job[@]}" >"$dir/out" 2>&1 || rc=$?
  else
    ip netns exec fnode1 timeout 300 "$work/horovodrun" --ssh-config "$cluster/ssh_config" \
      "${job[@]}" >"$dir/out" 2>&1 || rc=$?
  fi
  end=$(date +%s.%N)
  local finals expected=${want#final size }
  expected=${expected%% *}
  finals=$(grep -c "$want" "$dir/out" || true)
  if ((rc != 0 || finals != expected)); then
    echo "hvd_elastic: $who round $n: exit $rc, $finals workers finished in sync; output:" >&2
    tail -n 30 "$dir/out" >&2
    exit 1
  fi
  sleep 1
  if pgrep -f -- "$tok" >/dev/null; then
    echo "hvd_elastic: $who round $n left processes behind" >&2
    exit 1
  fi
  echo "$end - $start" | bc
}

echo "fail: 3 hosts x 2, one worker fails at epoch 1; grow: 2 hosts x 2, a third joins after" \
  "epoch 1; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-6s %12s %12s %8s\n' job round horovodrun ferry ratio
for what in fail grow; do
  for ((n = 1; n <= rounds; n++)); do
    if ((n % 2)); then
      h=$(run horovodrun "$n" "$what"); f=$(run ferry "$n" "$what")
    else
      f=$(run ferry "$n" "$what"); h=$(run horovodrun "$n" "$what")
    fi
    printf '%-6s %-6s %11.2fs %11.2fs %8.2f\n' "$what" "$n" "$h" "$f" "$(echo "$h / $f" | bc -l)"
  done
done
echo "ratio: horovodrun's wall time / ferry's (above 1: ferry faster); load: $(cut -d' ' -f1-3 /proc/loadavg)"
