#!/usr/bin/env bash
# Why binding and thread counts matter: M ranks of a multi-threaded CPU-bound workload
# (matmul.cpp, OpenMP) on this machine, in three set-ups:
#
#   naive    unbound, OMP_NUM_THREADS unset: every rank starts one thread per CPU, so M ranks
#            run M x N threads on N CPUs (the usual oversubscription).
#   threads  unbound, OMP_NUM_THREADS = floor(N / M): the usual torch.set_num_threads fix.
#   ferry    each rank bound to its own block of floor(N / M) CPUs, OMP_NUM_THREADS the
#            same: the usual hand-written taskset loop, and what ferryrun does by default.
#
# Usage: bench/binding/run.sh [--ferryrun PATH] [--ranks M] [--n SIZE] [--iters K] [--reps R]
#   Without --ferryrun the ranks are started by this script with taskset (the hand-made
#   way); with it, by `ferryrun -np M` (--bind-to none / -x OMP_NUM_THREADS for the first two).
# Prints each run, then per set-up the median job time (slowest rank) and ratios.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ferryrun="" ranks=2 n=192 iters=300 reps=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --ferryrun) ferryrun=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O3 -fopenmp -o "$work/matmul" "$here/matmul.cpp"

# The CPUs this script may use (a container cpuset or a taskset around it counts).
allowed=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
cpus=()
IFS=, read -ra parts <<< "$allowed"
for p in "${parts[@]}"; do
  if [[ $p == *-* ]]; then for ((c = ${p%-*}; c <= ${p#*-}; c++)); do cpus+=("$c"); done
  else cpus+=("$p"); fi
done
ncpu=${#cpus[@]}
per=$((ncpu / ranks))
if ((per < 1)); then echo "run.sh: $ranks ranks > $ncpu cpus; use fewer ranks" >&2; exit 2; fi

echo "machine: $ncpu cpus allowed ($allowed), $(nproc --all) online;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "workload: $ranks ranks x matmul n=$n iters=$iters; launcher: ${ferryrun:-taskset (by hand)}"

block() {  # the CPUs of rank $1, "a,b,c"
  local r=$1 out=() c
  for ((c = r * per; c < (r + 1) * per; c++)); do out+=("${cpus[c]}"); done
  (IFS=,; echo "${out[*]}")
}

# run SETUP → prints the ranks' lines
run() {
  local setup=$1 r
  local args=(--n "$n" --iters "$iters")
  if [[ -n $ferryrun ]]; then
    case $setup in
      naive) "$ferryrun" -np "$ranks" --bind-to none -x OMP_NUM_THREADS="$ncpu" \
               "$work/matmul" "${args[@]}" ;;
      threads) "$ferryrun" -np "$ranks" --bind-to none "$work/matmul" "${args[@]}" ;;
      ferry) "$ferryrun" -np "$ranks" "$work/matmul" "${args[@]}" ;;
    esac
    return
  fi
  for ((r = 0; r < ranks; r++)); do
    case $setup in
      naive) env -u OMP_NUM_THREADS BENCH_RANK=$r "$work/matmul" "${args[@]}" ;;
      threads) env OMP_NUM_THREADS=$per BENCH_RANK=$r "$work/matmul" "${args[@]}" ;;
      ferry) env OMP_NUM_THREADS=$per BENCH_RANK=$r taskset -c "$(block $r)" \
               "$work/matmul" "${args[@]}" ;;
    esac > "$work/out.$r" &
  done
  wait
  cat "$work"/out.*
  rm -f "$work"/out.*
}

setups=(naive threads ferry)
declare -A times
for ((rep = 1; rep <= reps; rep++)); do
  for s in "${setups[@]}"; do  # interleaved, so background load drifts hit all alike
    out=$(run "$s")
    sed "s/^/  [$s #$rep] /" <<< "$out"
    job=$(grep -o 'time=[0-9.]*' <<< "$out" | cut -d= -f2 | sort -g | tail -1)
    [[ -n $job ]] || { echo "run.sh: no result from $s" >&2; exit 1; }
    times[$s]+="$job "
    # The set-up must be what it claims (with --ferryrun this checks ferryd's binding).
    want_threads=$([[ $s == naive ]] && echo "$ncpu" || echo "$per")
    if grep -v "threads=$want_threads " <<< "$out" | grep -q .; then
      echo "run.sh: warning: $s: a rank did not run $want_threads threads" >&2
    fi
    if [[ $s == ferry ]] && ((ranks > 1)) && grep -q "cpus=$allowed " <<< "$out"; then
      echo "run.sh: warning: ferry: a rank was not bound (cpus=$allowed)" >&2
    fi
  done
done

median() {
  tr ' ' '\n' <<< "$1" | grep . | sort -g |
    awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
echo
printf '%-8s %-48s %12s %14s\n' setup description "job time s" "vs ferry"
declare -A med
for s in "${setups[@]}"; do med[$s]=$(median "${times[$s]}"); done
desc_naive="unbound, OMP_NUM_THREADS unset ($ranks x $ncpu threads)"
desc_threads="unbound, OMP_NUM_THREADS=$per"
desc_ferry="bound to $per-cpu blocks, OMP_NUM_THREADS=$per"
for s in "${setups[@]}"; do
  d="desc_$s"
  printf '%-8s %-48s %12s %13.2fx\n' "$s" "${!d}" "${med[$s]}" \
    "$(awk -v a="${med[$s]}" -v b="${med[ferry]}" 'BEGIN {print a / b}')"
done
echo "(median of $reps; job time = slowest rank; > 1.00x means slower than ferry's default)"
