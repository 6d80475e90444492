"""Improving rounds: a better plan to start the search from on large platforms.

A solver improves a start only near it, and on a large platform its own search is slow to move:
its root alone takes minutes there. The rounds here are a large-neighbourhood search on HiGHS (a
dependency either way), each one stopped after its root node (Settings.round_nodes), so where
they end is the same on every run and machine (node counts, not the clock). Each round holds some
integer variables at the incumbent's values and solves the rest exactly as the full model says;
its plan replaces the incumbent only if it is cheaper. One HiGHS model is built once and
re-solved with other variables held (solve.HighsModel):

- lp-guided: the LP relaxation is solved once (its optimum is also a valid lower bound on every
  plan: the model's cut rows are valid inequalities); every integer variable whose LP value
  equals the incumbent's is held, the others are free (RINS, Danna et al. 2005);
- lp-rounded (large platforms' tail only): as lp-guided, but an integer is held also where its
  LP value rounds to the incumbent's, so only where the LP points away from the plan is free;
- training: every training job's candidate is free, every service's replicas are held;
- serving windows: the replica mixes and replicas of every service in a run of consecutive
  months are free, training and the other months held. Windows are as long as
  settings.window_integers allows (a month over it is a window alone), so a window's root stays
  short;
- fewer nodes: for each on-prem pool where the plan buys more nodes than the LP relaxation
  (rounded up), the pool is held at one node fewer and the work placed on it is freed (every
  candidate of those services and jobs) in the months where the remaining nodes are too few
  (fewer_nodes). The windows cannot make that move: a node is let go only if every month it is
  used in is free at once.

Everything shared (nodes bought, rented and reserved, fabric, storage) is free in every round, so
a round can move a job or a month's replicas and re-plan the pools and reserved terms around them.
A cycle is the rounds in that order; cycles repeat until one finds nothing cheaper, or
settings.cycles cycles (settings.large_cycles from settings.search_max integers, where the
training round stops at its first cheaper plan if the jobs have settings.first_plan_candidates
candidates each; followed there by lp-guided and lp-rounded together, then the training round:
on the plan the windows leave they move on-prem pools no window can; then narrowed fewer-nodes
rounds (a displaced workload freed only on the data centres and in the cloud pools the plan
rents) of at most settings.narrowed_integers, without the LP rule, cheapest node first: two nodes
fewer in pools of settings.two_fewer_nodes nodes or more, one at a time until one finds a cheaper
plan, then one node fewer, settings.workers at a time, made again from each cheaper plan until
none finds one). A round is not run again on the plan it left behind itself (no other round has
moved it since). All of this is declared before the first round runs: search_plan builds a
frozen SearchPlan (the cycle's and the tail's steps, each a batch of Round records or a
FewerNodes rule, and the cycle count, node budget and workers) from the problem's size and the
user's options, and improve runs it.

The cycle's fewer-nodes rounds, and the windows where there are settings.paired_windows or more,
run settings.workers at a time on threads, from the same plan (HiGHS releases the GIL while it
solves). Where two find cheaper plans that change disjoint choices, their union is tried too,
with the pools re-planned for it (a small MIP, every choice held); the cheapest of the plans
found replaces the incumbent. Which rounds run together is fixed by the settings, not by the
machine's cores, so the plan is the same everywhere (a one-core machine takes longer).

Only problems with at least settings.min_integers integer variables get rounds: smaller ones
solve to optimality from the greedy start in seconds. What each round finds on the benchmark
platforms: benchmarks/LOG.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Mapping

from compiler.optimize import formulate as F
from compiler.optimize.clock import time_left
from compiler.optimize.neighbourhoods import Round, choice_groups, fewer_nodes, integer_count, lp_held, serving_windows
from compiler.optimize.settings import DEFAULT, Settings
from compiler.spec import InferenceWorkload

@dataclass(frozen=True)
class FewerNodes:
    """Fewer-nodes rounds, made from the incumbent when their step begins (fewer_nodes): pools
    whose round frees at most `most` integers; `lp_rule`: not where the LP relaxation buys as
    many nodes as the plan; `until_cheaper`: one at a time, the cheapest node first, until one
    finds a cheaper plan (otherwise `workers` at a time, every one); `by` nodes fewer, in pools of
    at least `least` nodes; `narrow`: a displaced workload is freed only on the data centres and
    the cloud pools the plan rents (fewer_nodes), and the rounds are told the incumbent's cost
    (Round.cutoff); `again`: as `until_cheaper`, then the rounds are made again from the cheaper
    plan, until none finds one; `paired`: with `again`, the rounds run the plan's workers at a
    time, from the same plan (the cheapest plan found, or the merge of two, is taken)."""
    most: int
    lp_rule: bool
    until_cheaper: bool
    by: int = 1
    least: int = 1
    narrow: bool = False
    again: bool = False
    paired: bool = False


@dataclass(frozen=True)
class Step:
    """Rounds solved in order: fixed `batches` (each solved at once, on threads), or the
    fewer-nodes rounds `fewer` makes from the plan the step starts on."""
    batches: tuple[tuple[Round, ...], ...] = ()
    fewer: FewerNodes | None = None


@dataclass(frozen=True)
class SearchPlan:
    """The rounds, declared: the cycle's steps, repeated until a cycle finds nothing cheaper
    (`cycles` at most); the tail's steps, once after them; each round's node budget; whether
    HiGHS may restart a round's root; the rounds solved at once; every choice a round may free
    (choice_groups: the rest of a round's choices are held at the incumbent's values)."""
    cycle: tuple[Step, ...]
    cycles: int
    tail: tuple[Step, ...]
    nodes: int
    restart: bool
    workers: int
    choices: frozenset[str]


def search_plan(problem: F.Problem, max_nodes: int | None = None, *, cycles: int | None = None,
                workers: int | None = None, settings: Settings = DEFAULT) -> SearchPlan:
    """The rounds for `problem`, from its size and the user's node budget `max_nodes` (a round
    takes at most settings.round_nodes of it); `cycles` and `workers` replace the settings'
    (benchmarks/best_known.py runs the rounds to their fixed point)."""
    workers = settings.workers if workers is None else workers
    # Where the rounds' plan is the compile's answer (search_max integers or more), one cycle, and
    # HiGHS does not restart a round's root: a cycle then takes about half as long and ends no
    # dearer. Below it the rounds only start a search: two cycles, HiGHS's defaults.
    large = integer_count(problem) >= settings.search_max
    groups = dict(choice_groups(problem))
    training = Round("training", groups["training"])
    lp_guided = Round("lp-guided", lp_within=settings.lp_guided_within)
    windows = serving_windows(problem, settings)
    if len(windows) == 1 and not large:
        # One window frees every serving integer at once, and below search_max the search follows
        # from the rounds' plan over those integers and every other: the window's root would
        # only do the search's first work twice.
        windows = ()
    # lp-guided alone (its free set is wherever the LP and the plan differ, choices of every
    # kind), the training round alone, then the windows (`workers` at a time where there are
    # settings.paired_windows or more: their choices are disjoint), then the fewer-nodes rounds (made
    # from the plan the windows leave) `workers` at a time
    paired = len(windows) >= settings.paired_windows
    jobs = sum(1 for w in problem.spec.workloads if not isinstance(w, InferenceWorkload))
    if large and len(training.free) >= settings.first_plan_candidates * max(1, jobs):
        # The training jobs have many candidates each: the training round stops at its first
        # cheaper plan, in the cycle and the tail. The rest of its root is sub-MIPs that seldom
        # find more, at the cost of a long root; the rounds after it find more sooner.
        training = replace(training, improving=1)
    cycle = (Step(((lp_guided,), (training,),
                   *(_batched(windows, workers) if paired else [(w,) for w in windows]))),
             Step(fewer=FewerNodes(settings.fewer_nodes_integers, lp_rule=True, until_cheaper=False)))
    tail: tuple[Step, ...] = ()
    if large:
        # LP-guided rounds and the training round once more, on the plan the windows and
        # fewer-nodes rounds left: they move on-prem pools and reserved terms no window can. Two
        # LP-guided rounds run together from that plan, RINS and lp-rounded (which holds also
        # what the LP rounds to, and so frees fewer integers), and the cheaper plan is kept:
        # which of them finds more depends on the platform. From the greedy start RINS is the
        # better, so the cycle keeps it alone (benchmarks/LOG.md has the measurements).
        # Then fewer-nodes rounds once more, on that plan and without the LP rule (a pool where
        # the LP buys a fraction of a node more than the plan may still lose a node), the
        # cheapest node first. They are narrowed (a displaced workload freed
        # only on the data centres and the pools the plan rents): half the integers, so pools
        # shared by many services qualify, and each round's root is short. Pools of many nodes
        # (settings.two_fewer_nodes) first get a round two nodes fewer, until one finds a cheaper plan:
        # one node of many at a time leaves HiGHS's root too little room to repack the work.
        # Then the one-node rounds, two pools' at a time from the same plan, made again from
        # each cheaper plan until none finds one. Pairs find more than one round at a time:
        # where both find a plan, the cheaper is taken (not the first) and their merge, both
        # pools a node fewer, is tried (benchmarks/LOG.md has the measurements).
        lp_rounded = Round("lp-rounded", lp_within=settings.lp_rounded_within)
        tail = (Step(((lp_guided, lp_rounded), (training,))),
                Step(fewer=FewerNodes(settings.narrowed_integers, lp_rule=False, until_cheaper=True, by=2,
                                      least=settings.two_fewer_nodes, narrow=True)),
                Step(fewer=FewerNodes(settings.narrowed_integers, lp_rule=False, until_cheaper=True, narrow=True,
                                      again=True, paired=True)))
    default_cycles = settings.large_cycles if large else settings.cycles
    return SearchPlan(cycle=cycle, cycles=default_cycles if cycles is None else cycles, tail=tail,
                      nodes=min(settings.round_nodes, max_nodes or settings.round_nodes), restart=not large,
                      workers=workers, choices=groups["training"] | groups["serving"])


def improve(problem: F.Problem, start: Mapping[str, float], model, *, gap: float | None = None,
            seconds: float | None = None, max_nodes: int | None = None,
            say: Callable[[str], None] = lambda _m: None,
            plan: SearchPlan | None = None, settings: Settings = DEFAULT) -> tuple[Mapping[str, float], float | None]:
    """(integer values at least as good as `start`, the LP relaxation's bound or None): `start`
    itself where the problem is small or no round finds a cheaper plan. `model(k)` makes the
    k-th solver model (k < the plan's workers) once it is needed (solve.HighsModel); `max_nodes`
    is the user's node budget; `plan` the rounds to run (search_plan's by default)."""
    if integer_count(problem) < settings.min_integers:
        return start, None
    left = time_left(seconds)
    if left() == 0.0:
        return start, None
    search = _Search(problem, start, model, plan or search_plan(problem, max_nodes, settings=settings), gap, left,
                     say, settings)
    if search.lp is None:
        return start, None
    return search.run(), search.lp.objective


class _Search:
    """The rounds of one SearchPlan as they run: the incumbent, its cost, the solver models, and
    for each round the plan it last left behind (a round is not run again on it)."""

    def __init__(self, problem: F.Problem, start: Mapping[str, float], model, plan: SearchPlan,
                 gap: float | None, left: Callable[[], float | None], say: Callable[[str], None],
                 settings: Settings = DEFAULT) -> None:
        self.problem, self.plan, self.gap, self.left, self.say = problem, plan, gap, left, say
        self.settings = settings
        self.make_model, self.models = model, [model(0)]
        self.integers = [v.name for v in problem.variables if v.kind != "continuous"]
        self.choices = plan.choices
        self.incumbent: dict[str, float] = dict(start)
        self.best = math.inf
        self.left_at: dict[Round, dict[str, float]] = {}    # round -> the incumbent it last left behind
        lp = self.models[0].solve(relax=True, time_limit=left())
        self.lp = lp if lp.has_solution else None

    def spent(self) -> bool:
        return self.left() == 0.0

    def solver(self, k: int):
        while len(self.models) <= k:
            self.models.append(self.make_model(len(self.models)))
        return self.models[k]

    def run(self) -> dict[str, float]:
        """The plan's cycles, then its tail; the incumbent they leave (where the time runs out:
        the one they had reached)."""
        cycle = 0
        for cycle in range(self.plan.cycles):
            improved = False
            for step in self.plan.cycle:
                done, moved = self.step(step, cycle)
                improved |= moved
                if not done:
                    return self.incumbent
            if not improved:
                break
        for step in self.plan.tail:
            done, _moved = self.step(step, cycle + 1)
            if not done:
                break
        return self.incumbent

    def step(self, step: Step, cycle: int) -> tuple[bool, bool]:
        """(whether the step ran to its end before the time ran out, whether the incumbent changed)."""
        batches = step.batches
        if step.fewer is not None and step.fewer.again:
            return self.again(step.fewer, cycle)
        if step.fewer is not None:
            rounds = self.fewer_rounds(step.fewer)
            batches = (tuple((r,) for r in rounds) if step.fewer.until_cheaper
                       else _batched(rounds, self.plan.workers))
        improved = False
        for batch in batches:
            if self.spent():
                return False, improved
            moved = self.batch(batch, cycle)
            improved |= moved
            if moved and step.fewer is not None and step.fewer.until_cheaper:
                break
        return True, improved

    def fewer_rounds(self, f: FewerNodes) -> tuple[Round, ...]:
        """The rounds `f` makes from the incumbent; the cheapest node first where they run one at
        a time (`until_cheaper`), in the order of the pools' names otherwise."""
        rounds = fewer_nodes(self.problem, self.incumbent, self.lp.values if f.lp_rule else None, f.most,
                             f.by, f.least, f.narrow, self.settings)
        if not f.until_cheaper:
            return rounds
        price = {v.name: v.cost for v in self.problem.variables}
        return tuple(sorted(rounds, key=lambda r: (sum(price[b] for b, _n in r.moved), r.name)))

    def again(self, f: FewerNodes, cycle: int) -> tuple[bool, bool]:
        """A FewerNodes step with `again`: the rounds not yet run on the incumbent, one at a time,
        the cheapest node first, until one finds a cheaper plan; then the rounds are made again
        from it. The step ends when none finds one."""
        improved = False
        while True:
            todo = tuple(r for r in self.fewer_rounds(f) if self.left_at.get(r) != self.incumbent)
            for batch in _batched(todo, self.plan.workers if f.paired else 1):
                if self.spent():
                    return False, improved
                if self.batch(batch, cycle):
                    improved = True
                    break
            else:
                return True, improved

    def held(self, r: Round) -> dict[str, float]:
        if r.lp_within is not None:
            return lp_held(self.integers, self.incumbent, self.lp.values, r.lp_within)
        return {**{n: float(round(self.incumbent.get(n, 0.0))) for n in self.choices - r.free}, **dict(r.moved)}

    def rounded(self, sol) -> dict[str, float]:
        return {n: float(round(sol.values.get(n, 0.0))) for n in self.integers}

    def batch(self, batch: tuple[Round, ...], cycle: int) -> bool:
        """Solve one batch of rounds from the incumbent; keep the cheapest plan found (a round's
        own, or the merge of several). True if the incumbent changed."""
        todo = [r for r in batch if self.left_at.get(r) != self.incumbent]
        if not todo:
            return False     # no other round has moved the plan since these last ran
        kwargs = dict(gap=self.gap, max_nodes=self.plan.nodes, restart=self.plan.restart)
        # a fewer-nodes round holds a pool below the incumbent's: the incumbent is no start there
        cutoff = self.best - self.settings.margin(self.best)    # as settings.cheaper
        jobs = [(self.solver(k), {**kwargs, "fixed": self.held(r), "start": None if r.moved else self.incumbent,
                                  "improving": r.improving,
                                  "cutoff": cutoff if r.cutoff and self.best < math.inf else None})
                for k, r in enumerate(todo)]
        sols = _solve_all(jobs, self.left)
        plans = [(sol.objective, self.rounded(sol), (r.name,)) for r, sol in zip(todo, sols) if sol.has_solution]
        merged = _merge(self.incumbent, [p for p in plans if p[0] < self.best], self.choices)
        if merged is not None:
            sol = self.solver(0).solve(fixed={n: merged[n] for n in self.choices}, time_limit=self.left(),
                                       **{**kwargs, "start": merged, "max_nodes": self.settings.merge_nodes})
            if sol.has_solution:
                plans.append((sol.objective, self.rounded(sol), tuple(r.name for r in todo)))
        before, made = self.incumbent, ()
        for objective, values, names in sorted(plans, key=lambda p: p[0])[:1]:
            if self.best == math.inf or self.settings.cheaper(objective, self.best):
                self.best, self.incumbent, made = objective, values, names
        for r in todo:
            # a round left this plan behind if it made it alone, or found nothing cheaper than
            # the plan it started from (and so nothing moved)
            if self.incumbent is before or made == (r.name,):
                self.left_at[r] = self.incumbent
            self.say(f"improving the start: {r.name} round {cycle + 1}: "
                     + (f"${self.best:,.0f}" if self.best < math.inf else "no plan"))
        return self.incumbent is not before


def _batched(rounds: tuple, workers: int) -> list[tuple]:
    """Rounds `workers` at a time, in order."""
    return [tuple(rounds[k:k + workers]) for k in range(0, len(rounds), workers)]


def _solve_all(jobs, left):
    """Each (model, keyword arguments) solved, on threads where there are several (HiGHS
    releases the GIL while it runs): the same solves, and so the same plans, as one after
    another, in the time of the longest."""
    if len(jobs) == 1:
        model, kwargs = jobs[0]
        return [model.solve(time_limit=left(), **kwargs)]
    from concurrent.futures import ThreadPoolExecutor

    from compiler.optimize.solve import interruptible

    def both():
        with ThreadPoolExecutor(len(jobs)) as pool:
            futures = [pool.submit(lambda m=m, kw=kw: m.solve(time_limit=left(), **kw)) for m, kw in jobs]
            return [f.result() for f in futures]

    # Ctrl-C stops every job's solve (a pool's shutdown would wait for them to finish)
    return interruptible([m for m, _kw in jobs], both)


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
