"""Running one launcher command: wall time, CPU time, exit status, with a time limit."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class RunResult:
    rc: int
    wall_s: float
    cpu_s: float          # user + system of the command and the children it waited for
    start_epoch: float    # time.time() just before the fork
    timed_out: bool
    hang_info: str = ""   # what on_timeout() said before the kill


def timed_run(cmd: list[str], stdout: Path, stderr: Path, env: dict[str, str],
              timeout_s: float, on_start=None, on_timeout=None) -> RunResult:
    """Runs cmd with stdin /dev/null and stdout/stderr to files.

    `on_start(pid)` is called right after the fork (the samplers use it). A command running
    past `timeout_s` gets SIGKILL, and its process group too; `on_timeout()` is called
    first and its text kept, so a hang can be described while it is still hanging.
    """
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        start_epoch = time.time()
        start = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                             start_new_session=True)
        killed = threading.Event()
        info: list[str] = []

        def kill() -> None:
            if on_timeout:
                try:
                    info.append(on_timeout())
                except Exception as e:  # a report must not keep the hang alive
                    info.append(f"(no report: {e})")
            killed.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout_s, kill)
        timer.start()
        try:
            if on_start:
                on_start(p.pid)
            # wait4, not Popen.wait: its rusage covers the command and every child it
            # reaped (mpirun's and hydra's ssh clients), which is the front end's CPU cost.
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - start
        p.returncode = os.waitstatus_to_exitcode(status)
    return RunResult(p.returncode, wall, usage.ru_utime + usage.ru_stime, start_epoch,
                     killed.is_set(), "".join(info))
