"""Pin oracle: a pin only restricts a spec, so it can never make the optimum cheaper.

For a spec S and a workload w, S+pin(w) allows a subset of S's plans. So whenever S+pin has a
plan, S has one too, and S's plan, which claims `optimal` or a gap, costs no more than
S+pin's plan beyond that gap:

    pinned_cost >= unpinned_cost * (1 - unpinned_gap) - $0.01

This checks the claim from outside the model: a reduction of candidates, a bound or a decoding
rule that is not exact shows up as a pin that makes the plan cheaper (DESIGN.md section 4,
"Exactness"; /work/shared/optimality-cases/README.md lists the cases this caught).

Sweep: every example in examples/ and RANDOM_SPECS seeded small specs (oracle_specs.py). For each
spec, the pins are drawn from its candidates: every (site, instance) a workload's candidates
use, pinned as {site, instance} (a 99.9% service must span two sites, so it is pinned by
{instance} or {gpu} where that leaves two sites), plus for training jobs {site, instance, gpus}
at counts the ladder may skip (all the owned nodes, 3 and 5 nodes) and {site, instance, pricing}
for reserved terms. A seeded sample of them runs in CI (at most PINS_PER_SPEC per random spec,
EXAMPLE_PINS per example; pins matching the unpinned plan's own choice come last); set
ORACLE_PINS=all (and ORACLE_SPECS=N) for the whole sweep. Compiles are in-process, under the
compiler's branch-and-bound node limit and no time limit, so the sweep is deterministic.

The last test shows the oracle has teeth: a test double that restores the old per-site
inference reduction (one candidate per site, the cheapest per token/s priced alone) makes the
known cases fail it.
"""

from __future__ import annotations

import os
import random
import zlib
from pathlib import Path

import pytest

import oracle_specs as O
from examples_cache import EXAMPLES
from oracle_specs import CASES, ROOT

RANDOM_SPECS = int(os.environ.get("ORACLE_SPECS", "50"))
ALL_PINS = os.environ.get("ORACLE_PINS", "") == "all"
PINS_PER_SPEC = 5
# Examples compile in seconds to a minute each with the exact model: a few pins each in CI.
# multi-region-inference's compiles take most of a minute each: its pins run with ORACLE_PINS=all
EXAMPLE_PINS = {"onprem-vision": 8, "llm-pretrain-aws": 3, "multi-region-inference": 0, "hybrid-llm-platform": 1}
HA = 0.999   # slo.availability at which a service must survive the loss of any one site


def _pin_label(workload: str, pin: dict) -> str:
    return f"{workload} pin {{{', '.join(f'{k}: {v}' for k, v in pin.items())}}}"


def pins_for(data: dict, pools: dict[str, tuple[O.Pool, ...]], outcome: O.Outcome) -> list[tuple[int, str, dict]]:
    """Every pin the sweep may try for this spec, as (priority, workload, pin): priority 0 for
    {site, instance} pins of a choice the unpinned plan did not make, 1 for the other kinds
    (counts, reserved terms), 2 for pins that only repeat the plan's own choice."""
    sites = {s["name"]: s for s in data["sites"]}
    out = []
    for w in data["workloads"]:
        name, pools_w = w["name"], pools.get(w["name"], ())
        chosen = outcome.chosen_by(name)
        ha = w["kind"] == "inference" and w.get("slo", {}).get("availability", 0.99) >= HA
        if ha:
            # One site can never carry a 99.9% service: pin what still spans two sites.
            for key, attr in (("instance", "instance"), ("gpu", "gpu")):
                by: dict[str, set[str]] = {}
                for p in pools_w:
                    by.setdefault(getattr(p, attr), set()).add(p.site)
                for value, at in sorted(by.items()):
                    if len(at) >= 2:
                        used = {getattr(p, attr) for p in pools_w if (p.site, p.instance) in chosen}
                        out.append((2 if used == {value} else 0, name, {key: value}))
            continue
        for p in pools_w:
            base = {"site": p.site, "instance": p.instance}
            out.append((2 if chosen == {(p.site, p.instance)} else 0, name, base))
            if w["kind"] != "training":
                continue
            site = sites[p.site]
            counts = {3, 5}
            if site["type"] == "on_prem":
                counts.add(sum(o["nodes"] for o in site.get("owned", ()) if o["instance"] == p.instance))
            for n in sorted(c for c in counts if c > 0):
                out.append((1, name, {**base, "gpus": n * p.gpus_per_node}))
            if site["type"] == "cloud":
                for term in ("reserved_1y", "reserved_3y"):
                    if term in site.get("pricing", ["on_demand"]):
                        out.append((1, name, {**base, "pricing": term}))
    return out


def sample_pins(pins: list[tuple[int, str, dict]], k: int | None, seed: int) -> list[tuple[str, dict]]:
    """A deterministic sample of k pins (all of them with k None), shuffled by the seed: about
    two thirds {site, instance} pins of choices the plan did not make, then counts and reserved
    terms, then the rest; pins that repeat the plan's own choice last."""
    order = list(pins)
    random.Random(seed).shuffle(order)
    order.sort(key=lambda t: t[0])
    if k is not None and len(order) > k:
        first = [t for t in order if t[0] == 0][: max(1, k - k // 3)]
        rest = sorted((t for t in order if t not in first), key=lambda t: {1: 0, 0: 1}.get(t[0], 2))
        order = first + rest[: k - len(first)]
    return [(w, pin) for _, w, pin in order]


def pin_sweep(path: Path, k: int | None, seed: int, tmp_path: Path,
              pools: dict[str, tuple[O.Pool, ...]] | None = None) -> tuple[O.Outcome, list[str], int]:
    """Compile path and its pinned twins; (unpinned outcome, violations, pins tried). The pins
    come from `pools`, by default the pools of the candidates the compile's estimate stage gave."""
    data = O.load_data(path)
    base = O.compile_outcome(path)
    if base.exit_code not in (0, 3, 5):
        what = " (an internal error: the plan failed its audit)" if base.exit_code == 6 else ""
        return base, [f"{path.name}: the unpinned compile failed{what}: {base}"], 0
    if pools is None:
        pools = dict(base.pools)
    chosen = sample_pins(pins_for(data, pools, base), None if ALL_PINS else k, seed)
    problems = []
    for n, (workload, pin) in enumerate(chosen):
        twin = O.write(O.pin_spec(data, workload, **pin), tmp_path, f"{path.stem}-pin{n:02d}")
        pinned = O.compile_outcome(twin)
        if pinned.exit_code == 2:
            problems.append(f"{path.name}: {_pin_label(workload, pin)}: the pinned twin is invalid "
                            f"(a bug in this test): {pinned}")
            continue
        why = O.relaxation_problem(base, pinned, "unpinned", "pinned")
        if why:
            problems.append(f"{path.name} ({data['name']}): {_pin_label(workload, pin)}: {why}; "
                            f"unpinned {base}, pinned {pinned}")
    return base, problems, len(chosen)


@pytest.mark.slow
@pytest.mark.parametrize("name", [e for e in EXAMPLES if ALL_PINS or EXAMPLE_PINS.get(e, 8)])
def test_pins_never_beat_the_example_plan(name, tmp_path):
    path = ROOT / "examples" / f"{name}.yaml"
    base, problems, tried = pin_sweep(path, EXAMPLE_PINS.get(name, 8), zlib.crc32(name.encode()), tmp_path)
    assert not problems, "\n".join(problems)
    assert base.has_plan, f"{name}: the example has no plan: {base}"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(RANDOM_SPECS))
def test_pins_never_beat_a_random_plan(seed, tmp_path):
    path = O.write(O.random_spec(seed), tmp_path)
    base, problems, tried = pin_sweep(path, PINS_PER_SPEC, seed, tmp_path)
    assert not problems, f"seed {seed} (tests/oracle_specs.random_spec({seed})):\n" + "\n".join(problems)


@pytest.mark.slow
def test_random_specs_are_valid_and_mostly_feasible(tmp_path):
    """The generator's contract: every spec validates; few are infeasible (the compiles are
    the sweep's, cached, when it ran first in this session)."""
    from compiler import pipeline
    from compiler.diagnostics import CompileError

    for seed in range(200):
        path = O.write(O.random_spec(seed), tmp_path)
        try:
            pipeline.validate(path)
        except CompileError as exc:
            pytest.fail(f"random_spec({seed}) is invalid: {[d.message for d in exc.diagnostics]}")
    outcomes = [O.compile_outcome(O.write(O.random_spec(seed), tmp_path)) for seed in range(RANDOM_SPECS)]
    infeasible = [seed for seed, out in enumerate(outcomes) if out.exit_code == 3]
    assert len(infeasible) <= 0.15 * len(outcomes), f"infeasible: seeds {infeasible}"


# --- the oracle catches the old behaviour ------------------------------------------------------

def _old_per_site_inference_reduction(candidates):
    """What formulate() did before the exact model (_cheapest_per_site, INFERENCE_PER_SITE = 1):
    of each inference workload's candidates keep, per site, only the one with the lowest hourly
    price per output token/s priced alone (tests/bruteforce_eval.old_cheapest_per_site: written
    there from the catalog, so it does not depend on the model's code)."""
    from dataclasses import replace

    from bruteforce_eval import old_cheapest_per_site

    spec = candidates.spec
    by_workload = dict(candidates.by_workload)
    for w in spec.workloads:
        if w.kind == "inference":
            kept = old_cheapest_per_site(spec, by_workload.get(w.name, ())).values()
            by_workload[w.name] = tuple(sorted(kept, key=lambda c: c.id))
    return replace(candidates, by_workload=by_workload)


@pytest.fixture
def old_per_site_reduction(monkeypatch):
    """Test double: the estimate stage's candidates reach the model through the old per-site
    inference reduction. Patched where compile_spec looks the stage up (compiler.pipeline), so
    it does not depend on how formulate() is organised."""
    from compiler import pipeline

    inner = pipeline.estimate_candidates
    reduced = []

    def estimate(*args, **kwargs):
        candidates = inner(*args, **kwargs)
        out = _old_per_site_inference_reduction(candidates)
        reduced.append(sum(map(len, candidates.by_workload.values())) - sum(map(len, out.by_workload.values())))
        return out

    monkeypatch.setattr(pipeline, "estimate_candidates", estimate)
    return reduced, pipeline.estimate   # the stage on a spec path, unreduced (not patched)


@pytest.mark.skipif(not CASES.is_dir(), reason=f"{CASES} is absent (the shared optimality cases)")
@pytest.mark.parametrize("case, pin", [
    ("B-gran", {"site": "aws", "instance": "g6e.xlarge"}),
    ("A-owned", {"site": "dc", "instance": "dgx-h100"}),
])
def test_pin_oracle_catches_the_old_per_site_inference_reduction(case, pin, old_per_site_reduction, tmp_path):
    """With the old reduction back, the pin oracle fails on the known cases: the hand-written
    pinned twin, and the sweep's own pins, beat the "optimal" unpinned plan."""
    reduced, unreduced_estimate = old_per_site_reduction
    spec = CASES / f"{case}.yaml"
    unpinned = O.compile_outcome(spec)
    pinned = O.compile_outcome(CASES / f"{case}-pinned.yaml")
    assert reduced and max(reduced) > 0, "the test double reduced nothing"
    why = O.relaxation_problem(unpinned, pinned, "unpinned", "pinned")
    assert why is not None, (f"{case}: the oracle missed the old reduction: unpinned {unpinned}, "
                             f"pinned {pinned}")
    assert "the pinned spec is cheaper" in why, why
    # The sweep finds it too, from the spec alone (its pins from every candidate the estimate
    # stage makes: the old reduction came after it).
    _, problems, tried = pin_sweep(spec, None, 0, tmp_path, pools=dict(O._pools(unreduced_estimate(spec)[0])))
    assert tried and any(f"{_pin_label('chat', pin)}: the pinned spec is cheaper" in p for p in problems), problems
