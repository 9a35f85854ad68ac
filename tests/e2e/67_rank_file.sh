#!/usr/bin/env bash
# 67_rank_file: Open MPI's rank files on 2 hosts with real Open MPI and MPICH. Each rank runs
# on the host and the cores its line names (`rank N=host slot=S:C`, host-wide `slot=C`,
# `+nN` hosts), whatever order the ranks take over the hosts; the MPI world (PMIx for Open MPI,
# PMI-1 with its process mapping for MPICH) has the file's ranks. A slot a host lacks (known
# only once its ferryd reported its sockets), a host not in the job and a missing rank are one
# line naming file and line, exit 2, nothing started.
# shellcheck disable=SC2154 # X_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2

tok=$(unique_token)
build_appnum
cd "$T"
w=$(basename "$T")
# Each rank says its CPUs, then becomes the MPI program.
cat >"$T/cpus_then" <<'SH'
#!/bin/sh
echo "cpus $(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)"
exec "$@"
SH
chmod 755 "$T/cpus_then"
ncores=$(ip netns exec fnode1 nproc)
((ncores >= 2)) || fail "the cluster's hosts need 2 CPUs for this test (they have $ncores)"

# Ranks interleaved over the hosts, every slot form.
cat >"$T/ranks.txt" <<RF
# placement from the old cluster
rank 0=fnode2 slot=0:1
rank 1=fnode1 slot=0
rank 2=fnode1   slot=1    # host-wide core 1
rank 3=+n1 slot=0:0
RF
expect() { # PART: the four ranks' lines, sorted
  printf '%s\n' "[0]<stdout>:cpus 1" "[0]<stdout>:part $1 appnum 0 rank 0/4 local 0 sum 4 var - wdir $w host fnode2" \
    "[1]<stdout>:cpus 0" "[1]<stdout>:part $1 appnum 0 rank 1/4 local 0 sum 4 var - wdir $w host fnode1" \
    "[2]<stdout>:cpus 1" "[2]<stdout>:part $1 appnum 0 rank 2/4 local 1 sum 4 var - wdir $w host fnode1" \
    "[3]<stdout>:cpus 0" "[3]<stdout>:part $1 appnum 0 rank 3/4 local 1 sum 4 var - wdir $w host fnode2" | sort
}
run_capture O --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode1:2,fnode2:2 \
  --rankfile "$T/ranks.txt" "$T/cpus_then" "$T/appnum_ompi" A "$tok"
assert_eq 0 "$O_rc" "ferryrun --rankfile exit code (Open MPI)"
assert_eq "$(expect A)" "$(sort "$T/O.out")" "Open MPI: each rank on its line's host and cores"

# mpirun's spelling (-rf), MPICH's PMI-1: the same world from the same file.
ln -s "$FERRYRUN" "$T/mpirun"
run_capture M --timeout 120 -- "$T/mpirun" --mca plm_rsh_args "-F $SSHCFG" -H fnode1:2,fnode2:2 \
  --tag-output -np 4 -rf "$T/ranks.txt" "$T/cpus_then" "$T/appnum_mpich" B "$tok"
assert_eq 0 "$M_rc" "mpirun -rf exit code (MPICH)"
assert_eq "$(expect B | sed 's/^\[\([0-9]\)\]/[1,\1]/')" "$(sort "$T/M.out")" \
  "MPICH: the file's ranks, PMI-1 process mapping and all"

# Without hosts on the command line the file's hosts are the job's.
printf '%s\n' "rank 0=fnode2 slot=0" "rank 1=fnode1 slot=1" >"$T/two.txt"
run_capture H --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --rankfile "$T/two.txt" \
  sh -c 'echo "$RANK $(hostname) $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"'
assert_eq 0 "$H_rc" "ferryrun --rankfile without -H"
assert_eq "$(printf '%s\n' "[0]<stdout>:0 fnode2 0" "[1]<stdout>:1 fnode1 1")" "$(sort "$T/H.out")" \
  "the file's hosts"

# Bad files: one line naming file and line, exit 2, nothing started.
MARK=(sh -c ': >"$0"; echo x' "$T/ran")
bad() { # LABEL EXPECTED-TEXT FILE-LINES...
  local label=$1 text=$2
  shift 2
  printf '%s\n' "$@" >"$T/bad.txt"
  rm -f "$T/ran"
  assert_refused "$label" "$text" "$FERRYRUN" --ssh-config "$SSHCFG" -H fnode1:2,fnode2:2 \
    --rankfile "$T/bad.txt" "${MARK[@]}"
  [[ ! -e $T/ran ]] || fail "$label: a rank ran"
}
bad "a core the host lacks" \
  "$T/bad.txt line 2: rank 1 slot=0:$ncores on fnode2: core $ncores of socket 0 does not exist" \
  "rank 0=fnode1 slot=0" "rank 1=fnode2 slot=0:$ncores"
bad "a socket the host lacks" "$T/bad.txt line 1: rank 0 slot=7:0 on fnode1: socket 7 does not exist" \
  "rank 0=fnode1 slot=7:0"
bad "a host not in the job" "$T/bad.txt line 2: host 'fnode9' is not one of the job's hosts" \
  "rank 0=fnode1 slot=0" "rank 1=fnode9 slot=0"
bad "a missing rank" "$T/bad.txt: rank 1 is missing" "rank 0=fnode1 slot=0" "rank 2=fnode2 slot=0"
bad "too many ranks on a host" "$T/bad.txt line 3: 3 ranks on fnode1, which has 2 slot(s)" \
  "rank 0=fnode1" "rank 1=fnode1" "rank 2=fnode1"
bad "a bad slot list" "$T/bad.txt line 1: bad slot list '0:x'" "rank 0=fnode1 slot=0:x"

wait_cluster_idle 10
pass
