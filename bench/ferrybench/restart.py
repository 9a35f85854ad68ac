"""Restart latency: a rank fails, the launcher stops the others and starts the whole job
again; how long from the failure until every rank of the next attempt runs.

The ranks run restart_worker.py (no torch: the launchers are measured, not an import).
Each rank writes its start time, keyed by attempt and rank; in attempt 0 the last rank
waits until every rank of attempt 0 runs, writes the failure time and exits 1; the
others sleep until signalled; in attempt 1 every rank writes its start and exits 0.
From those marks, per run:

  failure → all ranks of attempt 1   the restart latency: the latest start of attempt 1
                                     minus the failure time
  failure → first rank of attempt 1  the earliest start of attempt 1 minus the failure time
  fork → all ranks of attempt 0      the first launch, from the launcher's fork
  whole job                          the launcher's wall time, both attempts

The launchers, each allowed one restart, on this machine, interleaved in a rotated
order every round (no cluster, no lock):

- ferryrun `-H localhost:N --max-restarts 1`: a local host, so ferryd is forked, no SSH.
- torchrun `--nnodes 1 --nproc_per_node N --max_restarts 1` with its default
  `--monitor_interval` (5 s), and with `--monitor_interval 0.1`, which is fairer to it:
  its agent looks at the workers only once per interval. torchrun runs with what
  `--standalone` expands to (`--rdzv_backend c10d --rdzv_endpoint localhost:PORT
  --rdzv_id UUID`) but on a free port instead of the fixed 29400, so that runs of
  other people on the machine do not collide with it. It also gets `--redirects 9:0
  --tee 9:0`: that is the default (no stream redirected), spelt as a mapping because
  torch 1.13's `Std.from_str("0")` returns None on Python 3.11 (an IntFlag no longer
  iterates over its zero member), and torchrun then fails before its first worker.
  The workers run under torchrun's own interpreter (from its #! line); ferryrun's ranks
  run `<that interpreter> -u restart_worker.py`, as torchrun starts them.

torchrun's agent checks its workers every monitor interval counted from the start of
the attempt; the failure here comes a few tens of milliseconds after the workers start,
so with the default interval it is seen almost a whole interval later. A failure at a
random moment would wait half an interval on average. Before the rendezvous of its
first restart torchrun 1.13 also sleeps a random 0-0.3 s (dynamic_rendezvous.py: the
delay meant to spread the nodes' first rendezvous, taken while the round counter is
still 0), which is most of the spread of its 0.1 s column.

The sleeping ranks die of SIGTERM at once (Python keeps the signal's default action),
so neither ferryrun's --kill-grace (5 s before SIGKILL) nor torchrun's 30 s stop timeout
comes into any figure.

Then, inside one cluster session (the cluster lock held), ferryrun alone: the same N
ranks on this machine and on N cluster hosts x 1 over SSH, interleaved, for what the
SSH sessions cost a restart (ferryrun keeps each connection and ferryd for the next
attempt). torchrun has no counterpart: it starts processes on its own host only (a
multi-host torchrun job is one torchrun per host, started by something else).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .cluster import host_list
from .context import Context
from .peers import hosts_arg
from .proc import timed_run

SECTION = "restart"
SSH_SECTION = "restart-ssh"
WORKER = Path(__file__).resolve().with_name("restart_worker.py")
FAST_MONITOR_S = 0.1


@dataclass
class Launcher:
    """One column: a launcher running the job with one restart allowed."""

    key: str
    label: str

    def argv(self, ranks: int, marks_dir: Path, limit_s: int) -> list[str]:
        raise NotImplementedError


@dataclass
class FerryLaunch(Launcher):
    ferryrun: Path
    python: str
    nodes: int = 0                  # 0: localhost; else fnode1..N over SSH
    ssh_config: Path | None = None

    def argv(self, ranks, marks_dir, limit_s):
        hosts = ([("localhost", ranks)] if self.nodes == 0
                 else host_list(self.nodes, ranks // self.nodes))
        cmd = [str(self.ferryrun)]
        if self.ssh_config is not None:
            cmd += ["--ssh-config", str(self.ssh_config)]
        return cmd + ["-np", str(ranks), "-H", hosts_arg(hosts), "--tag-style", "none",
                      "--max-restarts", "1", "--",
                      self.python, "-u", str(WORKER), str(marks_dir), str(limit_s)]


@dataclass
class TorchLaunch(Launcher):
    torchrun: str
    monitor_s: float | None = None  # None: torchrun's default

    def argv(self, ranks, marks_dir, limit_s):
        cmd = [self.torchrun, "--nnodes", "1", "--nproc_per_node", str(ranks),
               "--rdzv_backend", "c10d", "--rdzv_endpoint", f"localhost:{free_port()}",
               "--rdzv_id", uuid.uuid4().hex, "--max_restarts", "1",
               "--redirects", "9:0", "--tee", "9:0"]
        if self.monitor_s is not None:
            cmd += ["--monitor_interval", f"{self.monitor_s:g}"]
        return cmd + [str(WORKER), str(marks_dir), str(limit_s)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_torch(torchrun: str) -> tuple[str, str] | None:
    """(interpreter, torch version): the interpreter on torchrun's #! line, which its
    workers run under, if it has torch; else None."""
    try:
        with open(torchrun, "rb") as f:
            first = f.readline().decode(errors="replace")
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        words = [shutil.which(words[1]) or words[1]]
    if not words or not os.access(words[0], os.X_OK):
        return None
    probe = "import importlib.metadata as m; print(m.version('torch'))"
    try:
        r = subprocess.run([words[0], "-c", probe], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = r.stdout.strip()
    return (words[0], version) if r.returncode == 0 and version else None


@dataclass
class Marks:
    """What the ranks of one run wrote: start times per attempt, the failure time."""

    starts: dict[int, list[float]]
    failure: float | None

    @classmethod
    def read(cls, d: Path) -> "Marks":
        starts: dict[int, list[float]] = {}
        failure = None
        for p in d.iterdir():
            if p.name.startswith("."):
                continue
            value = float(p.read_text())
            if p.name == "fail":
                failure = value
            elif p.name.startswith("start-a"):
                attempt = int(p.name[len("start-a"):].split("-r")[0])
                starts.setdefault(attempt, []).append(value)
        return cls(starts, failure)

    def problem(self, ranks: int) -> str | None:
        """None when the run went as designed, else what is missing or wrong."""
        counts = {a: len(v) for a, v in sorted(self.starts.items())}
        if counts != {0: ranks, 1: ranks}:
            return f"ranks started per attempt {counts}, expected {{0: {ranks}, 1: {ranks}}}"
        if self.failure is None:
            return "no failure mark"
        if min(self.starts[1]) < self.failure:
            return "a rank of attempt 1 started before the failure"
        return None


def stray_ranks(marks_dir: Path) -> list[tuple[int, str]]:
    """Processes on this machine whose command line names the run's marks folder."""
    needle = str(marks_dir).encode()
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmd:
            out.append((int(entry.name), cmd.replace(b"\0", b" ").decode(errors="replace")[:120]))
    return out


def settle(ctx: Context, marks_dir: Path, after: str, timeout_s: float = 5.0) -> None:
    """Waits until no rank of the run is left on this machine; reports and kills leftovers."""
    deadline = time.monotonic() + timeout_s
    left = stray_ranks(marks_dir)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = stray_ranks(marks_dir)
    if left:
        ctx.results.warnings.append(f"ranks left {timeout_s:g} s after {after}: "
                                    + "; ".join(f"pid {p}: {c}" for p, c in left[:4]))
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_once(ctx: Context, section: str, case: str, launcher: Launcher, ranks: int,
             rnd: int, env: dict[str, str], remote: bool = False) -> None:
    s = ctx.sizes
    marks_dir = ctx.work / f"restart-{launcher.key}-{ranks}-r{rnd}"
    marks_dir.mkdir()
    out, err = ctx.work / "restart.out", ctx.work / "restart.err"
    cmd = launcher.argv(ranks, marks_dir, s.run_timeout_s)
    what = f"{launcher.label}, {case}, round {rnd + 1}"
    ctx.debug(" ".join(cmd))
    r = timed_run(cmd, out, err, env, timeout_s=s.run_timeout_s,
                  on_timeout=lambda: ctx.hang_report() if remote else "")
    try:
        marks = Marks.read(marks_dir)
        problem = marks.problem(ranks)
        if r.rc != 0 or problem:
            how = (f"hung (killed after {s.run_timeout_s} s; {r.hang_info})" if r.timed_out
                   else f"exited {r.rc}")
            ctx.fail(f"restart: {what}: {how}; {problem or 'marks complete'}: "
                     + err.read_text(errors="replace").strip()[-400:])
            return
        fail = marks.failure
        last0, first1, last1 = max(marks.starts[0]), min(marks.starts[1]), max(marks.starts[1])
        ctx.debug(f"{launcher.key}: attempt 0 all running {last0 - r.start_epoch:.3f} s after "
                  f"fork, failure +{fail - last0:.3f} s, attempt 1 first +{first1 - fail:.3f} s, "
                  f"all +{last1 - fail:.3f} s, wall {r.wall_s:.2f} s")
        res = ctx.results
        res.metric(section, case, "failure → all ranks of attempt 1 running", "s").add(
            launcher.key, rnd, last1 - fail)
        res.metric(section, case, "failure → first rank of attempt 1 running", "s").add(
            launcher.key, rnd, first1 - fail)
        res.metric(section, case, "fork → all ranks of attempt 0 running", "s").add(
            launcher.key, rnd, last0 - r.start_epoch)
        res.metric(section, case, "whole job (both attempts)", "s").add(
            launcher.key, rnd, r.wall_s)
    finally:
        settle(ctx, marks_dir, what)
        if remote:
            ctx.check_idle(what)
        shutil.rmtree(marks_dir, ignore_errors=True)
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)


def rotated(items: list, rnd: int) -> list:
    k = rnd % len(items)
    return items[k:] + items[:k]


def run(ctx: Context) -> None:
    s = ctx.sizes
    ferryrun = ctx.ferry().bin_dir / "ferryrun"
    torchrun = shutil.which("torchrun")
    torch = find_torch(torchrun) if torchrun else None
    python = torch[0] if torch else None
    launchers: list[Launcher] = [FerryLaunch("ferryrun", "ferryrun", ferryrun,
                                             python or sys.executable)]
    if python is None:
        ctx.results.warnings.append(
            "restart: torchrun not found or its interpreter has no torch (apt-get install "
            "python3-torch): ferryrun measured alone")
    else:
        ctx.results.environment["torchrun"] = f"{torchrun} (torch {torch[1]}, {python})"
        launchers += [TorchLaunch("torchrun", "torchrun (5 s)", torchrun),
                      TorchLaunch("torchrun-fast", f"torchrun ({FAST_MONITOR_S:g} s)", torchrun,
                                  FAST_MONITOR_S)]
    ctx.results.columns[SECTION] = launchers
    ctx.results.legends[SECTION] = (
        "Columns: the launchers on this machine, each allowed one restart; the last rank "
        "fails once every rank of attempt 0 runs. torchrun (5 s) is its default "
        f"--monitor_interval, torchrun ({FAST_MONITOR_S:g} s) the interval at "
        f"{FAST_MONITOR_S:g} s: torchrun looks at its workers once per interval, counted "
        "from the attempt's start, so with the default it sees this early failure almost "
        "a whole interval late; before the first restart's rendezvous it also sleeps a "
        "random 0-0.3 s. Its first launch includes importing torch. `ferryrun vs "
        "X`: X / ferryrun, one ratio per round (launchers interleaved), median [min-max]; "
        "above 1: ferryrun did better.")
    env = dict(os.environ)
    for ranks in s.restart_ranks:
        case = f"{ranks} ranks on this machine"
        cols = [l for l in launchers
                if l.key != "torchrun" or ranks in s.restart_default_monitor_ranks]
        if len(cols) < len(launchers):
            ctx.results.notes.append(f"restart {case}: torchrun with its default monitor "
                                     "interval skipped (its figure is that interval)")
        for rnd in range(s.restart_rounds):
            order = rotated(cols, rnd)
            ctx.log(f"  restart: {case}: round {rnd + 1}/{s.restart_rounds} "
                    f"({', '.join(l.key for l in order)})")
            for launcher in order:
                run_once(ctx, SECTION, case, launcher, ranks, rnd, env)
    ctx.results.notes.append(
        "restart: the sleeping ranks die of SIGTERM at once (Python's default action), so "
        "neither ferryrun's --kill-grace nor torchrun's 30 s stop timeout is in any figure")
    if s.restart_ssh_rounds > 0:
        over_ssh(ctx, ferryrun, python or sys.executable)


def over_ssh(ctx: Context, ferryrun: Path, python: str) -> None:
    s = ctx.sizes
    nodes = ranks = s.restart_ssh_hosts
    with ctx.cluster.session(nodes, "restart over SSH") as cluster:
        if cluster.nodes < nodes:
            ctx.results.notes.append(f"restart over SSH skipped: needs {nodes} hosts")
            return
        cols: list[Launcher] = [
            FerryLaunch("local", "this machine", ferryrun, python),
            FerryLaunch("ssh", f"{nodes} hosts x 1 over SSH", ferryrun, python, nodes,
                        cluster.ssh_config)]
        ctx.results.columns[SSH_SECTION] = cols
        ctx.results.legends[SSH_SECTION] = (
            f"ferryrun alone, {ranks} ranks, one restart, the two layouts interleaved: "
            f"`this machine vs X`: X / this machine per round; above 1: what {nodes} SSH "
            "connections cost. The connections and ferryds stay up between attempts. "
            "torchrun has no column: it starts processes on its own host only.")
        case = f"{ranks} ranks"
        for rnd in range(s.restart_ssh_rounds):
            order = rotated(cols, rnd)
            ctx.log(f"  restart over SSH: round {rnd + 1}/{s.restart_ssh_rounds} "
                    f"({', '.join(l.key for l in order)})")
            for launcher in order:
                run_once(ctx, SSH_SECTION, case, launcher, ranks, rnd, cluster.env(),
                         remote=launcher.key == "ssh")
