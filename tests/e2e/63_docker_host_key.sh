#!/usr/bin/env bash
# 63_docker_host_key: a bridge-mode container recreated from an image that does
# not persist its SSH host keys comes back with a new key. ferryrun must refuse
# that host (one clear line naming it and the changed key, exit 1, even with
# --ssh-accept-new) and leave nothing running in the containers it did reach.
# Recreated with the keys kept in a volume (docker/compose.*.yml), the same
# known_hosts works again.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=docker_sim_lib.sh
source "$(dirname "$0")/docker_sim_lib.sh"
require_root
docker_sim_up bridge

hostfile=$T/hosts.txt
sim_hostfile bridge "$hostfile"
job=("$FERRYRUN" --ssh-config "$DSSHCFG" --hostfile "$hostfile" --start-timeout 20)

run_capture A -- "${job[@]}" sh -c 'echo "$(hostname)"'
assert_eq 0 "$A_rc" "ferryrun exit code before the rebuild"
assert_lines_count "$T/A.out" 8 "stdout lines before the rebuild"
wait_sim_idle 10

# dctr2b recreated without a host-key volume: a new key behind 10.232.0.12:2202.
"$DOCKER_SIM" rebuild dctr2b --fresh-host-key >"$T/rebuild1.log" 2>&1 ||
  fail "rebuild dctr2b failed: $(cat "$T/rebuild1.log")"
tok=$(unique_token)
sleeper=$(sleeper_for "$tok")
run_capture B --timeout 60 -- "${job[@]}" sh -c 'exec "$0" 1000' "$sleeper"
assert_eq 1 "$B_rc" "ferryrun exit code with a changed host key"
line=$(grep -E '10\.232\.0\.12:2202' "$T/B.err" | grep -i 'host key' || true)
[[ -n $line ]] || fail "no line on stderr names 10.232.0.12:2202 and its host key"
assert_match "$line" '[Cc][Hh][Aa][Nn][Gg][Ee][Dd]' "the host key line"
assert_eq 0 "$(count_lines "$T/B.out" '.')" "stdout lines (no rank may have run)"
wait_gone "$tok" 10
wait_sim_idle 10

run_capture C --timeout 60 -- "${job[@]}" --ssh-accept-new sh -c 'exec "$0" 1000' "$sleeper"
assert_eq 1 "$C_rc" "ferryrun exit code with a changed host key and --ssh-accept-new"
grep -E '10\.232\.0\.12:2202' "$T/C.err" | grep -qi 'host key' ||
  fail "--ssh-accept-new: no line on stderr names 10.232.0.12:2202 and its host key"
wait_gone "$tok" 10
wait_sim_idle 10

# Recreated with the host key from its volume: accepted again.
"$DOCKER_SIM" rebuild dctr2b >"$T/rebuild2.log" 2>&1 ||
  fail "rebuild dctr2b failed: $(cat "$T/rebuild2.log")"
run_capture D -- "${job[@]}" sh -c 'echo "$(hostname)"'
assert_eq 0 "$D_rc" "ferryrun exit code once the persisted key is back"
assert_eq 2 "$(count_lines "$T/D.out" '^\[[67]\]<stdout>:dctr2b$')" "ranks 6 and 7 on dctr2b"
wait_sim_idle 10
pass
