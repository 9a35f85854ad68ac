"""Launch at scale: many hosts over SSH, and inside a Slurm allocation.

SSH (this file): `true` as one rank per host on 64, 65, 128 and 129 cluster hosts
(tests/cluster/ferry-cluster), ferryrun, hydra and Open MPI interleaved. Open MPI's tree
spawn (radix 64 by default: mpirun starts 64 orteds, each starts the next ones) is known
to hang past that boundary, so every run has a limit (`scale_hang_s`): a run past it is
killed and reported as a hang, and that tool is not run again at that size. Each run is
timed with wait4 (the front end's CPU covers the ssh clients it reaped) while a sampler
keeps the peak RSS of the front end, its ssh clients and the daemons on the hosts.

Slurm (slurm_scale.py): the same `true` inside allocations of a real Slurm cluster.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from . import progress_check, slurm_scale
from .cluster import host_list
from .context import Context
from .memory import Sampler
from .peers import Tool
from .proc import timed_run

SECTION = "scale"


def run(ctx: Context) -> None:
    if ctx.sizes.scale_hosts:
        run_ssh(ctx)
    if ctx.sizes.scale_slurm_nodes:
        slurm_scale.run(ctx)


def kill_leftovers(ctx: Context) -> int:
    """Kills what a killed run left on the hosts (a hung tree of orteds); returns how many."""
    left = ctx.cluster.leftovers()
    for line in left:
        pid = int(line.split()[2].rstrip(":"))
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(left)


def daemons_up(ctx: Context, tool: Tool) -> int:
    """How many hosts run the tool's daemon now (for describing a hang)."""
    return len({line.split()[0] for line in ctx.cluster.leftovers() if tool.daemon in line})


def with_cluster_names(ctx: Context, cmd: list[str]) -> list[str]:
    """cmd in a private mount namespace whose /etc/hosts also names the cluster's hosts, as
    a real cluster's resolver would. Without it mpirun resolves every fnodeI through DNS,
    which fails slowly here: 9.2 s instead of 4.1-4.4 s on 16 hosts, and more than the
    hang limit on 128. The same for every tool (ferryrun reads HostName from ssh_config and
    resolves nothing). sh and unshare exec, so the pid is the launcher's."""
    hosts = ctx.work / "hosts.scale"
    if not hosts.exists():
        hosts.write_text(Path("/etc/hosts").read_text() + "\n"
                         + (ctx.cluster.state_dir / "hosts").read_text())
    return ["unshare", "--mount", "--propagation", "slave", "sh", "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts)] + cmd


def one_run(ctx: Context, tool: Tool, n: int, argv: list[str], tag: str, sample=False):
    """One run of `argv` as n ranks, one per host; (RunResult, Sampler or None)."""
    cmd = with_cluster_names(ctx, tool.command(host_list(n, 1), n, argv))
    sampler = Sampler(tool.daemon, tool.helpers) if sample else None

    def started(pid: int) -> None:
        if sampler:
            sampler.frontend_pid = pid
            sampler.start()

    hang_info = []

    def on_timeout() -> str:
        hang_info.append(f"{daemons_up(ctx, tool)} of {n} hosts ran {tool.daemon}")
        return hang_info[-1]

    out, err = ctx.work / f"scale-{tag}.out", ctx.work / f"scale-{tag}.err"
    r = timed_run(cmd, out, err, ctx.cluster.env(), timeout_s=ctx.sizes.scale_hang_s,
                  on_start=started, on_timeout=on_timeout)
    if sampler:
        sampler.stop.set()
        sampler.join()
    return r, sampler


def check_placement(ctx: Context, tool: Tool, n: int, hung) -> bool:
    """`hostname` once: every host exactly once. False (and noted) when the tool hung."""
    r, _ = one_run(ctx, tool, n, ["hostname"], f"{tool.key}-check")
    case = f"{n} hosts x 1"
    if r.timed_out:
        hung[tool.key] += 1
        ctx.results.notes.append(
            f"scale {case}: {tool.label} hung running `hostname` (killed after "
            f"{ctx.sizes.scale_hang_s} s; {r.hang_info}); not run again at this size")
        ctx.log(f"  scale: {case}: {tool.key} HUNG ({r.hang_info})")
        kill_leftovers(ctx)
        return False
    out = (ctx.work / f"scale-{tool.key}-check.out").read_text(errors="replace").split()
    want = sorted(f"fnode{i}" for i in range(1, n + 1))
    if r.rc != 0 or sorted(out) != want:
        err = (ctx.work / f"scale-{tool.key}-check.err").read_text(errors="replace")
        ctx.fail(f"scale {case}: {tool.label} `hostname` exited {r.rc} with "
                 f"{len(out)} lines for {n} hosts: {err.strip()[-300:]}")
        kill_leftovers(ctx)
        return False
    ctx.check_idle(f"scale {case} {tool.key} hostname")
    return True


def ok_run(ctx: Context, tool: Tool, case: str, r, hung, what: str) -> bool:
    """Records a hang (noted) or a failure (failed); True for a run to be counted."""
    if r.timed_out:
        hung[tool.key] += 1
        ctx.results.notes.append(f"scale {case}: {tool.label} hung in {what} (killed after "
                                 f"{ctx.sizes.scale_hang_s} s; {r.hang_info})")
        kill_leftovers(ctx)
        return False
    if r.rc != 0:
        err = (ctx.work / f"scale-{tool.key}.err").read_text(errors="replace")
        ctx.fail(f"scale {case}: {tool.label} exited {r.rc} in {what}: {err.strip()[-300:]}")
        kill_leftovers(ctx)
        return False
    return True


def run_ssh(ctx: Context) -> None:
    s = ctx.sizes
    nodes = max(s.scale_hosts)
    with ctx.cluster.session(nodes, "scale over SSH") as cluster:
        for n in s.scale_hosts:
            case = f"{n} hosts x 1"
            if n > cluster.nodes:
                ctx.results.notes.append(f"scale {case} skipped: the cluster has "
                                         f"{cluster.nodes} hosts")
                continue
            wall = ctx.results.metric(SECTION, case, "wall time of `true`", "s")
            cpu = ctx.results.metric(SECTION, case, "front-end CPU (incl. its ssh)", "s")
            fe = ctx.results.metric(SECTION, case, "front end + its ssh clients, peak RSS",
                                    "MiB")
            per_host = ctx.results.metric(SECTION, case, "daemon processes per host, peak",
                                          "MiB")
            hung = {t.key: 0 for t in ctx.tools}
            ctx.log(f"  scale: {case}: checking placement with hostname")
            tools = [t for t in ctx.tools if check_placement(ctx, t, n, hung)]
            for rnd in range(s.scale_rounds):
                k = rnd % max(1, len(tools))
                for tool in tools[k:] + tools[:k]:
                    ctx.log(f"  scale: {case}: round {rnd + 1}/{s.scale_rounds} {tool.key}")
                    r, _ = one_run(ctx, tool, n, ["true"], tool.key)
                    if not ok_run(ctx, tool, case, r, hung, f"round {rnd + 1}"):
                        tools.remove(tool)
                        continue
                    wall.add(tool.key, rnd, r.wall_s)
                    cpu.add(tool.key, rnd, r.cpu_s)
                    ctx.check_idle(f"scale {case} {tool.key}")
            # Memory: one more run per tool whose ranks sleep, so that every daemon lives
            # long enough to be sampled (`true` ends before a 50 ms sampler sees ferryd).
            for tool in list(tools):
                ctx.log(f"  scale: {case}: memory, {tool.key}")
                r, sampler = one_run(ctx, tool, n, ["sleep", "2"], tool.key, sample=True)
                if not ok_run(ctx, tool, case, r, hung, "the memory run"):
                    continue
                pk = sampler.peaks
                fe.add(tool.key, 0, (pk.frontend_kib + sum(pk.ssh_kib.values())) / 1024)
                per_host.add(tool.key, 0, pk.per_host_max() / 1024)
                seen = len({pk.daemon_host.get(pid) for pid in pk.daemons()})
                if seen < n:
                    ctx.results.warnings.append(f"scale {case}: saw {tool.daemon} on {seen} "
                                                f"of {n} hosts only ({tool.label})")
                ctx.check_idle(f"scale {case} {tool.key} memory")
            m_hung = ctx.results.metric(SECTION, case, "runs that hung (killed)", "runs")
            for key, count in hung.items():
                m_hung.add(key, 0, count)
        # Last, since it leaves three hosts broken: the progress display on a terminal.
        if cluster.nodes >= 4:
            ctx.log(f"  scale: progress display on {min(128, cluster.nodes)} hosts, 3 unreachable")
            progress_check.run(ctx, min(128, cluster.nodes))
    ctx.results.legends[SECTION] = (
        f"One rank per host, `true`. A run past {s.scale_hang_s} s is killed and counted "
        "as hung; a tool that hung is not run again at that size. Front-end CPU: user + "
        "system of the launcher and the children it reaped (its ssh clients), from wait4. "
        "Peak RSS: one more run per tool with `sleep 2` as the ranks, /proc sampled every "
        "50 ms (VmHWM); the daemon figure is the largest sum over one host (ferryd and its "
        "guard, orted, hydra_pmi_proxy).")
