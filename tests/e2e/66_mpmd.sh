#!/usr/bin/env bash
# 66_mpmd: MPMD lines (several programs, one world) on 2 hosts with real Open MPI and MPICH.
# `ferryrun -np 2 A : -np 2 -x K=V B` is the 4-rank job it reads as (ranks numbered in
# part order, each part with its own command and variables, MPI_APPNUM from PMIx), not two
# ranks of A with ':' among their arguments. MPICH's mpiexec with -configfile (per-part
# -hosts, -env, -wdir; MPI_APPNUM from PMI-1), Open MPI's mpirun --app with per-part -H, and
# a job file's [[apps]] give the same. A part that fails ends the job with its status and
# leaves nothing behind; after `--` a ':' is a plain word. Bad MPMD lines are one line, exit 2.
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
mkdir -p "$T/sub"

# The line that was read as one program before: 4 ranks in one world, two parts.
run_capture O --timeout 120 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:2,fnode2:2 \
  "$T/appnum_ompi" A "$tok" : -np 2 -x PART_VAR=b "$T/appnum_ompi" B "$tok"
assert_eq 0 "$O_rc" "ferryrun exit code (Open MPI, A : B)"
assert_eq "part A appnum 0 rank 0/4 local 0 sum 6 var - wdir $w host fnode1" "$(rank_lines "$T/O.out" 0 stdout)" "rank 0"
assert_eq "part A appnum 0 rank 1/4 local 1 sum 6 var - wdir $w host fnode1" "$(rank_lines "$T/O.out" 1 stdout)" "rank 1"
assert_eq "part B appnum 1 rank 2/4 local 0 sum 6 var b wdir $w host fnode2" "$(rank_lines "$T/O.out" 2 stdout)" "rank 2"
assert_eq "part B appnum 1 rank 3/4 local 1 sum 6 var b wdir $w host fnode2" "$(rank_lines "$T/O.out" 3 stdout)" "rank 3"

# MPICH's mpiexec, parts from -configfile: the second part only on fnode2, in sub/, without
# the first part's -env.
ln -s "$FERRYRUN" "$T/mpiexec"
cat >"$T/parts.cfg" <<CFG
# controller, then workers
-n 1 -env PART_VAR one $T/appnum_mpich C $tok
-n 3 -hosts fnode2 -wdir sub $T/appnum_mpich D $tok
CFG
run_capture M --timeout 120 -- "$T/mpiexec" --ssh-config "$SSHCFG" -hosts fnode1:1,fnode2:3 \
  -l -configfile "$T/parts.cfg"
assert_eq 0 "$M_rc" "mpiexec -configfile exit code (MPICH)"
assert_eq "$(printf '%s\n' "[0] part C appnum 0 rank 0/4 local 0 sum 7 var one wdir $w host fnode1" \
  "[1] part D appnum 1 rank 1/4 local 0 sum 7 var - wdir sub host fnode2" \
  "[2] part D appnum 1 rank 2/4 local 1 sum 7 var - wdir sub host fnode2" \
  "[3] part D appnum 1 rank 3/4 local 2 sum 7 var - wdir sub host fnode2")" \
  "$(sort "$T/M.out")" "MPICH parts: PMI-1 appnum, per-part host, variable and directory"

# Open MPI's mpirun --app: each line its own -H; the first part goes to fnode2.
ln -s "$FERRYRUN" "$T/mpirun"
printf '%s\n' "-np 1 -H fnode2 $T/appnum_ompi E $tok" "-np 2 -H fnode1:2 $T/appnum_ompi F $tok" \
  >"$T/apps.txt"
run_capture P --timeout 120 -- "$T/mpirun" --mca plm_rsh_args "-F $SSHCFG" --tag-output \
  --app "$T/apps.txt"
assert_eq 0 "$P_rc" "mpirun --app exit code"
assert_eq "$(printf '%s\n' "[1,0]<stdout>:part E appnum 0 rank 0/3 local 0 sum 5 var - wdir $w host fnode2" \
  "[1,1]<stdout>:part F appnum 1 rank 1/3 local 0 sum 5 var - wdir $w host fnode1" \
  "[1,2]<stdout>:part F appnum 1 rank 2/3 local 1 sum 5 var - wdir $w host fnode1")" \
  "$(sort "$T/P.out")" "mpirun --app: the parts' hosts as each line gives them"

# A job file's [[apps]].
cat >"$T/job.toml" <<TOML
hosts = ["fnode1:1", "fnode2:2"]
[[apps]]
command = ["sh", "-c", "echo first \$RANK/\$WORLD_SIZE \$(hostname)"]
np = 1
[[apps]]
command = ["sh", "-c", "echo second \$RANK/\$WORLD_SIZE \$PART_VAR \$(hostname)"]
np = 2
environment = { PART_VAR = "x" }
TOML
run_capture J --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" --config "$T/job.toml"
assert_eq 0 "$J_rc" "ferryrun --config with [[apps]]"
assert_eq "$(printf '%s\n' "[0]<stdout>:first 0/3 fnode1" "[1]<stdout>:second 1/3 x fnode2" \
  "[2]<stdout>:second 2/3 x fnode2")" "$(sort "$T/J.out")" "the job file's parts"

# A failing part ends the job with its status; the other part's rank is stopped.
sleeper=$(sleeper_for "$tok")
run_capture F --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 1 -H fnode1,fnode2 \
  "$sleeper" 300 : -np 1 sh -c 'exit 3'
assert_eq 3 "$F_rc" "exit status of the failing part"
wait_gone "$tok" 10

# After --, ':' is an argument.
run_capture L --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 1 -H fnode1 -- echo a : b
assert_eq 0 "$L_rc" "exit code with a literal ':'"
assert_eq "[0]<stdout>:a : b" "$L_out" "':' after -- is a plain word"

# Bad MPMD lines: one line each, exit 2, nothing started.
ln -s "$FERRYRUN" "$T/horovodrun"
assert_refused "empty part" "part 2 of 3 is empty" "$FERRYRUN" -np 1 -H fnode1 true : : true
assert_refused "trailing ':'" "part 2 of 2 is empty" "$FERRYRUN" -np 1 -H fnode1 true :
assert_refused "horovodrun" "horovodrun runs one program on every rank" "$T/horovodrun" -np 1 -H fnode1 true : true
assert_refused "too many ranks" "part 2 (false): no free slot is left on its hosts for -np 1" \
  "$FERRYRUN" -np 2 -H fnode1:2 true : -np 1 false
assert_refused "unknown part option" "part 2: '--bind-to' is not an option a part may carry" \
  "$FERRYRUN" -np 1 -H fnode1:2 true : --bind-to core true
assert_refused "--app and a command" "the file names the programs" "$T/mpirun" --app "$T/apps.txt" true
assert_refused "bad appfile line" "apps.bad:1: '--tag-output' is not an option a part may carry" \
  sh -c 'echo "-np 1 --tag-output true" >"$0/apps.bad"; exec "$0/mpirun" --app "$0/apps.bad"' "$T"

wait_cluster_idle 10
pass
