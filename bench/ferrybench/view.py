"""The job's view (`--report`, `--trace`, `--stragglers`) against a job without it.

ferryrun against itself: with any of those options every ferryd samples its ranks once a
second and sends the samples over the job's connection, and the front end keeps them.
Two cases, each run with the view on (--report, --trace and --stragglers 10 at once) and
off, alternating the order by round:

- output throughput: 2 hosts x 2 ranks write M MB of 100-byte lines (the busiest path the
  samples share); wall time, MB/s and the front end's CPU per GB. Every line is checked
  (lines.py): a lost or torn line fails ferryrun.
- a quiet job: 4 hosts x 2 ranks that sleep S seconds; the CPU of the front end and of the
  ferryds over the job: what sampling itself costs when nothing else happens.

Goal: level within noise (ratios about 1).
"""

from __future__ import annotations

import subprocess
import time

from .context import Context
from .cpu_split import CpuSplit
from .detach import Column
from .lines import check_output, gen_argv

SECTION = "view"

COLUMNS = [Column("view", "with --report --trace --stragglers"), Column("plain", "without")]


def run(ctx: Context) -> None:
    ferry = ctx.ferry()
    ctx.results.columns[SECTION] = COLUMNS
    ctx.results.legends[SECTION] = (
        "ferryrun with the job's view (--report, --trace, --stragglers 10: every ferryd "
        "samples its ranks each second) against ferryrun without it, median [min-max] over "
        "the rounds; ratios are without / with for times and CPU, with / without for "
        "throughput: about 1 is the goal (sampling costs nothing that shows).")
    quick = ctx.sizes.throughput_rounds <= 1
    rounds = max(ctx.sizes.throughput_rounds, 2)
    with ctx.cluster.session(4, "the job's view") as cluster:
        if cluster.nodes < 4:
            ctx.results.notes.append("view skipped: needs 4 hosts")
            return
        throughput(ctx, cluster, 5 if quick else 50, rounds)
        quiet(ctx, cluster, 5 if quick else 30, rounds)


def view_flags(ctx: Context) -> list[str]:
    return ["--report", str(ctx.work / "view.html"), "--trace", str(ctx.work / "view.json"),
            "--stragglers", "10"]


def command(ctx: Context, col: Column, hosts, ranks: int, argv: list[str]) -> list[str]:
    base = ctx.ferry().command(hosts, ranks, argv, tagged=True)
    return base[:1] + (view_flags(ctx) if col.key == "view" else []) + base[1:]


def timed(ctx: Context, cluster, cmd: list[str], out_path) -> tuple[int, float, dict]:
    watch = CpuSplit(ctx.ferry().daemon, cluster.listeners())
    start = time.monotonic()
    with open(out_path, "wb") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, env=cluster.env())
        watch.frontend_pid = p.pid
        watch.start()
        rc = p.wait(timeout=ctx.sizes.run_timeout_s)
    secs = time.monotonic() - start
    watch.stop.set()
    watch.join()
    return rc, secs, watch.totals()


def throughput(ctx: Context, cluster, mb: float, rounds: int) -> None:
    hosts = [(f"fnode{i + 1}", 2) for i in range(2)]
    ranks, line = 4, 100
    lines = int(mb * 1_000_000) // line
    total = ranks * lines * line
    case = f"2 hosts x 2 ranks x {mb:g} MB, {line}-byte lines"
    wall = ctx.results.metric(SECTION, case, "wall time", "s")
    rate = ctx.results.metric(SECTION, case, "throughput", "MB/s", lower_is_better=False)
    cpu = ctx.results.metric(SECTION, case, "front end CPU", "CPU s/GB")
    out_path = ctx.work / "view.out"
    try:
        for rnd in range(rounds):
            for col in (COLUMNS if rnd % 2 == 0 else COLUMNS[::-1]):
                ctx.log(f"  view: {case}: round {rnd + 1}/{rounds} {col.key}")
                rc, secs, totals = timed(ctx, cluster,
                                         command(ctx, col, hosts, ranks, gen_argv(lines, line)),
                                         out_path)
                if rc != 0:
                    ctx.fail(f"ferryrun {col.label} exited {rc} in view {case}, round {rnd + 1}")
                    continue
                c = check_output(str(out_path), ranks, True, line)
                if not (c.lossless(ranks, lines) and c.intact(ranks, lines)):
                    ctx.fail(f"ferryrun {col.label} lost or tore output in view {case}, round "
                             f"{rnd + 1}: {c.describe(ranks, lines)}")
                    continue
                if col.key == "view" and not (ctx.work / "view.html").exists():
                    ctx.fail("ferryrun --report wrote no report")
                wall.add(col.key, rnd, secs)
                rate.add(col.key, rnd, total / 1e6 / secs)
                cpu.add(col.key, rnd, totals.get("front end", 0.0) / (total / 1e9))
                ctx.check_idle(f"view {col.key}")
    finally:
        out_path.unlink(missing_ok=True)


def quiet(ctx: Context, cluster, secs: int, rounds: int) -> None:
    hosts = [(f"fnode{i + 1}", 2) for i in range(4)]
    case = f"4 hosts x 2 ranks sleeping {secs} s"
    front = ctx.results.metric(SECTION, case, "front end CPU", "CPU ms")
    daemons = ctx.results.metric(SECTION, case, "ferryds' CPU, all hosts", "CPU ms")
    out_path = ctx.work / "view-quiet.out"
    try:
        for rnd in range(rounds):
            for col in (COLUMNS if rnd % 2 == 0 else COLUMNS[::-1]):
                ctx.log(f"  view: {case}: round {rnd + 1}/{rounds} {col.key}")
                rc, _, totals = timed(ctx, cluster,
                                      command(ctx, col, hosts, 8, ["sleep", str(secs)]),
                                      out_path)
                if rc != 0:
                    ctx.fail(f"ferryrun {col.label} exited {rc} in view {case}, round {rnd + 1}")
                    continue
                front.add(col.key, rnd, totals.get("front end", 0.0) * 1000)
                daemons.add(col.key, rnd, totals.get("daemon (hosts)", 0.0) * 1000)
                ctx.check_idle(f"view quiet {col.key}")
    finally:
        out_path.unlink(missing_ok=True)
