"""The optimality counterexamples of /work/shared/optimality-cases/ as regression tests.

Each case is a pair: a spec and a twin that only restricts it (a pin), on which the compiler once
reported `optimal` (or exit 3) while the twin had a cheaper plan. A restriction can never make
the optimum cheaper, so for every pair the unpinned spec must compile and cost no more than its
twin beyond the gap it reports; K-resstart must cost no more than K-resstart-marker (which adds a
9-minute job). The shipped examples must stay at or below the plans found by pinning
(hybrid-llm-platform: $166,789) or without the per-site serving reduction (multi-region-inference:
$1,818,250). The case files live outside the repository (../shared from its root); without them
the case tests skip and say so.

The cases were written against the estimates of 847781d. The calibration of issue 15 made their
H100 and A100 bf16 jobs about 13% slower, so some pinned twins no longer met their deadline or
horizon (E-pow2's 96 GPUs, F-prune's 32): every training workload of both twins trains
TOKENS_SCALE of its tokens. Scaling both alike keeps each pair a spec and a restriction of it,
and the pinned sizes feasible again, so the cases still exercise what they were written for.
The hybrid example's ceiling is its pinned twin's cost under the current estimates (the test
below rebuilds that twin from the example itself).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import oracle_specs as O
from oracle_specs import CASES, ROOT
PAIRS = sorted(p.stem[: -len("-pinned")] for p in CASES.glob("*-pinned.yaml")) if CASES.is_dir() else []

needs_cases = pytest.mark.skipif(not CASES.is_dir(), reason=f"{CASES} is absent: the shared optimality "
                                 "cases are not checked out next to this repository")

HYBRID_PINNED = 168_721   # chat-70b and eu-assistant-8b pinned to fra-dc1/dgx-h100, optimal
# (example, the most its plan may cost in USD: the multi-region figure as README.md of the cases
# gives it; the hybrid one is its pinned twin's cost under the current estimates)
# both compile for minutes: slow
EXAMPLE_CEILINGS = [pytest.param("hybrid-llm-platform", HYBRID_PINNED, marks=pytest.mark.slow),
                    pytest.param("multi-region-inference", 1_818_250, marks=pytest.mark.slow)]
TOKENS_SCALE = 0.85


def _today(path: Path, directory: Path) -> Path:
    """The case with every training workload's tokens scaled by TOKENS_SCALE (see above)."""
    data = O.load_data(path)
    for w in data["workloads"]:
        if w.get("kind") == "training" and "tokens" in w:
            w["tokens"] = float(w["tokens"]) * TOKENS_SCALE
    return O.write(data, directory, path.stem)


def _check(relaxed_spec: Path, restricted_spec: Path) -> None:
    relaxed, restricted = O.compile_outcome(relaxed_spec), O.compile_outcome(restricted_spec)
    assert restricted.has_plan, f"{restricted_spec.name} has no plan: {restricted}"
    why = O.relaxation_problem(relaxed, restricted, relaxed_spec.stem, restricted_spec.stem)
    assert why is None, (f"{relaxed_spec.name} vs {restricted_spec.name}: {why}; "
                         f"{relaxed_spec.stem} {relaxed}, {restricted_spec.stem} {restricted}")


@needs_cases
def test_the_cases_are_there():
    assert {"A-owned", "B-gran", "C-quota", "D-ladder", "E-pow2", "F-prune", "I-avail"} <= set(PAIRS), PAIRS
    assert (CASES / "K-resstart.yaml").is_file() and (CASES / "K-resstart-marker.yaml").is_file()


@needs_cases
@pytest.mark.parametrize("case", PAIRS)
def test_unpinned_costs_no_more_than_its_pinned_twin(case, tmp_path):
    _check(_today(CASES / f"{case}.yaml", tmp_path), _today(CASES / f"{case}-pinned.yaml", tmp_path))


@needs_cases
def test_adding_a_job_never_makes_the_plan_cheaper(tmp_path):
    _check(_today(CASES / "K-resstart.yaml", tmp_path), _today(CASES / "K-resstart-marker.yaml", tmp_path))


@pytest.mark.parametrize("example, ceiling", EXAMPLE_CEILINGS)
def test_example_is_at_or_below_a_known_plan(example, ceiling):
    out = O.compile_outcome(ROOT / "examples" / f"{example}.yaml")
    assert out.has_plan, f"{example}: no plan: {out}"
    assert round(out.cost) <= ceiling, (f"{example}: {out}, but a plan of ${ceiling:,} exists "
                                        f"(/work/shared/optimality-cases/README.md)")


@pytest.mark.slow
def test_hybrid_example_beats_its_pinned_twin(tmp_path):
    """The README's pinned twin of hybrid-llm-platform, rebuilt from the example itself."""
    path = ROOT / "examples" / "hybrid-llm-platform.yaml"
    data = O.load_data(path)
    for w in ("chat-70b", "eu-assistant-8b"):
        data = O.pin_spec(data, w, site="fra-dc1", instance="dgx-h100")
    _check(path, O.write(data, tmp_path, "hybrid-llm-platform-pinned"))
