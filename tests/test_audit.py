"""The independent plan audit (compiler/audit, docs/audit.md).

(a) every shipped example, compiled for real, passes the audit;
(b) one thing broken at a time in a real compiled plan (or its spec) is flagged with its code;
(c) compiler/audit shares no code with the model: it imports nothing from compiler.optimize.
"""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest

import audit_fixtures as F
from compiler.audit import codes
from compiler.plan import Pool
from examples_cache import EXAMPLES, ROOT
from plans import set_at, with_placement, with_workload, workload


# --- (a) real plans pass -----------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_passes_the_audit(name):
    cands, plan = F.compiled(name)
    findings = F.run_audit(cands, plan)
    assert findings == [], "\n".join(f"{f.code} {f.message}" for f in findings)


def test_compile_spec_audits_before_rendering(monkeypatch):
    """The pipeline runs the audit on every plan and turns findings into exit code 6."""
    import compiler.audit as A
    from compiler.diagnostics import CompileError
    from compiler.pipeline import compile_spec

    monkeypatch.setattr(A, "audit", lambda *a: [A.Finding(codes.POWER, "fra-dc1: too much", "$.sites[1].power_kw")])
    with pytest.raises(CompileError) as exc:
        compile_spec(ROOT / "examples" / "onprem-vision.yaml")
    assert exc.value.exit_code == 6
    got = [(d.code, d.message) for d in exc.value.diagnostics]
    assert (codes.POWER, "fra-dc1: too much") in got
    assert any(d.code == "E601" and "independent audit" in d.message for d in exc.value.diagnostics)


def test_cli_exit_code_6_and_no_output_folder(monkeypatch, tmp_path, capsys):
    import compiler.audit as A
    from compiler.cli import EXIT_AUDIT, main

    monkeypatch.setattr(A, "audit", lambda *a: [A.Finding(codes.QUOTA, "aws-use1: month 0 runs too many H100")])
    import compiler.pipeline as P

    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main([str(ROOT / "examples" / "onprem-vision.yaml"), "-o", str(out), "-q"])
    assert exc.value.code == EXIT_AUDIT == P.EXIT_AUDIT == 6
    assert not out.exists()
    err = capsys.readouterr().err
    assert "A405" in err and "independent audit" in err


# --- (b) one thing broken at a time ------------------------------------------------------

HYBRID, PRETRAIN, MULTI, VISION = ("hybrid-llm-platform", "llm-pretrain-aws", "multi-region-inference",
                                   "onprem-vision")


def _flagged(cands, plan, code, spec=None, text=None):
    findings = F.run_audit(cands, plan, spec)
    assert code in F.codes_of(findings), "\n".join(f"{f.code} {f.message}" for f in findings)
    if text:
        assert any(text in f.message for f in findings if f.code == code), [f.message for f in findings]
    return findings


@pytest.mark.slow
def test_a_holding_with_more_nodes_than_its_pool():
    cands, plan = F.compiled(HYBRID)
    w = workload(plan, "llama-70b-continued")
    h = w.placements[0].holdings[0]
    m = next(k for k, n in enumerate(h.monthly_nodes) if n)
    have = F.pool(plan, "fra-dc1", "dgx-h100", h.pricing).monthly_nodes[m]
    bad = F.with_holding(plan, w.name, 0, h.pricing, monthly_nodes=set_at(h.monthly_nodes, m, have + 2))
    _flagged(cands, bad, codes.HOLDING_OVER_POOL, text=f"holds {have + 2} nodes in month {m}, the pool has {have}")


@pytest.mark.slow
def test_owned_nodes_beyond_the_spec():
    cands, plan = F.compiled(HYBRID)
    p = F.pool(plan, "fra-dc1", "dgx-h100", "owned")
    bad = F.with_pool(plan, "fra-dc1", "dgx-h100", "owned", monthly_nodes=set_at(p.monthly_nodes, 4, 9))
    _flagged(cands, bad, codes.OWNED_EXCEEDED, text="pool fra-dc1/dgx-h100 owned: month 4 uses 9 nodes, the site owns 8")


@pytest.mark.slow
def test_a_service_one_replica_short_in_a_month():
    cands, plan = F.compiled(HYBRID)
    w = workload(plan, "chat-70b")
    spec_w = cands.spec.workload("chat-70b")
    from compiler.audit.rules import demand

    tps = {c.id: c.estimate.tokens_per_s for c in cands.by_workload["chat-70b"]}
    for m in range(spec_w.window.start_month, plan.horizon_months):
        carried = sum(p.monthly_replicas[m] * tps[p.candidate] for p in w.placements)
        for i, p in enumerate(w.placements):
            if p.monthly_replicas[m] and carried - tps[p.candidate] < demand(spec_w, m):
                bad = with_placement(plan, "chat-70b", i,
                                     monthly_replicas=set_at(p.monthly_replicas, m, p.monthly_replicas[m] - 1))
                _flagged(cands, bad, codes.SERVICE_SHORT, text=f"in month {m}")
                return
    pytest.fail("no replica of chat-70b is needed in any month")


@pytest.mark.slow
def test_a_service_that_would_not_survive_losing_a_site():
    cands, plan = F.compiled(MULTI)
    w = workload(plan, "chat-70b")
    spec_w = cands.spec.workload("chat-70b")
    from compiler.audit.rules import demand

    m = plan.horizon_months - 1
    keep = w.placements[0]
    tps = next(c for c in cands.by_workload["chat-70b"] if c.id == keep.candidate).estimate.tokens_per_s
    alone = math.ceil(demand(spec_w, m) / tps)
    placements = tuple(replace(p, monthly_replicas=set_at(p.monthly_replicas, m, alone if p is keep else 0))
                       for p in w.placements)
    bad = with_workload(plan, "chat-70b", placements=placements)
    found = _flagged(cands, bad, codes.SITE_LOSS, text=f"in month {m} without {keep.site}")
    assert codes.SERVICE_SHORT not in {f.code for f in found if "chat-70b" in f.message}


def test_a_training_job_on_a_disallowed_gpu():
    cands, plan = F.compiled(PRETRAIN)
    gpu = workload(plan, "llama-70b-pretrain").gpu
    spec = cands.spec
    others = tuple(g for g in spec.policy.allowed_gpus if g != gpu)
    bad_spec = replace(spec, policy=replace(spec.policy, allowed_gpus=others))
    _flagged(cands, plan, codes.GPU_NOT_ALLOWED, spec=bad_spec, text=f"runs on {gpu}")


def test_a_wrong_cost_line():
    cands, plan = F.compiled(VISION)
    lines = replace(plan.cost_breakdown_usd, power=plan.cost_breakdown_usd.power + 1000.0)
    bad = replace(plan, cost_breakdown_usd=lines, total_cost_usd=plan.total_cost_usd + 1000.0)
    found = _flagged(cands, bad, codes.COST_LINE, text="cost line power")
    assert codes.COST_TOTAL not in F.codes_of(found)


def test_a_total_that_is_not_its_lines_and_an_objective_that_is_not_the_total():
    cands, plan = F.compiled(VISION)
    _flagged(cands, replace(plan, total_cost_usd=plan.total_cost_usd + 10.0), codes.COST_TOTAL)
    _flagged(cands, replace(plan, solver=replace(plan.solver, objective_usd=plan.total_cost_usd * 1.01)),
             codes.OBJECTIVE)


@pytest.mark.slow
def test_the_power_budget_exceeded():
    cands, plan = F.compiled(HYBRID)
    site = cands.spec.site("fra-dc1")
    node = cands.catalog.onprem_nodes["dgx-h100"]
    n = math.floor(site.power_kw / (node.power_kw * site.pue)) + 1
    H = plan.horizon_months
    bought = Pool("fra-dc1", "dgx-h100", node.gpu, node.gpus, n, "purchase", "infiniband-ndr",
                    (0,) * H, (0.0,) * H, (0.0,) * H)
    others = tuple(p for p in plan.pools if (p.site, p.instance, p.pricing) != ("fra-dc1", "dgx-h100", "purchase"))
    _flagged(cands, replace(plan, pools=others + (bought,)), codes.POWER,
             text=f"the {n} new nodes draw")


def test_racks_count_the_owned_nodes_of_every_model():
    """Owned nodes of a model no workload uses still take rack units: buying one more node at
    a site whose owned nodes already fill its racks breaks max_racks."""
    cands, plan = F.compiled(VISION)
    from compiler.spec import OwnedNodes

    site = cands.spec.site("lab-dc1")
    node = cands.catalog.onprem_nodes["hgx-h100"]
    free = site.max_racks * 42 - sum(o.nodes * cands.catalog.onprem_nodes[o.instance].rack_units for o in site.owned)
    filler = OwnedNodes("hgx-h100", free // node.rack_units)
    spec = F.with_site(cands.spec, "lab-dc1", owned=site.owned + (filler,))
    H = plan.horizon_months
    one = Pool("lab-dc1", "dgx-a100", "A100-80GB", 8, 1, "purchase", "ethernet-100g", (0,) * H, (0.0,) * H, (0.0,) * H)
    _flagged(cands, replace(plan, pools=plan.pools + (one,)), codes.RACKS, spec=spec, text="max_racks is")


def test_a_cloud_quota_exceeded():
    cands, plan = F.compiled(PRETRAIN)
    p = workload(plan, "llama-70b-pretrain").placements[0]
    gpu = workload(plan, "llama-70b-pretrain").gpu
    site = cands.spec.site(p.site)
    bad_spec = F.with_site(cands.spec, p.site, quotas=MappingProxyType({**site.quotas, gpu: p.gpus - 8}))
    _flagged(cands, plan, codes.QUOTA, spec=bad_spec, text=f"the quota is {p.gpus - 8}")


@pytest.mark.slow
def test_a_reservation_shorter_than_its_term():
    cands, plan = F.compiled(MULTI)
    p = next(p for p in plan.pools if p.pricing == "reserved_1y" and p.reservations
             and p.reservations[0].start_month == 0)
    cut = tuple(n if m < 6 else 0 for m, n in enumerate(p.monthly_nodes))
    bad = F.with_pool(plan, p.site, p.instance, p.pricing, monthly_nodes=cut)
    _flagged(cands, bad, codes.RESERVATION, text="12-month terms")


def test_a_missing_workload():
    cands, plan = F.compiled(PRETRAIN)
    bad = replace(plan, workloads=tuple(w for w in plan.workloads if w.name != "llama-8b-ablation"))
    _flagged(cands, bad, codes.MISSING_WORKLOAD, text="llama-8b-ablation is not in the plan")


def test_a_pin_ignored():
    cands, plan = F.compiled(PRETRAIN)
    from compiler.spec import Pin

    p = workload(plan, "llama-70b-pretrain").placements[0]
    other = next(s.name for s in cands.spec.sites if s.name != p.site)
    bad_spec = F.with_spec_workload(cands.spec, "llama-70b-pretrain", pin=Pin(site=other))
    _flagged(cands, plan, codes.PIN, spec=bad_spec, text=f"site {other}")
    pricing_pin = F.with_spec_workload(cands.spec, "llama-70b-pretrain", pin=Pin(pricing="on_demand"))
    _flagged(cands, plan, codes.PIN, spec=pricing_pin, text="pricing on_demand")


def test_spot_for_a_job_that_is_not_interruptible():
    cands, plan = F.compiled(PRETRAIN)
    assert workload(plan, "llama-70b-pretrain").placements[0].pricing == "spot"
    bad_spec = F.with_spec_workload(cands.spec, "llama-70b-pretrain", interruptible=False)
    _flagged(cands, plan, codes.SPOT, spec=bad_spec, text="not interruptible")


def test_an_unknown_candidate_and_a_missed_deadline():
    cands, plan = F.compiled(VISION)
    _flagged(cands, with_placement(plan, "resnet50-imagenet", 0, candidate="resnet50-imagenet/nowhere"),
             codes.UNKNOWN_CANDIDATE)
    from compiler.spec import TrainingWindow

    w = cands.spec.workload("resnet50-imagenet")
    bad_spec = F.with_spec_workload(cands.spec, w.name, window=TrainingWindow(w.window.start_month, 0.01))
    _flagged(cands, plan, codes.DEADLINE, spec=bad_spec, text="deadline")


def test_storage_short_of_the_datasets_and_checkpoints():
    cands, plan = F.compiled(PRETRAIN)
    st = plan.storage[0]
    m = next(k for k, tb in enumerate(st.monthly_tb) if tb)
    small = replace(st, monthly_tb=set_at(st.monthly_tb, m, st.monthly_tb[m] / 2))
    _flagged(cands, replace(plan, storage=(small,) + plan.storage[1:]), codes.STORAGE_SHORT, text=f"month {m}")


def test_on_demand_hours_the_plan_does_not_bill():
    """A plan that shares reserved node-hours within a month as if jobs took turns: a job of 20
    nodes for half a month on 10 reserved nodes still holds 10 on-demand nodes for 365 hours."""
    cands, plan = F.optimistic_reserved()
    findings = F.run_audit(cands, plan)
    assert [f.code for f in findings] == [codes.POOL_HOURS], findings
    assert "month 11 runs 3,650 node-hours on it, the plan bills 0" in findings[0].message


def test_the_cloud_share_cap():
    cands, plan = F.compiled(PRETRAIN)
    spec = replace(cands.spec, policy=replace(cands.spec.policy, max_cloud_share=0.5))
    _flagged(cands, plan, codes.CLOUD_SHARE, spec=spec)


# --- (c) no code shared with the model ------------------------------------------------------

def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:      # relative: resolve against compiler.audit
                base = ".".join(["compiler", "audit"][: 3 - node.level] + ([base] if base else []))
            out += [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__"):
            out += [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return out


def test_the_audit_imports_nothing_from_the_optimizer():
    files = sorted((ROOT / "compiler" / "audit").rglob("*.py"))
    assert files
    for f in files:
        bad = [m for m in _imports(f) if m == "compiler.optimize" or m.startswith("compiler.optimize.")]
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_importing_the_audit_loads_no_optimizer_module():
    code = ("import sys, compiler.audit; "
            "bad = sorted(m for m in sys.modules if m.startswith(('compiler.optimize', 'pulp'))); "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
