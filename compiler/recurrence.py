"""Recurring training work: `window.every: 7d | 1mo`, one workload whose runs repeat.

A recurring job is sized once (one run's tokens or samples) and placed once: every run holds the
same nodes of the same pool, so one scheduled launcher per orchestrator (a Slurm scrontab entry,
a Kubernetes CronJob of the JobSet) starts them all. Its runs start at month start_month, every
period after; a run counts where its whole window (deadline_days, default the period) ends inside
the horizon. A run's hours are counted from the month it starts in, 730 to a month, as a one-time
job's are; so a recurring job costs what its runs stated one by one cost
on the same placement (tests/test_recurring.py compiles both).

Periods are the ones a cron schedule states exactly: every day, every week, or every 1, 2, 3, 4,
6 or 12 months; any other would need a launcher per run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HOURS_PER_MONTH = 730.0
PATTERN = re.compile(r"^([1-9][0-9]*)(d|mo)$")
CRON_DAYS = (1, 7)
CRON_MONTHS = (1, 2, 3, 4, 6, 12)


@dataclass(frozen=True)
class Period:
    count: int
    unit: str            # "d" | "mo"

    @classmethod
    def parse(cls, text: str) -> "Period | None":
        m = PATTERN.match(text or "")
        return cls(int(m.group(1)), m.group(2)) if m else None

    @property
    def text(self) -> str:
        return f"{self.count}{self.unit}"

    @property
    def hours(self) -> float:
        return self.count * (24.0 if self.unit == "d" else HOURS_PER_MONTH)

    @property
    def days(self) -> float:
        return self.hours / 24.0

    @property
    def cron_states(self) -> bool:
        return self.count in (CRON_DAYS if self.unit == "d" else CRON_MONTHS)

    @property
    def cron(self) -> str:
        """The schedule of a run's start: midnight, on Mondays for a week, the 1st for months."""
        if self.unit == "d":
            return "0 0 * * *" if self.count == 1 else "0 0 * * 1"
        return "0 0 1 * *" if self.count == 1 else f"0 0 1 */{self.count} *"

    @property
    def words(self) -> str:
        if self.unit == "d":
            return "daily" if self.count == 1 else "weekly"
        return {1: "monthly", 3: "quarterly", 12: "yearly"}.get(self.count, f"every {self.count} months")


def of(window, horizon_months: int) -> tuple[Period, tuple[float, ...]] | None:
    """A training window's period and its runs' starts (None: it does not recur)."""
    period = Period.parse(getattr(window, "every", None) or "")
    if period is None:
        return None
    return period, run_starts(period, window.start_month, window.deadline_days, horizon_months)


def window_hours(period: Period, deadline_days: float | None) -> float:
    """A run's window: its deadline where stated, else the whole period."""
    return period.hours if deadline_days is None else deadline_days * 24.0


def run_starts(period: Period, start_month: int, deadline_days: float | None,
               horizon_months: int) -> tuple[float, ...]:
    """Each run's start in hours from month 0: every period from start_month, while the run's
    window ends inside the horizon."""
    first, end = start_month * HOURS_PER_MONTH, horizon_months * HOURS_PER_MONTH
    span = window_hours(period, deadline_days)
    out, t = [], first
    while t + span <= end + 1e-6:
        out.append(t)
        t += period.hours
    return tuple(out)


def runs_by_month(starts: tuple[float, ...]) -> dict[int, int]:
    """How many runs start in each month (730 hours to a month)."""
    out: dict[int, int] = {}
    for t in starts:
        m = int(t // HOURS_PER_MONTH + 1e-9)
        out[m] = out.get(m, 0) + 1
    return out


def usage(starts: tuple[float, ...], run_hours: float) -> tuple[tuple[int, float], ...]:
    """Hours run in each month: each run's hours from the month it starts, 730 to a month (a
    one-time job's rule), so a run of a week lies wholly in its start month."""
    out: dict[int, float] = {}
    for m, n in runs_by_month(starts).items():
        left, at = run_hours, m
        while left > 1e-9:
            h = min(HOURS_PER_MONTH, left)
            out[at] = out.get(at, 0.0) + n * h
            left, at = left - h, at + 1
    return tuple((m, round(h, 6)) for m, h in sorted(out.items()))
