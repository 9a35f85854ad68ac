"""Elastic Horovod: real horovodrun's elastic mode and ferry's horovodrun personality on the
same elastic jobs, side by side (opt-in: `bench/run --only hvd-elastic`).

The script is tests/e2e/programs/hvd_elastic.py (hvd.elastic.run, TorchState, a commit per
epoch of 1 s). Three jobs, each with one horovodrun command line for both launchers:

  fail   4 epochs on fnode2..fnode4 x 2 slots, found by a discovery script
         (-np 6 --min-np 2 --host-discovery-script D); at epoch 1 the worker fnode3[1]
         exits 3: fnode3 is blacklisted, the 4 others reset and finish
  grow   6 epochs, starting on fnode2, fnode3 x 2 (-np 4 --min-np 2 --max-np 6
         --host-discovery-script D); once epoch 1 is committed D lists fnode4 too: rank 0 is
         told, the workers reset at their next commit, 2 new workers start on fnode4
  fixed  4 epochs on the fixed hosts -H fnode2:2,fnode3:2 (-np 4 --min-np 2 --max-np 4, no
         discovery script: elastic because of --min-np); at epoch 1 fnode3[1] exits 3, the
         2 workers of fnode2 reset and finish

Both launchers run in fnode1's namespaces, as in the horovod section (real horovodrun is
`python3 -m horovod.runner.launch` with an `ssh -F` wrapper on PATH; ferry is a horovodrun
link with --ssh-config). Rounds interleave them, in a rotated order. Every run must end 0
with the right number of workers finishing in sync and nothing left on the hosts.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .context import Context
from .horovod import PYTHON, find_horovod, from_fnode1
from .proc import timed_run

SECTION = "hvd-elastic"
PROGRAM = Path(__file__).resolve().parents[2] / "tests" / "e2e" / "programs" / "hvd_elastic.py"
COMMON = ["-p", "2222", "--network-interface", "eth0"]


@dataclass
class Job:
    key: str
    case: str                 # the row title
    hosts: list[str]          # what the discovery script lists first ([] for fixed hosts)
    flags: list[str]          # horovodrun flags before the script ({D}: the discovery script)
    args: list[str]           # the script's arguments between MARKDIR and TOKEN
    finishing: int            # workers that must finish in sync, all in a world of this size
    grow_to: list[str] | None = None  # what D lists once epoch 1 is committed


JOBS = [
    Job("fail", "fail: 3 hosts x 2 by discovery, fnode3[1] fails at epoch 1 (4 epochs)",
        ["fnode2:2", "fnode3:2", "fnode4:2"],
        ["-np", "6", "--min-np", "2", "--host-discovery-script", "{D}"],
        ["4", "1", "fnode3:1@1"], 4),
    Job("grow", "grow: 2 hosts x 2 by discovery, a third joins after epoch 1 (6 epochs)",
        ["fnode2:2", "fnode3:2"],
        ["-np", "4", "--min-np", "2", "--max-np", "6", "--host-discovery-script", "{D}"],
        ["6", "1"], 6, ["fnode2:2", "fnode3:2", "fnode4:2"]),
    Job("fixed", "fixed: -H fnode2:2,fnode3:2 --min-np 2, fnode3[1] fails at epoch 1 (4 epochs)",
        [], ["-np", "4", "--min-np", "2", "--max-np", "4", "-H", "fnode2:2,fnode3:2"],
        ["4", "1", "fnode3:1@1"], 2),
]


@dataclass
class Launcher:
    key: str
    label: str
    argv0: list[str]
    path_prefix: str = ""


def grow_later(job: Job, run_dir: Path, stop: threading.Event) -> None:
    """Once epoch 1 is committed, the discovery script lists the bigger set of hosts."""
    while not stop.is_set():
        if (run_dir / "epoch-1").exists():
            new = run_dir / "hosts.new"
            new.write_text("\n".join(job.grow_to or []) + "\n")
            new.replace(run_dir / "hosts")
            return
        stop.wait(0.1)


def run_once(ctx: Context, launcher: Launcher, job: Job, enter: list[str],
             env: dict[str, str], rnd: int) -> None:
    run_dir = ctx.work / f"hvd-elastic.{job.key}.{launcher.key}.{rnd}"
    run_dir.mkdir(parents=True)
    run_dir.chmod(0o777)
    (run_dir / "hosts").write_text("\n".join(job.hosts) + "\n")
    discover = run_dir / "discover.sh"
    discover.write_text(f"#!/bin/sh\ncat {run_dir}/hosts\n")
    discover.chmod(0o755)
    token = "ftok" + secrets.token_hex(6)
    flags = [str(discover) if f == "{D}" else f for f in job.flags]
    cmd = (enter + launcher.argv0 + flags + COMMON +
           [PYTHON, str(PROGRAM), str(run_dir)] + job.args + [token])
    ctx.debug(" ".join(cmd))
    run_env = dict(env)
    if launcher.path_prefix:
        run_env["PATH"] = launcher.path_prefix + ":" + run_env.get("PATH", "/usr/bin:/bin")
    stop = threading.Event()
    grower = threading.Thread(target=grow_later, args=(job, run_dir, stop), daemon=True)
    if job.grow_to:
        grower.start()
    out, err = run_dir / "out", run_dir / "err"
    r = timed_run(cmd, out, err, run_env, timeout_s=300, on_timeout=ctx.hang_report)
    stop.set()
    if job.grow_to:
        grower.join()
    what = f"hvd-elastic: {launcher.label}, {job.key}, round {rnd + 1}"
    text = out.read_text(errors="replace") + err.read_text(errors="replace")
    want = f"final size {job.finishing} rank "
    finals = [l for l in text.splitlines() if want in l and "insync True" in l]
    if r.rc != 0 or len(finals) != job.finishing:
        how = f"hung ({r.hang_info})" if r.timed_out else f"exited {r.rc}"
        ctx.fail(f"{what}: {how}, {len(finals)} of {job.finishing} workers finished in sync: "
                 + text.strip()[-400:])
    else:
        res = ctx.results
        res.metric(SECTION, job.case, "wall time", "s").add(launcher.key, rnd, r.wall_s)
        res.metric(SECTION, job.case, "front-end CPU (user+sys, with reaped children)",
                   "s").add(launcher.key, rnd, r.cpu_s)
        ctx.debug(f"{launcher.key} {job.key}: wall {r.wall_s:.2f} s, cpu {r.cpu_s:.2f} s")
    time.sleep(1)
    ctx.check_idle(what)


def run(ctx: Context) -> None:
    found = find_horovod(ctx)
    if found is None:
        return
    entry, version = found
    with ctx.cluster.session(4, SECTION) as cluster:
        if cluster.nodes < 4:
            ctx.results.notes.append("hvd-elastic skipped: needs 4 hosts at least")
            return
        wrap = ctx.work / "hvd-elastic-ssh"
        wrap.mkdir(exist_ok=True)
        wrap.chmod(0o755)
        ctx.work.chmod(0o755)
        (wrap / "ssh").write_text(f'#!/bin/sh\nexec /usr/bin/ssh -F "{cluster.ssh_config}" "$@"\n')
        (wrap / "ssh").chmod(0o755)
        link = wrap / "horovodrun"
        if not link.exists():
            link.symlink_to(ctx.ferry().bin_dir / "ferryrun")
        launchers = [
            Launcher("ferry", "ferry (horovodrun personality)",
                     [str(link), "--ssh-config", str(cluster.ssh_config)]),
            Launcher("horovodrun", f"horovodrun {version}",
                     [PYTHON, "-m", "horovod.runner.launch"], str(wrap)),
        ]
        ctx.results.columns[SECTION] = launchers
        ctx.results.legends[SECTION] = (
            "Columns: the same elastic Horovod job (hvd_elastic.py: hvd.elastic.run, TorchState, "
            "a commit per 1 s epoch) started from fnode1 by ferry's horovodrun personality and "
            "by real horovodrun's elastic mode with one command line. `ferry vs horovodrun`: "
            "horovodrun / ferry per round (interleaved); above 1: ferry did better.")
        enter, env = from_fnode1(cluster, entry)
        rounds = ctx.sizes.hvd_elastic_rounds
        for rnd in range(rounds):
            k = rnd % len(launchers)
            order = launchers[k:] + launchers[:k]
            for job in JOBS:
                ctx.log(f"  hvd-elastic: round {rnd + 1}/{rounds}, {job.key} "
                        f"({', '.join(l.key for l in order)}; load "
                        f"{os.getloadavg()[0]:.1f})")
                for launcher in order:
                    run_once(ctx, launcher, job, enter, env, rnd)
