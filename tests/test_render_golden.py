"""The render stage's output trees: golden files, layout and determinism."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from plans import PLANS, rendered

CASES = sorted(PLANS)


@pytest.mark.parametrize("case", CASES)
def test_rendered_tree_matches_golden(case, golden):
    golden(f"render-{case}", rendered(case))


def test_layout_follows_the_contract():
    # DESIGN.md section 5: terraform per cloud site, slurm/kubernetes per orchestrator,
    # onprem BOM per on-prem site.
    files = rendered("onprem")
    # and the month files Terraform is applied with (month 0 only: nothing changes after it)
    assert {f for f in files if f.startswith("terraform/")} == {
        f"terraform/aws-use1/{n}" for n in ("versions.tf", "providers.tf", "variables.tf",
                                            "main.tf", "outputs.tf", "months/000.tfvars")}
    assert "onprem/fra-dc1/bom.csv" in files
    # a schedule per site, the script that applies a month where services run, and a CronJob
    # that runs it where no node changes hands (the CI workflow runs every site's)
    assert {f for f in files if f.startswith("schedule/")} == {
        f"schedule/{s}.{x}" for s in ("aws-use1", "fra-dc1") for x in ("csv", "sh", "cronjob.yaml")}
    assert {"RUNBOOK.md", "ci/schedule.yml"} <= set(files)
    assert not any(f.startswith("terraform/fra-dc1") for f in files)
    assert {f for f in files if f.startswith("slurm/fra-dc1/jobs/")} == {
        "slurm/fra-dc1/jobs/llama-405b-pretrain.sbatch", "slurm/fra-dc1/jobs/resnet50.sbatch"}
    assert "kubernetes/fra-dc1/30-serve-chat-70b.yaml" in files
    assert "kubernetes/aws-use1/30-serve-chat-70b.yaml" in files
    aws = rendered("aws")
    assert "slurm/aws-use1/slurm.conf" in aws and not any(f.startswith("slurm/aws-usw2") for f in aws)
    assert "kubernetes/aws-usw2/20-train-finetune-13b.yaml" in aws
    assert list(aws) == sorted(aws)


def test_rendering_twice_gives_identical_bytes():
    from compiler.catalog import load_catalog
    from compiler.render import render
    for case in CASES:
        assert render(PLANS[case](), load_catalog()) == render(PLANS[case](), load_catalog())


def _digest_in_subprocess(seed: str) -> str:
    code = ("import sys, json, hashlib; sys.path.insert(0, 'tests'); import plans; "
            "print(hashlib.sha256(json.dumps({c: plans.rendered(c) for c in sorted(plans.PLANS)},"
            " sort_keys=True).encode()).hexdigest())")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": seed}, timeout=120, check=True)
    return out.stdout.strip()


@pytest.mark.slow
def test_output_does_not_depend_on_the_hash_seed():
    here = hashlib.sha256(json.dumps({c: rendered(c) for c in CASES}, sort_keys=True)
                          .encode()).hexdigest()
    assert _digest_in_subprocess("1") == here
    assert _digest_in_subprocess("4242") == here


def test_bom_totals_add_up():
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(rendered("onprem")["onprem/fra-dc1/bom.csv"])))
    lines, total = rows[:-1], rows[-1]
    for row in lines:
        assert float(row["total_price_usd"]) == pytest.approx(
            int(row["quantity"]) * float(row["unit_price_usd"]), abs=0.01)
    assert float(total["total_price_usd"]) == pytest.approx(
        sum(float(r["total_price_usd"]) for r in lines), abs=0.01)
    by_item = {r["item"]: r for r in lines}
    # 40 hgx-h200 bought at the catalog's capex; the 8 owned dgx-h100 cost nothing.
    assert by_item["hgx-h200"]["quantity"] == "40"
    assert float(by_item["hgx-h200"]["unit_price_usd"]) == 330000.0
    assert float(by_item["dgx-h100"]["total_price_usd"]) == 0.0
    # The fabric the plan priced for the 40 bought IB nodes (catalog: 8 ports a node at $4,000,
    # 64-port switches at $40,000; 3 switch ports per node port): 320 node ports, and 960 switch
    # ports at $625 = 40 x (8 x 4,000 + 3 x 8 / 64 x 40,000) = $1,880,000 in all. The owned
    # nodes bring their own fabric: nothing is bought for them.
    assert by_item["infiniband-ndr-node-port"]["quantity"] == "320"
    assert by_item["infiniband-ndr-switch-port"]["quantity"] == "960"
    assert float(by_item["infiniband-ndr-switch-port"]["unit_price_usd"]) == 625.0
    ib = [r for r in lines if r["item"].startswith("infiniband-ndr-")]
    assert sum(float(r["total_price_usd"]) for r in ib) == pytest.approx(1_880_000.0)
    assert by_item["onprem-lustre"]["quantity"] == "640"


def test_owned_nodes_change_hands_by_the_schedule():
    # A Slurm job holds all 8 owned nodes in months 0-1 (resnet50 one of them every month) and a
    # Kubernetes job one in month 3: Slurm's nodes are own[01-08], Kubernetes' own08, and the
    # schedule hands own08 over.
    import csv
    import io
    from dataclasses import replace

    import yaml

    from compiler.catalog import load_catalog
    from compiler.render import render
    from plans import onprem_plan, owned_job

    plan = onprem_plan()
    plan = replace(plan, workloads=plan.workloads + (
        owned_job("llama-70b-continued", 8, {0, 1}), owned_job("support-8b-finetune", 1, {3}, "kubernetes")))
    files = render(plan, load_catalog())
    conf = files["slurm/fra-dc1/slurm.conf"]
    assert "NodeName=dgx-h100-own[01-08] " in conf
    assert "#   dgx-h100-own08: Slurm's in months 0-1, Kubernetes' in months 3" in conf
    nodes = {d["metadata"]["name"]: d for d in yaml.safe_load_all(files["kubernetes/fra-dc1/05-nodes.yaml"]) if d}
    assert nodes["dgx-h100-own08"]["metadata"]["annotations"] == {"infra-compile.io/months": "3"}
    docs = list(yaml.safe_load_all(files["kubernetes/fra-dc1/10-kueue.yaml"]))
    cq = next(d for d in docs if d and d["kind"] == "ClusterQueue")
    quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
             for f in cq["spec"]["resourceGroups"][0]["flavors"]}
    assert quota["dgx-h100-owned"]["nvidia.com/gpu"] == 8
    rows = [r for r in csv.DictReader(io.StringIO(files["schedule/fra-dc1.csv"]))
            if r["domain"] == "dgx-h100" and r["kind"] == "nodes" and r["count"] != "0"]
    assert [(r["orchestrator"], r["month_first"], r["month_last"], r["nodes"]) for r in rows] == [
        ("slurm", "0", "1", "dgx-h100-own[01-08]"), ("slurm", "2", "11", "dgx-h100-own01"),
        ("kubernetes", "3", "3", "dgx-h100-own08")]


def test_golden_check_fails_on_any_changed_byte_until_updated(tmp_path):
    """The golden mechanism itself: one changed byte, a missing file or an extra file fails,
    each named; only an explicit update (pytest --update-golden) makes the new tree pass."""
    from golden import check_tree

    files = rendered("onprem")
    check_tree("case", files, update=True, root=tmp_path)
    check_tree("case", files, root=tmp_path)                 # identical: passes
    path = "slurm/fra-dc1/slurm.conf"
    text = files[path]
    i = text.index("RealMemory=") + len("RealMemory=")
    one_byte = {**files, path: text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:]}
    missing = {p: t for p, t in files.items() if p != "onprem/fra-dc1/bom.csv"}
    extra = {**files, "slurm/fra-dc1/jobs/new.sbatch": "#!/bin/bash\n"}
    for changed, expected in ((one_byte, f"different: {path}"),
                              (missing, "missing: onprem/fra-dc1/bom.csv"),
                              (extra, "extra: slurm/fra-dc1/jobs/new.sbatch")):
        with pytest.raises(pytest.fail.Exception) as failed:
            check_tree("case", changed, root=tmp_path)
        assert expected in str(failed.value) and "--update-golden" in str(failed.value)
    check_tree("case", one_byte, update=True, root=tmp_path)
    check_tree("case", one_byte, root=tmp_path)
    with pytest.raises(pytest.fail.Exception):
        check_tree("case", files, root=tmp_path)
    # no golden tree at all is a failure too, never a silent pass
    with pytest.raises(pytest.fail.Exception):
        check_tree("absent", files, root=tmp_path)
