"""The simulated cluster (tests/cluster/ferry-cluster) for the benchmarks.

Only one simulated cluster can exist on a machine (one bridge, fixed addresses), and
several people may share the machine. Every section therefore takes the cluster lock,
brings the cluster up, runs, takes it down and releases the lock, so the lock is held
for one section at a time, never for the whole benchmark. With --reuse-cluster the
benchmark uses a cluster somebody else started (a CTest fixture) and neither starts nor
stops it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path


class ClusterError(RuntimeError):
    """The cluster could not be started or is not usable."""


class Cluster:
    """Starts, describes and stops the simulated cluster."""

    def __init__(self, src: Path, state_dir: Path, lock_path: Path | None, reuse: bool,
                 log=print):
        self.script = src / "tests" / "cluster" / "ferry-cluster"
        self.state_dir = state_dir
        self.lock_path = lock_path
        self.reuse = reuse
        self.log = log
        self.nodes = 0

    @property
    def ssh_config(self) -> Path:
        return self.state_dir / "ssh_config"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["FERRY_CLUSTER_DIR"] = str(self.state_dir)
        return env

    def running_nodes(self) -> int:
        """How many nodes the cluster in state_dir has, 0 if none is healthy."""
        nodes_file = self.state_dir / "nodes"
        if not nodes_file.exists():
            return 0
        rc = subprocess.run([str(self.script), "status"], env=self.env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if rc != 0:
            return 0
        try:
            return int(nodes_file.read_text().strip())  # `up N` writes N
        except ValueError:
            return 0

    @contextlib.contextmanager
    def session(self, nodes: int, what: str):
        """The cluster with at least `nodes` hosts, for the duration of one section."""
        with self._locked(what):
            if self.reuse:
                self.nodes = self.running_nodes()
                if self.nodes == 0:
                    raise ClusterError(f"--reuse-cluster: no healthy cluster in {self.state_dir}")
                yield self
                return
            self._up(nodes)
            try:
                yield self
            finally:
                self._down()

    @contextlib.contextmanager
    def _locked(self, what: str):
        if self.lock_path is None:
            yield
            return
        with open(self.lock_path, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.log(f"  waiting for the cluster lock {self.lock_path} ({what}) ...")
                start = time.monotonic()
                fcntl.flock(f, fcntl.LOCK_EX)
                self.log(f"  got the lock after {time.monotonic() - start:.0f} s")
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _up(self, nodes: int) -> None:
        r = subprocess.run([str(self.script), "up", str(nodes)], env=self.env(),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise ClusterError(f"ferry-cluster up {nodes} failed (exit {r.returncode}): "
                               f"{r.stderr.strip() or r.stdout.strip()}")
        self.nodes = nodes

    def _down(self) -> None:
        r = subprocess.run([str(self.script), "down"], env=self.env(),
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"bench: ferry-cluster down failed: {r.stderr.strip()}", file=sys.stderr)
        self.nodes = 0

    def idle(self, timeout_s: float = 5.0) -> list[str]:
        """Waits until no node runs anything but its sshd listener; returns leftovers."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = self.leftovers()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.1)

    def listeners(self) -> set[int]:
        """The pids of the nodes' sshd listeners."""
        out = set()
        for f in self.state_dir.glob("fnode*/sshd.pid"):
            with contextlib.suppress(OSError, ValueError):
                out.add(int(f.read_text().strip()))
        return out

    def leftovers(self) -> list[str]:
        """What runs on the nodes besides their sshd listeners, one line per process. One
        pass over /proc, telling the node by the network namespace (not `ip netns pids`
        per node, which reads all of /proc for each of 129 nodes)."""
        inodes = netns_inodes()
        listeners = self.listeners()
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            node = host_of_pid(pid, inodes)
            if node in ("local", "?") or pid in listeners:
                continue
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            found.append((int(node[5:]), pid, f"{node} pid {pid}: "
                          f"{cmd.decode(errors='replace')[:120]}"))
        return [line for _, _, line in sorted(found)]


def host_list(nodes: int, slots: int) -> list[tuple[str, int]]:
    """[(fnode1, slots), ... (fnodeN, slots)]."""
    return [(f"fnode{i}", slots) for i in range(1, nodes + 1)]


def netns_inodes() -> dict[int, str]:
    """Network namespace inode → node name, for telling which host a pid runs on."""
    out = {}
    for p in Path("/run/netns").glob("fnode[0-9]*"):
        with contextlib.suppress(OSError):
            out[p.stat().st_ino] = p.name
    return out


def host_of_pid(pid: int, inodes: dict[int, str]) -> str:
    try:
        return inodes.get(os.stat(f"/proc/{pid}/ns/net").st_ino, "local")
    except OSError:
        return "?"
