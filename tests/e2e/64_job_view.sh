#!/usr/bin/env bash
# 64_job_view: the job's view on 2 hosts x 2 ranks.
# 1. Stragglers: rank 1 sleeps while ranks 0 and 2 compute, rank 3 stops itself (SIGSTOP).
#    With --stragglers 3 each of the two is named once in the console (rank 1 by its CPU use
#    against the median rank's, rank 3 as stopped); the busy ranks are not named. Once rank 3
#    is continued the job ends well.
# 2. The same job's --trace is a Chrome trace: a process per host named after it, a slice per
#    rank (exit 0), straggler slices for ranks 1 and 3, CPU counters; its --report is one
#    page without scripts or links, which headless Chromium draws: the screenshot holds the
#    timeline's bars, the straggler marks and the binding map's cells.
# 3. A balanced job (every rank busy) names nobody.
# 4. Bad input: --report into a missing folder, or naming a folder: one line, exit 2.
# 5. GPUs: with an nvidia-smi on ferryd's PATH (a stand-in printing two GPUs, GPU 0 at 87%)
#    the report draws each host's GPU use and says how it was read, the trace holds GPU 0's
#    counter at 87; the ranks were given GPU 0 (-x CUDA_VISIBLE_DEVICES=0). The stand-in ends
#    with the job.
# 6. Restarts and a lost host: rank 1 fails the first attempt (exit 3, --max-restarts 1), the
#    second attempt loses fnode2 (its sshd session killed, --min-hosts 1) and the job ends on
#    fnode1. The report marks the failure, the restart and the lost host and draws the failed
#    rank red; the trace has a slice per rank and attempt (rank 1: failed, then two more).
# Nothing of any job is left on the hosts.
# shellcheck disable=SC2154 # R_rc etc. come from run_capture
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
require_root
require_cluster
require_nodes 2
command -v chromium >/dev/null || fail "chromium is not installed (scripts/ferry-dev deps test)"

tok=$(unique_token)
prog=$FERRY_SRC/tests/e2e/programs/view_rank.sh

# 1. Stragglers, with the report and the trace of the same job.
start_bg A -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 --stragglers 3 \
  --report "$T/job.html" --trace "$T/job.json" "$prog" "$tok" 9 bibs
wait_for "rank 3 named as stopped" 60 grep -q "rank 3 on fnode2 has been stopped" "$T/A.err"
wait_for "rank 1 named for its CPU use" 30 grep -q "rank 1 on fnode1 has used" "$T/A.err"
pkill -CONT -f "view_rank.sh $tok" || fail "no rank to continue"
wait_bg A 60
assert_eq 0 "$A_rc" "the job with stragglers ends well"
assert_match "$A_err" "ferryrun: rank 1 on fnode1 has used [0-9]% CPU for 3 s while the median rank used [0-9]+%" \
  "rank 1 named for its CPU use"
assert_contains "$A_err" "ferryrun: rank 3 on fnode2 has been stopped (SIGSTOP or a debugger) for 3 s" \
  "rank 3 named as stopped"
assert_eq 1 "$(grep -c 'rank 1 on fnode1 has' "$T/A.err")" "rank 1 named once"
assert_eq 1 "$(grep -c 'rank 3 on fnode2 has' "$T/A.err")" "rank 3 named once"
assert_not_contains "$A_err" "rank 0 on" "busy rank 0 is no straggler"
assert_not_contains "$A_err" "rank 2 on" "busy rank 2 is no straggler"
for r in 0 1 2 3; do assert_contains "$A_out" "[$r]<stdout>:rank $r done" "rank $r ran to its end"; done

# 2. The trace and the report.
"$PY" - "$T/job.json" <<'PYEOF' || fail "the trace is not what the job did"
import json, sys
doc = json.load(open(sys.argv[1]))
ev = doc["traceEvents"]
hosts = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(hosts.values()) == ["fnode1", "fnode2"], hosts
slices = [e for e in ev if e["ph"] == "X" and e["cat"] != "straggler"]
assert sorted(e["args"]["rank"] for e in slices) == ["0", "1", "2", "3"], slices
for e in slices:
    assert e["args"]["outcome"] == "exit 0", e
    want = "fnode1" if e["args"]["rank"] in ("0", "1") else "fnode2"
    assert hosts[e["pid"]] == want, (e, hosts)
    assert e["dur"] > 1e6, e  # every rank lived for seconds
lagging = sorted(e["tid"] - 1 for e in ev if e["ph"] == "X" and e["cat"] == "straggler")
assert lagging == [1, 3], lagging
busy = [e["args"]["CPU %"] for e in ev if e["ph"] == "C" and e["name"] == "CPU % rank 0"]
assert len(busy) >= 3 and max(busy) > 30, busy
assert doc["otherData"]["exit status"] == 0
PYEOF
html=$(cat "$T/job.html")
assert_not_contains "$html" "<script" "the report runs no script"
assert_not_contains "$html" "http" "the report fetches nothing"
assert_contains "$html" "4 ranks" "the report's header"
assert_match "$html" "<th>(NUMA 0|CPUs)</th>" "the binding map's rows"
assert_contains "$html" "straggler: rank 3 on fnode2 has been stopped" "the report's marks"
# Chromium draws it: the bars (#4a9d5b), the straggler marks (#f0a020), the binding map's
# held cells (#cfe8d4).
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1200,1400 --screenshot="$T/job.png" "file://$T/job.html" \
  >"$T/chromium.log" 2>&1 || fail "chromium could not draw the report: $(tail -3 "$T/chromium.log")"
colours=$("$PY" "$FERRY_SRC/tests/e2e/programs/png_colours.py" "$T/job.png" 4a9d5b f0a020 cfe8d4)
while read -r colour n; do
  ((n > 50)) || fail "the screenshot lacks colour $colour ($n pixels):
$colours"
done <<<"$colours"
wait_gone "$tok" 10
wait_cluster_idle 10

# 3. A balanced job names nobody.
run_capture B --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 \
  --stragglers 2 "$prog" "$tok" 6 bbbb
assert_eq 0 "$B_rc" "the balanced job's exit status"
assert_not_contains "$B_err" " on fnode" "no rank of a balanced job is named"
for r in 0 1 2 3; do assert_contains "$B_out" "[$r]<stdout>:rank $r done" "balanced rank $r ran"; done

# 4. Bad input.
run_capture C -- "$FERRYRUN" -np 1 --report "$T/missing/job.html" true
assert_eq 2 "$C_rc" "a report into a missing folder"
assert_eq "ferryrun: --report $T/missing/job.html: cannot write into $T/missing: No such file or directory" \
  "$C_err" "the one line"
run_capture D -- "$FERRYRUN" -np 1 --trace "$T" true
assert_eq 2 "$D_rc" "a trace naming a folder"
assert_eq "ferryrun: --trace $T: is a folder; give a file name" "$D_err" "the one line"
wait_gone "$tok" 10
wait_cluster_idle 10

# 5. GPUs read with (a stand-in for) nvidia-smi.
mkdir -p "$T/gpubin-$tok"
ln -s "$FERRY_SRC/tests/e2e/programs/fake_nvidia_smi.sh" "$T/gpubin-$tok/nvidia-smi"
cat >"$T/ferryd-gpu" <<EOF2
#!/bin/sh
PATH=$T/gpubin-$tok:\$PATH exec $(dirname "$FERRYRUN")/ferryd "\$@"
EOF2
chmod +x "$T/ferryd-gpu"
run_capture G --timeout 60 -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 2 -H fnode1:1,fnode2:1 \
  --ferryd "$T/ferryd-gpu" --ship-ferryd never -x CUDA_VISIBLE_DEVICES=0 \
  --report "$T/gpu.html" --trace "$T/gpu.json" "$prog" "$tok" 4 bb
assert_eq 0 "$G_rc" "the job with GPUs read"
html=$(cat "$T/gpu.html")
assert_contains "$html" "Accelerator use: NVIDIA, read with nvidia-smi every 1000 ms" "how the GPUs were read"
assert_contains "$html" "GPU use %" "the GPU chart"
assert_contains "$html" ">GPU 1</span>" "each GPU named"
assert_contains "$html" "rank 0: CUDA_VISIBLE_DEVICES=0" "the rank's device"
"$PY" - "$T/gpu.json" <<'PYEOF' || fail "the trace lacks the GPUs' use"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
hosts = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
for want in ("fnode1", "fnode2"):
    pid = [p for p, n in hosts.items() if n == want][0]
    gpu0 = [e["args"]["use"] for e in ev if e["ph"] == "C" and e["pid"] == pid and e["name"] == "GPU 0 %"]
    assert gpu0 and all(v == 87 for v in gpu0), (want, gpu0)
PYEOF
wait_gone "gpubin-$tok" 10
wait_gone "$tok" 10
wait_cluster_idle 10

# 6. A restart and a lost host in the timeline.
start_bg R -- "$FERRYRUN" --ssh-config "$SSHCFG" -np 4 -H fnode1:2,fnode2:2 --max-restarts 1 \
  --min-hosts 1 --kill-grace 1 --report "$T/restart.html" --trace "$T/restart.json" \
  "$prog" "$tok" 10 bfbb
wait_for "the second attempt's ranks" 60 grep -q "\[1\]<stdout>:rank 1 busy" "$T/R.out"
victim=$(pids_on_host fnode2 "sshd: root@notty")
[[ -n $victim ]] || fail "no sshd session found on fnode2"
# shellcheck disable=SC2086
kill -9 $victim
wait_bg R 120
assert_eq 0 "$R_rc" "the job that restarted and lost a host ends well on fnode1"
html=$(cat "$T/restart.html")
assert_contains "$html" "restart: attempt 1" "the restart marked"
assert_match "$html" "host lost: fnode2" "the lost host marked"
assert_contains "$html" "failure: attempt 0: rank 1 on host fnode1" "the failure marked"
assert_contains "$html" "class=\"bar failed\"" "the failed rank drawn red"
"$PY" - "$T/restart.json" <<'PYEOF' || fail "the trace lacks the attempts"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
r1 = sorted((e["args"]["attempt"], e["cat"], e["args"]["outcome"]) for e in ev
            if e["ph"] == "X" and e["cat"] != "straggler" and e["args"]["rank"] == "1")
assert len(r1) == 3 and r1[0] == (0, "failed", "exit 3") and r1[2][2] == "exit 0", r1
marks = sorted(e["name"] for e in ev if e["ph"] == "i" and e["name"] != "first output")
assert marks == ["failure", "failure", "host lost", "new attempt", "restart"], marks
PYEOF
wait_gone "$tok" 10
wait_cluster_idle 10
pass
