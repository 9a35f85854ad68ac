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
    out_bytes: int = 0    # bytes written to stdout (with reuse_stdout: the file is longer)


def timed_run(cmd: list[str], stdout: Path, stderr: Path, env: dict[str, str],
              timeout_s: float, on_start=None, on_timeout=None,
              reuse_stdout: bool = False) -> RunResult:
    """Runs cmd with stdin /dev/null and stdout/stderr to files.

    `on_start(pid)` is called right after the fork (the samplers use it). A command running
    past `timeout_s` gets SIGKILL, and its process group too; `on_timeout()` is called
    first and its text kept, so a hang can be described while it is still hanging.

    `reuse_stdout`: the command writes over `stdout` from its start, which is not truncated,
    so the file's pages are reused (see `Sink` in throughput.py); `out_bytes` says how much
    of it this run wrote.
    """
    flags = os.O_WRONLY | os.O_CREAT | (0 if reuse_stdout else os.O_TRUNC)
    with open(os.open(stdout, flags, 0o644), "wb", closefd=True) as out, \
            open(stderr, "wb") as err:
        start_epoch = time.time()
        start = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                             start_new_session=True)
        killed = threading.Event()
        info: list[str] = []

        def kill() -> None:
            if reuse_stdout:
                info.append(f"{os.lseek(out.fileno(), 0, os.SEEK_CUR)} bytes of output "
                            "had arrived; ")
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
        # The child wrote through the same open file description: its offset is ours.
        written = os.lseek(out.fileno(), 0, os.SEEK_CUR)
    return RunResult(p.returncode, wall, usage.ru_utime + usage.ru_stime, start_epoch,
                     killed.is_set(), "".join(info), written)


class Sink:
    """The file timed runs' stdout goes to (with `reuse_stdout`): one file on tmpfs for a whole
    section, filled once with zeros up front and written over by each run, never truncated.

    A file created afresh for each run gets new page-cache pages, and on a virtual machine
    whose host takes freed memory back (free page reporting, as on these build machines)
    the first touch of a new page is slow: writing 1 GB to a new tmpfs file took 2.4 s of
    system time here, against 0.27 s into pages freed just before and not yet handed back.
    Which run got which pages then decided much of its time, and a launcher writing more
    bytes (tags) paid more of it. Writing over pages already in the file costs each
    launcher only the copy of its bytes.
    """

    def __init__(self, path, size: int):
        self.path = path
        chunk = bytes(4 << 20)
        with open(path, "wb") as f:
            for _ in range((size + len(chunk) - 1) // len(chunk)):
                f.write(chunk)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
