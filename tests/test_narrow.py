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
