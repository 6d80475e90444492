"""The narrowing of limited services (compiler/optimize/narrow.py) in a re-plan: a service the
change leaves untouched keeps the keys it ran on, since the LP that narrows prices no move; a
touched one is narrowed on the LP. Oracle: the candidates made by hand, where the LP's choice is
plain (an L40S replica serves more tokens a dollar than an H100 node here)."""

from __future__ import annotations

from dataclasses import replace

from compiler.optimize import formulate as F
from compiler.optimize.moves import Kept
from compiler.optimize.narrow import narrowed
from optimize_fixtures import LIFTED, candidates, cloud, infer_cand, inference, spec

AWS = cloud()
SVC = inference("svc")
H100 = infer_cand(SVC, AWS, "p5.48xlarge", 8, 900.0)
L40S = infer_cand(SVC, AWS, "g6e.xlarge", 1, 150.0)
CANDS = candidates(spec([AWS], [SVC], horizon=3, policy=replace(LIFTED, max_gpu_types_per_service=1)), [H100, L40S])


def _gpus(cs) -> set[str]:
    return {c.gpu for c in cs.by_workload["svc"]}


def test_without_a_baseline_the_lp_leans_on_the_cheaper_gpu():
    said = []
    assert _gpus(narrowed(CANDS, say=said.append)) == {"L40S"}
    assert said and said[0].startswith("narrowing on the LP: svc")


def test_the_narrowing_builds_one_model_a_choice_and_none_after_the_last(monkeypatch):
    """Cutting candidates only takes keys away, so once every service the first model counts is
    fixed the candidates are final: the search builds their model, the narrowing does not build it
    first. One LP round fixes svc here; an untouched service is fixed with no model at all."""
    built = []
    real = F.formulate
    monkeypatch.setattr(F, "formulate", lambda *a, **k: built.append(1) or real(*a, **k))
    assert _gpus(narrowed(CANDS)) == {"L40S"}
    assert len(built) == 1
    built.clear()
    assert _gpus(narrowed(CANDS, kept=Kept(serving={"svc": frozenset({H100.id})}))) == {"H100"}
    assert len(built) == 1        # the first model says which services are counted


def test_an_untouched_service_keeps_the_gpu_it_ran_on():
    said = []
    kept = Kept(serving={"svc": frozenset({H100.id})})
    assert _gpus(narrowed(CANDS, say=said.append, kept=kept)) == {"H100"}
    assert said == ["narrowing on the baseline: svc kept on the sites and types they ran on (1 of 1 limited services)"]


def test_a_service_the_baseline_no_longer_serves_is_narrowed_on_the_lp():
    # the baseline ran no replica of svc in any month: its demand rows are broken, so it is touched
    problem = F.formulate(CANDS)
    none = {v.name: 0.0 for v in problem.variables if v.family == "y" and v.candidate == H100.id}
    kept = Kept(serving={"svc": frozenset({H100.id})}, values=none)
    said = []
    assert _gpus(narrowed(CANDS, say=said.append, kept=kept)) == {"L40S"}
    assert said[0].startswith("narrowing on the LP: svc")


def test_keys_beyond_a_tightened_limit_are_left_to_the_lp():
    # the baseline ran svc on both GPU types (a limit of 2 then); the limit is now 1
    kept = Kept(serving={"svc": frozenset({H100.id, L40S.id})})
    said = []
    assert _gpus(narrowed(CANDS, say=said.append, kept=kept)) == {"L40S"}
    assert said[0].startswith("narrowing on the LP: svc")


def test_the_search_over_narrowed_candidates_is_told_its_bound_will_be_dropped():
    """A service cheapest on one p5 node plus one 1-GPU L40S node (its L40S quota is 1 GPU) under
    one instance type a site: the plan without the limits breaks a count, so the limited search
    runs over narrowed candidates and states the bound proved without the limits; that solve, and
    only it, is told so (SolveOptions.narrowed: its settled search then stops on its plans alone)."""
    from compiler.operability import solve_within_limits
    from compiler.optimize import SolveOptions, optimize
    from compiler.spec import Policy

    aws = cloud(quotas={"L40S": 1})
    svc = inference("svc", index=1, start=1)
    cs = candidates(spec([aws], [svc], horizon=2, policy=Policy(max_instance_types_per_site=1)),
                    [infer_cand(svc, aws, "p5.48xlarge", 8, 900.0), infer_cand(svc, aws, "g6e.xlarge", 1, 150.0)])
    told = []

    def recording(cands, options):
        told.append((options.narrowed, options.free_path))
        return optimize(cands, options)

    plan, free = solve_within_limits(cs, SolveOptions(gap=1e-9), recording)
    # the narrowed solve also hears the path the solve without the limits took
    assert told == [(False, None), (True, free.solver.strategy.path)]
    assert "searched over the sites and types the LP relaxation leans on" in plan.solver.gap_note
    assert plan.solver.best_bound_usd == free.solver.best_bound_usd


def test_narrowed_candidates_of_a_platform_too_large_to_search_are_not_searched():
    """A search over narrowed candidates takes no branch-and-bound where the solve without the
    limits took none (rounds-only): its bound is dropped, so its root would buy plans only, and a
    re-plan that keeps more services where they ran (fewer integers) takes the same path as the
    compile from scratch. Oracle: the path table of optimize/strategy.py, on a model whose own
    size (between min_integers and search_max) asks for the rounds and a search."""
    from compiler.optimize import SolveOptions
    from compiler.optimize.settings import DEFAULT
    from compiler.optimize.strategy import choose

    problem = F.formulate(CANDS)
    s = replace(DEFAULT, min_integers=0, search_max=10**9)
    assert choose(problem, SolveOptions(settings=s)).path == "rounds"
    assert choose(problem, SolveOptions(settings=s, narrowed=True, free_path="rounds")).path == "rounds"
    large = choose(problem, SolveOptions(settings=s, narrowed=True, free_path="rounds-only"))
    assert large.path == "rounds-only" and "narrowed candidates" in large.why
    # a search the user asked for runs as before
    for asked in (SolveOptions(settings=s, narrowed=True, free_path="rounds-only", time_limit=60.0),
                  SolveOptions(settings=s, narrowed=True, free_path="rounds-only", max_nodes=10)):
        assert choose(problem, asked).path == "rounds"
