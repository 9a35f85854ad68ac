"""What the sections measured: samples, notes, problems."""

from __future__ import annotations

from dataclasses import dataclass, field

from .stats import Series


class BenchError(RuntimeError):
    """A tool is broken or lost output: the benchmark fails (never for being slow)."""


@dataclass
class Metric:
    """One measured quantity of one case, for every tool."""

    section: str
    case: str
    name: str
    unit: str
    lower_is_better: bool
    by_tool: dict[str, Series] = field(default_factory=dict)

    def add(self, tool: str, round_no: int, value: float) -> None:
        self.by_tool.setdefault(tool, Series()).add(round_no, value)


@dataclass
class Results:
    """Everything a benchmark run produced, in the order it was measured."""

    metrics: list[Metric] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)      # facts worth a line in the report
    warnings: list[str] = field(default_factory=list)   # peers misbehaving, leftovers
    failures: list[str] = field(default_factory=list)   # make bench/run exit 1
    breakdowns: list[dict] = field(default_factory=list)  # rows of the launch breakdown
    environment: dict[str, str] = field(default_factory=dict)
    # Sections whose columns are not the launchers (the docker section's are layouts):
    # section → objects with .key and .label, the first one the base of the ratios.
    columns: dict[str, list] = field(default_factory=dict)
    legends: dict[str, str] = field(default_factory=dict)  # section → its own legend

    def metric(self, section: str, case: str, name: str, unit: str,
               lower_is_better: bool = True) -> Metric:
        for m in self.metrics:
            if (m.section, m.case, m.name) == (section, case, name):
                return m
        m = Metric(section, case, name, unit, lower_is_better)
        self.metrics.append(m)
        return m
