"""The report of a re-plan (a baseline given): its summary says what the re-plan changes in total
against the baseline and what it inherits as sunk, and the changed workloads come first, so a
reviewer reads the change before the fleet. The facts are compiler/render/changes.py's, the
same the runbook lists, from the one comparison of plans (compiler/compare.py): the workloads
moved, resized and unchanged are those `infra-compile diff` counts."""

from __future__ import annotations

from dataclasses import replace

from compiler.render.changes import Changes
from compiler.render.environment import money

# the workloads' changes the summary names each workload of; the rest it counts
NAMED = ("input changed", "added", "removed", "moved")
COUNTED = ("resized", "changed", "unchanged")


def summary(c: Changes) -> tuple[str, ...]:
    """The summary's first lines: the total against the baseline's, the sunk cost, and what
    changes (the totals are each plan's own horizon: a later start prices other months)."""
    share = f", {c.delta_usd / c.baseline_total_usd * 100:+.1f}%" if c.baseline_total_usd else ""
    first = (f"A re-plan of the baseline {c.baseline_label}: {money(c.total_usd)} over this plan's horizon "
             f"against the baseline's {money(c.baseline_total_usd)} ({money(c.delta_usd, True)}{share})")
    if c.sunk_usd:
        first += (f"; it also inherits {money(c.sunk_usd)} of commitments bought before it, sunk "
                  f"(paid whatever it does) and not in its total")
    count = {k: sum(1 for p in c.pools if p.change == k) for k in ("create", "resize", "release")}
    # each workload's change as `infra-compile diff` gives it: the named ones, then the counts
    named = "".join(f"{name} {change}, " for name, change in c.workloads if change in NAMED)
    counted = ", ".join(f"{c.count(k)} {k}" for k in COUNTED if c.count(k) or k == "unchanged")
    second = (f"Against the baseline, pools: {count['create']} created, {count['resize']} resized, "
              f"{count['release']} released, {c.pools_kept} kept as they run; workloads: {named}{counted}.")
    return first + ".", second


def changed_first(items, c: Changes, names=lambda x: [x.name]):
    """`items` (workloads, or groups of them: `names` says whose) with those new or moved against
    the baseline first, each part in the order it had."""
    changed = c.changed_workloads
    return tuple(sorted(items, key=lambda x: not changed.intersection(names(x))))


def marked(workloads, c: Changes):
    """The workload views, each new or moved one saying so (its heading in the report)."""
    how = {p.workload: p.change for p in c.placements}
    return tuple(replace(w, change=how.get(w.name, "")) for w in workloads)
