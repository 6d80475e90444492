"""Improving rounds: a better plan to start the search from on large platforms.

A solver improves a start only near it, and on a large platform its own search is slow to move:
the 100-workload benchmark's default CBC compile had not finished after 25 minutes, and HiGHS's
root alone takes minutes there. The rounds here are a large-neighbourhood search on HiGHS (a
dependency either way), each one stopped after its root node (ROUND_NODES), so where they end is
the same on every run and machine (node counts, not the clock). Each round holds some integer
variables at the incumbent's values and solves the rest exactly as the full model says; its plan
replaces the incumbent only if it is cheaper. One HiGHS model is built once and re-solved with
other variables held (solve.HighsModel):

- lp-guided: the LP relaxation is solved once (its optimum is also a valid lower bound on every
  plan: the model's cut rows are valid inequalities); every integer variable whose LP value
  equals the incumbent's is held, the others are free (RINS, Danna et al. 2005);
- lp-rounded (large platforms' tail only): as lp-guided, but an integer is held also where its
  LP value rounds to the incumbent's, so only where the LP points away from the plan is free;
- training: every training job's candidate is free, every service's replicas are held;
- serving windows: the replica mixes and replicas of every service in a run of consecutive
  months are free, training and the other months held. Windows are as long as WINDOW_INTEGERS
  allows (a month over it is a window alone), so a window's root stays a few seconds where one
  round over every month took 146 s on the 100-workload benchmark;
- fewer nodes: for each on-prem pool where the plan buys more nodes than the LP relaxation
  (rounded up), the pool is held at one node fewer and the work placed on it is freed (every
  candidate of those services and jobs) in the months where the remaining nodes are too few
  (fewer_nodes). The windows cannot make that move: a node is let go only if every month it is
  used in is free at once.

Everything shared (nodes bought, rented and reserved, fabric, storage) is free in every round, so
a round can move a job or a month's replicas and re-plan the pools and reserved terms around them.
A cycle is the rounds in that order; cycles repeat until one finds nothing cheaper, or CYCLES
cycles (LARGE_CYCLES from SEARCH_MAX integers, where the training round stops at its first
cheaper plan if the jobs have FIRST_PLAN_CANDIDATES candidates each; followed there by
lp-guided and lp-rounded together, then the training round: on the plan the windows leave they
move on-prem pools no window can; then narrowed fewer-nodes rounds (a displaced workload freed
only on the data centres and in the cloud pools the plan rents) of at most NARROWED_INTEGERS,
without the LP rule, cheapest node first: two nodes fewer in pools of TWO_FEWER_NODES nodes
or more, one at a time until one finds a cheaper plan, then one node fewer, WORKERS at a time,
made again from each cheaper plan until none finds one). A round is not run again on the plan
it left behind itself (no other round has moved it since). All of this is declared before the first
round runs: search_plan builds a frozen SearchPlan (the cycle's and the tail's steps, each a
batch of Round records or a FewerNodes rule, and the cycle count, node budget and workers) from
the problem's size and the user's options, and improve runs it.

The cycle's fewer-nodes rounds, and the windows where there are PAIRED_WINDOWS or more, run WORKERS at
a time on threads, from the same plan (HiGHS releases the GIL while it solves). Where two find
cheaper plans that change disjoint choices, their union is tried too, with the pools re-planned
for it (a small MIP, every choice held); the cheapest of the plans found replaces the incumbent.
Which rounds run together is fixed by WORKERS, not by the machine's cores, so the plan is the
same everywhere (a one-core machine takes longer).

Measured on the 100-workload benchmark (2 cores; docs/optimizer.md has the table): from the
greedy start's $13.29M, lp-guided $9.10M, training $8.84M, the windows $8.09M (43 s for the
cycle, 56 s one at a time), one fewer DGX H100 $7.89M (10 s); then the tail: lp-rounded $7.80M
(2.6 s), one fewer L40S server $7.78M (5 s).

Only problems with at least MIN_INTEGERS integer variables get rounds: smaller ones solve to
optimality from the greedy start in seconds (three of the shipped examples have under 1,300;
hybrid-llm-platform has 7,683 and gets them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Mapping

from compiler.optimize import formulate as F
from compiler.optimize.clock import time_left
from compiler.spec import InferenceWorkload

MIN_INTEGERS = 2000
SEARCH_MAX = 20000      # integer variables from which the default compile ends with the rounds' plan
WINDOW_INTEGERS = 6000  # serving integers one window frees at most (a month over it is alone)
ROUND_NODES = 1         # each round stops after its root node
CYCLES = 2              # below SEARCH_MAX integers
LARGE_CYCLES = 1        # from SEARCH_MAX integers (improve() says why)
# Rounds solved at once, on threads. A constant, not the machine's core count: which rounds run
# together decides the plan, and the plan must not depend on the machine.
WORKERS = 2
# Windows run WORKERS at a time only where there are at least this many. A window paired with
# the one before it plans from the plan before that one's changes: with 10 windows (100
# workloads) the cycle ended 0.05% dearer and 13 s faster, with 4 (30 workloads over 60 months)
# 1.6% dearer.
PAIRED_WINDOWS = 8
# Integers a fewer-nodes round may free at most. 100 workloads: rounds of 5,572-7,021 integers
# took 4-15 s (one saved $199k); one of 11,908 took 38 s and found nothing cheaper. At 300
# workloads every pool's round but one is over it (the one under found nothing).
FEWER_NODES_INTEGERS = 8000
# Integers a narrowed fewer-nodes round (the large platforms' tail) may free at most: the
# long-jobs platform's HGX H100 round at fra-dc1 frees 8,030 and takes $240k off the plan in 9 s.
NARROWED_INTEGERS = 9000
# The LP-guided rounds hold an integer where its LP value is within this of the incumbent's:
# lp-guided (RINS) only where they are equal; lp-rounded, the large platforms' tail round, also
# where the LP's value rounds to the incumbent's (improve() says why).
LP_HELD_WITHIN = {"lp-guided": 1e-6, "lp-rounded": 0.5}
# From SEARCH_MAX integers the training round (cycle and tail) stops at its first cheaper plan
# where the training jobs have at least this many candidates each on average (long training
# windows: many node counts per job): there its root is long, and spent mostly on sub-MIPs
# after that plan (search_plan says why).
FIRST_PLAN_CANDIDATES = 150
# Pools where the plan buys at least this many nodes also get, in the tail, a round two nodes
# fewer: one node of many moves the plan by too little for HiGHS's root to find the repacking.
TWO_FEWER_NODES = 20
MERGE_NODES = 500      # the pools' re-plan after a merge: a small MIP (1,763 integers at 100 workloads)


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
                most: int | None = None, by: int = 1, least: int = 1, narrow: bool = False) -> tuple[Round, ...]:
    """Rounds that buy one node fewer in an on-prem pool.
    The windows cannot: a bought node is used in many months, and a window holds all but a
    few, so the plan keeps every node some held month fills. Such a round holds the pool at one
    node fewer and frees, in each month where the remaining nodes are too few for what runs
    there, every service and training job on the pool (all of its candidates, so it can move
    anywhere); everything else is held. Pools whose round would free more than
    `most` (by default FEWER_NODES_INTEGERS) integers are left out, and, given the LP relaxation's values `lp`, pools
    where it buys as many nodes as the plan, rounded up (there a round found nothing cheaper on
    the benchmarks, and one took 54 s doing so). `by`: the pool is held at that many nodes fewer
    instead of one (then its name says so), in pools where the plan buys at least `least`.
    `narrow`: of a displaced workload's candidates only those on the data centres' pools and in
    the cloud pools the plan already rents are freed, with the ones the plan uses (the others are
    held at zero), so a round frees about half as many integers and a node fewer at a pool shared
    by many services fits under `most`; the round then keeps only plans cheaper than the
    incumbent (Round.cutoff)."""
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
        if free and len(free) <= (FEWER_NODES_INTEGERS if most is None else most):
            name = f"fewer nodes {s}/{i}" + (f" by {by}" if by > 1 else "") + (" (narrowed)" if narrow else "")
            rounds.append(Round(name, frozenset(free), ((buy, float(nodes - by)),), cutoff=narrow))
    return tuple(rounds)


def _near_candidates(problem: F.Problem, plan: Mapping[str, float], var: Mapping[str, F.Variable]) -> frozenset[str]:
    """The candidates a narrowed fewer-nodes round may move work to: those on an on-prem site,
    and those in a cloud pool (site and instance) the plan already rents for some workload (so
    every candidate the plan uses is among them)."""
    from compiler.spec import OnPremSite

    on_prem = {s.name for s in problem.spec.sites if isinstance(s, OnPremSite)}
    candidates = {c.id: c for cs in problem.chosen_from.values() for c in cs}
    rented = {(candidates[v.candidate].site, candidates[v.candidate].instance) for n, x in plan.items()
              if x > 0.5 and (v := var.get(n)) is not None and v.family in ("x", "y")}
    return frozenset(k for k, c in candidates.items() if c.site in on_prem or (c.site, c.instance) in rented)


def lp_held(integers, plan: Mapping[str, float], lp: Mapping[str, float], within: float) -> dict[str, float]:
    """An LP-guided round's held integers, at the plan's values: those whose LP value is within
    `within` of the plan's (LP_HELD_WITHIN); the others are free."""
    return {n: float(round(plan.get(n, 0.0))) for n in integers
            if abs(lp.get(n, 0.0) - round(plan.get(n, 0.0))) < within}


def serving_windows(problem: F.Problem) -> tuple[Round, ...]:
    """The serving rounds: runs of consecutive months, each freeing every service's mixes and
    replicas in its months, as long as WINDOW_INTEGERS allows."""
    windows: list[tuple[int, int, frozenset[str]]] = []
    for m, month in enumerate(_serving_by_month(problem, {v.name for v in problem.variables})):
        if not month:
            continue
        if windows and windows[-1][1] == m and len(windows[-1][2]) + len(month) <= WINDOW_INTEGERS:
            first, _end, free = windows[-1]
            windows[-1] = (first, m + 1, free | month)
        else:
            windows.append((m, m + 1, month))
    return tuple(Round(f"serving months {a}-{b - 1}", free) for a, b, free in windows)


def integer_count(problem: F.Problem) -> int:
    """The problem's integer and binary variables: what MIN_INTEGERS and SEARCH_MAX count."""
    return sum(1 for v in problem.variables if v.kind != "continuous")


def search_skipped(problem: F.Problem, time_limit: float | None, nodes_asked: bool) -> bool:
    """Whether the default compile ends with the rounds' plan, without a branch-and-bound search:
    on platforms of SEARCH_MAX integers or more, unless the user asked for a search (a time
    limit, or a node budget: `nodes_asked`). There the search's root alone takes minutes
    (100 workloads: HiGHS's root cuts 140 s) and the rounds' plan is already below the best plan
    a 30-minute HiGHS search found."""
    return integer_count(problem) >= SEARCH_MAX and time_limit is None and not nodes_asked


def search_plan(problem: F.Problem, max_nodes: int | None = None, *, cycles: int | None = None,
                workers: int | None = None) -> SearchPlan:
    """The rounds for `problem`, from its size and the user's node budget `max_nodes` (a round
    takes at most ROUND_NODES of it); `cycles` and `workers` replace CYCLES (LARGE_CYCLES) and
    WORKERS (benchmarks/best_known.py runs the rounds to their fixed point)."""
    workers = WORKERS if workers is None else workers
    # Where the rounds' plan is the compile's answer (SEARCH_MAX integers or more), one cycle, and
    # HiGHS does not restart a round's root: on the 100-workload benchmark a cycle takes 61 s
    # instead of 107 s and ends cheaper ($8.09M, not $8.12M). Below it the rounds only start a
    # search, two cycles, HiGHS's defaults.
    large = integer_count(problem) >= SEARCH_MAX
    groups = dict(choice_groups(problem))
    training = Round("training", groups["training"])
    lp_guided = Round("lp-guided", lp_within=LP_HELD_WITHIN["lp-guided"])
    windows = serving_windows(problem)
    if len(windows) == 1 and not large:
        # One window frees every serving integer at once, and below SEARCH_MAX the search follows
        # from the rounds' plan over those integers and every other: the window's root would
        # only do the search's first work twice. Measured: the 10-workload platform's lone
        # window took 5.7 s and the search 11.4 s after it; without it the search found the same
        # optimum and proved it in 9.1 s. hybrid-llm-platform: an equally cheap optimum, 1.7 s sooner.
        windows = ()
    # lp-guided alone (its free set is wherever the LP and the plan differ, choices of every
    # kind), the training round alone, then the windows (`workers` at a time where there are
    # PAIRED_WINDOWS or more: their choices are disjoint), then the fewer-nodes rounds (made
    # from the plan the windows leave) `workers` at a time
    paired = len(windows) >= PAIRED_WINDOWS
    jobs = sum(1 for w in problem.spec.workloads if not isinstance(w, InferenceWorkload))
    if large and len(training.free) >= FIRST_PLAN_CANDIDATES * max(1, jobs):
        # The training jobs have many candidates each: the training round stops at its first
        # cheaper plan, in the cycle and the tail. The rest of its root is sub-MIPs that seldom
        # find more, at the cost of a long root; the rounds after it find more sooner.
        training = replace(training, improving=1)
    cycle = (Step(((lp_guided,), (training,),
                   *(_batched(windows, workers) if paired else [(w,) for w in windows]))),
             Step(fewer=FewerNodes(FEWER_NODES_INTEGERS, lp_rule=True, until_cheaper=False)))
    tail: tuple[Step, ...] = ()
    if large:
        # LP-guided rounds and the training round once more, on the plan the windows and
        # fewer-nodes rounds left: they move on-prem pools and reserved terms no window can. Two
        # LP-guided rounds run together from that plan, RINS and lp-rounded (which holds also
        # what the LP rounds to, and so frees fewer integers), and the cheaper plan is kept:
        # which of them finds more depends on the platform. From the greedy start RINS is the
        # better, so the cycle keeps it alone (docs/optimizer.md, "The lp-rounded and training
        # rounds", has the measurements).
        # Then fewer-nodes rounds once more, on that plan and without the LP rule (on 100
        # workloads one L40S server fewer saves $41,665 there, though the LP buys 2.23 of them),
        # the cheapest node first. They are narrowed (a displaced workload freed
        # only on the data centres and the pools the plan rents): half the integers, so pools
        # shared by many services qualify, and each round's root is short. Pools of many nodes
        # (TWO_FEWER_NODES) first get a round two nodes fewer, until one finds a cheaper plan:
        # one node of many at a time leaves HiGHS's root too little room to repack the work.
        # Then the one-node rounds, two pools' at a time from the same plan, made again from
        # each cheaper plan until none finds one. Pairs find more than one round at a time:
        # where both find a plan, the cheaper is taken (not the first) and their merge, both
        # pools a node fewer, is tried (docs/optimizer.md, "Narrowed fewer-nodes rounds" and
        # "The one-node rounds two at a time", has the measurements).
        lp_rounded = Round("lp-rounded", lp_within=LP_HELD_WITHIN["lp-rounded"])
        tail = (Step(((lp_guided, lp_rounded), (training,))),
                Step(fewer=FewerNodes(NARROWED_INTEGERS, lp_rule=False, until_cheaper=True, by=2,
                                      least=TWO_FEWER_NODES, narrow=True)),
                Step(fewer=FewerNodes(NARROWED_INTEGERS, lp_rule=False, until_cheaper=True, narrow=True,
                                      again=True, paired=True)))
    return SearchPlan(cycle=cycle, cycles=(LARGE_CYCLES if large else CYCLES) if cycles is None else cycles,
                      tail=tail, nodes=min(ROUND_NODES, max_nodes or ROUND_NODES), restart=not large,
                      workers=workers, choices=groups["training"] | groups["serving"])


def improve(problem: F.Problem, start: Mapping[str, float], model, *, gap: float | None = None,
            seconds: float | None = None, max_nodes: int | None = None,
            say: Callable[[str], None] = lambda _m: None,
            plan: SearchPlan | None = None) -> tuple[Mapping[str, float], float | None]:
    """(integer values at least as good as `start`, the LP relaxation's bound or None): `start`
    itself where the problem is small or no round finds a cheaper plan. `model(k)` makes the
    k-th solver model (k < the plan's workers) once it is needed (solve.HighsModel); `max_nodes`
    is the user's node budget; `plan` the rounds to run (search_plan's by default)."""
    if integer_count(problem) < MIN_INTEGERS:
        return start, None
    left = time_left(seconds)
    if left() == 0.0:
        return start, None
    search = _Search(problem, start, model, plan or search_plan(problem, max_nodes), gap, left, say)
    if search.lp is None:
        return start, None
    return search.run(), search.lp.objective


class _Search:
    """The rounds of one SearchPlan as they run: the incumbent, its cost, the solver models, and
    for each round the plan it last left behind (a round is not run again on it)."""

    def __init__(self, problem: F.Problem, start: Mapping[str, float], model, plan: SearchPlan,
                 gap: float | None, left: Callable[[], float | None], say: Callable[[str], None]) -> None:
        self.problem, self.plan, self.gap, self.left, self.say = problem, plan, gap, left, say
        self.make_model, self.models = model, [model(0)]
        self.integers = [v.name for v in problem.variables if v.kind != "continuous"]
        self.choices = plan.choices
        self.incumbent: dict[str, float] = dict(start)
        self.best = math.inf
        self.left_at: dict[str, dict[str, float]] = {}    # round -> the incumbent it last left behind
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
                             f.by, f.least, f.narrow)
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
            todo = tuple(r for r in self.fewer_rounds(f) if self.left_at.get(r.name) != self.incumbent)
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
        todo = [r for r in batch if self.left_at.get(r.name) != self.incumbent]
        if not todo:
            return False     # no other round has moved the plan since these last ran
        kwargs = dict(gap=self.gap, max_nodes=self.plan.nodes, restart=self.plan.restart)
        # a fewer-nodes round holds a pool below the incumbent's: the incumbent is no start there
        cutoff = self.best - 1e-6 * max(1.0, abs(self.best))    # as the test below for a cheaper plan
        jobs = [(self.solver(k), {**kwargs, "fixed": self.held(r), "start": None if r.moved else self.incumbent,
                                  "improving": r.improving,
                                  "cutoff": cutoff if r.cutoff and self.best < math.inf else None})
                for k, r in enumerate(todo)]
        sols = _solve_all(jobs, self.left)
        plans = [(sol.objective, self.rounded(sol), (r.name,)) for r, sol in zip(todo, sols) if sol.has_solution]
        merged = _merge(self.incumbent, [p for p in plans if p[0] < self.best], self.choices)
        if merged is not None:
            sol = self.solver(0).solve(fixed={n: merged[n] for n in self.choices}, time_limit=self.left(),
                                       **{**kwargs, "start": merged, "max_nodes": MERGE_NODES})
            if sol.has_solution:
                plans.append((sol.objective, self.rounded(sol), tuple(r.name for r in todo)))
        before, made = self.incumbent, ()
        for objective, values, names in sorted(plans, key=lambda p: p[0])[:1]:
            if self.best == math.inf or objective < self.best - 1e-6 * max(1.0, abs(self.best)):
                self.best, self.incumbent, made = objective, values, names
        for r in todo:
            # a round left this plan behind if it made it alone, or found nothing cheaper than
            # the plan it started from (and so nothing moved)
            if self.incumbent is before or made == (r.name,):
                self.left_at[r.name] = self.incumbent
            self.say(f"improving the start: {r.name} round {cycle + 1}: "
                     + (f"${self.best:,.0f}" if self.best < math.inf else "no plan"))
        return self.incumbent is not before


def _batched(rounds: tuple, workers: int = WORKERS) -> list[tuple]:
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
