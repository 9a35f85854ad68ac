"""Detached jobs (`ferryrun --detach`, `ferry attach`) next to attached ones.

Two cases, ferryrun against itself (no peer has a detached mode to compare with):

- output throughput: 2 hosts x 2 ranks write M MB of 100-byte lines. Attached, ferryrun's
  stdout is a file; detached, `ferryrun --detach` returns once the ranks run and `ferry
  wait` returns when the job ends, its console in the journal (--journal-max large enough
  to keep it all). Wall time covers both; the front end's CPU time (read from /proc every
  20 ms while it runs; the detached one's pid comes from its record) is reported per GB.
  Goal: level within noise: the journal's pump must cost the job nothing.
- line latency: one rank writes a line stamped with the time (CLOCK_REALTIME, the same on
  every simulated host) every 0.2 s; the viewer, attached ferryrun's stdout or `ferry attach`
  of the detached job, stamps each line as it arrives. The difference is how late a viewer
  sees a rank's line (`ferry attach` wakes on the journal's inotify events).

Every line of every run is checked (lines.py): a lost line fails ferryrun.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass

from .context import Context
from .cpu_split import CpuSplit
from .lines import check_output, gen_argv

SECTION = "detach"

# The rank of the latency case: N stamped lines, 0.2 s apart (nanoseconds since the epoch).
STAMPS = 'i=0; while [ $i -lt "$0" ]; do echo "stamp $(date +%s%N)"; i=$((i+1)); sleep 0.2; done'


@dataclass
class Column:
    key: str
    label: str


COLUMNS = [Column("detached", "ferryrun --detach"), Column("attached", "ferryrun attached")]


def run(ctx: Context) -> None:
    ferry = ctx.ferry()
    bins = ferry.bin_dir
    if not os.access(bins / "ferry", os.X_OK):
        ctx.results.notes.append("detach skipped: the ferry command is not built")
        return
    ctx.results.columns[SECTION] = COLUMNS
    ctx.results.legends[SECTION] = (
        "`ferryrun --detach` (then `ferry wait` / `ferry attach`) against attached ferryrun, "
        "median [min-max] over the rounds; ratios are attached / detached for times and "
        "CPU, detached / attached for throughput: about 1 is the goal (the journal costs "
        "nothing), above 1 the detached job did better.")
    mb = 5 if ctx.sizes.throughput_rounds <= 1 else 50
    rounds = max(ctx.sizes.throughput_rounds, 2)
    state = ctx.work / "detach-state"
    env = dict(ctx.cluster.env(), XDG_STATE_HOME=str(state))
    with ctx.cluster.session(2, "detached jobs") as cluster:
        if cluster.nodes < 2:
            ctx.results.notes.append("detach skipped: needs 2 hosts")
            return
        throughput(ctx, cluster, env, bins, mb, rounds)
        latency(ctx, cluster, env, bins, 10 if rounds <= 2 else 25)


def record_of(state, job_id: str) -> dict:
    with open(state / "ferry" / "jobs" / job_id / "job.json") as f:
        return json.load(f)


def throughput(ctx: Context, cluster, env, bins, mb: float, rounds: int) -> None:
    ferry = ctx.ferry()
    hosts = [(f"fnode{i + 1}", 2) for i in range(2)]
    ranks, line = 4, 100
    lines = int(mb * 1_000_000) // line
    total = ranks * lines * line
    case = f"2 hosts x 2 ranks x {mb:g} MB, {line}-byte lines"
    wall = ctx.results.metric(SECTION, case, "wall time", "s")
    rate = ctx.results.metric(SECTION, case, "throughput", "MB/s", lower_is_better=False)
    cpu = ctx.results.metric(SECTION, case, "front end CPU", "CPU s/GB")
    argv = gen_argv(lines, line)
    base = ferry.command(hosts, ranks, argv, tagged=True)
    attached_out = ctx.work / "detach-attached.out"
    state = env["XDG_STATE_HOME"]
    try:
        for rnd in range(rounds):
            for col in (COLUMNS if rnd % 2 == 0 else COLUMNS[::-1]):
                ctx.log(f"  detach: {case}: round {rnd + 1}/{rounds} {col.key}")
                watch = CpuSplit(ferry.daemon, cluster.listeners())
                start = time.monotonic()
                if col.key == "attached":
                    # The same file system as the journal's, a fresh file as the journal is.
                    with open(attached_out, "wb") as out:
                        p = subprocess.Popen(base, stdout=out, stderr=subprocess.DEVNULL,
                                             stdin=subprocess.DEVNULL, env=env)
                        watch.frontend_pid = p.pid
                        watch.start()
                        rc = p.wait(timeout=ctx.sizes.run_timeout_s)
                    out_path = str(attached_out)
                else:
                    cmd = [base[0], "--detach", "--journal-max", "1G"] + base[1:]
                    r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                       timeout=ctx.sizes.run_timeout_s)
                    job_id = r.stdout.strip()
                    if r.returncode != 0 or not job_id:
                        ctx.fail(f"ferryrun --detach exited {r.returncode}: {r.stderr[-300:]}")
                        continue
                    watch.frontend_pid = record_of(ctx.work / "detach-state", job_id)["pid"]
                    watch.start()
                    rc = subprocess.run([str(bins / "ferry"), "wait", job_id], env=env,
                                        timeout=ctx.sizes.run_timeout_s).returncode
                    out_path = f"{state}/ferry/jobs/{job_id}/console.log"
                secs = time.monotonic() - start
                watch.stop.set()
                watch.join()
                if rc != 0:
                    ctx.fail(f"{col.label} exited {rc} in detach {case}, round {rnd + 1}")
                    continue
                c = check_output(out_path, ranks, True, line)
                if not (c.lossless(ranks, lines) and c.intact(ranks, lines)):
                    ctx.fail(f"{col.label} lost or tore output in detach {case}, round "
                             f"{rnd + 1}: {c.describe(ranks, lines)}")
                    continue
                wall.add(col.key, rnd, secs)
                rate.add(col.key, rnd, total / 1e6 / secs)
                cpu.add(col.key, rnd, watch.totals().get("front end", 0.0) / (total / 1e9))
                ctx.check_idle(f"detach {col.key}")
    finally:
        attached_out.unlink(missing_ok=True)


def latency(ctx: Context, cluster, env, bins, n: int) -> None:
    ferry = ctx.ferry()
    case = f"1 rank, {n} stamped lines 0.2 s apart"
    late = ctx.results.metric(SECTION, case, "line to viewer (median of the lines)", "ms")
    argv = ["sh", "-c", STAMPS, str(n)]
    base = ferry.command([("fnode1", 1)], 1, argv, tagged=True)
    for rnd in range(2):
        for col in COLUMNS:
            ctx.log(f"  detach: {case}: round {rnd + 1}/2 {col.key}")
            if col.key == "attached":
                viewer = subprocess.Popen(base, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          stdin=subprocess.DEVNULL, env=env)
            else:
                r = subprocess.run([base[0], "--detach"] + base[1:], capture_output=True,
                                   text=True, env=env, timeout=ctx.sizes.run_timeout_s)
                job_id = r.stdout.strip()
                if r.returncode != 0 or not job_id:
                    ctx.fail(f"ferryrun --detach exited {r.returncode}: {r.stderr[-300:]}")
                    continue
                viewer = subprocess.Popen([str(bins / "ferry"), "attach", job_id, "--since", "all"],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          env=env)
            delays = []
            for raw in viewer.stdout:
                now = time.time_ns()
                text = raw.decode(errors="replace")
                if "stamp " in text:
                    delays.append((now - int(text.split("stamp ")[1])) / 1e6)
            viewer.wait(timeout=ctx.sizes.run_timeout_s)
            # --since all replays the lines that came before the viewer: not a latency.
            if col.key == "detached":
                delays = delays[2:]
            if len(delays) < n - 2:
                ctx.fail(f"{col.label}: {len(delays)} of {n} stamped lines reached the viewer")
                continue
            delays.sort()
            late.add(col.key, rnd, delays[len(delays) // 2])
            ctx.check_idle(f"detach latency {col.key}")
