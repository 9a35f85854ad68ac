"""Real Horovod: one training job started by real horovodrun and by ferry's horovodrun
personality, side by side.

The job is tests/e2e/programs/hvd_train.py, an ordinary Horovod (PyTorch, gloo) script:
hvd.init(), an allreduce, an allgather, a broadcast, broadcast_parameters and three
hvd.DistributedOptimizer steps. Both launchers get the same horovodrun command line:

  horovodrun --gloo -np 8 -H fnode2:2,fnode3:2,fnode4:2,fnode5:2 -p 2222 \\
      --network-interface eth0 python3 hvd_train.py 3

- real horovodrun: Horovod's own runner (`python3 -m horovod.runner.launch`, which is what
  the horovodrun script runs), with `ssh` on its PATH being a wrapper that adds
  `-F <cluster>/ssh_config` (horovodrun calls `ssh` by name and has no option for a
  config file).
- ferry: a link named horovodrun to ferryrun, plus `--ssh-config <cluster>/ssh_config`.

Both run in fnode1's namespaces (a head node: its eth0 is on the hosts' network) and
start the ranks on the other hosts. horovodrun has to run there: it serves its
rendezvous at the address of the --network-interface on its own machine, and this
machine's eth0 is not on the cluster's network. fnode1 runs no rank, so whatever runs
there is the front end's:

  wall time                   the launcher's, fork to exit
  front-end CPU               user + system of the launcher and every child it reaped
                              (horovodrun's ssh clients and per-rank helper processes)
  front end peak RSS          the launcher process's VmHWM
  front end + children        the PSS of the launcher and of every process under it,
                              summed, the largest sum over samples every 50 ms (PSS:
                              horovodrun's per-rank Python helpers share library pages)
  processes                   how many processes ran under the launcher (seen by the
                              sampler; a process shorter than 50 ms may be missed)

The launchers run interleaved, in a rotated order each round. Every run's output is
checked: 8 ranks with the right hvd.rank()/local_rank()/cross_rank() for their host and
the same weights after training; anything else fails the benchmark.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from .context import Context
from .proc import timed_run

SECTION = "horovod"
PYTHON = "/usr/bin/python3"
PROGRAM = Path(__file__).resolve().parents[2] / "tests" / "e2e" / "programs" / "hvd_train.py"
STEPS = "3"


@dataclass
class Launcher:
    key: str
    label: str
    argv0: list[str]          # the launcher, before horovodrun's flags
    extra: list[str]          # flags only this launcher needs (ssh config)
    path_prefix: str = ""     # put in front of PATH (the ssh wrapper)

    def argv(self, hosts: str, np: int) -> list[str]:
        return (self.argv0 + self.extra +
                ["--gloo", "-np", str(np), "-H", hosts, "-p", "2222",
                 "--network-interface", "eth0", PYTHON, str(PROGRAM), STEPS])


def find_horovod(ctx: Context) -> tuple[str, str] | None:
    """(PYTHONPATH entry or "", Horovod's version) if horovod.torch imports (noted in the
    results' environment), else None (with a warning)."""
    entry = os.environ.get("FERRY_TEST_HOROVOD", "")
    env = dict(os.environ)
    if entry:
        env["PYTHONPATH"] = entry + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    probe = "import horovod, horovod.torch; print(horovod.__version__)"
    try:
        r = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, env=env,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        ctx.results.warnings.append(f"horovod: {PYTHON} cannot import horovod.torch: {e}")
        return None
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["?"])[-1]
        ctx.results.warnings.append(
            f"horovod skipped: {PYTHON} cannot import horovod.torch ({tail}); set "
            "FERRY_TEST_HOROVOD to the dist-packages folder of a Horovod build")
        return None
    version = r.stdout.strip()
    ctx.results.environment["Horovod"] = (
        f"{version} ({entry or 'installed'}; real horovodrun = {PYTHON} -m horovod.runner.launch)")
    return entry, version


def from_fnode1(cluster, entry: str) -> tuple[list[str], dict[str, str]]:
    """How to start a launcher inside fnode1's namespaces (the prefix), and its environment,
    with Horovod's PYTHONPATH entry when it has one."""
    listener = (cluster.state_dir / "fnode1" / "sshd.pid").read_text().strip()
    enter = ["nsenter", "-t", listener, "-n", "-u", "-m", "--"]
    env = cluster.env()
    if entry:
        env["PYTHONPATH"] = entry + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return enter, env


def check_output(text: str, workers: list[str], slots: int) -> str | None:
    """None if the 8 ranks said what a correct job says, else what is wrong."""
    np = len(workers) * slots
    topo = {}
    for m in re.finditer(r"hvd topo rank=(\d+) (local_rank=\d+ cross_rank=\d+ size=\d+ "
                         r"local_size=\d+ cross_size=\d+ host=\S+)", text):
        topo[int(m.group(1))] = m.group(2)
    for r in range(np):
        want = (f"local_rank={r % slots} cross_rank={r // slots} size={np} "
                f"local_size={slots} cross_size={len(workers)} host={workers[r // slots]}")
        if topo.get(r) != want:
            return f"rank {r}: {topo.get(r, 'no topology line')}, expected {want}"
    after = re.findall(r"hvd weights rank=\d+ init=\S+ before=\S+ after=(\S+)", text)
    if len(after) != np or len(set(after)) != 1:
        return f"weights after training: {len(set(after))} values over {len(after)} ranks"
    return None


class TreeSampler(threading.Thread):
    """Every 50 ms: the launcher's VmHWM, and the PSS of it and every process under it,
    summed. PSS, not RSS: horovodrun starts a Python interpreter per rank, and an RSS sum
    counts the library pages they share once per process."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root = root
        self.root_hwm_kib = 0
        self.tree_pss_kib = 0     # the largest sum seen at one sample
        self.seen: set[int] = set()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(0.05)

    def tree(self) -> set[int]:
        parent: dict[int, int] = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    stat = Path(f"/proc/{entry.name}/stat").read_text()
                    parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    pass
        tree, grew = {self.root}, True
        while grew:
            grew = False
            for pid, ppid in parent.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        return tree

    def sample(self) -> None:
        total = 0
        for pid in self.tree():
            try:
                if pid == self.root:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.root_hwm_kib = max(self.root_hwm_kib, int(line.split()[1]))
                for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        self.seen.add(pid)
                        break
            except (OSError, ValueError, IndexError):
                pass
        self.tree_pss_kib = max(self.tree_pss_kib, total)


def run_once(ctx: Context, launcher: Launcher, enter: list[str], hosts: str, workers: list[str],
             slots: int, env: dict[str, str], rnd: int, case: str) -> None:
    s = ctx.sizes
    out, err = ctx.work / "hvd.out", ctx.work / "hvd.err"
    cmd = enter + launcher.argv(hosts, len(workers) * slots)
    ctx.debug(" ".join(cmd))
    run_env = dict(env)
    if launcher.path_prefix:
        run_env["PATH"] = launcher.path_prefix + ":" + run_env.get("PATH", "/usr/bin:/bin")
    sampler: list[TreeSampler] = []

    def started(pid: int) -> None:
        sampler.append(TreeSampler(pid))
        sampler[0].start()

    r = timed_run(cmd, out, err, run_env, timeout_s=max(s.run_timeout_s, 180),
                  on_start=started, on_timeout=ctx.hang_report)
    sampler[0].stop.set()
    sampler[0].join()
    what = f"horovod: {launcher.label}, round {rnd + 1}"
    text = out.read_text(errors="replace")
    problem = check_output(text, workers, slots)
    if r.rc != 0 or problem:
        how = f"hung ({r.hang_info})" if r.timed_out else f"exited {r.rc}"
        ctx.fail(f"{what}: {how}; {problem or 'output complete'}: "
                 + err.read_text(errors="replace").strip()[-400:])
    else:
        smp = sampler[0]
        res, mib = ctx.results, 1024.0
        res.metric(SECTION, case, "wall time", "s").add(launcher.key, rnd, r.wall_s)
        res.metric(SECTION, case, "front-end CPU (user+sys, with reaped children)", "s").add(
            launcher.key, rnd, r.cpu_s)
        res.metric(SECTION, case, "front end peak RSS", "MiB").add(
            launcher.key, rnd, smp.root_hwm_kib / mib)
        res.metric(SECTION, case, "front end + its children, peak PSS summed", "MiB").add(
            launcher.key, rnd, smp.tree_pss_kib / mib)
        res.metric(SECTION, case, "processes under the front end", "count").add(
            launcher.key, rnd, len(smp.seen))
        ctx.debug(f"{launcher.key}: wall {r.wall_s:.2f} s, cpu {r.cpu_s:.2f} s, "
                  f"{len(smp.seen)} processes in the front end's tree")
    ctx.check_idle(what)


def run(ctx: Context) -> None:
    found = find_horovod(ctx)
    if found is None:
        return
    entry, version = found
    with ctx.cluster.session(5, "horovod") as cluster:
        nodes = min(cluster.nodes, 5)
        if nodes < 3:
            ctx.results.notes.append("horovod skipped: needs 3 hosts at least")
            return
        workers = [f"fnode{i}" for i in range(2, nodes + 1)]
        slots = 2
        hosts = ",".join(f"{w}:{slots}" for w in workers)
        wrap = ctx.work / "hvd-ssh"
        wrap.mkdir(exist_ok=True)
        # The wrapper runs /usr/bin/ssh by its path: a PATH lookup would find itself.
        (wrap / "ssh").write_text(f'#!/bin/sh\nexec /usr/bin/ssh -F "{cluster.ssh_config}" "$@"\n')
        (wrap / "ssh").chmod(0o755)
        link = wrap / "horovodrun"
        if not link.exists():
            link.symlink_to(ctx.ferry().bin_dir / "ferryrun")
        launchers = [
            Launcher("ferry", "ferry (horovodrun personality)", [str(link)],
                     ["--ssh-config", str(cluster.ssh_config)]),
            Launcher("horovodrun", f"horovodrun {version}",
                     [PYTHON, "-m", "horovod.runner.launch"], [], str(wrap)),
        ]
        ctx.results.columns[SECTION] = launchers
        ctx.results.legends[SECTION] = (
            "Columns: the same real Horovod job (hvd_train.py: init, allreduce, allgather, "
            "broadcast, 3 DistributedOptimizer steps) started from fnode1 by ferry's "
            "horovodrun personality and by real horovodrun with one command line, ranks on "
            "the other hosts. `ferry vs horovodrun`: horovodrun / ferry per round (interleaved); "
            "above 1: ferry did better. Wall time includes importing torch in every rank.")
        enter, env = from_fnode1(cluster, entry)
        case = f"{len(workers) * slots} ranks ({len(workers)} hosts x {slots}), launcher on fnode1"
        for rnd in range(ctx.sizes.horovod_rounds):
            k = rnd % len(launchers)
            order = launchers[k:] + launchers[:k]
            ctx.log(f"  horovod: round {rnd + 1}/{ctx.sizes.horovod_rounds} "
                    f"({', '.join(l.key for l in order)})")
            for launcher in order:
                run_once(ctx, launcher, enter, hosts, workers, slots, env, rnd, case)
