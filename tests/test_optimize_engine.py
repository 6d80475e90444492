"""The neighbourhood-search engine (compiler/optimize/engine.py) running the rounds' schedule
(schedules.rounds): a start at least as cheap as the greedy one, the same on every run, a valid
LP bound; the neighbourhoods (neighbourhoods.py) checked against capacity rows.
The persistent HiGHS model the rounds use (solve.HighsModel) is checked against solve()."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.optimize import engine, schedules
from compiler.optimize import formulate as F
from compiler.optimize import neighbourhoods as nb
from compiler.optimize.formulate import Constraint, formulate
from compiler.optimize.neighbourhoods import choice_groups, serving_windows
from compiler.optimize.settings import DEFAULT, SolveOptions
from compiler.optimize.solve import HighsModel, solve, solve_all
from compiler.optimize.start import greedy_start
from shared_cache import proven_objective

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from generate import generate  # noqa: E402


def S(**changes):
    """The default settings with `changes`: what a test passes instead of patching a module."""
    return replace(DEFAULT, **changes)


def _cost_at(problem, values):
    """The cheapest completion of a start: every integer variable held, the rest solved."""
    rows = tuple(Constraint(f"fix[{n}]", "fix", ((n, 1.0),), "==", v) for n, v in sorted(values.items()))
    sol = solve(replace(problem, constraints=problem.constraints + rows), solver="highs")
    assert sol.status == "optimal", "the start breaks a constraint"
    return sol.objective


@pytest.fixture(scope="module")
def problem():
    return formulate(generate(20, 1, horizon=12))


@pytest.fixture(scope="module")
def half_year():
    """The same 20 workloads over 6 months: what a test of the solve paths, not of the rounds'
    measured costs, needs (its MIPs take a quarter of the time)."""
    return formulate(generate(20, 1, horizon=6))


@pytest.mark.slow
def test_groups_split_the_choices_and_leave_the_shared_pools_free(problem):
    groups = dict(choice_groups(problem))
    assert set(groups) == {"training", "serving"}
    assert groups["training"] and groups["serving"]
    assert not groups["training"] & groups["serving"]
    for name in groups["training"]:
        assert name.startswith("x[")
    for name in groups["serving"]:
        assert name.startswith(("y[", "mix["))
    kinds = {v.name: v.kind for v in problem.variables}
    shared = {n for n, k in kinds.items() if k != "continuous"} - groups["training"] - groups["serving"]
    assert shared and not any(n.startswith(("x[", "y[", "mix[")) for n in shared)


def _model(problem):
    return lambda k=0: HighsModel(problem)


def _results(messages: list[str]) -> list[str]:
    """The rounds' results, each "...: $X" (every round is also told as it starts: "...: searching")."""
    return [m for m in messages if ": searching" not in m]


def improve(problem, start, model, *, max_nodes=None, settings=DEFAULT, **kwargs):
    """The rounds' schedule for `problem` run by the engine from `start`, as the compile runs it."""
    return engine.search(problem, start, model, schedules.rounds(problem, max_nodes, settings=settings),
                         settings=settings, **kwargs)


@pytest.mark.slow
def test_windows_cover_every_serving_integer_once_in_month_order(problem):
    windows = serving_windows(problem, S(window_integers=400))
    serving = dict(choice_groups(problem))["serving"]
    freed = [n for w in windows for n in w.free]
    assert len(freed) == len(set(freed)) and set(freed) == serving
    spans = [tuple(int(x) for x in name.rsplit(" ", 1)[1].split("-")) for name in (w.name for w in windows)]
    assert all(a <= b for a, b in spans) and all(b1 < a2 for (_a1, b1), (a2, _b2) in zip(spans, spans[1:]))
    for (a, b), free in zip(spans, (w.free for w in windows)):
        assert len(free) <= 400 or a == b          # over the limit only where one month is
        assert all(a <= int(n.rsplit("@", 1)[1][:3]) <= b for n in free)
    assert len(windows) > 1


@pytest.mark.slow
def test_the_persistent_model_solves_as_solve_does(half_year):
    problem = half_year
    model = HighsModel(problem)
    start = greedy_start(problem)
    held = {n: v for n, v in start.items() if n.startswith("x[")}
    first = {}
    for kwargs in ({"fixed": held}, {"fixed": start}):
        ours, theirs = model.solve(**kwargs), solve(problem, solver="highs", **kwargs)
        assert ours.status == theirs.status == "optimal"
        assert abs(ours.objective - theirs.objective) <= 1e-6 * theirs.objective
        first[len(kwargs["fixed"])] = ours.objective
    lp = model.solve(relax=True)
    assert lp.status == "optimal" and lp.best_bound == lp.objective
    # the model is unchanged by a solve with variables held (or none integer): the same solve
    # again, after the others, gives the same plan as the first time
    again = model.solve(fixed=held)
    assert again.objective == first[len(held)]


@pytest.mark.slow
def test_below_the_threshold_no_rounds_run(problem):
    from compiler.optimize.strategy import choose

    n = sum(v.kind != "continuous" for v in problem.variables)
    assert choose(problem, SolveOptions(settings=S(min_integers=n + 1))).path in ("search", "months")
    assert choose(problem, SolveOptions(settings=S(min_integers=n))).path == "rounds"


@pytest.mark.slow
def test_rounds_never_make_the_start_dearer_and_repeat_exactly(problem):
    s = S(min_integers=0)
    start = greedy_start(problem)
    messages = []
    better, bound = improve(problem, start, _model(problem), say=messages.append, settings=s)
    # each round is told as it starts, then with the plan it left
    starts = [m.split(": searching")[0] for m in messages if ": searching" in m]
    assert starts and starts == [m.split(": $")[0] for m in _results(messages)]
    messages = _results(messages)
    again = improve(problem, start, _model(problem), settings=s)
    assert (better, bound) == again                          # node budgets, not the clock
    assert set(better) == {v.name for v in problem.variables if v.kind != "continuous"}
    # Measured on the exact model: the greedy start completes at $7.75M; the rounds reach
    # $4.18M, within 0.1% of the optimum HiGHS proves for the whole problem ($4.18M). (The
    # CBC fix-and-optimize rounds before them: $4.26M, 2.0% above.)
    before, after = _cost_at(problem, start), _cost_at(problem, better)
    best = proven_objective(problem, gap=1e-6)      # as solve(problem, "highs", gap=1e-6): shared
    assert after < 0.6 * before
    assert best <= after <= 1.002 * best
    assert bound <= best + 1e-6 * best                       # the LP relaxation bounds every plan
    assert messages and messages[0].startswith("improving the start: lp-guided round 1: $")


@pytest.mark.slow
def test_large_platforms_run_one_cycle_then_both_lp_rounds_and_training_and_skip_the_search(problem):
    from compiler.optimize.strategy import choose

    s = S(min_integers=0, search_max=0)
    messages = []
    improve(problem, greedy_start(problem), _model(problem), say=messages.append, settings=s)
    messages = _results(messages)
    rounds = [m.removeprefix("improving the start: ").split(": $")[0] for m in messages]
    assert all(m.endswith(tuple("0123456789")) for m in messages)
    # the windows moved the plan, so the two LP-guided rounds (together) and training run on it
    assert rounds[:2] == ["lp-guided round 1", "training round 1"]
    tail = rounds.index("lp-guided round 2")
    assert rounds[tail:tail + 3] == ["lp-guided round 2", "lp-rounded round 2", "training round 2"]
    # then the narrowed fewer-nodes rounds, one at a time
    assert all(r.startswith("fewer nodes") and r.endswith(" round 2") for r in rounds[tail + 3:])
    cycle = rounds[2:tail]
    assert cycle and all(r.startswith(("serving months", "fewer nodes")) and r.endswith(" round 1") for r in cycle)
    assert choose(problem, SolveOptions(settings=s)).path == "rounds-only"
    assert choose(problem, SolveOptions(time_limit=60.0, settings=s)).path == "rounds"   # a time limit: search
    assert choose(problem, SolveOptions(max_nodes=10, settings=s)).path == "rounds"      # a node budget: search


@pytest.mark.slow
@pytest.mark.parametrize("window_integers, search_max, windows_run", [
    (10**6, 10**9, False),    # one window, a search follows: the search frees what it would
    (400, 10**9, True),       # several windows: each frees a part the search's root would not try alone
    (10**6, 0, True),         # one window, no search after the rounds: the window is the serving work
])
def test_a_lone_window_is_left_to_the_search_that_follows(problem, window_integers, search_max, windows_run):
    s = S(min_integers=0, window_integers=window_integers, search_max=search_max)
    assert (len(serving_windows(problem, s)) == 1) == (window_integers == 10**6)
    messages = []
    improve(problem, greedy_start(problem), _model(problem), say=messages.append, settings=s)
    messages = _results(messages)
    assert any("serving months" in m for m in messages) == windows_run
    assert messages[0].startswith("improving the start: lp-guided round 1: $")


def test_a_time_budget_that_is_spent_returns_the_start(problem):
    start = greedy_start(problem)
    assert improve(problem, start, _model(problem), seconds=0.0, settings=S(min_integers=0)) == (start, None)


@pytest.mark.parametrize("user", [None, 5])
def test_a_round_stops_after_its_root_node_whatever_the_user_allows(problem, user):
    s = S(min_integers=0, cycles=1)
    budgets = []
    choices = frozenset().union(*(g for _n, g in choice_groups(problem)))

    class Recording(HighsModel):
        def solve(self, **kwargs):
            merge = choices <= set(kwargs.get("fixed") or ())     # every choice held
            budgets.append((kwargs.get("relax", False), kwargs.get("max_nodes"), merge))
            return super().solve(**kwargs)

    improve(problem, greedy_start(problem), lambda k=0: Recording(problem), max_nodes=user, settings=s)
    assert budgets[0] == (True, None, False)               # the LP relaxation (the rounds do not price
    rounds = [(relax, nodes) for relax, nodes, merge in budgets[1:] if not merge]    # their start)
    merges = [(relax, nodes) for relax, nodes, merge in budgets[1:] if merge]
    assert rounds and set(rounds) == {(False, s.round_nodes)}
    assert set(merges) <= {(False, s.merge_nodes)}   # the pools' re-plan of a merge


@pytest.mark.slow
@pytest.mark.parametrize("large", [False, True])
def test_highs_restarts_a_round_only_where_a_search_follows(problem, large):
    # From search_max integers the rounds' plan is the answer: one cycle, and HiGHS does not
    # restart a round's root (a cycle then takes about half as long).
    s = S(min_integers=0, search_max=0 if large else 10**9)
    restarts = []

    class Recording(HighsModel):
        def solve(self, **kwargs):
            if not kwargs.get("relax") and kwargs.get("max_nodes"):     # a round, not a price
                restarts.append(kwargs.get("restart", True))
            return super().solve(**kwargs)

    improve(problem, greedy_start(problem), lambda k=0: Recording(problem), settings=s)
    assert restarts and set(restarts) == {not large}


def test_a_round_stopped_at_its_first_cheaper_plan_stops_there_and_the_next_solve_does_not(problem):
    # Round.improving reaches HiGHS as mip_max_improving_sols for that solve only: the model is
    # reused by the next round, which must search its whole root.
    model, start = HighsModel(problem), greedy_start(problem)
    training = dict(choice_groups(problem))["training"]
    choices = frozenset().union(*(g for _n, g in choice_groups(problem)))
    held = {n: v for n, v in start.items() if n in choices - training}
    def option():
        value = model.h.getOptionValue("mip_max_improving_sols")
        return value[1] if isinstance(value, tuple) else value     # highspy: (status, value)

    first = model.solve(fixed=held, start=start, max_nodes=1, restart=False, improving=1)
    assert option() == 1
    whole = model.solve(fixed=held, start=start, max_nodes=1, restart=False)
    assert option() == 2**31 - 1
    # the whole root walks the same path past the first cheaper plan (one thread, a fixed seed)
    assert first.has_solution and whole.objective <= first.objective + 1e-6


def test_rounds_solved_together_give_what_each_gives_alone(problem):
    # The windows run settings.workers at a time on threads: each solve is the one it would be alone.
    model_a, model_b = HighsModel(problem), HighsModel(problem)
    start = greedy_start(problem)
    choices = frozenset().union(*(g for _n, g in choice_groups(problem)))
    windows = serving_windows(problem, S(window_integers=400))
    assert len(windows) >= 2
    held = [{n: v for n, v in start.items() if n in choices - w.free} for w in windows[:2]]
    kwargs = dict(start=start, max_nodes=1, gap=None, restart=False)
    together = solve_all([(model_a, {**kwargs, "fixed": held[0]}),
                          (model_b, {**kwargs, "fixed": held[1]})], lambda: None)
    alone = [HighsModel(problem).solve(fixed=h, **kwargs) for h in held]
    assert [s.objective for s in together] == [s.objective for s in alone]
    assert [dict(s.values) for s in together] == [dict(s.values) for s in alone]


def test_a_merge_takes_disjoint_changes_and_refuses_overlapping_ones():
    incumbent = {"a": 1.0, "b": 0.0, "c": 2.0, "pool": 3.0}
    choices = frozenset({"a", "b", "c"})
    one = (10.0, {"a": 0.0, "b": 1.0, "c": 2.0, "pool": 4.0}, ("w1",))
    two = (11.0, {"a": 1.0, "b": 0.0, "c": 5.0, "pool": 9.0}, ("w2",))
    clash = (9.0, {"a": 0.0, "b": 0.0, "c": 2.0, "pool": 3.0}, ("w3",))
    # every changed choice from both; the pools stay as the incumbent has them (re-planned after)
    assert engine._merge(incumbent, [one, two], choices) == {"a": 0.0, "b": 1.0, "c": 5.0, "pool": 3.0}
    assert engine._merge(incumbent, [one, clash], choices) is None      # both moved a
    assert engine._merge(incumbent, [one], choices) is None             # nothing to merge


def test_a_fewer_nodes_round_frees_just_enough_for_one_node_fewer(problem):
    # Oracle: with every freed choice at zero (the round may move it anywhere) and the pool held
    # at one node fewer, every capacity row of the pool holds; a round frees only choices of work
    # placed on that pool in some month, and holds the pool one node below the plan.
    start = greedy_start(problem)
    rounds = nb.fewer_nodes(problem, start)
    bought = {n: v for n, v in start.items() if n.startswith("buy[") and v > 0}
    assert bought and {r.name.split(" ", 2)[2] for r in rounds} <= {n[4:-1] for n in bought}
    assert rounds
    choices = frozenset().union(*(g for _n, g in choice_groups(problem)))
    for r in rounds:
        name, free, moved = r.name, r.free, dict(r.moved)
        pool = name.split(" ", 2)[2]
        buy = f"buy[{pool}]"
        assert moved == {buy: start[buy] - 1}
        assert free <= choices
        plan = {**{n: (0.0 if n in free else v) for n, v in start.items()}, **moved}
        rows = [c for c in problem.constraints if c.name.startswith(f"capacity[{pool}@")]
        assert rows
        for row in rows:
            assert sum(a * plan.get(n, 0.0) for n, a in row.terms) <= row.rhs + 1e-9, row.name
        # and only what the pool carries: each freed choice belongs to a workload on the pool
        on_pool = {n for row in rows for n, _a in row.terms if start.get(n, 0.0) > 0.5 and n != buy}
        ids = {n[2:-1].split("@")[0] for n in on_pool}
        owners = {w for w, cands in problem.chosen_from.items() for c in cands if c.id in ids}
        ours = {c.id for w in owners for c in problem.chosen_from[w]}
        for n in free:
            if n.startswith("mix["):
                assert n[4:].split("@")[0] in owners, n
            else:
                assert n[2:].split("@")[0].rstrip("]") in ours, n


def test_a_two_nodes_fewer_round_holds_the_pool_two_below_and_frees_enough_for_it(problem):
    # Oracle as for one node fewer: with every freed choice at zero and the pool held two nodes
    # below the plan, every capacity row of the pool holds; pools under `least` nodes get none.
    start = greedy_start(problem)
    bought = {n: v for n, v in start.items() if n.startswith("buy[") and v > 0.5}
    rounds = nb.fewer_nodes(problem, start, by=2)
    assert rounds and {r.name.split(" ")[2] for r in rounds} <= {n[4:-1] for n, v in bought.items() if v >= 2}
    for r in rounds:
        pool = r.name.split(" ")[2]
        assert r.name.endswith(" by 2") and dict(r.moved) == {f"buy[{pool}]": start[f"buy[{pool}]"] - 2}
        plan = {**{n: (0.0 if n in r.free else v) for n, v in start.items()}, **dict(r.moved)}
        for row in (c for c in problem.constraints if c.name.startswith(f"capacity[{pool}@")):
            assert sum(a * plan.get(n, 0.0) for n, a in row.terms) <= row.rhs + 1e-9, row.name
    most = max(bought.values())
    assert nb.fewer_nodes(problem, start, by=2, least=int(most) + 1) == ()
    assert nb.fewer_nodes(problem, start, by=2, least=int(most)) == tuple(
        r for r in rounds if bought[f"buy[{r.name.split(' ')[2]}]"] >= most)


def test_a_narrowed_round_frees_the_work_only_where_it_can_go_near_and_keeps_only_cheaper_plans(problem):
    # Oracle, from the candidates themselves: a narrowed round frees a subset of the full
    # round's choices: every mix, and of the displaced workloads' candidates only those on an
    # on-prem site, in a cloud pool (site and instance) the plan rents, or used by the plan;
    # the capacity oracle still holds (the work on the pool is all freed); and HiGHS is told
    # the incumbent's cost (FewerNodes.cutoff, in the schedule's declaration).
    from compiler.spec import OnPremSite

    start = greedy_start(problem)
    var = {v.name: v for v in problem.variables}
    cands = {c.id: c for cs in problem.chosen_from.values() for c in cs}
    on_prem = {s.name for s in problem.spec.sites if isinstance(s, OnPremSite)}
    rented = {(cands[var[n].candidate].site, cands[var[n].candidate].instance) for n, x in start.items()
              if x > 0.5 and var[n].family in ("x", "y")}
    full = {r.name: r for r in nb.fewer_nodes(problem, start, most=10**9)}
    narrowed = nb.fewer_nodes(problem, start, most=10**9, narrow=True)
    assert narrowed and all(r.name.endswith(" (narrowed)") for r in narrowed)
    held_out = 0
    for r in narrowed:
        whole = full[r.name.removesuffix(" (narrowed)")]
        assert r.free <= whole.free and r.moved == whole.moved
        for n in whole.free:
            c = cands.get(var[n].candidate)
            near = (c is None or start.get(n, 0.0) > 0.5 or c.site in on_prem or (c.site, c.instance) in rented)
            assert (n in r.free) == near, n
            held_out += not near
        pool = r.name.split(" ")[2]
        plan = {**{n: (0.0 if n in r.free else v) for n, v in start.items()}, **dict(r.moved)}
        for row in (c for c in problem.constraints if c.name.startswith(f"capacity[{pool}@")):
            assert sum(a * plan.get(n, 0.0) for n, a in row.terms) <= row.rhs + 1e-9, row.name
    assert held_out      # the narrowing holds some cloud candidates out on this platform


def test_a_cutoff_prunes_every_plan_that_is_not_cheaper(problem):
    # HighsModel.solve(cutoff=): the cheapest completion of the greedy start's choices costs C;
    # told C + 1 it finds C, told C - 1 it finds no plan; the option does not persist.
    model, start = HighsModel(problem), greedy_start(problem)
    cost = model.solve(fixed=start).objective
    assert model.solve(fixed=start, cutoff=cost + 1.0).objective == pytest.approx(cost, rel=1e-9)
    assert not model.solve(fixed=start, cutoff=cost - 1.0).has_solution
    assert model.solve(fixed=start).objective == pytest.approx(cost, rel=1e-9)


def _stubbed_engine(problem, monkeypatch, workers: int):
    """An engine with no solver: its fewer-nodes rounds are one per pool of the three cheapest
    (the dearest first, so the order the engine runs them in is its own), at plan 0; the tests
    give it a batch() of their own. (engine, the three pools, cheapest first)."""
    from types import SimpleNamespace

    from compiler.optimize.engine import Round, _Engine

    price = {v.name: v.cost for v in problem.variables}
    pools = sorted((n for n in price if n.startswith("buy[")), key=lambda n: (price[n], n))[:3]
    rounds = tuple(Round(f"fewer nodes {p[4:-1]}", moved=((p, 1.0),)) for p in reversed(pools))
    monkeypatch.setattr(engine, "fewer_nodes", lambda *a, **k: rounds)
    search = _Engine.__new__(_Engine)
    search.problem, search.left, search.incumbent, search.left_at = problem, lambda: None, {"plan": 0.0}, {}
    search.settings = DEFAULT
    search.schedule = SimpleNamespace(workers=workers, enough=None)
    return search, pools


def test_a_fewer_nodes_step_again_starts_over_from_each_cheaper_plan_until_none_finds_one(problem,
                                                                                         monkeypatch):
    # _Engine.again with the rounds and their outcomes stubbed: the cheapest node first, rounds
    # made again from each cheaper plan, a round not run again on the plan it left, and the
    # step ends when no round finds a cheaper plan.
    from compiler.optimize.engine import FewerNodes

    search, pools = _stubbed_engine(problem, monkeypatch, workers=1)
    price = {v.name: v.cost for v in problem.variables}
    assert len(pools) == 3 and price[pools[0]] <= price[pools[1]] <= price[pools[2]]
    finds = {pools[0]: [True, False], pools[1]: [True], pools[2]: [False]}
    ran = []

    def batch(batch_rounds, cycle):
        (r,) = batch_rounds
        pool = r.moved[0][0]
        ran.append(pool)
        if finds[pool].pop(0):
            search.incumbent = {"plan": search.incumbent["plan"] + 1}
            search.left_at[r] = search.incumbent
            return True
        search.left_at[r] = search.incumbent
        return False

    search.batch = batch
    assert search.again(FewerNodes(10, False, True, narrow=True, again=True), 1) == (True, True)
    # plan 0: the cheapest finds; plan 1: it left that plan, so the next (finds); plan 2: the
    # cheapest again, then the dearest, neither finds: the end
    assert ran == [pools[0], pools[1], pools[0], pools[2]]


def test_a_paired_fewer_nodes_step_runs_its_rounds_two_at_a_time(problem, monkeypatch):
    # As above, `paired`: the rounds go to batch() the plan's workers at a time, the cheapest
    # nodes first; a cheaper plan makes them again, less the round that made it.
    from compiler.optimize.engine import FewerNodes

    search, pools = _stubbed_engine(problem, monkeypatch, workers=2)
    finds = {pools[0]: [True], pools[1]: [False, False], pools[2]: [False]}
    ran = []

    def batch(batch_rounds, cycle):
        ran.append(tuple(r.moved[0][0] for r in batch_rounds))
        found = [r for r in batch_rounds if finds[r.moved[0][0]].pop(0)]
        if found:
            search.incumbent = {"plan": search.incumbent["plan"] + 1}
            search.left_at[found[0]] = search.incumbent
            return True
        search.left_at.update({r: search.incumbent for r in batch_rounds})
        return False

    search.batch = batch
    assert search.again(FewerNodes(10, False, True, narrow=True, again=True, paired=True), 1) == (True, True)
    # plan 0: the two cheapest together, the cheapest finds; plan 1: the other two together
    assert ran == [(pools[0], pools[1]), (pools[1], pools[2])]


def test_no_fewer_nodes_round_where_nothing_was_bought_or_the_lp_buys_as_many(problem):
    start = greedy_start(problem)
    assert nb.fewer_nodes(problem, {n: (0.0 if n.startswith("buy[") else v) for n, v in start.items()}) == ()
    rounds = nb.fewer_nodes(problem, start)
    pools = [r.name.split(" ", 2)[2] for r in rounds]
    first = f"buy[{pools[0]}]"
    # the LP relaxation buys the plan's nodes in the first pool (a fraction over one fewer): no round
    # there; and fewer in the others: theirs stay
    lp = {f"buy[{p}]": 0.0 for p in pools} | {first: start[first] - 0.5}
    assert [r.name for r in nb.fewer_nodes(problem, start, lp)] == [r.name for r in rounds[1:]]
    # `most` bounds the integers a round frees (the tail's rounds: settings.narrowed_integers)
    sizes = sorted(len(r.free) for r in rounds)
    assert nb.fewer_nodes(problem, start, most=sizes[0] - 1) == ()
    assert [len(r.free) for r in nb.fewer_nodes(problem, start, most=sizes[0])] == sizes[:sizes.count(sizes[0])]
    assert nb.fewer_nodes(problem, start, most=sizes[-1]) == rounds


@pytest.mark.slow
def test_a_skipped_search_prices_the_rounds_plan_on_highs_as_cbc_would(monkeypatch):
    # From search_max integers the compile ends with the rounds' plan; its continuous variables
    # are priced on the rounds' HiGHS model, not by a pulp/CBC solve. Oracle: CBC through pulp
    # prices the same plan's integers to the same cost.
    from compiler.optimize import optimize, steps

    s = S(min_integers=0, search_max=0)
    candidates = generate(20, 1, horizon=6)
    pulp_solves = []
    real_solve = steps.solve
    monkeypatch.setattr(steps, "solve", lambda *a, **k: pulp_solves.append(k) or real_solve(*a, **k))
    monkeypatch.setattr(steps, "pulp_price", lambda _s: lambda *a, **k: pulp_solves.append(k) or real_solve(*a, **k))
    plan = optimize(candidates, SolveOptions(solver="cbc", settings=s))
    assert pulp_solves == [] and plan.solver.name == "cbc"
    assert "no branch-and-bound search" in plan.solver.gap_note
    monkeypatch.undo()

    problem = formulate(candidates)
    rounds, _bound = improve(problem, greedy_start(problem), _model(problem), settings=s)
    sol = HighsModel(problem).solve(fixed=rounds)
    # polished and made canonical as the compile does, each plan priced by CBC through pulp
    by_cbc = steps.canonical(problem, steps.polish(problem, sol, "cbc", solve, s), "cbc", solve, s)
    assert plan.total_cost_usd == pytest.approx(by_cbc.objective, rel=1e-7)


@pytest.mark.slow
def test_auto_searches_with_cbc_on_small_platforms_and_highs_from_the_rounds_plan_on_large(monkeypatch):
    """--solver auto (the default): CBC below settings.min_integers, where no rounds run, except
    where the month windows run (HiGHS, as the rounds); from it the search goes on from the
    rounds' plan on their own HiGHS model (no pulp solve), for settle_after nodes, then pruned at
    settle_gap (settle_nodes at most) unless the user set a budget, and ends no dearer than that
    plan. Explicit solvers are kept as asked."""
    from compiler.optimize import optimize, steps
    from compiler.optimize.strategy import choose

    candidates = generate(20, 1, horizon=6)
    problem = formulate(candidates)
    integers = sum(1 for v in problem.variables if v.kind != "continuous")
    below = S(min_integers=integers + 1)
    assert choose(problem, SolveOptions(settings=below)).solver == "highs"   # below it, serving months: month windows
    one_month = replace(problem, variables=tuple(replace(v, month=None) for v in problem.variables))
    assert choose(one_month, SolveOptions(settings=below)).solver == "cbc"
    at = S(min_integers=integers)
    assert choose(problem, SolveOptions(settings=at)).solver == "highs"
    assert [choose(problem, SolveOptions(solver=x, settings=at)).solver for x in ("cbc", "highs")] == ["cbc", "highs"]

    s = S(min_integers=0, search_max=10**9)
    pulp_solves, searches = [], []
    real_solve, real_highs = steps.solve, HighsModel.solve
    monkeypatch.setattr(steps, "solve", lambda *a, **k: pulp_solves.append(k) or real_solve(*a, **k))

    def recording(self, **k):
        # the canonical step's small month-group solves (canonical_nodes each) are not searches
        if not k.get("relax") and not k.get("fixed") and k.get("max_nodes") != s.canonical_nodes:
            searches.append(k)
        return real_highs(self, **k)

    monkeypatch.setattr(HighsModel, "solve", recording)
    plan = optimize(candidates, SolveOptions(settings=s))
    search = searches[0]
    assert plan.solver.name == "highs" and pulp_solves == []
    assert search["max_nodes"] == s.settle_after and search["gap"] is None and search["start"]
    # a second search, pruned at settle_gap, only where the first left more than that
    assert len(searches) <= 2
    assert all(k["max_nodes"] == s.settle_nodes and k["gap"] == s.settle_gap for k in searches[1:])
    rounds_plan = real_highs(HighsModel(problem), fixed=search["start"])
    assert plan.total_cost_usd <= rounds_plan.objective * (1 + 1e-9)
    assert plan.solver.best_bound_usd <= plan.total_cost_usd * (1 + 1e-9)

    for asked in (7, s.max_nodes):                 # the user's budget, not highs_nodes, even the default's
        searches.clear()
        optimize(candidates, SolveOptions(max_nodes=asked, nodes_given=True, settings=s))
        assert [k["max_nodes"] for k in searches] == [asked]
    cbc = optimize(candidates, SolveOptions(solver="cbc", settings=s))
    assert cbc.solver.name == "cbc"
    assert [k["max_nodes"] for k in pulp_solves if "start" in k] == [s.max_nodes]


@pytest.mark.slow
@pytest.mark.parametrize("lifted", [False, True])
def test_the_search_settles_only_where_its_first_nodes_lift_the_bound(monkeypatch, lifted):
    """The default search's first settle_after nodes end more than settle_gap above their bound.
    It settles (steps.settled) only where that bound is above the LP relaxation's: where no cut
    or branch of those nodes lifted it, the settled search moves neither plan nor bound. The
    first search's bound is set here to the LP's, or just above it."""
    from compiler.optimize import optimize, steps
    from compiler.optimize.solve import relative_gap

    candidates = generate(20, 1, horizon=6)
    s = S(min_integers=0, search_max=10**9)
    lp, settled = [], []
    real_highs = HighsModel.solve

    def recording(self, **k):
        sol = real_highs(self, **k)
        if k.get("relax"):
            lp.append(sol.objective)
        elif k.get("max_nodes") == s.settle_after and not k.get("fixed"):
            bound = lp[-1] * (1.001 if lifted else 1.0)
            assert relative_gap(sol.objective, bound) > s.settle_gap   # else it would not settle
            sol = replace(sol, best_bound=bound, gap=relative_gap(sol.objective, bound))
        return sol

    monkeypatch.setattr(HighsModel, "solve", recording)
    monkeypatch.setattr(steps, "settled", lambda model, first, _s, _say=None, _plans_only=False: settled.append(first) or first)
    plan = optimize(candidates, SolveOptions(settings=s))
    assert len(settled) == (1 if lifted else 0)
    assert plan.solver.best_bound_usd == pytest.approx(lp[-1] * (1.001 if lifted else 1.0), abs=0.01)   # cents


@pytest.mark.slow
@pytest.mark.parametrize("paired", [False, True])
def test_ctrl_c_stops_highs_mid_solve_and_reaches_the_caller(problem, paired):
    """A Ctrl-C while HiGHS runs (a large platform's root takes minutes) raises KeyboardInterrupt
    at once: every solve under way stops at its next interrupt point (status kInterrupt, not a
    finished search), no HiGHS thread is left running, and the models solve again afterwards.
    The searches here have no node limit: minutes each, so the signal lands inside them."""
    import os
    import signal
    import threading

    models = [HighsModel(problem) for _ in range(2 if paired else 1)]
    timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        if paired:
            solve_all([(m, {"gap": 0.0}) for m in models], lambda: None)
        else:
            models[0].solve(gap=0.0)
    timer.join()
    interrupted = models[0]._highspy.HighsModelStatus.kInterrupt
    assert [m.h.getModelStatus() for m in models] == [interrupted] * len(models)
    for t in threading.enumerate():     # each returns as soon as its solve has (no HiGHS left running)
        if t.name == "highs" or t.name.startswith("ThreadPoolExecutor"):
            t.join(30)
            assert not t.is_alive()
    assert all(m.solve(relax=True).status == "optimal" for m in models)


def test_lp_guided_holds_where_the_lp_agrees_and_lp_rounded_where_it_rounds_to_the_plan():
    # worked by hand: the plan (a=2, b=0, c=1, d=3) against the LP (2, 0.4, 0.5, 2.7)
    plan = {"a": 2.0, "b": 0.0, "c": 1.0, "d": 3.0}
    lp = {"a": 2.0, "b": 0.4, "c": 0.5, "d": 2.7}
    names = list(plan)
    # RINS: held only where the LP's value equals the plan's
    assert nb.lp_held(names, plan, lp, DEFAULT.lp_guided_within) == {"a": 2.0}
    # rounded: held also where the LP's value rounds to the plan's (b: 0.4, d: 2.7); c's 0.5 is
    # as far from 1 as from 0, so it is free
    assert nb.lp_held(names, plan, lp, DEFAULT.lp_rounded_within) == {"a": 2.0, "b": 0.0, "d": 3.0}


@pytest.mark.slow
def test_the_tail_takes_narrowed_fewer_nodes_rounds_cheapest_node_first_and_starts_over_at_a_cheaper_plan(
        problem):
    s = S(min_integers=0, search_max=0, narrowed_integers=10**9)
    messages = []
    improve(problem, greedy_start(problem), _model(problem), say=messages.append, settings=s)
    messages = _results(messages)
    first = next(k for k, m in enumerate(messages) if m.startswith("improving the start: training round 2"))
    tail = messages[first + 1:]
    assert len(tail) >= 2 and all(m.startswith("improving the start: fewer nodes") and "(narrowed) round 2: $" in m
                                  for m in tail)
    price = {v.name: v.cost for v in problem.variables}
    dollars = [float(m.rsplit("$", 1)[1].replace(",", "")) for m in messages]
    # passes: a pass ends at a round that found a cheaper plan, or where the step changes (two
    # nodes fewer, then one); within each the pools go cheapest node first
    passes, current = [], []
    for k, m in enumerate(tail, first + 1):
        pool = m.split("fewer nodes ")[1].split(" ")[0]
        if current and ("by 2" in m) != current[-1][1]:
            passes.append(current)
            current = []
        current.append((price[F.buy_name(*pool.split("/", 1))], "by 2" in m))
        if dollars[k] < dollars[k - 1]:
            passes.append(current)
            current = []
    passes.append(current)
    for costs in passes:
        assert [c for c, _by in costs] == sorted(c for c, _by in costs)


@pytest.mark.parametrize("large", [False, True])
def test_the_search_plan_is_declared_from_the_problems_size_and_the_users_budget(problem, large):
    """search_plan: below search_max integers, `cycles` cycles of lp-guided, training, the
    windows and the fewer-nodes rounds (LP rule), no tail, HiGHS may restart; from it
    large_cycles, no restart, the training round stopped at its first cheaper plan where the jobs
    have first_plan_candidates candidates each (in the cycle and the tail), and a tail of RINS
    with lp-rounded together, training, then the small fewer-nodes rounds, narrowed (at most
    narrowed_integers): two nodes fewer in pools of two_fewer_nodes nodes, one at a time until
    one finds a cheaper plan, then one node fewer, two at a time, made again from each cheaper
    plan until none finds one. A round's node budget is round_nodes, or the user's if smaller."""
    from compiler.optimize.engine import FewerNodes, Round
    from compiler.optimize.schedules import rounds as search_plan

    s = S(search_max=0 if large else 10**9, window_integers=400)
    plan = search_plan(problem, settings=s)
    names = [[r.name for r in batch] for batch in plan.cycle[0].batches]
    assert names[:2] == [["lp-guided"], ["training"]]
    assert [n for batch in names[2:] for n in batch] == [w.name for w in serving_windows(problem, s)]
    assert plan.cycle[1] == engine.Step(fewer=FewerNodes(s.fewer_nodes_integers, True, False))
    assert plan.cycles == (s.large_cycles if large else s.cycles)
    assert plan.restart is not large and plan.nodes == s.round_nodes
    training = dict(choice_groups(problem))["training"]
    assert Round("training", training) in plan.cycle[0].batches[1]
    if large:
        both, again = plan.tail[0].batches
        assert [r.name for r in both] == ["lp-guided", "lp-rounded"] and again == (Round("training", training),)
        assert [r.lp_within for r in both] == [s.lp_guided_within, s.lp_rounded_within]
        assert plan.tail[1].fewer == FewerNodes(s.narrowed_integers, False, True, by=2,
                                                least=s.two_fewer_nodes, narrow=True, cutoff=True)
        assert plan.tail[2].fewer == FewerNodes(s.narrowed_integers, False, True, narrow=True, again=True,
                                                paired=True, cutoff=True)
        assert len(plan.tail) == 3
    else:
        assert plan.tail == ()
    first = search_plan(problem, settings=replace(s, first_plan_candidates=1))
    stopped = Round("training", training, improving=1) if large else Round("training", training)
    assert first.cycle[0].batches[1] == (stopped,)
    if large:
        assert first.tail[0].batches[1] == (stopped,)
    assert search_plan(problem, max_nodes=10**6, settings=s).nodes == s.round_nodes
    assert search_plan(problem, cycles=7, workers=3, settings=s).cycles == 7
