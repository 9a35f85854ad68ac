"""Peak memory (RSS) of the front end and of the per-host daemons.

Each run starts ranks that sleep, so every daemon lives long enough to be seen. A sampler
thread polls /proc every 50 ms and keeps, per process, the largest VmHWM (the kernel's
own peak-RSS counter, so short peaks between samples are not missed while the process
lives). Processes on the simulated hosts share this machine's PID namespace; the host
of a pid is told by its network namespace.

- front end: the launcher process itself; its ssh clients (mpirun and hydra run one
  OpenSSH client per host, ferryrun none) are summed separately. `/usr/bin/time -f %M`
  is recorded too, as asked; it is the largest of the front end and the children it
  reaped, so for mpirun and hydra it can be an ssh client's figure.
- daemon: ferryd / orted / hydra_pmi_proxy. ferryd forks a small guard process (the
  sweeper that cleans up after a `kill -9` of ferryd, named ferryd-guard, see
  Tool.helpers): the figure "daemon" is the largest single daemon process on any host,
  "per host" sums every daemon process of one host, guard included (RSS, so pages the
  guard shares with ferryd count twice).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .cluster import host_list, host_of_pid, netns_inodes
from .context import Context
from .proc import timed_run

SECTION = "memory"
TIME = "/usr/bin/time"


def _status(pid: int) -> dict[str, str]:
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            out[k] = v.strip()
    except OSError:
        pass
    return out


def _kib(value: str | None) -> int:
    return int(value.split()[0]) if value else 0


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@dataclass
class Peaks:
    frontend_kib: int = 0
    ssh_kib: dict[int, int] = field(default_factory=dict)       # ssh client pid → peak
    daemon_kib: dict[int, int] = field(default_factory=dict)    # daemon pid → peak
    daemon_host: dict[int, str] = field(default_factory=dict)
    daemon_seen: dict[int, int] = field(default_factory=dict)   # daemon pid → samples
    helper: set[int] = field(default_factory=set)               # pids of helpers
    samples: int = 0

    def daemons(self) -> dict[int, int]:
        """Daemon pid → peak, without the daemon's own fork-before-exec children (they
        carry its name for a moment before they exec a rank): a process seen in fewer
        than 3 samples (150 ms) is not a daemon."""
        return {pid: kib for pid, kib in self.daemon_kib.items()
                if self.daemon_seen.get(pid, 0) >= 3}

    def daemon_max(self) -> int:
        return max((k for pid, k in self.daemons().items() if pid not in self.helper),
                   default=0)

    def per_host_max(self) -> int:
        hosts: dict[str, int] = {}
        for pid, kib in self.daemons().items():
            h = self.daemon_host.get(pid, "?")
            hosts[h] = hosts.get(h, 0) + kib
        return max(hosts.values(), default=0)


class Sampler(threading.Thread):
    """Polls /proc for the front end, its ssh clients and the daemons named `daemon`."""

    def __init__(self, daemon: str, helpers: tuple[str, ...] = (), interval_s: float = 0.05):
        super().__init__(daemon=True)
        self.daemon_comm = daemon
        self.helper_comms = set(helpers)
        self.interval_s = interval_s
        self.peaks = Peaks()
        self.time_pid: int | None = None
        self.frontend_pid: int | None = None
        self.stop = threading.Event()
        self.inodes = netns_inodes()

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval_s)
        self.sample()

    def sample(self) -> None:
        p = self.peaks
        p.samples += 1
        if self.frontend_pid is None and self.time_pid is not None:
            kids = _children(self.time_pid)
            if kids:
                self.frontend_pid = kids[0]
        fe = self.frontend_pid
        if fe is not None:
            p.frontend_kib = max(p.frontend_kib, _kib(_status(fe).get("VmHWM")))
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if comm == self.daemon_comm or comm in self.helper_comms:
                if comm in self.helper_comms:
                    p.helper.add(pid)
                st = _status(pid)
                p.daemon_kib[pid] = max(p.daemon_kib.get(pid, 0), _kib(st.get("VmHWM")))
                p.daemon_seen[pid] = p.daemon_seen.get(pid, 0) + 1
                if pid not in p.daemon_host:
                    p.daemon_host[pid] = host_of_pid(pid, self.inodes)
            elif comm == "ssh" and fe is not None:
                st = _status(pid)
                if st.get("PPid") == str(fe):
                    p.ssh_kib[pid] = max(p.ssh_kib.get(pid, 0), _kib(st.get("VmHWM")))


def run(ctx: Context) -> None:
    s = ctx.sizes
    if not os.access(TIME, os.X_OK):
        ctx.results.warnings.append(f"{TIME} missing (apt-get install time): memory skipped")
        return
    nodes = s.memory_hosts
    with ctx.cluster.session(nodes, "memory") as cluster:
        if cluster.nodes < nodes:
            ctx.results.notes.append(f"memory skipped: needs {nodes} hosts")
            return
        for total in s.memory_ranks:
            per_host = max(1, total // nodes)
            case = f"{nodes * per_host} ranks ({nodes} hosts x {per_host})"
            m_fe = ctx.results.metric(SECTION, case, "front end peak RSS", "MiB")
            m_fe_ssh = ctx.results.metric(SECTION, case, "front end + its ssh clients", "MiB")
            m_time = ctx.results.metric(SECTION, case, "/usr/bin/time %M (largest of tree)", "MiB")
            m_d = ctx.results.metric(SECTION, case, "daemon peak RSS (largest)", "MiB")
            m_dh = ctx.results.metric(SECTION, case, "daemon processes per host (sum)", "MiB")
            for rnd in range(s.memory_rounds):
                for tool in ctx.rotated(rnd):
                    ctx.log(f"  memory: {case}: round {rnd + 1}/{s.memory_rounds} {tool.key}")
                    time_out = ctx.work / f"mem-{tool.key}.time"
                    cmd = [TIME, "-f", "%M", "-o", str(time_out)] + tool.command(
                        host_list(nodes, per_host), nodes * per_host,
                        ["sleep", f"{s.memory_sleep_s:g}"])
                    sampler = Sampler(tool.daemon, tool.helpers)

                    def started(pid: int, sampler=sampler) -> None:
                        sampler.time_pid = pid
                        sampler.start()

                    r = timed_run(cmd, ctx.work / "mem.out", ctx.work / "mem.err",
                                  cluster.env(), timeout_s=s.run_timeout_s, on_start=started,
                                  on_timeout=ctx.hang_report)
                    sampler.stop.set()
                    sampler.join()
                    if r.rc != 0:
                        ctx.fail(f"{tool.label} {'hung' if r.timed_out else f'exited {r.rc}'} "
                                 f"in memory {case}: " + (r.hang_info if r.timed_out else
                                 (ctx.work / "mem.err").read_text(errors="replace")[-300:]))
                        ctx.check_idle(f"memory {tool.key}")
                        continue
                    pk = sampler.peaks
                    daemons = len({pk.daemon_host.get(pid) for pid in pk.daemons()})
                    if daemons < nodes:
                        ctx.results.warnings.append(
                            f"memory {case}: saw {tool.daemon} on {daemons} of {nodes} hosts "
                            f"only ({tool.label})")
                    ctx.debug(f"{tool.key}: fe {pk.frontend_kib} KiB, ssh {sum(pk.ssh_kib.values())}"
                              f" KiB in {len(pk.ssh_kib)}, daemons {sorted(pk.daemons().values())}"
                              f", {pk.samples} samples")
                    mib = 1024.0
                    m_fe.add(tool.key, rnd, pk.frontend_kib / mib)
                    m_fe_ssh.add(tool.key, rnd, (pk.frontend_kib + sum(pk.ssh_kib.values())) / mib)
                    try:
                        m_time.add(tool.key, rnd, int(time_out.read_text().split()[-1]) / mib)
                    except (OSError, ValueError, IndexError):
                        pass
                    m_d.add(tool.key, rnd, pk.daemon_max() / mib)
                    m_dh.add(tool.key, rnd, pk.per_host_max() / mib)
                    ctx.check_idle(f"memory {tool.key}")
