#!/usr/bin/env bash
# fake_nvidia_smi.sh: stands in for nvidia-smi's query loop where there is no GPU:
#   nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N
# prints two GPUs every N ms (GPU 0 busy at 87%, GPU 1 at 3%) until its reader goes away.
# Installed as "nvidia-smi" in a folder on ferryd's PATH by the tests.
ms=1000
while (($#)); do
  case $1 in
    -lms) ms=$2; shift 2 ;;
    -lms=*) ms=${1#*=}; shift ;;
    *) shift ;;
  esac
done
while :; do
  printf '0, GPU-fake-0, 87, 30511, 81559\n1, GPU-fake-1, 3, 120, 81559\n' || exit 0
  sleep "$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
done
