"""Short jobs through a warm pool (`ferry up`) next to ferryrun without it, hydra and mpirun.

J jobs of `true` on 4 hosts x 2 ranks (100 jobs; --quick: 20), each tool's jobs back to back
under hyperfine, rounds rotated: ferryrun through a pool of the 4 hosts, ferryrun with
--no-pool (an SSH session, the login shell and a ferryd start per host and job), Open MPI's
mpirun and MPICH's hydra (each its SSH sessions and daemons per job), and the same 8 ranks
forked on this machine by one local ferryd (`-H localhost:8`: no host to reach at all).
Twice: with the simulated hosts' light login shell, then with one whose rc file takes 0.5 s
(`sleep 0.5` in root's .bashrc on every host, as `pyenv init` or conda's hook cost on ML
hosts). The pool is started once per shell (its own start pays the shell, once); its process's
CPU over the jobs is read from /proc and given per job beside the front end's.

Without --quick, a third time with the light shell and 1,000 other processes on the hosts
(`sleep`s started by the bench; the simulated hosts share one process table, so every host
sees them all), as a busy real host has: what a launcher does per job that grows with the
host's process count shows there.

Goals (issue of the warm pool): a pooled job within 2x of the same ranks forked locally, at
least 10x faster than hydra, and the same with either shell.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .cluster import host_list
from .context import Context

SECTION = "pool"
HEAVY_RC = "sleep 0.5\n"
BUSY_PROCESSES = 1000


@dataclass
class Column:
    key: str
    label: str


def proc_cpu(pid: int) -> float:
    """utime + stime of a process (and its reaped children), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(f) for f in fields[11:15]) / ticks


def run(ctx: Context) -> None:
    ferry = ctx.ferry()
    quick = ctx.sizes.launch_runs <= 1
    jobs = 20 if quick else 100
    rounds = 1 if quick else 2
    peers = [t for t in ctx.tools[1:] if t.key in ("openmpi", "hydra")]
    columns = [Column("pool", "ferryrun, pooled"), Column("direct", "ferryrun --no-pool"),
               Column("local", "8 ranks on this machine")] + \
              [Column(t.key, t.label) for t in peers]
    ctx.results.columns[SECTION] = columns
    ctx.results.legends[SECTION] = (
        f"{jobs} jobs of `true` back to back, 4 hosts x 2 ranks, per-job wall time (mean over "
        "the jobs; median [min-max] over the rounds); ratios are column / pooled (above 1: "
        "the pool is faster). `8 ranks on this machine` is the same job with every rank "
        "forked by one local ferryd. CPU: the front end's per job (hyperfine's user+system), "
        "and the pool process's per job, read from /proc.")
    with ctx.cluster.session(4, "warm pool") as cluster:
        if cluster.nodes < 4:
            ctx.results.notes.append("pool skipped: needs 4 hosts")
            return
        env = dict(cluster.env(), XDG_STATE_HOME=str(ctx.work / "pool-state"))
        hosts = host_list(4, 2)
        base = ferry.command(hosts, 8, ["true"])
        cmds = {
            "pool": base[:1] + ["--pool", "bench"] + base[1:],
            "direct": base[:1] + ["--no-pool"] + base[1:],
            "local": [str(ferry.bin_dir / "ferryrun"), "-np", "8", "-H", "localhost:8", "true"],
        }
        for t in peers:
            cmds[t.key] = t.command(hosts, 8, ["true"])
        rc_file = cluster.state_dir / "node_bashrc"
        light = rc_file.read_text() if rc_file.exists() else ""
        cases = [("light login shell", light), ("login shell of 0.5 s", light + HEAVY_RC)]
        if not quick:
            cases.append((f"light login shell, {BUSY_PROCESSES:,} other processes", light))
        for shell, rc_text in cases:
            if rc_text and rc_file.exists():
                # Rewritten in place: the hosts see it through a bind mount of this very file.
                with open(rc_file, "w") as f:
                    f.write(rc_text)
            elif shell != "light login shell":
                ctx.results.notes.append("pool: no node_bashrc (FERRY_CLUSTER_KEEP_BASHRC?): "
                                         "the heavy-shell case is skipped")
                continue
            busy: list[subprocess.Popen] = []
            try:
                if "other processes" in shell:
                    busy = [subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)
                            for _ in range(BUSY_PROCESSES)]
                one_case(ctx, env, f"4 hosts x 2 ranks, {jobs} jobs, {shell}", cmds, columns,
                         jobs, rounds)
            finally:
                for p in busy:
                    p.kill()
                for p in busy:
                    p.wait()
                if rc_file.exists():
                    with open(rc_file, "w") as f:
                        f.write(light)


def one_case(ctx: Context, env: dict, case: str, cmds: dict, columns: list[Column], jobs: int,
             rounds: int) -> None:
    ferry = ctx.ferry()
    up = subprocess.run([str(ferry.bin_dir / "ferry"), "up", "--name", "bench", "--idle", "never",
                         "--ssh-config", str(ctx.cluster.ssh_config),
                         "-H", "fnode1,fnode2,fnode3,fnode4"],
                        env=env, capture_output=True, text=True, timeout=120)
    if up.returncode != 0:
        ctx.fail(f"pool: ferry up failed: {up.stderr.strip()[-300:]}")
        return
    log = Path(env["XDG_STATE_HOME"]) / "ferry" / "pools" / "bench" / "pool.log"
    pool_pid = int([line for line in log.read_text().splitlines()
                    if " pool bench: pid " in line][-1].split(" pid ")[1].split(",")[0])
    wall = ctx.results.metric(SECTION, case, "wall time per job", "s")
    cpu = ctx.results.metric(SECTION, case, "front-end CPU per job", "s")
    pool_cpu = ctx.results.metric(SECTION, case, "pool process CPU per job", "s")
    try:
        for rnd in range(rounds):
            k = rnd % len(columns)
            order = columns[k:] + columns[:k]
            ctx.log(f"  pool: {case}: round {rnd + 1}/{rounds} "
                    f"({', '.join(c.key for c in order)})")
            for col in order:
                shell = ("heavy" if "0.5 s" in case else
                         "busy" if "other processes" in case else "light")
                json_path = ctx.out / "raw" / f"pool-{shell}-{col.key}-round{rnd + 1}.json"
                json_path.parent.mkdir(parents=True, exist_ok=True)
                before = proc_cpu(pool_pid)
                r = subprocess.run(["hyperfine", "-N", "--runs", str(jobs), "--style", "basic",
                                    "--export-json", str(json_path), "--command-name", col.key,
                                    shlex.join(cmds[col.key])],
                                   env=env, capture_output=True, text=True,
                                   stdin=subprocess.DEVNULL,
                                   timeout=ctx.sizes.run_timeout_s * jobs)
                if r.returncode != 0:
                    ctx.fail(f"pool: {col.label} failed in {case}: {r.stderr.strip()[-300:]}")
                    continue
                res = json.loads(json_path.read_text())["results"][0]
                wall.add(col.key, rnd, res["mean"])
                cpu.add(col.key, rnd, res["user"] + res["system"])
                if col.key == "pool":
                    pool_cpu.add(col.key, rnd, (proc_cpu(pool_pid) - before) / jobs)
    finally:
        subprocess.run([str(ferry.bin_dir / "ferry"), "down", "bench"], env=env,
                       capture_output=True, timeout=60)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and Path(f"/proc/{pool_pid}").exists():
            time.sleep(0.1)
        ctx.check_idle(f"pool {case}")
