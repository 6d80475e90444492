"""The engine's schedules (engine.Schedule), declared from the problem's size and the user's
options before the first round runs.

rounds (platforms of settings.min_integers integers or more). A cycle is lp-guided (RINS: every
integer whose LP value differs from the plan's is free), the training round (every job's
candidate free), the serving windows (runs of consecutive months, every service's replicas in
them free, as long as settings.window_integers allows) and the fewer-nodes rounds (an on-prem
pool held a node lower where the LP relaxation buys fewer, the work on it freed where the rest
is too few). Each round stops after its root (settings.round_nodes). Cycles repeat until one
finds nothing cheaper (settings.cycles; settings.large_cycles from settings.search_max
integers, where the rounds' plan is the answer). There a tail follows: RINS with lp-rounded,
the training round, then narrowed fewer-nodes rounds without the LP rule, cheapest node first
(two nodes fewer in pools of settings.two_fewer_nodes, then one node fewer two pools at a
time, made again from each cheaper plan until none finds one). Everything shared (nodes
bought, rented and reserved, fabric, storage) is free in every round, so a round can move a
job or a month's replicas and re-plan the pools and terms around them.

months (smaller platforms whose services span months). The months are coupled only through the
variables that span them (reserved terms, a job's candidate, nodes bought): held at a plan's
values outside two consecutive months, the rest is small enough to search
(settings.window_nodes). The windows run from the last months to the first (demand grows, so
the last months hold the most nodes, and the terms that cover them are best re-planned before
the earlier months settle around them), round after round, until none finds a cheaper plan.
A window cannot let a bought node go (every held month may fill it), so fewer-nodes rounds
follow, in the order of the pools' names, until one finds a cheaper plan; then the windows
again, settings.fewer_passes times at most. The search ends once its plan is within the gap
asked (settings.months_gap) of the LP bound with the month floors.
"""

from __future__ import annotations

from compiler.optimize import formulate as F
from compiler.optimize.engine import FewerNodes, Schedule, Step, batched
from compiler.optimize.neighbourhoods import (Round, choice_groups, integer_count, month_windows,
                                              serving_windows)
from compiler.optimize.settings import DEFAULT, Settings
from compiler.spec import InferenceWorkload


def rounds(problem: F.Problem, max_nodes: int | None = None, *, cycles: int | None = None,
           workers: int | None = None, settings: Settings = DEFAULT) -> Schedule:
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
    # Windows run `workers` at a time where there are settings.paired_windows or more: their
    # choices are disjoint.
    paired = len(windows) >= settings.paired_windows
    jobs = sum(1 for w in problem.spec.workloads if not isinstance(w, InferenceWorkload))
    if large and len(training.free) >= settings.first_plan_candidates * max(1, jobs):
        # The training jobs have many candidates each: the training round stops at its first
        # cheaper plan, in the cycle and the tail. The rest of its root is sub-MIPs that seldom
        # find more, at the cost of a long root; the rounds after it find more sooner.
        training = Round("training", training.free, improving=1)
    cycle = (Step(((lp_guided,), (training,),
                   *(batched(windows, workers) if paired else [(w,) for w in windows]))),
             Step(fewer=FewerNodes(settings.fewer_nodes_integers, lp_rule=True, until_cheaper=False)))
    tail: tuple[Step, ...] = ()
    if large:
        # LP-guided rounds and the training round once more, on the plan the windows and
        # fewer-nodes rounds left: they move on-prem pools and reserved terms no window can. RINS
        # and lp-rounded (which holds also what the LP rounds to, and so frees fewer integers)
        # run together and the cheaper plan is kept: which finds more depends on the platform.
        # Then fewer-nodes rounds without the LP rule (a pool where the LP buys a fraction of a
        # node more than the plan may still lose a node), narrowed so that pools shared by many
        # services qualify and each root is short, and told the incumbent's cost. Pools of many
        # nodes first get a round two nodes fewer: one node of many leaves a root too little room
        # to repack the work. Then one node fewer, two pools at a time from the same plan (the
        # cheaper plan is taken, and their merge is tried), made again from each cheaper plan.
        lp_rounded = Round("lp-rounded", lp_within=settings.lp_rounded_within)
        tail = (Step(((lp_guided, lp_rounded), (training,))),
                Step(fewer=FewerNodes(settings.narrowed_integers, lp_rule=False, until_cheaper=True, by=2,
                                      least=settings.two_fewer_nodes, narrow=True, cutoff=True)),
                Step(fewer=FewerNodes(settings.narrowed_integers, lp_rule=False, until_cheaper=True, narrow=True,
                                      cutoff=True, again=True, paired=True)))
    default_cycles = settings.large_cycles if large else settings.cycles
    return Schedule(cycle=cycle, cycles=default_cycles if cycles is None else cycles, tail=tail,
                    nodes=min(settings.round_nodes, max_nodes or settings.round_nodes), restart=not large,
                    workers=workers, choices=groups["training"] | groups["serving"], price_start=False)


def months(problem: F.Problem, settings: Settings = DEFAULT, *, enough: float | None = None,
           fewer_passes: int | None = None) -> Schedule:
    """The month windows for `problem` (every integer of a month may be held; the spanning ones
    are free in every round), stopping within `enough` of the LP bound (settings.months_gap by
    default); `fewer_passes` replaces the settings'."""
    windows = month_windows(problem, settings)
    fewer_passes = settings.fewer_passes if fewer_passes is None else fewer_passes
    held = frozenset(v.name for v in problem.variables if v.month is not None and v.kind != "continuous")
    step = Step(tuple((w,) for w in windows), passes=settings.window_cycles, resume=True)
    fewer = Step(fewer=FewerNodes(integer_count(problem), lp_rule=False, until_cheaper=True, cutoff=True,
                                  by_name=True))
    return Schedule(first=(step,) if windows else (), cycle=(fewer, step) if windows else (),
                    cycles=fewer_passes, nodes=settings.window_nodes, restart=True, workers=1, choices=held,
                    enough=settings.months_gap if enough is None else enough, label="month windows")

