"""Tables: the console summary, results.md and CSV files under --out."""

from __future__ import annotations

import csv
from pathlib import Path

from .peers import Tool
from .results import Metric, Results
from .stats import Summary, paired_advantage, summarize

TITLES = {
    "launch": "Cold launch",
    "throughput": "Output throughput",
    "throughput-cpu": "Where the CPU goes while moving the output (CPU seconds per GB, by process)",
    "memory": "Peak memory (RSS)",
    "breakdown": "Where the launch time goes (seconds since the launcher was forked)",
    "restart": "Restart latency: a rank fails, the whole job starts again (this machine)",
    "restart-ssh": "Restart latency over SSH: ferryrun on this machine and on cluster hosts",
    "scale": "Launch at scale over SSH: `true`, one rank per host",
    "scale-slurm": "Launch inside a Slurm allocation: `true`, one rank per node",
    "horovod": "Real Horovod: one training job, real horovodrun and ferry's horovodrun personality",
    "sync": "A tree on every host: ferryrun --sync against rsync over SSH (parallel) and pdcp",
    "docker": "Docker layouts: ferryrun in fnode1, 4 ranks on 2 hosts x 2 (containers or namespaces)",
}

LEGEND = ("Cells: median [min-max] over all runs. `ferry vs X`: how many times better "
          "ferryrun did than X, one ratio per round (the tools ran interleaved), median "
          "[min-max]; for times and memory that is X / ferryrun, for throughput "
          "ferryrun / X. Above 1: ferryrun better; below 1: ferryrun worse.")


def num(v: float) -> str:
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def cell(s: Summary | None) -> str:
    if s is None:
        return "-"
    if s.n == 1:
        return num(s.median)
    return f"{num(s.median)} [{num(s.low)}-{num(s.high)}]"


def ratio_cell(s: Summary | None) -> str:
    if s is None:
        return "-"
    if s.n == 1:
        return f"{s.median:.2f}x"
    return f"{s.median:.2f}x [{s.low:.2f}-{s.high:.2f}]"


def columns(results: Results, tools: list[Tool], section: str) -> tuple[list, str]:
    """The section's columns (the launchers unless it has its own) and the name of the
    first one in the ratio headers."""
    cols = results.columns.get(section)
    return (cols, cols[0].label) if cols else (tools, "ferry")


def table_rows(results: Results, tools: list[Tool], section: str) -> tuple[list[str], list[list[str]]]:
    tools, base = columns(results, tools, section)
    ferry = tools[0].key
    peers = tools[1:]
    head = ["case", "metric"] + [t.label for t in tools] + [f"{base} vs {t.label}" for t in peers]
    rows = []
    for m in results.metrics:
        if m.section != section:
            continue
        row = [m.case, f"{m.name} ({m.unit})"]
        for t in tools:
            series = m.by_tool.get(t.key)
            row.append(cell(summarize(series.samples()) if series else None))
        for t in peers:
            f, p = m.by_tool.get(ferry), m.by_tool.get(t.key)
            row.append(ratio_cell(paired_advantage(f, p, m.lower_is_better) if f and p else None))
        rows.append(row)
    return head, rows


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def text_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def sections(results: Results) -> list[str]:
    seen = []
    for m in results.metrics:
        if m.section not in seen:
            seen.append(m.section)
    return seen


def console(results: Results, tools: list[Tool]) -> str:
    parts = []
    for sec in sections(results):
        head, rows = table_rows(results, tools, sec)
        parts.append(f"== {TITLES.get(sec, sec)}\n" + text_table(head, rows))
        if sec in results.legends:
            parts.append(results.legends[sec])
    if any(sec not in results.columns for sec in sections(results)):
        parts.append(LEGEND)
    if results.notes:
        parts.append("Notes:\n" + "\n".join("  - " + n for n in results.notes))
    if results.warnings:
        parts.append("Warnings:\n" + "\n".join("  - " + w for w in results.warnings))
    if results.failures:
        parts.append("FAILURES (bench/run exits 1):\n"
                     + "\n".join("  - " + f for f in results.failures))
    return "\n\n".join(parts)


def write_files(results: Results, tools: list[Tool], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    md = ["# ferry benchmark results", ""]
    md += [f"- {k}: {v}" for k, v in results.environment.items()]
    md.append("")
    for sec in sections(results):
        head, rows = table_rows(results, tools, sec)
        md += [f"## {TITLES.get(sec, sec)}", "", markdown_table(head, rows), ""]
        if sec in results.legends:
            md += [results.legends[sec], ""]
    if any(sec not in results.columns for sec in sections(results)):
        md += [LEGEND, ""]
    if results.notes:
        md += ["## Notes", ""] + [f"- {n}" for n in results.notes] + [""]
    if results.warnings:
        md += ["## Warnings", ""] + [f"- {w}" for w in results.warnings] + [""]
    if results.failures:
        md += ["## Failures", ""] + [f"- {f}" for f in results.failures] + [""]
    p = out / "results.md"
    p.write_text("\n".join(md))
    written.append(p)

    p = out / "summary.csv"
    with p.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["section", "case", "metric", "unit", "tool", "n", "median", "min", "max",
                    "spread_pct", "ferry_advantage_median", "ferry_advantage_min",
                    "ferry_advantage_max"])
        for m in results.metrics:
            cols, _ = columns(results, tools, m.section)
            for t in cols:
                series = m.by_tool.get(t.key)
                s = summarize(series.samples()) if series else None
                if s is None:
                    continue
                adv = None
                if t is not cols[0] and cols[0].key in m.by_tool:
                    adv = paired_advantage(m.by_tool[cols[0].key], series, m.lower_is_better)
                w.writerow([m.section, m.case, m.name, m.unit, t.key, s.n, f"{s.median:.6g}",
                            f"{s.low:.6g}", f"{s.high:.6g}", f"{s.spread_pct:.1f}",
                            f"{adv.median:.4g}" if adv else "", f"{adv.low:.4g}" if adv else "",
                            f"{adv.high:.4g}" if adv else ""])
    written.append(p)

    p = out / "samples.csv"
    with p.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["section", "case", "metric", "unit", "tool", "round", "value"])
        for m in results.metrics:
            for key, series in m.by_tool.items():
                for rnd, values in sorted(series.by_round.items()):
                    for v in values:
                        w.writerow([m.section, m.case, m.name, m.unit, key, rnd + 1, f"{v:.6g}"])
    written.append(p)
    return written
