"""Neighbourhoods of an incumbent plan: each a pure function from the problem and the incumbent
to a Round, the integers a round frees (every other choice held at the incumbent's value). The
engine that solves them (engine.py) owns acceptance, node budgets and time; these say only what
may move.

- choice_groups: every training job's candidate choice; every service's replica mixes and counts;
- serving_windows: runs of consecutive months, every service's replicas in them free;
- month_windows: every integer of two consecutive months free (the months schedule, whose
  rounds hold only integers of a month);
- fewer_nodes: an on-prem pool held nodes lower and the work that no longer fits freed;
- lp_held: what an LP-guided round holds (RINS: where the LP relaxation agrees with the plan).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from compiler.optimize import formulate as F
from compiler.optimize.settings import DEFAULT, Settings
from compiler.spec import InferenceWorkload, OnPremSite


@dataclass(frozen=True)
class Round:
    """One neighbourhood of the incumbent: the integers it frees (every other choice held at
    the incumbent's value), and those it holds at new values instead (`moved`: a pool held
    nodes fewer). An LP-guided round (`lp_within` set) frees instead the integers whose LP value is
    not within `lp_within` of the incumbent's, whatever their kind (lp_held). `improving`: the
    round stops at that many plans cheaper than its start, at its root (HiGHS's
    mip_max_improving_sols: a count, so the same on every run). `cutoff`: HiGHS is told the
    incumbent's cost (objective_bound), so it prunes every plan that is not cheaper: a round
    that holds a pool below the incumbent has no start to learn it from."""
    name: str
    free: frozenset[str] = frozenset()
    moved: tuple[tuple[str, float], ...] = ()
    lp_within: float | None = None
    improving: int | None = None
    cutoff: bool = False



def choice_groups(problem: F.Problem) -> tuple[tuple[str, frozenset[str]], ...]:
    """The groups of variables a round can free: every training job's candidate choice; every
    service's replica mixes and replica counts."""
    names = {v.name for v in problem.variables}
    training = {F.x_name(c) for w in problem.spec.workloads if not isinstance(w, InferenceWorkload)
                for c in problem.chosen_from.get(w.name, ())}
    serving = frozenset().union(*_serving_by_month(problem, names))
    return (("training", frozenset(training & names)), ("serving", serving))


def _serving_by_month(problem: F.Problem, names: set[str]) -> list[frozenset[str]]:
    """Per month of the horizon, the services' replica mixes and replica counts in the model."""
    by_month: list[set[str]] = [set() for _ in range(problem.spec.horizon_months)]
    for (_w, m), free in _serving_by_service_month(problem, names).items():
        by_month[m] |= free
    return [frozenset(month) for month in by_month]


def _serving_by_service_month(problem: F.Problem, names: set[str]) -> dict[tuple[str, int], frozenset[str]]:
    """Per (service, month), its replica mixes and replica counts in the model."""
    out: dict[tuple[str, int], set[str]] = {}
    for (w, m), options in problem.mixes.items():
        out.setdefault((w, m), set()).update(mix for mix, _reps in options)
    for w in problem.spec.workloads:
        if isinstance(w, InferenceWorkload):
            for c in problem.chosen_from.get(w.name, ()):
                for m in range(problem.spec.horizon_months):
                    out.setdefault((w.name, m), set()).add(F.y_name(c, m))
    return {key: frozenset(free & names) for key, free in out.items() if free & names}


def fewer_nodes(problem: F.Problem, plan: Mapping[str, float], lp: Mapping[str, float] | None = None,
                most: int | None = None, by: int = 1, least: int = 1, narrow: bool = False,
                settings: Settings = DEFAULT) -> tuple[Round, ...]:
    """Rounds that buy one node fewer in an on-prem pool.
    The windows cannot: a bought node is used in many months, and a window holds all but a
    few, so the plan keeps every node some held month fills. Such a round holds the pool at one
    node fewer and frees, in each month where the remaining nodes are too few for what runs
    there, every service and training job on the pool (all of its candidates, so it can move
    anywhere); everything else is held. Pools whose round would free more than `most` (by
    default settings.fewer_nodes_integers) integers are left out, and, given the LP relaxation's
    values `lp`, pools where it buys as many nodes as the plan, rounded up (there a round seldom
    finds anything cheaper, and its root is long). `by`: the pool is held at that many nodes fewer
    instead of one (then its name says so), in pools where the plan buys at least `least`.
    `narrow`: of a displaced workload's candidates only those on the data centres' pools and in
    the cloud pools the plan already rents are freed, with the ones the plan uses (the others are
    held at zero), so a round frees about half as many integers and a node fewer at a pool shared
    by many services fits under `most`."""
    var = {v.name: v for v in problem.variables}
    names = set(var)
    service_months = _serving_by_service_month(problem, names)
    training = {w: frozenset(F.x_name(c) for c in cands) & names for w, cands in problem.chosen_from.items()}
    rows: dict[tuple[str, str], list] = {}      # (site, node model) -> its capacity rows (6), by month
    for c in problem.constraints:
        if c.family == "capacity":
            rows.setdefault((c.site, c.instance), []).append(c)
    near = _near_candidates(problem, plan, var) if narrow else None
    rounds = []
    for s, i in sorted(rows, key=lambda pool: F.buy_name(*pool)):     # in the order of the pools' names
        buy = F.buy_name(s, i)
        nodes = round(plan.get(buy, 0.0))
        if nodes < max(by, least) or (lp is not None and math.ceil(lp.get(buy, 0.0) - 1e-6) >= nodes):
            continue
        free: set[str] = set()
        for row in rows[(s, i)]:
            terms = dict(row.terms)
            gpus = -terms[buy] * by
            if row.rhs - sum(a * plan.get(n, 0.0) for n, a in row.terms) >= gpus - 1e-9:
                continue      # `by` nodes fewer still hold this month's work
            for n in terms:
                if n != buy and plan.get(n, 0.0) > 0.5:
                    v = var[n]                  # a job's x, or a service's y of the row's month
                    free |= (service_months.get((v.workload, row.month), frozenset()) if v.family == "y"
                             else training[v.workload])
        if near is not None:
            free = {n for n in free if var[n].candidate is None or var[n].candidate in near}
        if free and len(free) <= (settings.fewer_nodes_integers if most is None else most):
            name = f"fewer nodes {s}/{i}" + (f" by {by}" if by > 1 else "") + (" (narrowed)" if narrow else "")
            rounds.append(Round(name, frozenset(free), ((buy, float(nodes - by)),)))
    return tuple(rounds)


def _near_candidates(problem: F.Problem, plan: Mapping[str, float], var: Mapping[str, F.Variable]) -> frozenset[str]:
    """The candidates a narrowed fewer-nodes round may move work to: those on an on-prem site,
    and those in a cloud pool (site and instance) the plan already rents for some workload (so
    every candidate the plan uses is among them)."""
    on_prem = {s.name for s in problem.spec.sites if isinstance(s, OnPremSite)}
    candidates = {c.id: c for cs in problem.chosen_from.values() for c in cs}
    rented = {(candidates[v.candidate].site, candidates[v.candidate].instance) for n, x in plan.items()
              if x > 0.5 and (v := var.get(n)) is not None and v.family in ("x", "y")}
    return frozenset(k for k, c in candidates.items() if c.site in on_prem or (c.site, c.instance) in rented)


def lp_held(integers, plan: Mapping[str, float], lp: Mapping[str, float], within: float) -> dict[str, float]:
    """An LP-guided round's held integers, at the plan's values: those whose LP value is within
    `within` of the plan's (Settings.lp_guided_within, lp_rounded_within); the others are free."""
    return {n: float(round(plan.get(n, 0.0))) for n in integers
            if abs(lp.get(n, 0.0) - round(plan.get(n, 0.0))) < within}


def serving_windows(problem: F.Problem, settings: Settings = DEFAULT) -> tuple[Round, ...]:
    """The serving rounds: runs of consecutive months, each freeing every service's mixes and
    replicas in its months, as long as settings.window_integers allows."""
    windows: list[tuple[int, int, frozenset[str]]] = []
    for m, month in enumerate(_serving_by_month(problem, {v.name for v in problem.variables})):
        if not month:
            continue
        if windows and windows[-1][1] == m and len(windows[-1][2]) + len(month) <= settings.window_integers:
            first, _end, free = windows[-1]
            windows[-1] = (first, m + 1, free | month)
        else:
            windows.append((m, m + 1, month))
    return tuple(Round(f"serving months {a}-{b - 1}", free) for a, b, free in windows)


def integer_count(problem: F.Problem) -> int:
    """The problem's integer and binary variables: what Settings.min_integers and search_max count."""
    return sum(1 for v in problem.variables if v.kind != "continuous")


def month_windows(problem: F.Problem, settings: Settings = DEFAULT) -> tuple[Round, ...]:
    """The month windows: settings.window_months months every settings.window_step months over
    the months that hold integers, each freeing every integer of its months, the latest first.
    None where fewer than two months hold integers (one window would free them all)."""
    by_month: dict[int, set[str]] = {}
    for v in problem.variables:
        if v.month is not None and v.kind != "continuous":
            by_month.setdefault(v.month, set()).add(v.name)
    if len(by_month) < 2:
        return ()
    width, first, last = settings.window_months, min(by_month), max(by_month)
    windows = []
    for a in range(first, last + 1, settings.window_step):
        b = min(last, a + width - 1)
        free = frozenset().union(*(by_month.get(m, ()) for m in range(a, b + 1)))
        windows.append(Round(f"months {a}-{b}", free))
        if a + width - 1 >= last:
            break
    return tuple(reversed(windows))
