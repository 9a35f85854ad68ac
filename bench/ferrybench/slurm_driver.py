#!/usr/bin/env python3
"""Runs inside a Slurm allocation (`salloc -N N --ntasks-per-node=1 slurm_driver.py SPEC
OUT`): every launcher of SPEC once with `hostname` (each node of the allocation exactly
once, else the launcher is dropped), then `rounds` rounds of `true`, launchers in a
rotated order. Before each run it waits until the allocation has no step left (the
previous launcher's step may still be completing: the next srun would wait for it,
which is not the next launcher's cost). Each run is timed with wait4: wall time and the
CPU of the launcher and every child it reaped (its srun). Writes OUT as JSON.

Started by ferrybench/slurm_scale.py; not a module of the package (it runs as a script
under salloc, where SLURM_JOB_ID and SLURM_JOB_NODELIST describe the allocation).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time


def steps_left(job: str) -> list[str]:
    r = subprocess.run(["squeue", "-h", "-s", "-j", job, "-o", "%i"], capture_output=True,
                       text=True, timeout=30)
    return [s for s in r.stdout.split() if s]


def wait_no_steps(job: str, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while steps_left(job) and time.monotonic() < deadline:
        time.sleep(0.05)


def timed(cmd: list[str], limit_s: float) -> dict:
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=limit_s)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        hung = True
    wall = time.monotonic() - start
    # communicate() reaped the launcher; its rusage (and its children's) is in RUSAGE_CHILDREN,
    # taken as a difference around the run by the caller.
    return {"rc": p.returncode, "wall": wall, "hung": hung,
            "out": out.decode(errors="replace"), "err": err.decode(errors="replace")[-400:]}


def cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    spec = json.loads(open(sys.argv[1]).read())
    job = os.environ["SLURM_JOB_ID"]
    nodes = subprocess.run(["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]],
                           capture_output=True, text=True).stdout.split()
    result = {"nodes": nodes, "checks": {}, "runs": []}
    tools = []
    for t in spec["tools"]:
        wait_no_steps(job)
        r = timed(t["check"], spec["hang_s"])
        got = sorted(r["out"].split())
        ok = not r["hung"] and r["rc"] == 0 and got == sorted(nodes)
        result["checks"][t["key"]] = {"ok": ok, "rc": r["rc"], "hung": r["hung"],
                                      "lines": len(got), "err": r["err"]}
        if ok:
            tools.append(t)
    for rnd in range(spec["rounds"]):
        k = rnd % max(1, len(tools))
        for t in tools[k:] + tools[:k]:
            wait_no_steps(job)
            before = cpu_children()
            r = timed(t["cmd"], spec["hang_s"])
            result["runs"].append({"key": t["key"], "round": rnd, "rc": r["rc"],
                                   "hung": r["hung"], "wall": r["wall"],
                                   "cpu": cpu_children() - before, "err": r["err"]})
    wait_no_steps(job)
    with open(sys.argv[2], "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
