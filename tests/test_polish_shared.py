"""Polish re-plans the shared integers with the plan's choices held (steps.shared): a search
stopped at its node limit can leave terms bought in the wrong months or none where one pays,
which lowering one integer at a time (descend.py) cannot mend: a term swapped for on-demand
hours, or bought a month later, moves several variables at once. Oracle: the model solved to
its end by HiGHS with the same choices held."""

from __future__ import annotations

from dataclasses import replace

import pytest

from optimize_fixtures import candidates, cloud, infer_cand, inference, spec

from compiler.optimize import steps
from compiler.optimize.formulate import formulate
from compiler.optimize.settings import DEFAULT
from compiler.optimize.solve import HighsModel


def _problem():
    """A service of one replica a month for two months, on g6e.xlarge (on demand $1.861 an hour,
    $2,717.06 for both months) or p5.48xlarge, where a 1-year g6e term costs $1,711.70 for them.
    The plan's choices: the replica on g6e both months."""
    site = cloud(pricing=("on_demand", "reserved_1y"))
    svc = inference("svc", rps=2.0, out=100)
    cs = [infer_cand(svc, site, "p5.48xlarge", 1, 400.0), infer_cand(svc, site, "g6e.xlarge", 1, 400.0)]
    problem = formulate(candidates(spec([site], [svc], horizon=2), cs))
    names = sorted(v.name for v in problem.variables)
    on_g6e = {n: 0.0 for n in names if n.startswith("y[") and "p5.48xlarge" in n}
    terms = [n for n in names if n.startswith("reserved[")]
    return problem, on_g6e, terms


def test_hours_on_demand_become_the_term_that_pays_and_the_choices_stay():
    problem, on_g6e, terms = _problem()
    model = HighsModel(problem)
    on_demand = model.solve(fixed={**on_g6e, **{n: 0.0 for n in terms}}, gap=0.0)     # no term bought
    assert on_demand.objective == pytest.approx(2 * 730 * 1.861)
    lp = HighsModel(problem).solve(relax=True).objective
    on_demand = replace(on_demand, status="feasible", best_bound=lp, gap=1 - lp / on_demand.objective)
    polished = steps.polish(problem, on_demand, "highs", steps.priced_on(model), DEFAULT, model)
    oracle = HighsModel(problem).solve(fixed=on_g6e, gap=0.0)
    assert oracle.status == "optimal" and oracle.objective == pytest.approx(1711.704)
    assert polished.objective == pytest.approx(oracle.objective, rel=1e-9)
    assert polished.values["reserved[aws-use1/g6e.xlarge/reserved_1y@000]"] == 1
    assert polished.best_bound == lp and polished.gap == pytest.approx(1 - lp / oracle.objective)
    assert all(polished.values[n] == pytest.approx(on_demand.values[n]) for n in on_demand.values
               if n.startswith(("y[", "mix[")))


def test_lowering_one_integer_at_a_time_cannot_buy_the_term():
    problem, on_g6e, terms = _problem()
    model = HighsModel(problem)
    on_demand = model.solve(fixed={**on_g6e, **{n: 0.0 for n in terms}}, gap=0.0)
    alone = steps.polish(problem, on_demand, "highs", steps.priced_on(model), DEFAULT)     # descend only
    assert alone.objective == pytest.approx(on_demand.objective)


def test_an_idle_term_goes_and_a_plan_cheapest_for_its_choices_is_kept_as_it_is():
    problem, on_g6e, terms = _problem()
    model = HighsModel(problem)
    idle = "reserved[aws-use1/p5.48xlarge/reserved_1y@000]"
    padded = model.solve(fixed={**on_g6e, idle: 1.0}, gap=0.0)
    assert steps.shared(problem, padded, model, DEFAULT).values[idle] == 0
    best = model.solve(fixed=on_g6e, gap=0.0)
    assert steps.shared(problem, best, model, DEFAULT) is best
