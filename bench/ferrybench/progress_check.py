"""The progress display on a terminal while many hosts connect, and the failures listed
once at the end, checked on the scale section's cluster (128 hosts in the full run).

ferryrun runs under `script -qc` (a pseudo-terminal: the progress line is only drawn on a
terminal) with `--start-timeout 5` on hosts 1..N, three of which cannot be reached: two
whose sshd is stopped (connection refused at once) and one whose link is down (no answer:
it fails when the start timeout ends, so the display stays up for those seconds). The
check passes when the terminal showed "connected K/N, F failed" lines, the last count
"N-3 of N connected, 3 failed", and the job ended with one line per failed host (each of
the three exactly once, no other host) and "the job did not start (3 of N hosts failed)".
The hosts are left broken: this runs last, before the cluster goes down.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess

from .cluster import host_list
from .context import Context
from .peers import hosts_arg

PROGRESS = re.compile(r"connected (\d+)/(\d+)(?:, (\d+) failed)?")


def break_hosts(ctx: Context, refused: list[int], silent: int) -> None:
    for i in refused:
        pid = (ctx.cluster.state_dir / f"fnode{i}" / "sshd.pid").read_text().strip()
        os.kill(int(pid), signal.SIGKILL)
    subprocess.run(["ip", "-n", f"fnode{silent}", "link", "set", "eth0", "down"], check=True)


def run(ctx: Context, n: int) -> None:
    bad = [n - 2, n - 1, n]
    break_hosts(ctx, bad[:2], bad[2])
    ferry = ctx.ferry()
    cmd = [str(ferry.exe), "--ssh-config", str(ctx.cluster.ssh_config), "--start-timeout", "5",
           "-np", str(n), "-H", hosts_arg(host_list(n, 1)), "--", "true"]
    typescript = ctx.out / "raw" / f"progress-{n}.typescript"
    try:
        r = subprocess.run(["script", "-qec", shlex.join(cmd), "/dev/null"],
                           capture_output=True, timeout=120, env=ctx.cluster.env(),
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        ctx.fail(f"progress check on {n} hosts: ferryrun did not end within 120 s")
        return
    raw = r.stdout.decode(errors="replace")
    typescript.write_text(raw)
    problems = judge(raw, n, [f"fnode{i}" for i in bad], r.returncode)
    if problems:
        ctx.fail(f"progress check on {n} hosts ({typescript}): " + "; ".join(problems))
        return
    frames = [m.group(0) for m in PROGRESS.finditer(raw)]
    ctx.results.notes.append(
        f"progress display on {n} hosts, 3 unreachable (under `script`, {typescript.name}): "
        f"{len(frames)} redraws from \"{frames[0]}\" to \"{frames[-1]}\"; then one line per "
        f"failed host ({', '.join(f'fnode{i}' for i in bad)}) and \"the job did not start "
        f"(3 of {n} hosts failed)\", exit {r.returncode}")


def judge(raw: str, n: int, bad: list[str], rc: int) -> list[str]:
    """What is wrong with the terminal's text; empty when the display behaved."""
    problems = []
    frames = [tuple(int(g or 0) for g in m.groups()) for m in PROGRESS.finditer(raw)]
    if not frames:
        problems.append("no progress line was drawn")
    elif frames[-1] != (n - 3, n, 3):
        problems.append(f"last progress line {frames[-1]}, expected {(n - 3, n, 3)}")
    if "\r" not in raw or "\x1b[K" not in raw:
        problems.append("the progress line was not redrawn in place (\\r, erase to end)")
    # After the display is erased: whole lines, one per failed host.
    lines = [l.split("\r")[-1].strip() for l in raw.replace("\r\n", "\n").split("\n")]
    lines = [l.replace("\x1b[K", "") for l in lines if l]
    failed = [l for l in lines if "did not start" not in l and "connected" not in l]
    named = {h: [l for l in failed if re.search(rf"\b{h}\b", l)] for h in bad}
    for h, ls in named.items():
        if len(ls) != 1:
            problems.append(f"{h} named on {len(ls)} lines, expected 1")
    others = [l for l in failed if not any(re.search(rf"\b{h}\b", l) for h in bad)]
    if others:
        problems.append(f"other lines: {others[:3]}")
    if not any(f"the job did not start (3 of {n} hosts failed)" in l for l in lines):
        problems.append("no summary line 'the job did not start (3 of N hosts failed)'")
    if rc == 0:
        problems.append("ferryrun exited 0")
    return problems
