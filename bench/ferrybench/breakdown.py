"""Where the launch time goes.

Every tool runs `date +%s.%N` as its ranks, in verbose mode, with the stderr lines
stamped on arrival. All simulated hosts share this machine's clock, so the ranks' own
timestamps say, relative to the fork of the launcher:

  first rank exec  - the earliest rank (SSH, daemon start, job description, fork/exec)
  last rank exec   - the latest rank
  wall             - the launcher's exit; wall - last rank = output, exit reports, teardown

ferryrun's --verbose adds its own marks: "connected after" (TCP + SSH key exchange +
authentication + exec request, per host), "ferryd ready after" (ferryd started and sent
its hello), "first rank started after", "all ranks ended after" (per host). For the
peers the arrival times of a few verbose lines are used where they exist (Open MPI's
plm_base_verbose, hydra's -verbose), see PEER_MARKS. Verbose modes cost a little time of
their own; the cold-launch section measures without them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time

from .cluster import host_list
from .context import Context

SECTION = "breakdown"

FERRY_MARKS = {
    "connected (first host)": (re.compile(r": connected after ([0-9.]+) s"), min),
    "connected (last host)": (re.compile(r": connected after ([0-9.]+) s"), max),
    "ferryd ready (first host)": (re.compile(r"ferryd ready on .* after ([0-9.]+) s"), min),
    "ferryd ready (last host)": (re.compile(r"ferryd ready on .* after ([0-9.]+) s"), max),
    "first rank started (front end told)": (re.compile(r"first rank started after ([0-9.]+) s"), min),
    "all ranks ended (last host)": (re.compile(r"all ranks ended after ([0-9.]+) s"), max),
}

# Peer verbose lines whose arrival time marks a step: (name, regex, first|last occurrence).
# Open MPI (plm_base_verbose 5) says when it builds the ssh command and when every orted
# has called back and the ranks are being launched; hydra (-verbose, on stdout) says when
# it spawns each ssh and nothing after that.
PEER_MARKS = {
    "openmpi": [
        ("ssh command ready", re.compile(r"plm:rsh: final template argv"), "first"),
        ("all orteds reported, launching ranks", re.compile(r"complete_setup on job"), "first"),
    ],
    "hydra": [
        ("ssh spawned (first host)", re.compile(r"\] Launch arguments:"), "first"),
        ("ssh spawned (last host)", re.compile(r"\] Launch arguments:"), "last"),
    ],
}


def _run_stamped(cmd, env, timeout_s):
    """Runs cmd; returns (rc, t0 epoch, wall, [(arrival epoch, stream, line)]).

    Both streams are read line by line and stamped on arrival (hydra writes its -verbose
    lines to stdout, mixed with the ranks' output)."""
    lines: list[tuple[float, str, str]] = []
    lock = threading.Lock()
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, text=True, errors="replace",
                         start_new_session=True)

    def read(stream, name):
        for line in stream:
            now = time.time()
            with lock:
                lines.append((now, name, line.rstrip("\n")))

    readers = [threading.Thread(target=read, args=(p.stdout, "out"), daemon=True),
               threading.Thread(target=read, args=(p.stderr, "err"), daemon=True)]
    for r in readers:
        r.start()
    try:
        p.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    wall = time.time() - t0
    for r in readers:
        r.join(5)
    lines.sort(key=lambda x: x[0])
    return p.returncode, t0, wall, lines


def run(ctx: Context) -> None:
    s = ctx.sizes
    nodes, per_host = s.breakdown_case
    np = nodes * per_host
    case = f"{nodes} hosts x {per_host} ranks"
    hosts = host_list(nodes, per_host)
    # A rank's line: its start time, maybe after a rank tag.
    stamp = re.compile(r"^(?:\[[0-9,]+\](?:<stdout>:)?\s*)?([0-9]{10}\.[0-9]{9})$")
    with ctx.cluster.session(nodes, "launch breakdown") as cluster:
        if cluster.nodes < nodes:
            ctx.results.notes.append(f"breakdown skipped: needs {nodes} hosts")
            return
        for rnd in range(s.breakdown_rounds):
            for tool in ctx.rotated(rnd):
                ctx.log(f"  breakdown: {case}: round {rnd + 1}/{s.breakdown_rounds} {tool.key}")
                cmd = tool.command(hosts, np, ["date", "+%s.%N"], verbose=True)
                rc, t0, wall, lines = _run_stamped(cmd, cluster.env(), s.run_timeout_s)
                starts = sorted(float(m.group(1)) - t0 for _, _, l in lines
                                if (m := stamp.match(l)))
                log_lines = [(t, l) for t, _, l in lines if not stamp.match(l)]
                if rc != 0 or len(starts) != np:
                    ctx.fail(f"{tool.label} exited {rc} in the launch breakdown, round "
                             f"{rnd + 1}, {len(starts)} of {np} ranks reported a start time: "
                             + " | ".join(l for _, _, l in lines[-5:])[-300:])
                    ctx.check_idle(f"breakdown {tool.key}")
                    continue
                row = {"tool": tool.key, "round": rnd + 1, "wall": wall,
                       "first rank exec": starts[0], "last rank exec": starts[-1],
                       "after last rank": wall - starts[-1]}
                if log_lines:
                    row["first verbose line"] = log_lines[0][0] - t0
                if tool is ctx.ferry():
                    text = [l for _, l in log_lines]
                    for name, (rx, pick) in FERRY_MARKS.items():
                        vals = [float(m.group(1)) for l in text if (m := rx.search(l))]
                        if vals:
                            row[name] = pick(vals)
                for name, rx, which in PEER_MARKS.get(tool.key, []):
                    hits = [t - t0 for t, l in log_lines if rx.search(l)]
                    if hits:
                        row[name] = hits[0] if which == "first" else hits[-1]
                ctx.results.breakdowns.append(row)
                log = ctx.out / "raw" / f"breakdown-{tool.key}-round{rnd + 1}.log"
                log.write_text("".join(f"{t - t0:9.4f} {name} {l}\n" for t, name, l in lines))
                for k, v in row.items():
                    if isinstance(v, float):
                        ctx.results.metric(SECTION, case, k, "s").add(tool.key, rnd, v)
                ctx.check_idle(f"breakdown {tool.key}")
