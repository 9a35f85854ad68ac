#!/usr/bin/env bash
# 49_device_env_per_host_ssh: per-host devices over SSH for two hosts that share an address,
# as two containers behind one address do: fnode1 on port 2222 and fnode1 on port 2301 are
# two hosts, each with its own `devices`. Every rank sees its own host's list. The hosts'
# NPUs are a fake tree (FERRY_TEST_DEVICE_ROOT, as in 46), which the job file's per-host
# `ferryd` (a wrapper on the shared filesystem) puts into each ferryd's environment.
# shellcheck disable=SC2154,SC2016 # P_rc etc. come from run_capture; $VARs are for the ranks
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 1

root=$T/devroot
mkdir -p "$root/dev"
: >"$root/dev/davinci_manager"
for i in 0 1 2 3; do : >"$root/dev/davinci$i"; done
cat >"$T/ferryd" <<SH
#!/bin/sh
FERRY_TEST_DEVICE_ROOT=$root exec $FERRYD "\$@"
SH
chmod 755 "$T/ferryd"

tok=$(unique_token)
cat >"$T/job.toml" <<TOML
command = ["sh", "-c", "echo \"\${SSH_CONNECTION##* } \$ASCEND_RT_VISIBLE_DEVICES/\$DEVICE_ID\"; : \"\$0\"", "$tok"]

[defaults]
ferryd = "$T/ferryd"
devices = [3]

[[hosts]]
name = "fnode1"
port = 2222
slots = 2
devices = [0, 1]

[[hosts]]
name = "fnode1"
port = 2301
slots = 2
devices = [2, 3]

[ssh]
config_file = "$SSHCFG"
TOML

run_capture P -- "$FERRYRUN" --config "$T/job.toml"
assert_eq 0 "$P_rc" "ferryrun exit code"
assert_eq "2222 0,1/0" "$(rank_lines "$T/P.out" 0 stdout)" "rank 0 on fnode1:2222"
assert_eq "2222 0,1/1" "$(rank_lines "$T/P.out" 1 stdout)" "rank 1 on fnode1:2222"
assert_eq "2301 2,3/0" "$(rank_lines "$T/P.out" 2 stdout)" "rank 2 on fnode1:2301"
assert_eq "2301 2,3/1" "$(rank_lines "$T/P.out" 3 stdout)" "rank 3 on fnode1:2301"

wait_gone "$tok" 5
wait_cluster_idle 5
pass
