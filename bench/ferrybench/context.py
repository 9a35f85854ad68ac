"""Settings and shared objects every section gets."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .cluster import Cluster, host_list
from .peers import Tool
from .results import BenchError, Results


@dataclass
class Sizes:
    """How much work one run of the benchmark does (--quick picks the small set)."""

    launch_rounds: int      # hyperfine rounds per launch case (tools interleaved)
    launch_runs: int        # runs of each tool inside one round
    launch_cases: list[tuple[int, int]]   # (hosts, ranks per host)
    # (hosts, ranks per host, MB of lines per rank (1 MB = 10^6 bytes), bytes per line)
    throughput_cases: list[tuple[int, int, float, int]]
    throughput_mb: float    # --throughput-mb: the first case's MB per rank (0: as listed)
    throughput_rounds: int
    throughput_tagged: bool  # the first case also runs the peers with their rank tags
    memory_ranks: list[int]  # total ranks, spread over memory_hosts hosts
    memory_hosts: int
    memory_rounds: int
    memory_sleep_s: float
    breakdown_rounds: int
    breakdown_case: tuple[int, int]
    docker_rounds: int       # docker layouts: rounds (the three layouts interleaved)
    docker_launch_runs: int  # runs of each layout per round in the launch case
    docker_mb: int           # MB of lines per rank in the docker throughput case
    restart_rounds: int      # restart: rounds (launchers interleaved) on this machine
    restart_ranks: list[int]  # restart: ranks on this machine, one case each
    restart_default_monitor_ranks: list[int]  # cases that also run torchrun's 5 s default
    restart_ssh_hosts: int   # restart over SSH: hosts x 1 rank (and as many ranks locally)
    restart_ssh_rounds: int  # 0: no SSH case (no cluster needed)
    horovod_rounds: int      # horovod: rounds (real horovodrun and ferry interleaved)
    hvd_elastic_rounds: int  # hvd-elastic: rounds of its three jobs (launchers interleaved)
    run_timeout_s: int       # one launcher run past this is a hang: killed, reported
    scale_hosts: list[int]   # scale: SSH cases, hosts x 1 rank (129 needs ferry-cluster up 129)
    scale_rounds: int        # scale: rounds over SSH (tools interleaved)
    scale_hang_s: int        # scale: a run past this is killed and reported as hung
    scale_slurm_nodes: list[int]  # scale: allocations of N nodes x 1 on ferry-slurm
    scale_slurm_rounds: int  # scale: rounds inside each allocation


FULL = Sizes(launch_rounds=6, launch_runs=2, launch_cases=[(4, 2), (8, 4)],
             throughput_cases=[(2, 2, 50, 48), (2, 2, 5, 2), (2, 2, 20, 8), (2, 2, 50, 4096),
                               (2, 64, 1.5, 48)],
             throughput_mb=0, throughput_rounds=5, throughput_tagged=True,
             memory_ranks=[4, 64], memory_hosts=4, memory_rounds=3, memory_sleep_s=2.0,
             breakdown_rounds=5, breakdown_case=(8, 4),
             docker_rounds=5, docker_launch_runs=3, docker_mb=20,
             restart_rounds=5, restart_ranks=[4, 8], restart_default_monitor_ranks=[4],
             restart_ssh_hosts=4, restart_ssh_rounds=5, horovod_rounds=5, hvd_elastic_rounds=3,
             run_timeout_s=120,
             scale_hosts=[64, 65, 128, 129], scale_rounds=3, scale_hang_s=60,
             scale_slurm_nodes=[4, 32], scale_slurm_rounds=5)

QUICK = Sizes(launch_rounds=2, launch_runs=1, launch_cases=[(4, 2)],
              throughput_cases=[(2, 2, 5, 48)], throughput_mb=0, throughput_rounds=1,
              throughput_tagged=False,
              memory_ranks=[4], memory_hosts=4, memory_rounds=1, memory_sleep_s=1.0,
              breakdown_rounds=1, breakdown_case=(4, 2),
              docker_rounds=2, docker_launch_runs=1, docker_mb=2,
              restart_rounds=1, restart_ranks=[4], restart_default_monitor_ranks=[4],
              restart_ssh_hosts=4, restart_ssh_rounds=2, horovod_rounds=1, hvd_elastic_rounds=1,
              run_timeout_s=30,
              scale_hosts=[8, 9], scale_rounds=1, scale_hang_s=30,
              scale_slurm_nodes=[4], scale_slurm_rounds=1)


@dataclass
class Context:
    tools: list[Tool]
    cluster: Cluster
    sizes: Sizes
    work: Path              # scratch files (big outputs), removed at the end
    out: Path               # results: markdown, CSV, raw JSON
    results: Results
    verbose: bool = False

    def log(self, line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def debug(self, line: str) -> None:
        if self.verbose:
            self.log("    " + line)

    def fail(self, what: str) -> None:
        """A broken run: reported, the benchmark goes on, bench/run exits 1 at the end."""
        self.log(f"  FAILED: {what}")
        self.results.failures.append(what)

    def hang_report(self, out_file: Path | None = None, expected_bytes: int = 0) -> str:
        """What a run that passed its time limit left behind, for the failure message."""
        parts = []
        if out_file is not None and out_file.exists():
            parts.append(f"{out_file.stat().st_size} of {expected_bytes} bytes of output "
                         "had arrived")
        left = self.cluster.leftovers()
        parts.append("processes on the hosts: " + ("; ".join(left[:8]) if left else "none"))
        return ", ".join(parts)

    def ferry(self) -> Tool:
        return self.tools[0]

    def rotated(self, round_no: int) -> list[Tool]:
        """The tools in a different order each round, so none always goes first."""
        k = round_no % len(self.tools)
        return self.tools[k:] + self.tools[:k]

    def check_idle(self, after: str) -> None:
        left = self.cluster.idle(5.0)
        if left:
            self.results.warnings.append(
                f"processes left on the cluster 5 s after {after}: " + "; ".join(left[:5]))
            for line in left:
                pid = line.split()[2].rstrip(":")
                subprocess.run(["kill", "-9", pid], stderr=subprocess.DEVNULL)


def verify_placement(ctx: Context, tool: Tool, nodes: int, per_host: int) -> float:
    """Runs `hostname` once through the tool and checks every rank ran where it should.

    Returns the wall time. Raises BenchError when the tool fails or places ranks wrong:
    then its figures would be measuring something else.
    """
    hosts = host_list(nodes, per_host)
    cmd = tool.command(hosts, nodes * per_host, ["hostname"])
    start = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=ctx.sizes.run_timeout_s, env=ctx.cluster.env())
    except subprocess.TimeoutExpired:
        raise BenchError(f"{tool.label} hung running hostname on {nodes}x{per_host} "
                         f"({ctx.hang_report()})") from None
    wall = time.monotonic() - start
    if r.returncode != 0:
        raise BenchError(f"{tool.label} failed to run hostname on {nodes}x{per_host} "
                         f"(exit {r.returncode}): {r.stderr.strip()[-500:]}\n  command: "
                         + " ".join(cmd))
    got = Counter(l.strip() for l in r.stdout.splitlines() if l.strip())
    want = Counter({h: s for h, s in hosts})
    if got != want:
        raise BenchError(f"{tool.label} did not run the ranks on the cluster's hosts: "
                         f"expected {dict(want)}, got {dict(got)}")
    ctx.check_idle(f"{tool.label} hostname")
    return wall
