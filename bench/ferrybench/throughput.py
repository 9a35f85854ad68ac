"""Output throughput: ranks on the hosts write lines as fast as they can.

Each case is H hosts x P ranks per host, every rank writing M MB of L-byte lines
(`lines.py`: the generator and the check). The launcher's stdout goes to a file on tmpfs
that every run writes over from its start (`Sink`: no run pays for new pages); after the
run (untimed) every line it wrote is checked: it must be one rank's line, under that
rank's tag when tags are on, and each rank must have exactly its line count. Wall time
covers the whole job, launch included. Torn lines do not fail the benchmark for the peers
(both tear lines under load; that is a finding, reported as its own row); lost bytes are
a warning for them and fail it for ferryrun.

The columns are launcher variants: ferryrun as users get it (its default tags, whole
lines per rank) first, so that every ratio compares it with a peer's fastest form
(untagged), then ferryrun untagged, and in the first case the peers with their rank tags
(Open MPI --tag-output, hydra -prepend-rank). Every timed run also reads the CPU time of
each process of the job from /proc (`cpu_split.py`), reported per GB moved and by role
(front end, sshd, daemon, ranks), so a regression shows where it costs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cluster import host_list
from .context import Context
from .cpu_split import CpuSplit
from .lines import LINE, GEN, check_output, gen_argv, rank_line  # noqa: F401 (re-exported)
from .peers import FerryRun, Tool
from .proc import Sink, timed_run

SECTION = "throughput"
CPU_SECTION = "throughput-cpu"

# Roles of cpu_split.py, as rows of the CPU table (per GB), in this order.
CPU_ROLES = [("front end", "front end"), ("front end's ssh clients", "front end's ssh clients"),
             ("daemon (hosts)", "daemon (ferryd, hydra_pmi_proxy, orted)"),
             ("sshd (hosts)", "sshd"), ("ranks and shells (hosts)", "ranks (yes, head, sh)")]


@dataclass
class Variant:
    """One column: a launcher, with or without its rank tags."""

    key: str
    label: str
    tool: Tool
    tagged: bool


def variants(ctx: Context, with_peer_tags: bool) -> list[Variant]:
    ferry = ctx.ferry()
    out = [Variant("ferryrun", "ferryrun (tags)", ferry, True),
           Variant("ferryrun-untagged", "ferryrun untagged", ferry, False)]
    peers = [t for t in ctx.tools if t is not ferry]
    for t in peers:  # a baseline build with its tags, as the build measured
        out += [Variant(t.key, t.label + " (tags)", t, True)] if isinstance(t, FerryRun) else []
    out += [Variant(t.key + ("-untagged" if isinstance(t, FerryRun) else ""),
                    t.label + (" untagged" if isinstance(t, FerryRun) else ""), t, False)
            for t in peers]
    if with_peer_tags:
        out += [Variant(t.key + "-tagged", t.label + " tagged", t, True) for t in peers
                if not isinstance(t, FerryRun)]
    return out


def sink_size(cases) -> int:
    """Bytes enough for the largest case's output with the longest tag written per line
    (`[1,NNN]<stdout>:`, 16 bytes; 20 allowed)."""
    return max(h * p * (int(mb * 1_000_000) // line) * (line + 20) for h, p, mb, line in cases)


def case_name(hosts: int, ppn: int, mb: float, line: int) -> str:
    return f"{hosts} hosts x {ppn} ranks x {mb:g} MB, {line}-byte lines"


def run(ctx: Context) -> None:
    s = ctx.sizes
    cases = list(s.throughput_cases)
    if s.throughput_mb:  # --throughput-mb: the first case's size
        h, p, _, line = cases[0]
        cases[0] = (h, p, s.throughput_mb, line)
    need = max(h for h, _, _, _ in cases)
    cols = variants(ctx, s.throughput_tagged)
    ctx.results.columns[SECTION] = cols
    ctx.results.columns[CPU_SECTION] = cols
    ctx.results.legends[SECTION] = (
        "Columns: ferryrun with its default rank tags (whole lines per rank) first; every "
        "ratio is `ferryrun (tags) vs X`, X / ferryrun for times and ferryrun / X for "
        "throughput, per round, median [min-max]; above 1: ferryrun (tags) better. The "
        "peers run untagged (their fastest form) unless the column says tagged.")
    ctx.results.legends[CPU_SECTION] = (
        "CPU seconds per GB of output (the run time of every thread of every process of the "
        "job, /proc/PID/task/*/schedstat, read every 20 ms during each timed run), median "
        "over the rounds. The "
        "ratios read as above: X / ferryrun (tags), above 1: ferryrun used less.")
    with ctx.cluster.session(need, "output throughput") as cluster:
        if cluster.nodes < need:
            ctx.results.notes.append(f"throughput skipped: needs {need} hosts")
            return
        sink = Sink(ctx.work / "tp.out", sink_size(cases))
        try:
            for i, (hosts, ppn, mb, line) in enumerate(cases):
                run_case(ctx, cluster, sink, hosts, ppn, mb, line, cols if i == 0 else
                         [v for v in cols if not v.key.endswith("-tagged")])
        finally:
            sink.remove()


def run_case(ctx: Context, cluster, sink: Sink, hosts_n: int, ppn: int, mb: float, line: int,
             cols: list[Variant]) -> None:
    s = ctx.sizes
    ranks = hosts_n * ppn
    lines = int(mb * 1_000_000) // line
    total = ranks * lines * line
    hosts = host_list(hosts_n, ppn)
    case = case_name(hosts_n, ppn, mb, line)
    wall = ctx.results.metric(SECTION, case, "wall time", "s")
    rate = ctx.results.metric(SECTION, case, "throughput", "MB/s", lower_is_better=False)
    torn = ctx.results.metric(SECTION, case, "torn lines (of the rank's own)", "lines")
    argv = gen_argv(lines, line)
    for rnd in range(s.throughput_rounds):
        k = rnd % len(cols)
        for v in cols[k:] + cols[:k]:
            out = sink.path
            err = ctx.work / f"tp-{v.key}.err"
            cmd = v.tool.command(hosts, ranks, argv, tagged=v.tagged)
            ctx.log(f"  throughput: {case}: round {rnd + 1}/{s.throughput_rounds} {v.key}")
            watch = CpuSplit(v.tool.daemon, cluster.listeners())

            def started(pid: int, watch=watch) -> None:
                watch.frontend_pid = pid
                watch.start()

            r = timed_run(cmd, out, err, cluster.env(), timeout_s=s.run_timeout_s,
                          on_start=started, on_timeout=lambda: ctx.hang_report(),
                          reuse_stdout=True)
            watch.stop.set()
            watch.join()
            if r.rc != 0:
                ctx.fail(f"{v.label} {'hung' if r.timed_out else f'exited {r.rc}'} "
                         f"in throughput {case}, round {rnd + 1}"
                         + (f" (killed after {s.run_timeout_s} s; {r.hang_info})"
                            if r.timed_out else f": {err.read_text(errors='replace')[-300:]}"))
                ctx.check_idle(f"throughput {v.key}")
                continue
            c = check_output(out, ranks, v.tagged, line, length=r.out_bytes)
            ctx.debug(f"{v.key}: {r.wall_s:.2f} s, {c.describe(ranks, lines)}")
            err.unlink(missing_ok=True)
            if v.tool is ctx.ferry() and not (c.lossless(ranks, lines) and c.intact(ranks, lines)):
                ctx.fail(f"ferryrun lost or tore output in throughput {case} ({v.label}), "
                         f"round {rnd + 1}: {c.describe(ranks, lines)}")
                continue
            torn.add(v.key, rnd, c.torn_lines)
            if not c.lossless(ranks, lines):
                ctx.results.warnings.append(
                    f"{v.label} lost output in throughput {case} (round {rnd + 1}, not "
                    f"counted): {c.describe(ranks, lines)}")
                ctx.check_idle(f"throughput {v.key}")
                continue
            wall.add(v.key, rnd, r.wall_s)
            rate.add(v.key, rnd, total / 1e6 / r.wall_s)
            totals = watch.totals()
            gb = total / 1e9
            for role, label in CPU_ROLES:
                if role in totals:
                    ctx.results.metric(CPU_SECTION, case, label, "CPU s/GB").add(
                        v.key, rnd, totals[role] / gb)
            ctx.results.metric(CPU_SECTION, case, "all of the job", "CPU s/GB").add(
                v.key, rnd, sum(totals.values()) / gb)
            ctx.check_idle(f"throughput {v.key}")
