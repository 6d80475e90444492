"""Cost floors (compiler/estimate/floors.py) and the first plan that bounds the count scan
(pipeline.estimate_candidates): figures worked by hand, and oracles that share no code with them
(the same spec compiled with every count, and pinned twins of the counts left out)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compiler import pipeline
from compiler.catalog import load_catalog
from compiler.estimate import estimate, floors
from compiler import unit_costs
from compiler.optimize import DEFAULT

CAT = load_catalog()

SPEC = """apiVersion: infra-compile/v1
name: floors
horizon_months: 12
sites:
  - {name: aws, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand, spot, reserved_1y]}
  - {name: dc, type: on_prem, power_kw: 150, electricity_usd_per_kwh: 0.1, pue: 1.3, max_racks: 6}
policy: {placement: hybrid, allowed_gpus: [H100, L40S]}
workloads:
  - name: pretrain
    kind: training
    model: llama-3-8b
    tokens: 1.5e12
    seq_len: 4096
    interruptible: true
    window: {start_month: 0, deadline_days: 330}
    data: {dataset_tb: 10, home: aws}
PIN
  - name: chat
    kind: inference
    model: llama-3-8b
    traffic: {peak_rps: 4, input_tokens: 500, output_tokens: 200}
    slo: {ttft_p99_ms: 1000, tpot_p99_ms: 60}
    window: {start_month: 1}
"""


def _write(tmp_path, pin: str = "", name: str = "spec") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SPEC.replace("PIN\n", pin), encoding="utf-8")
    return str(path)


def test_node_hour_rate_is_the_least_allowed_price_worked_by_hand(tmp_path):
    spec, cat, _ = pipeline.validate(_write(tmp_path))
    p5 = CAT.instances["p5.48xlarge"]
    # on demand or a 1-year term (3-year is not an allowed pricing at this site): the cheaper one.
    assert floors.node_hour_rate(spec, "aws", "p5.48xlarge", False, cat) == min(
        p5.price("us-east-1", "on_demand"), p5.price("us-east-1", "reserved_1y"))
    assert floors.node_hour_rate(spec, "aws", "p5.48xlarge", True, cat) == p5.price("us-east-1", "spot")
    # On-prem: power only (owned nodes cost nothing more): 10.2 kW x 1.3 PUE x $0.10/kWh for a DGX H100.
    dgx = CAT.onprem_nodes["dgx-h100"]
    assert floors.node_hour_rate(spec, "dc", "dgx-h100", False, cat) == pytest.approx(dgx.power_kw * 1.3 * 0.1)
    # Egress: 10 TB leave their home (AWS) for the data centre; none at home.
    assert floors.egress(spec, spec.workloads[0], "dc", cat) == pytest.approx(
        10 * unit_costs.egress_usd_per_tb(cat, spec.site("aws")))
    assert floors.egress(spec, spec.workloads[0], "aws", cat) == 0.0


@pytest.mark.slow
def test_a_first_plan_leaves_out_only_counts_no_optimal_plan_uses(tmp_path):
    """Oracles: the spec compiled with every count costs what the compile with a first plan costs,
    and a pinned twin of each left-out count (sampled: the first, middle and last by id) costs more
    than the first plan (a pin restricts, so the open optimum is never dearer than it)."""
    path = _write(tmp_path)
    spec, cat, doc = pipeline.validate(path)
    sample = replace(DEFAULT, sample_from=1)               # take the first-plan path on a small spec
    bounded = pipeline.estimate_candidates(spec, cat, doc, pipeline.CompileOptions(settings=sample))
    # a node budget makes the search run to its proof (without one, a plan within 1% of the month
    # floors' bound is taken as it is: both would be right, but not comparable to the cent)
    prove = pipeline.CompileOptions(max_nodes=DEFAULT.max_nodes)
    with_first = pipeline.compile_spec(path, replace(prove, settings=sample)).plan
    every = estimate(spec, cat)                            # and the scan of every count
    without = pipeline.compile_spec(path, replace(prove, settings=replace(DEFAULT, sample_from=10 ** 9))).plan
    assert with_first.solver.status == without.solver.status == "optimal"
    assert with_first.total_cost_usd == pytest.approx(without.total_cost_usd, rel=1e-9)

    kept = {c.id for c in bounded.by_workload["pretrain"]}
    left_out = sorted((c for c in every.by_workload["pretrain"] if c.id not in kept), key=lambda c: c.id)
    assert len(left_out) >= 5, len(left_out)                # the first plan did leave counts out
    first_cost = with_first.total_cost_usd
    for c in (left_out[0], left_out[len(left_out) // 2], left_out[-1]):
        pin = (f"    pin: {{site: {c.site}, instance: {c.instance.split('+')[0]}, gpus: {c.gpus}"
               f"{', pricing: spot' if c.spot else ''}}}\n")
        twin = pipeline.compile_spec(_write(tmp_path, pin, "twin")).plan
        assert twin.total_cost_usd > first_cost, (c.id, twin.total_cost_usd, first_cost)


@pytest.mark.slow
def test_no_first_plan_means_every_count_and_the_usual_explanation(tmp_path):
    """A spec the sample cannot plan (here: no plan at all, a 99.9% service held to one site) is
    estimated in full and explained as without a first plan: exit 3, the conflict named."""
    from compiler.diagnostics import CompileError

    path = tmp_path / "one-site.yaml"
    path.write_text(SPEC.replace("PIN\n", "").replace("slo: {ttft_p99_ms: 1000, tpot_p99_ms: 60}",
                                                      "slo: {ttft_p99_ms: 1000, tpot_p99_ms: 60, availability: 0.999}\n"
                                                      "    sites: [aws]"), encoding="utf-8")
    outcomes = []
    for sample_from in (1, 10 ** 9):
        with pytest.raises(CompileError) as err:
            pipeline.compile_spec(path, pipeline.CompileOptions(settings=replace(DEFAULT, sample_from=sample_from)))
        outcomes.append((err.value.exit_code, [(d.code, d.message) for d in err.value.diagnostics]))
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == 3
    assert any(code == "E303" and "without aws" in msg for code, msg in outcomes[0][1]), outcomes[0]


def test_the_node_hours_floor_bounds_every_larger_count(tmp_path):
    """build.node_hours_floor at n0 nodes bounds the node-hours of every count n >= n0 from below:
    the count scan skips, without estimating it, a count the floor already puts past the deadline,
    so a count the floor wrongly skipped would be a plan lost. Oracle: the estimate itself, count
    by count, on every hardware option of the spec's pretraining job."""
    from compiler.catalog.model import Model
    from compiler.estimate import build
    from compiler.estimate.models import resolve_model
    from compiler.estimate.options import hardware_options

    spec, cat, _ = pipeline.validate(_write(tmp_path))
    job = spec.workloads[0]
    model = resolve_model(job.model, cat)
    assert isinstance(model, Model)
    memo, checked = build.Memo(), 0
    for hw in hardware_options(spec, job, cat):
        for n0 in (1, 2, 4, 8, 32):
            floor = build.node_hours_floor(job, model, hw, n0, cat, memo)
            assert floor is not None
            base, loss = floor
            for n in range(n0, n0 + 12):
                est, _layout, _why = build.llm_training_estimate(job, model, hw, n * hw.gpus_per_node, False, cat, memo)
                if est is not None:
                    assert n * est.duration_hours >= base * (1 + loss * n) * (1 - 1e-9), (hw.label, n0, n)
                    checked += 1
    assert checked > 100, checked


@pytest.mark.slow
@pytest.mark.parametrize("days", [1, 3])
def test_a_pool_whose_every_count_is_late_names_the_last_count_estimated(tmp_path, days):
    """Where no count of a pool finishes by the deadline, the rejection names the last count the
    scan estimated and its duration (counts the floor puts past the deadline are not estimated,
    and so never named). Oracle: the estimate of that count, made directly."""
    import re

    from compiler.estimate import build
    from compiler.estimate.models import resolve_model
    from compiler.estimate.options import hardware_options

    path = tmp_path / "late.yaml"
    path.write_text(SPEC.replace("PIN\n", "").replace("deadline_days: 330", f"deadline_days: {days}"),
                    encoding="utf-8")
    spec, cat, _ = pipeline.validate(str(path))
    job = spec.workloads[0]
    model = resolve_model(job.model, cat)
    hws = {(hw.site, hw.label): hw for hw in hardware_options(spec, job, cat)}
    late = [r for r in estimate(spec, cat).rejected["pretrain"] if r.reason.startswith(f"misses the {days}-day deadline:")]
    assert late, "no pool of the spec misses the deadline on every count"
    for r in late:
        hw = hws[(r.site, r.label)]
        spot = r.reason.endswith("(spot)")
        est, _layout, _why = build.llm_training_estimate(job, model, hw, r.gpus, spot, cat)
        assert est is not None and est.duration_hours > days * 24
        days_said = float(re.search(r": ([0-9.]+) days on", r.reason).group(1))
        assert days_said == round(est.duration_hours / 24, 1) and f"on {r.gpus} GPUs" in r.reason, r.reason
