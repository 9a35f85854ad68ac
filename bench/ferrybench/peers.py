"""How each launcher is told to run a job on the simulated cluster.

ferryrun and its two peers, Open MPI's mpirun and MPICH's mpiexec.hydra, all start one
daemon per host over SSH (ferryd, orted, hydra_pmi_proxy) and fork the ranks from it.
What each needs to reach the cluster's sshds (port 2222, key-only, its own known_hosts):

- ferryrun: `--ssh-config <cluster>/ssh_config` (libssh reads it; one session per host).
- Open MPI 4.1: `--mca plm_rsh_agent ssh --mca plm_rsh_args "-F <cluster>/ssh_config"`
  and `--allow-run-as-root`. orted is found on the nodes through PATH (the nodes share
  this filesystem, /usr/bin/orted). Nothing else is needed to run non-MPI programs:
  `btl`/`pml` only matter inside MPI_Init, and orted finds its way back to mpirun over
  the bridge without `oob_tcp_if_include` (mpirun's other addresses are unreachable from
  the nodes and fail at once). Open MPI's default tree spawn stays on: orteds on the
  first hosts ssh to the next ones with the same agent and arguments.
- MPICH hydra 4.0: `-launcher ssh -launcher-exec <wrapper>`, where the wrapper is a
  two-line script running `ssh -F <cluster>/ssh_config "$@"`: hydra execs the
  launcher-exec value as one file name, so "ssh -F x" fails with ENOENT (and hydra then
  hangs instead of exiting). hydra_pmi_proxy connects back to the front end by this
  machine's host name, which the nodes resolve to the bridge address (ferry-cluster
  writes it into their /etc/hosts).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# One shell snippet for every tool: the rank number from whichever variable the launcher
# sets (ferryrun RANK, Open MPI OMPI_COMM_WORLD_RANK, hydra PMI_RANK).
RANK_EXPR = "${RANK:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}}"


@dataclass
class Tool:
    """One launcher: how to build its command lines and which processes are its own."""

    key: str          # ferryrun | openmpi | hydra
    label: str        # for tables
    frontend: str     # its front end's file name
    daemon: str       # comm of its per-host daemon
    exe: str          # what must exist for the tool to be usable
    helpers: tuple[str, ...] = ()  # comms of the daemon's long-lived helper processes

    def available(self) -> str | None:
        """None if usable, else why not."""
        if os.sep in self.exe:
            return None if os.access(self.exe, os.X_OK) else f"{self.exe} not found"
        return None if shutil.which(self.exe) else f"{self.exe} not on PATH"

    def command(self, hosts: list[tuple[str, int]], np: int, argv: list[str], *,
                tagged: bool = False, verbose: bool = False) -> list[str]:
        raise NotImplementedError

    def version(self) -> str:
        return ""


def hosts_arg(hosts: list[tuple[str, int]]) -> str:
    return ",".join(f"{h}:{s}" for h, s in hosts)


class FerryRun(Tool):
    def __init__(self, bin_dir: Path, ssh_config: Path, key: str = "ferryrun",
                 label: str = "ferryrun", flags: list[str] | None = None):
        # ferryd forks a guard that sweeps the ranks if ferryd is kill -9ed; it renames
        # itself ferryd-guard (older builds kept the name ferryd).
        super().__init__(key, label, "ferryrun", "ferryd",
                         str(bin_dir / "ferryrun"), ("ferryd-guard",))
        self.bin_dir = bin_dir
        self.ssh_config = ssh_config
        self.flags = flags or []

    def command(self, hosts, np, argv, *, tagged=False, verbose=False):
        cmd = [str(self.bin_dir / "ferryrun"), "--ssh-config", str(self.ssh_config),
               "-np", str(np), "-H", hosts_arg(hosts)] + self.flags
        if not tagged:
            cmd += ["--tag-style", "none"]
        if verbose:
            cmd += ["--verbose"]
        return cmd + ["--"] + argv

    def available(self):
        for name in ("ferryrun", "ferryd"):
            if not os.access(self.bin_dir / name, os.X_OK):
                return f"{self.bin_dir / name} not built"
        return None


class OpenMpi(Tool):
    def __init__(self, ssh_config: Path):
        # Debian's `mpirun` is an alternative: with only MPICH installed it is hydra, which
        # rejects Open MPI's options. mpirun.openmpi is always Open MPI.
        exe = "mpirun.openmpi" if shutil.which("mpirun.openmpi") else "mpirun"
        super().__init__("openmpi", "Open MPI mpirun", "mpirun", "orted", exe)
        self.ssh_config = ssh_config

    def available(self):
        why = super().available()
        if why:
            return why
        try:
            out = subprocess.run([self.exe, "--version"], capture_output=True, text=True,
                                 timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{self.exe} --version failed: {e}"
        # "mpirun (Open MPI) 4.1.4", or "mpirun.openmpi (OpenRTE) 4.1.4" by that name.
        if "(Open MPI)" not in out and "(OpenRTE)" not in out:
            return f"{self.exe} is not Open MPI (apt-get install openmpi-bin)"
        return None

    def command(self, hosts, np, argv, *, tagged=False, verbose=False):
        cmd = [self.exe, "--allow-run-as-root",
               "--mca", "plm_rsh_agent", "ssh",
               "--mca", "plm_rsh_args", f"-F {self.ssh_config}",
               "-H", hosts_arg(hosts), "-np", str(np)]
        if tagged:
            cmd += ["--tag-output"]
        if verbose:
            cmd += ["--mca", "plm_base_verbose", "5"]
        return cmd + argv


class Hydra(Tool):
    def __init__(self, ssh_config: Path, work_dir: Path):
        super().__init__("hydra", "MPICH hydra", "mpiexec.hydra", "hydra_pmi_proxy",
                         "mpiexec.hydra")
        self.wrapper = work_dir / "ssh-cluster"
        work_dir.mkdir(parents=True, exist_ok=True)
        self.wrapper.write_text("#!/bin/sh\n"
                                "# hydra's -launcher-exec takes one file name, no arguments\n"
                                f"exec ssh -F {shlex.quote(str(ssh_config))} \"$@\"\n")
        self.wrapper.chmod(0o755)

    def command(self, hosts, np, argv, *, tagged=False, verbose=False):
        cmd = ["mpiexec.hydra", "-launcher", "ssh", "-launcher-exec", str(self.wrapper),
               "-hosts", hosts_arg(hosts), "-n", str(np)]
        if tagged:
            cmd += ["-prepend-rank"]
        if verbose:
            cmd += ["-verbose"]
        return cmd + argv


def all_tools(bin_dir: Path, ssh_config: Path, work_dir: Path,
              baseline: Path | None = None, baseline_flags: list[str] | None = None,
              flags: list[str] | None = None) -> list[Tool]:
    """ferryrun first (with `flags`); with `baseline` (another build's bin folder, or this one
    with `baseline_flags`) that second, as a peer of its own, so that before and after run
    interleaved under the same load."""
    tools: list[Tool] = [FerryRun(bin_dir, ssh_config, flags=flags)]
    if baseline is not None:
        label = "ferryrun " + " ".join(baseline_flags) if baseline_flags else "ferryrun baseline"
        tools.append(FerryRun(baseline, ssh_config, "baseline", label, baseline_flags))
    return tools + [OpenMpi(ssh_config), Hydra(ssh_config, work_dir)]
