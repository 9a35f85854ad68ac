"""Medians, spreads and ratios of repeated measurements.

The machine the benchmarks run on is shared and small, so single numbers mean little.
Every figure is a median over repetitions, shown with its min-max range, and every
comparison is a ratio taken inside one round (the tools ran back to back, interleaved),
so that a noisy minute slows all tools of that round alike.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class Summary:
    """Median and range of a list of samples."""

    n: int
    median: float
    low: float
    high: float

    @property
    def spread_pct(self) -> float:
        """(max - min) / median, in percent: how noisy the samples were."""
        if self.median == 0:
            return 0.0
        return 100.0 * (self.high - self.low) / abs(self.median)


def summarize(samples: list[float]) -> Summary | None:
    """Summary of the samples, or None when there are none."""
    values = [v for v in samples if v is not None]
    if not values:
        return None
    return Summary(len(values), statistics.median(values), min(values), max(values))


@dataclass
class Series:
    """Samples of one metric for one tool, keyed by round so ratios can be paired."""

    by_round: dict[int, list[float]] = field(default_factory=dict)

    def add(self, round_no: int, value: float) -> None:
        self.by_round.setdefault(round_no, []).append(value)

    def samples(self) -> list[float]:
        return [v for r in sorted(self.by_round) for v in self.by_round[r]]

    def round_medians(self) -> dict[int, float]:
        return {r: statistics.median(v) for r, v in self.by_round.items() if v}


def paired_advantage(ferry: Series, peer: Series, lower_is_better: bool) -> Summary | None:
    """How many times better ferryrun was than `peer`, one ratio per round.

    For times and memory (lower is better) that is peer / ferry; for throughput it is
    ferry / peer. Above 1 means ferryrun did better. Rounds where either side has no
    sample are skipped.
    """
    fm, pm = ferry.round_medians(), peer.round_medians()
    ratios = []
    for r in sorted(set(fm) & set(pm)):
        f, p = fm[r], pm[r]
        if f <= 0 or p <= 0:
            continue
        ratios.append(p / f if lower_is_better else f / p)
    return summarize(ratios)
