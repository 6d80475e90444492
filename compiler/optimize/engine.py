"""The neighbourhood-search engine: one Schedule of rounds run from an incumbent plan.

A round holds some integer variables at the incumbent's values and solves the rest exactly as
the full model says, on one HiGHS model built once and re-solved with other variables held
(solve.HighsModel); its plan replaces the incumbent only if it is cheaper. What a round frees is
a neighbourhood (neighbourhoods.py: pure functions of the problem and the incumbent); which
rounds run, in what order and with what node budget is a Schedule (schedules.py: the rounds of
large platforms, the month windows of small ones), declared before the first round runs. The
engine owns the rest: acceptance, the node budgets, the clock, the LP relaxation, rounds solved
together on threads and the merge of their plans, and Ctrl-C.

Every budget is a node count, so where a search ends is the same on every run and machine; with
--time-limit the clock may stop it sooner. The LP relaxation is solved once: it guides the
LP-guided rounds and the fewer-nodes rule, and its optimum is a valid lower bound on every plan
(the model's cut rows are valid inequalities), returned for the gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Mapping

from compiler.optimize import formulate as F
from compiler.optimize.clock import time_left
from compiler.optimize.neighbourhoods import Round, fewer_nodes, lp_held
from compiler.optimize.settings import DEFAULT, Settings
from compiler.problem import integers_of


@dataclass(frozen=True)
class FewerNodes:
    """Fewer-nodes rounds, made from the incumbent when their step begins (fewer_nodes): pools
    whose round frees at most `most` integers; `lp_rule`: not where the LP relaxation buys as
    many nodes as the plan; `until_cheaper`: one at a time until one finds a cheaper plan, the
    cheapest node first or, `by_name`, in the order of the pools' names (otherwise `workers` at a
    time, every one); `by` nodes fewer, in pools of at least `least` nodes; `narrow`: a displaced
    workload is freed only on the data centres and the cloud pools the plan rents; `cutoff`: the
    rounds are told the incumbent's cost (Round.cutoff); `again`: as `until_cheaper`, then the
    rounds are made again from the cheaper plan, until none finds one; `paired`: with `again`,
    the rounds run the schedule's workers at a time, from the same plan (the cheapest plan
    found, or the merge of two, is taken)."""
    most: int
    lp_rule: bool
    until_cheaper: bool
    by: int = 1
    least: int = 1
    narrow: bool = False
    again: bool = False
    paired: bool = False
    cutoff: bool = False
    by_name: bool = False


@dataclass(frozen=True)
class Step:
    """Rounds solved in order: fixed `batches` (each solved at once, on threads), or the
    fewer-nodes rounds `fewer` makes from the plan the step starts on. `passes`: the batches run
    again, in order, until none finds a cheaper plan (that many passes at most). `resume`: a
    round runs again on the plan it made itself (a round whose search stopped at its node budget,
    not at its neighbourhood's optimum, may go on from there); otherwise a round is not run again
    on a plan it left behind."""
    batches: tuple[tuple[Round, ...], ...] = ()
    fewer: FewerNodes | None = None
    passes: int = 1
    resume: bool = False


@dataclass(frozen=True)
class Schedule:
    """The rounds, declared: the `first` steps once; the `cycle`'s steps, repeated until a cycle
    finds nothing cheaper (`cycles` at most); the `tail`'s steps once after them. Each round's
    node budget (`nodes`); whether HiGHS may restart a round's root; the rounds solved at once;
    `choices`: every integer a round may hold (the rest of the model is free in every round);
    `enough`: the search ends once its plan is within this share of the LP bound (None: never);
    `label`: how progress names it."""
    cycle: tuple[Step, ...]
    cycles: int
    nodes: int
    restart: bool
    workers: int
    choices: frozenset[str]
    first: tuple[Step, ...] = ()
    tail: tuple[Step, ...] = ()
    enough: float | None = None
    label: str = "improving the start"
    # the start is priced before the first round (a fixed solve), so the first round's plan must
    # be cheaper than it and `enough` can be judged from the start. Without: the first batch's
    # plan replaces the start (HiGHS was given it, so that plan is no dearer unless HiGHS could
    # not use it), and the model is left as the rounds leave it: a fixed solve on the model the
    # branch-and-bound after the rounds goes on with changes that search's path (HiGHS keeps some
    # state across solves; benchmarks/LOG.md has the measurement)
    price_start: bool = True


def search(problem: F.Problem, start: Mapping[str, float], model, schedule: Schedule, *,
           gap: float | None = None, seconds: float | None = None,
           say: Callable[[str], None] = lambda _m: None,
           settings: Settings = DEFAULT) -> tuple[Mapping[str, float], float | None]:
    """(integer values at least as cheap as `start`, the LP relaxation's bound or None): `start`
    itself where no round finds a cheaper plan. `model(k)` makes the k-th solver model
    (k < the schedule's workers) once it is needed (solve.HighsModel); `gap` is the user's, given
    to every round; `seconds` the search's time limit, where the user gave one."""
    left = time_left(seconds)
    if left() == 0.0:
        return start, None
    engine = _Engine(problem, start, model, schedule, gap, left, say, settings)
    if engine.lp is None:
        return start, None
    return engine.run(), engine.lp.objective


class _Engine:
    """One Schedule as it runs: the incumbent, its cost, the solver models, and for each round
    the plan it last left behind (a round is not run again on it)."""

    def __init__(self, problem: F.Problem, start: Mapping[str, float], model, schedule: Schedule,
                 gap: float | None, left: Callable[[], float | None], say: Callable[[str], None],
                 settings: Settings = DEFAULT) -> None:
        self.problem, self.schedule, self.gap, self.left, self.say = problem, schedule, gap, left, say
        self.settings = settings
        self.make_model, self.models = model, [model(0)]
        self.integers = [v.name for v in problem.variables if v.kind != "continuous"]
        self.incumbent: dict[str, float] = integers_of(problem, start)
        self.left_at: dict[Round, dict[str, float]] = {}    # round -> the incumbent it last left behind
        lp = self.models[0].solve(relax=True, time_limit=left())
        self.lp = lp if lp.has_solution else None
        self.best, self.priced = math.inf, False
        if schedule.price_start:
            priced = self.models[0].solve(fixed=self.incumbent)
            self.best, self.priced = (priced.objective if priced.has_solution else math.inf), True

    def done(self) -> bool:
        """Whether the search ends here: no time left, or the plan within the schedule's
        `enough` of the LP bound (no round could make it more than that cheaper)."""
        enough = self.schedule.enough
        return self.left() == 0.0 or (enough is not None and self.lp is not None and self.best < math.inf
                                      and self.best - self.lp.objective <= enough * abs(self.best))

    def solver(self, k: int):
        while len(self.models) <= k:
            self.models.append(self.make_model(len(self.models)))
        return self.models[k]

    def run(self) -> dict[str, float]:
        """The first steps, the cycles, then the tail; the incumbent they leave (where the time
        runs out or the plan is close enough: the one they had reached)."""
        if self.priced and self.best == math.inf:
            return self.incumbent       # the start is no plan of this model: nothing to improve on
        for step in self.schedule.first:
            if not self.step(step, 0)[0]:
                return self.incumbent
        cycle = 0
        for cycle in range(self.schedule.cycles):
            improved = False
            for step in self.schedule.cycle:
                finished, moved = self.step(step, cycle)
                improved |= moved
                if not finished:
                    return self.incumbent
            if not improved:
                break
        for step in self.schedule.tail:
            if not self.step(step, cycle + 1)[0]:
                break
        return self.incumbent

    def step(self, step: Step, cycle: int) -> tuple[bool, bool]:
        """(whether the step ran to its end, whether the incumbent changed)."""
        if step.fewer is not None and step.fewer.again:
            return self.again(step.fewer, cycle)
        batches = step.batches
        if step.fewer is not None:
            rounds = self.fewer_rounds(step.fewer)
            batches = (tuple((r,) for r in rounds) if step.fewer.until_cheaper
                       else batched(rounds, self.schedule.workers))
        improved = False
        for _pass in range(step.passes):
            moved_now = False
            for batch in batches:
                if self.done():
                    return False, improved
                # every round has run on this very plan and found nothing (identity: a value
                # comparison of every plan would cost more than it saves; batch() skips the rest)
                if step.passes > 1 and all(self.left_at.get(r) is self.incumbent for b in batches for r in b):
                    return True, improved
                moved = self.batch(batch, cycle, step.resume)
                moved_now |= moved
                if moved and step.fewer is not None and step.fewer.until_cheaper:
                    return True, True
            improved |= moved_now
            if not moved_now:
                break
        return True, improved

    def fewer_rounds(self, f: FewerNodes) -> tuple[Round, ...]:
        """The rounds `f` makes from the incumbent, cheapest node first where they run one at a
        time (`until_cheaper`, unless `by_name`), in the order of the pools' names otherwise."""
        rounds = fewer_nodes(self.problem, self.incumbent, self.lp.values if f.lp_rule else None, f.most,
                             f.by, f.least, f.narrow, self.settings)
        if f.cutoff:
            rounds = tuple(replace(r, cutoff=True) for r in rounds)
        if not f.until_cheaper or f.by_name:
            return rounds
        price = {v.name: v.cost for v in self.problem.variables}
        return tuple(sorted(rounds, key=lambda r: (sum(price[b] for b, _n in r.moved), r.name)))

    def again(self, f: FewerNodes, cycle: int) -> tuple[bool, bool]:
        """A FewerNodes step with `again`: the rounds not yet run on the incumbent, one at a time
        (or the schedule's workers at a time, `paired`), the cheapest node first, until one finds
        a cheaper plan; then the rounds are made again from it. The step ends when none finds one."""
        improved = False
        while True:
            todo = tuple(r for r in self.fewer_rounds(f) if self.left_at.get(r) != self.incumbent)
            for batch in batched(todo, self.schedule.workers if f.paired else 1):
                if self.done():
                    return False, improved
                if self.batch(batch, cycle):
                    improved = True
                    break
            else:
                return True, improved

    def held(self, r: Round) -> dict[str, float]:
        if r.lp_within is not None:
            return lp_held(self.integers, self.incumbent, self.lp.values, r.lp_within)
        return {**{n: self.incumbent.get(n, 0.0) for n in self.schedule.choices - r.free}, **dict(r.moved)}

    def rounded(self, sol) -> dict[str, float]:
        return integers_of(self.problem, sol.values)

    def batch(self, batch: tuple[Round, ...], cycle: int, resume: bool = False) -> bool:
        """Solve one batch of rounds from the incumbent; keep the cheapest plan found (a round's
        own, or the merge of several), where it is cheaper. True if the incumbent changed."""
        todo = [r for r in batch if self.left_at.get(r) != self.incumbent]
        if not todo:
            return False     # no other round has moved the plan since these last ran
        s = self.schedule
        kwargs = dict(gap=self.gap, max_nodes=s.nodes, restart=s.restart)
        cutoff = self.best - self.settings.margin(self.best) if self.best < math.inf else None   # as cheaper
        # a round that holds a pool below the incumbent's (`moved`) has no start in the incumbent
        jobs = [(self.solver(k), {**kwargs, "fixed": self.held(r), "start": None if r.moved else self.incumbent,
                                  "improving": r.improving, "cutoff": cutoff if r.cutoff else None})
                for k, r in enumerate(todo)]
        from compiler.optimize.solve import solve_all

        # what runs, told before it runs: a round's root can take many seconds, and the status line
        # would otherwise show the round before it
        self.say(f"{s.label}: {' and '.join(r.name for r in todo)} round {cycle + 1}: searching"
                 + (f" from ${self.best:,.0f}" if self.best < math.inf else ""))
        sols = solve_all(jobs, self.left)
        plans = [(sol.objective, self.rounded(sol), (r.name,)) for r, sol in zip(todo, sols) if sol.has_solution]
        merged = _merge(self.incumbent, [p for p in plans if p[0] < self.best], s.choices)
        if merged is not None:
            sol = self.solver(0).solve(fixed={n: merged[n] for n in s.choices}, time_limit=self.left(),
                                       **{**kwargs, "start": merged, "max_nodes": self.settings.merge_nodes})
            if sol.has_solution:
                plans.append((sol.objective, self.rounded(sol), tuple(r.name for r in todo)))
        before, made = self.incumbent, ()
        for objective, values, names in sorted(plans, key=lambda p: p[0])[:1]:
            if self.best == math.inf or self.settings.cheaper(objective, self.best):
                self.best, self.incumbent, made = objective, values, names
        for r in todo:
            # a round left this plan behind if it found nothing cheaper than the plan it started
            # from (so nothing moved), or made it alone and does not resume from its own plans
            if self.incumbent is before or (made == (r.name,) and not resume):
                self.left_at[r] = self.incumbent
            self.say(f"{s.label}: {r.name} round {cycle + 1}: "
                     + (f"${self.best:,.0f}" if self.best < math.inf else "no plan"))
        return self.incumbent is not before


def batched(rounds: tuple, workers: int) -> list[tuple]:
    """Rounds `workers` at a time, in order."""
    return [tuple(rounds[k:k + workers]) for k in range(0, len(rounds), workers)]


def _merge(incumbent: Mapping[str, float], plans, choices: frozenset[str]) -> dict[str, float] | None:
    """The incumbent with every plan's changed choices, where two or more cheaper plans changed
    disjoint choices (None otherwise). The shared pools are then re-planned for the union by
    a solve with every choice held; that solve says whether the union is feasible at all (two
    rounds may each have leant on a choice the other changed, e.g. a month's two replica counts)."""
    if len(plans) < 2:
        return None
    merged, seen = dict(incumbent), set()
    for _objective, values, _names in plans:
        changed = {n for n in choices if values.get(n, 0.0) != incumbent.get(n, 0.0)}
        if changed & seen:
            return None
        seen |= changed
        merged.update({n: values[n] for n in changed})
    return merged
