#!/usr/bin/env bash
# 31_job_file: a TOML job file gives hosts with their own SSH ports and slots,
# host defaults, the environment, output options and the command; options on
# the command line win over it; a bad key is one error naming file:line.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 3

tok=$(unique_token)
cat >"$T/job.toml" <<TOML
np = 5
command = ["sh", "-c", "echo \"\$RANK \$LOCAL_RANK \$(hostname) \${SSH_CONNECTION##* } \$FOO \$BAR \$NUM\"; : \"\$0\"", "$tok"]

[defaults]
slots = 2                 # fnode1 and fnode3 name no slots

[[hosts]]
name = "fnode1"
port = 2301

[[hosts]]
name = "fnode2"
port = 2302
slots = 1

[[hosts]]
name = "fnode3"           # port from ssh_config (2222)

[ssh]
config_file = "$SSHCFG"

[environment]
FOO = "from-file"
BAR = "bar"
NUM = 42

[output]
tag = "openmpi"
TOML

run_capture R -- "$FERRYRUN" --config "$T/job.toml"
assert_eq 0 "$R_rc" "ferryrun exit code"
expected="[1,0]<stdout>:0 0 fnode1 2301 from-file bar 42
[1,1]<stdout>:1 1 fnode1 2301 from-file bar 42
[1,2]<stdout>:2 0 fnode2 2302 from-file bar 42
[1,3]<stdout>:3 0 fnode3 2222 from-file bar 42
[1,4]<stdout>:4 1 fnode3 2222 from-file bar 42"
assert_eq "$expected" "$(sort -t, -k2n "$T/R.out")" "tagged lines per rank"

# The command line wins: -np, -x, the tag style, and the command itself.
run_capture C -- "$FERRYRUN" --config "$T/job.toml" -np 2 -x FOO=from-cli --tag-style horovod \
  sh -c 'echo "$RANK $(hostname) $FOO $BAR"; : "$0"' "$tok"
assert_eq 0 "$C_rc" "ferryrun exit code with overrides"
assert_eq "[0]<stdout>:0 fnode1 from-cli bar
[1]<stdout>:1 fnode1 from-cli bar" "$(sort "$T/C.out")" "lines with command-line overrides"

# -H replaces the file's hosts (ports included).
run_capture H -- "$FERRYRUN" --config "$T/job.toml" -np 1 -H fnode2 \
  sh -c 'echo "$(hostname) ${SSH_CONNECTION##* }"; : "$0"' "$tok"
assert_eq 0 "$H_rc" "ferryrun exit code with -H over the file's hosts"
assert_eq "[1,0]<stdout>:fnode2 2222" "$H_out" "host and port with -H"

# One line naming file:line and the bad key; exit 2; nothing starts.
printf 'np = 2\n[[hosts]]\nname = "fnode1"\nslot = 2\n' >"$T/bad.toml"
run_capture B -- "$FERRYRUN" --config "$T/bad.toml" true
assert_eq 2 "$B_rc" "ferryrun exit code for a bad job file"
assert_eq "ferryrun: $T/bad.toml:4: unknown key 'slot' in [[hosts]] (known: name, slots, max_slots, port, user, ferryd, devices)" \
  "$B_err" "error line"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
