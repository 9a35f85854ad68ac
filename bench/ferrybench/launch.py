"""Cold launch: wall time of `<launcher> -np N ... true`, measured with hyperfine.

"Cold" means every run opens fresh SSH connections and starts fresh daemons (no
connection sharing, no persistent daemons); the page cache is warm, as it is on a real
cluster for the second job of the day. Each round runs every tool `launch_runs` times,
in a rotated order, and exports hyperfine's JSON; ratios are taken per round.
"""

from __future__ import annotations

import json
import shlex
import subprocess

from .cluster import host_list
from .context import Context, verify_placement

SECTION = "launch"


def run(ctx: Context) -> None:
    s = ctx.sizes
    nodes = max(h for h, _ in s.launch_cases)
    with ctx.cluster.session(nodes, "cold launch") as cluster:
        for hosts_n, per_host in s.launch_cases:
            if hosts_n > cluster.nodes:
                ctx.results.notes.append(f"launch {hosts_n}x{per_host} skipped: the cluster "
                                         f"has {cluster.nodes} hosts")
                continue
            case = f"{hosts_n} hosts x {per_host} ranks"
            ctx.log(f"  launch: {case}: checking placement with hostname")
            for tool in ctx.tools:
                verify_placement(ctx, tool, hosts_n, per_host)  # doubles as a warm-up run
            metric = ctx.results.metric(SECTION, case, "wall time of `true`", "s")
            # hyperfine gives user and system time as means over a command's runs: one
            # value per round. It covers the front end and the ssh clients it forks.
            cpu = ctx.results.metric(SECTION, case, "front-end CPU (incl. its ssh)", "s")
            hosts = host_list(hosts_n, per_host)
            for rnd in range(s.launch_rounds):
                order = ctx.rotated(rnd)
                ctx.log(f"  launch: {case}: round {rnd + 1}/{s.launch_rounds} "
                        f"({', '.join(t.key for t in order)})")
                json_path = ctx.out / "raw" / f"launch-{hosts_n}x{per_host}-round{rnd + 1}.json"
                json_path.parent.mkdir(parents=True, exist_ok=True)
                cmd = ["hyperfine", "-N", "--runs", str(s.launch_runs), "--style", "basic",
                       "--export-json", str(json_path)]
                for t in order:
                    cmd += ["--command-name", t.key,
                            shlex.join(t.command(hosts, hosts_n * per_host, ["true"]))]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, env=cluster.env(),
                                       stdin=subprocess.DEVNULL,
                                       timeout=s.run_timeout_s * len(order) * s.launch_runs)
                except subprocess.TimeoutExpired:
                    ctx.fail(f"launch {case}, round {rnd + 1}: hyperfine did not finish "
                             f"({ctx.hang_report()})")
                    ctx.check_idle(f"launch {case} round {rnd + 1}")
                    continue
                if r.returncode != 0:
                    ctx.fail(f"launch {case}, round {rnd + 1}: hyperfine failed (a launcher "
                             f"exited non-zero): {r.stderr.strip()[-300:]}")
                    ctx.check_idle(f"launch {case} round {rnd + 1}")
                    continue
                for res in json.loads(json_path.read_text())["results"]:
                    for t in res["times"]:
                        metric.add(res["command"], rnd, t)
                    cpu.add(res["command"], rnd, res["user"] + res["system"])
                ctx.check_idle(f"launch {case} round {rnd + 1}")
