"""CPU time of one run, split by role: front end, its ssh clients, sshd, daemon, ranks.

The machine is shared, so system-wide profilers mix our processes with other people's
compilers and tests (and with their ferryruns). This watcher only counts processes that
are provably ours: the front end (by pid), its children, and everything running inside
the simulated hosts' network namespaces while the benchmark holds the cluster. It reads
the run time of every thread of the processes it knows (/proc/PID/task/*/schedstat, in
nanoseconds; /proc/PID/stat's 10 ms ticks where schedstat is missing) every 20 ms and
looks for new processes every 100 ms, keeping each process's last value: what a
process spends in its last 20 ms, and a process living only between two scans, is
missed. The pipelines measured here (sshd sessions, daemons, `yes | head`) live for the
whole run.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .cluster import netns_inodes

TICK = os.sysconf("SC_CLK_TCK")


def _run_time(pid: int) -> float | None:
    """Seconds on a CPU of pid's live threads, from schedstat (ns), or None."""
    total = 0
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            try:
                total += int(Path(task.path, "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        return None
    return total / 1e9 if total else None


def _stat(pid: int) -> tuple[str, int, float] | None:
    """(comm, ppid, cpu seconds) of pid, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2:].split()
    # fields[0] is state (field 3); utime, stime are fields 14, 15 (whole process, ticks).
    ticks = (int(fields[11]) + int(fields[12])) / TICK
    precise = _run_time(pid)
    # Threads that already ended count in the ticks only.
    return comm, int(fields[1]), max(ticks, precise) if precise is not None else ticks


class CpuSplit(threading.Thread):
    """Watches one run; `totals()` gives CPU seconds per role."""

    def __init__(self, daemon: str, listeners: set[int], interval_s: float = 0.02,
                 scan_every: int = 5):
        super().__init__(daemon=True)
        self.daemon_comm = daemon
        self.listeners = listeners       # the sshd listener pids: not part of any run
        self.interval_s = interval_s
        self.scan_every = scan_every     # a full /proc scan every this many reads
        self.inodes = set(netns_inodes())
        self.frontend_pid: int | None = None
        self.cpu: dict[int, float] = {}
        self.role: dict[int, str] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            if n % self.scan_every == 0:
                self.sample()
            else:
                self.refresh()
            n += 1
            self.stop.wait(self.interval_s)
        self.sample()

    def refresh(self) -> None:
        """Reads the processes already known (cheap: no scan of /proc)."""
        for pid in list(self.cpu):
            st = _stat(pid)
            if st is not None:
                self.cpu[pid] = max(self.cpu[pid], st[2])

    def _role(self, pid: int, comm: str, ppid: int) -> str | None:
        if pid == self.frontend_pid:
            return "front end"
        if ppid == self.frontend_pid:
            return "front end's ssh clients" if comm == "ssh" else "front end's children"
        try:
            ino = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            return None
        if ino not in self.inodes or pid in self.listeners:
            return None
        if comm == "sshd" or comm.startswith("sshd"):
            return "sshd (hosts)"
        if comm == self.daemon_comm or comm.startswith(self.daemon_comm[:15]) or \
                comm.startswith(self.daemon_comm + "-"):
            return "daemon (hosts)"
        if comm == "ssh":
            return "ssh on hosts (tree spawn)"
        return "ranks and shells (hosts)"

    def sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            st = _stat(pid)
            if st is None:
                continue
            comm, ppid, cpu = st
            # The role of the latest sighting wins: sshd forks a child that execs the
            # user's shell, which execs the daemon, all under one pid.
            role = self._role(pid, comm, ppid)
            if role is None:
                continue
            self.role[pid] = role
            self.cpu[pid] = max(self.cpu.get(pid, 0.0), cpu)

    def totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, cpu in self.cpu.items():
            out[self.role[pid]] = out.get(self.role[pid], 0.0) + cpu
        return out
