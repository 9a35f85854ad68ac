"""Output throughput: N ranks on N hosts each write M MB of lines as fast as they can.

Every rank writes lines of exactly 100 bytes ("007" + 96 copies of the rank's letter +
"\\n") with `yes | head -n`, so a torn or interleaved line cannot pass for a valid one
and the expected byte count is exact. `yes` writes in buffer-sized chunks that do not end
on line ends, so the launcher really has to join partial lines. The launcher's stdout
goes to a file on tmpfs; after the run (untimed) every line is checked: it must be one
rank's line, under that rank's tag when tags are on, and each rank must have exactly its
line count. Wall time covers the whole job, launch included. Torn lines do not fail the
benchmark for the peers (both tear lines under load; that is a finding, reported as its
own row); lost bytes are a warning for them and fail it for ferryrun.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .cluster import host_list
from .context import Context
from .cpu_split import CpuSplit
from .proc import timed_run

SECTION = "throughput"
LINE = 100  # bytes per line, newline included

# sh -c GEN LINES: the rank's line, LINES times.
GEN = ('r=${RANK:-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}}; '
       'c=$(printf "\\\\$(printf %03o $((97 + r % 26)))"); '
       'body=$(printf "%96s" "" | tr " " "$c"); '
       'yes "$(printf %03d "$r")$body" | head -n "$0"')

# Tags as ferryrun (horovod style), Open MPI --tag-output and hydra -prepend-rank write
# them. Payload lines hold only digits and letters, so a "[" always starts a tag, even in
# the middle of a torn line.
TAG = re.compile(rb"^\[(?:1,)?([0-9]+)\](?:<stdout>:| )")
TAG_ANYWHERE = re.compile(rb"\[(?:1,)?[0-9]+\](?:<stdout>:| )")


def rank_line(r: int) -> bytes:
    return b"%03d" % r + bytes([97 + r % 26]) * 96 + b"\n"


@dataclass
class Check:
    """What arrived: whole valid lines per rank, torn lines, and the bytes of each rank
    (counted by its letter, so bytes of torn lines count too)."""

    per_rank_lines: dict[int, int]
    per_rank_letters: dict[int, int]
    torn_lines: int
    first_torn: bytes
    payload_bytes: int

    def lossless(self, ranks: int, lines: int) -> bool:
        return (self.payload_bytes == ranks * lines * LINE
                and all(self.per_rank_letters.get(r, 0) == 96 * lines for r in range(ranks)))

    def intact(self, ranks: int, lines: int) -> bool:
        return self.torn_lines == 0 and all(self.per_rank_lines.get(r, 0) == lines
                                            for r in range(ranks))

    def describe(self, ranks: int, lines: int) -> str:
        want = ranks * lines * LINE
        text = (f"{self.payload_bytes} of {want} payload bytes; whole lines "
                + ", ".join(f"r{r} {self.per_rank_lines.get(r, 0)}/{lines}" for r in range(ranks)))
        if self.torn_lines:
            text += f"; {self.torn_lines} torn lines, first {self.first_torn[:70]!r}"
        return text


def check_output(path, ranks: int, tagged: bool) -> Check:
    valid = {rank_line(r): r for r in range(ranks)}
    letters = {r: bytes([97 + r % 26]) for r in range(ranks)}
    with open(path, "rb") as f:
        counts = Counter(f)  # valid lines of a rank are all alike: few keys unless torn
    per_lines: dict[int, int] = {}
    per_letters: dict[int, int] = {}
    torn, first_torn, payload = 0, b"", 0
    for line, n in counts.items():
        body = TAG_ANYWHERE.sub(b"", line) if tagged else line
        payload += n * len(body)
        for r, c in letters.items():
            k = body.count(c)
            if k:
                per_letters[r] = per_letters.get(r, 0) + n * k
        r = valid.get(body)
        if tagged:
            m = TAG.match(line)
            if r is not None and (m is None or int(m.group(1)) != r or
                                  len(line) != m.end() + LINE):
                r = None
        if r is None:
            torn += n
            first_torn = first_torn or line
            continue
        per_lines[r] = per_lines.get(r, 0) + n
    return Check(per_lines, per_letters, torn, first_torn, payload)


def run(ctx: Context) -> None:
    s = ctx.sizes
    ranks = s.throughput_ranks
    lines = s.throughput_mb * 1_000_000 // LINE
    total_mb = ranks * lines * LINE / 1e6
    hosts = host_list(ranks, 1)
    variants = [False, True] if s.throughput_tagged else [False]
    with ctx.cluster.session(ranks, "output throughput") as cluster:
        if cluster.nodes < ranks:
            ctx.results.notes.append(f"throughput skipped: needs {ranks} hosts")
            return
        for tagged in variants:
            case = (f"{ranks} ranks x {s.throughput_mb} MB, "
                    + ("tagged" if tagged else "untagged"))
            wall = ctx.results.metric(SECTION, case, "wall time", "s")
            rate = ctx.results.metric(SECTION, case, "throughput", "MB/s", lower_is_better=False)
            cpu = ctx.results.metric(SECTION, case, "front-end CPU (incl. its ssh)", "s")
            torn = ctx.results.metric(SECTION, case, "torn lines (of the rank's own)", "lines")
            for rnd in range(s.throughput_rounds):
                for tool in ctx.rotated(rnd):
                    out = ctx.work / f"tp-{tool.key}.out"
                    err = ctx.work / f"tp-{tool.key}.err"
                    cmd = tool.command(hosts, ranks, ["sh", "-c", GEN, str(lines)], tagged=tagged)
                    ctx.log(f"  throughput: {case}: round {rnd + 1}/{s.throughput_rounds} "
                            f"{tool.key}")
                    r = timed_run(cmd, out, err, cluster.env(), timeout_s=s.run_timeout_s,
                                  on_timeout=lambda: ctx.hang_report(out, ranks * lines * LINE))
                    if r.rc != 0:
                        ctx.fail(f"{tool.label} {'hung' if r.timed_out else f'exited {r.rc}'} "
                                 f"in throughput {case}, round {rnd + 1}"
                                 + (f" (killed after {s.run_timeout_s} s; {r.hang_info})"
                                    if r.timed_out else
                                    f": {err.read_text(errors='replace')[-300:]}"))
                        out.unlink(missing_ok=True)
                        ctx.check_idle(f"throughput {tool.key}")
                        continue
                    c = check_output(out, ranks, tagged)
                    ctx.debug(f"{tool.key}: {r.wall_s:.2f} s, {c.describe(ranks, lines)}")
                    if tool is ctx.ferry() and not (c.lossless(ranks, lines)
                                                    and c.intact(ranks, lines)):
                        ctx.fail(f"ferryrun lost or tore output in throughput {case}, round "
                                 f"{rnd + 1}: {c.describe(ranks, lines)}")
                        out.unlink(missing_ok=True)
                        continue
                    torn.add(tool.key, rnd, c.torn_lines)
                    if c.lossless(ranks, lines):
                        wall.add(tool.key, rnd, r.wall_s)
                        rate.add(tool.key, rnd, total_mb / r.wall_s)
                        cpu.add(tool.key, rnd, r.cpu_s)
                    else:
                        ctx.results.warnings.append(
                            f"{tool.label} lost output in throughput {case} (round {rnd + 1}, "
                            f"not counted): {c.describe(ranks, lines)}")
                    out.unlink(missing_ok=True)
                    err.unlink(missing_ok=True)
                    ctx.check_idle(f"throughput {tool.key}")
            if s.throughput_cpu_split:
                cpu_split(ctx, case, hosts, ranks, lines, tagged)


def cpu_split(ctx: Context, case: str, hosts, ranks: int, lines: int, tagged: bool) -> None:
    """One more run per tool, not timed, with the CPU of every process of the job split
    by role: where the work of moving the bytes is done."""
    for tool in ctx.tools:
        ctx.log(f"  throughput: {case}: CPU split run {tool.key}")
        watch = CpuSplit(tool.daemon, ctx.cluster.listeners())

        def started(pid: int, watch=watch) -> None:
            watch.frontend_pid = pid
            watch.start()

        out = ctx.work / f"tp-{tool.key}.out"
        err = ctx.work / f"tp-{tool.key}.err"
        cmd = tool.command(hosts, ranks, ["sh", "-c", GEN, str(lines)], tagged=tagged)
        r = timed_run(cmd, out, err, ctx.cluster.env(), timeout_s=ctx.sizes.run_timeout_s,
                      on_start=started,
                      on_timeout=lambda: ctx.hang_report(out, ranks * lines * LINE))
        watch.stop.set()
        watch.join()
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)
        if r.rc != 0:
            ctx.fail(f"{tool.label} {'hung' if r.timed_out else f'exited {r.rc}'} in the CPU "
                     f"split run of {case}" + (f" ({r.hang_info})" if r.timed_out else ""))
            ctx.check_idle(f"throughput CPU split {tool.key}")
            continue
        totals = watch.totals()
        totals["all of the job"] = sum(totals.values())
        for role, secs in sorted(totals.items()):
            ctx.results.metric("throughput-cpu", case, role, "CPU s").add(tool.key, 0, secs)
        ctx.check_idle(f"throughput CPU split {tool.key}")
