"""RUNBOOK.md and the report of a re-plan (`--baseline`): they say what changes against the
baseline (each pool created, resized or released and from which month, the workloads placed
elsewhere), count what stays, repeat no step for it, and list each held commitment that ends in
the horizon with what the plan runs in its place. Oracles: the two plans' own month series,
lined up by calendar month by hand here (no code shared with compiler/render/changes.py), and
the golden trees for the files of a compile without a baseline, which must not change."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from compiler import pipeline
from compiler.catalog import load_catalog
from compiler.plan import from_dict
from compiler.render import render
from compiler.report import render_report
from test_baseline import FINETUNE, QUARTERS, SPEC, _compile, _spec, _write
from test_runbook import GOLDEN, _code_blocks, _site_section, _tool

# A training job pinned to spot H100s: the same nodes in the same calendar month in both plans,
# so its pool and its placement stay as the baseline runs them.
PINNED = """\
  - name: a-finetune
    kind: training
    model: llama-3-8b
    tokens: 2.0e10
    seq_len: 4096
    interruptible: true
    window: {start_month: MONTH, deadline_days: 14}
    pin: {gpu: H100, pricing: spot}
"""
WITH_SPOT = SPEC.replace("[on_demand, reserved_1y]", "[on_demand, reserved_1y, spot]")


def _month(start: str, m: int) -> str:
    n = int(start[:4]) * 12 + int(start[5:]) - 1 + m
    return f"{n // 12:04d}-{n % 12 + 1:02d}"


def _apart(base, plan) -> int:
    """How many months after the baseline's start the plan's falls."""
    return (int(plan.start[:4]) - int(base.start[:4])) * 12 + int(plan.start[5:]) - int(base.start[5:])


def _expected(base, plan) -> set[tuple[str, str, str, str]]:
    """(pool, change, 'a -> b', first month) of every pool whose nodes differ in some month of the
    plan, the baseline's last month standing for the months after its horizon."""
    k, H = _apart(base, plan), plan.horizon_months
    was = {(p.site, p.instance, p.pricing): p.monthly_nodes for p in base.pools}
    now = {(p.site, p.instance, p.pricing): p.monthly_nodes for p in plan.pools}
    out = set()
    for key in was.keys() | now.keys():
        s = was.get(key, (0,))
        a = [s[min(m + k, len(s) - 1)] for m in range(H)]
        b = list(now.get(key, (0,) * H))
        differ = [m for m in range(H) if a[m] != b[m]]
        if not differ:
            continue
        if not any(a):
            change, first = "create", next(m for m in differ if b[m])
        elif not any(b):
            change, first = "release", next(m for m in differ if a[m])
        else:
            change, first = "resize", differ[0]
        out.add((f"{key[0]} {key[1]} ({key[2]})", change, f"{a[first]} -> {b[first]}", _month(plan.start, first)))
    return out


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def _rows(section: str, columns: int) -> list[tuple[str, ...]]:
    return [tuple(c.strip().strip("*") for c in line.strip("|").split(" | "))[:columns]
            for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")][1:]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    """A baseline from 2027-01 (H100 only: a service, a fine-tune and a pinned spot job), and its
    re-plan from 2027-04 with more traffic, L40S allowed, every move free and the fine-tune
    dropped; both plans and the re-plan's output files."""
    tmp = tmp_path_factory.mktemp("replan")
    base_spec = tmp / "base.yaml"
    base_spec.write_text(WITH_SPOT.replace("START", "2027-01").replace("RPS", "20") + FINETUNE
                         + PINNED.replace("MONTH", "8"), encoding="utf-8")
    base = _compile(str(base_spec))
    text = WITH_SPOT.replace("START", "2027-04").replace("RPS", "24").replace(
        "allowed_gpus: [H100]", "allowed_gpus: [H100, L40S]").replace(
        "  min_pool_months: null\n", "  min_pool_months: null\n  replan: {min_saving_usd: 0, min_saving_share: 0}\n")
    spec = tmp / "replan.yaml"
    spec.write_text(text + PINNED.replace("MONTH", "5"), encoding="utf-8")
    result = pipeline.compile_spec(spec, pipeline.CompileOptions(baseline=_write(tmp, base, "base"),
                                                                 warn=lambda _ds, _src: None))
    return base, result.plan, result.artifacts


@pytest.mark.slow
def test_the_runbook_lists_each_pool_created_resized_and_released_from_its_month(scenario):
    base, plan, files = scenario
    runbook = files["RUNBOOK.md"]
    assert runbook.index("## Changes against the baseline") < runbook.index("## 1. Reservations")
    section = _section(runbook, "## Changes against the baseline")
    assert f"`{base.spec_name}` (from 2027-01), total ${base.total_cost_usd:,.0f}" in section
    listed = _rows(section.split("Workloads placed")[0], 4)
    expected = _expected(base, plan)
    assert {r[1] for r in expected} == {"create", "resize", "release"}      # the scenario has each
    assert sorted(listed) == sorted(expected)
    # and the site's own section says the same, one line each, with its month
    site = _site_section(runbook, "aws-use1")
    for pool, change, nodes, month in expected:
        assert f"- {change} {pool}: {nodes} nodes from {month}" in site


@pytest.mark.slow
def test_what_stays_as_the_baseline_runs_it_is_counted_not_repeated_as_a_step(scenario):
    base, plan, files = scenario
    runbook = files["RUNBOOK.md"]
    spot_was, spot_now = ([p.monthly_nodes for p in plan_.pools if p.pricing == "spot"][0] for plan_ in (base, plan))
    apart = _apart(base, plan)
    assert list(spot_now) == [spot_was[min(m + apart, len(spot_was) - 1)] for m in range(plan.horizon_months)]
    assert "p5.48xlarge (spot)" not in runbook          # kept, month by month: not a change
    assert "Kept as the baseline runs them: 1 pool and 1 workload" in runbook
    # the pinned job runs as before: named once, never submitted again; the dropped and the moved
    # ones are listed
    assert "sbatch slurm/aws-use1/jobs/a-finetune.sbatch" not in runbook
    assert "submitted as its runbook says (not again): `a-finetune` (2027-09)" in runbook
    moves = _rows(_section(runbook, "Workloads placed elsewhere"), 3)
    assert sorted((w, c) for w, _kind, c in moves) == [("chat", "moved"), ("extra-8b-finetune", "removed")]
    # what the baseline's deploy did once is not asked again
    site = _site_section(runbook, "aws-use1")
    assert "State backend:" not in site and "Variables to set" not in site
    assert "The state is the baseline's" in site


@pytest.mark.slow
def test_an_expiring_held_commitment_is_listed_with_what_replaces_it(scenario):
    _base, plan, files = scenario
    (held,) = [h for h in plan.held if h.until_month < plan.horizon_months]
    ends = _month(plan.start, held.until_month)
    after = [p for p in plan.pools if (p.site, p.instance) == (held.site, held.instance)
             and p.monthly_nodes[held.until_month]]
    assert after                                    # the plan runs the same instance there after it
    row = f"| {held.site} {held.instance}, {held.nodes} node{'s' if held.nodes != 1 else ''} (1-year term) | {ends} | "
    for text in (files["RUNBOOK.md"], files["report.md"]):
        section = _section(text, "### Commitments expiring in the horizon and what replaces them")
        (line,) = [line for line in section.splitlines() if line.startswith(row)]
        for p in after:
            n = p.monthly_nodes[held.until_month]
            assert f"{p.site} {p.instance}: {n} node{'s' if n != 1 else ''}" in line
    html = files["report.html"]
    assert "<h3>Commitments expiring in the horizon and what replaces them</h3>" in html
    assert f"<td>{held.site} {held.instance}, {held.nodes} node" in html and f"<td>{ends}</td>" in html


@pytest.mark.slow
def test_the_report_leads_with_the_change_in_total_the_sunk_cost_and_the_changed_workloads(scenario):
    base, plan, files = scenario
    md = files["report.md"]
    first = _section(md, "## The chosen design and why").strip().splitlines()[0]
    delta = plan.total_cost_usd - base.total_cost_usd
    assert f"${plan.total_cost_usd:,.0f}" in first and f"${base.total_cost_usd:,.0f}" in first
    assert f"-${-delta:,.0f}" in first and f"${plan.sunk_usd:,.0f}" in first and "sunk" in first
    # chat moved and sorts after the unchanged a-finetune: it comes first, and says so
    headings = re.findall(r"^### (\S+) \((?:training|inference)\)(.*)$", md.split("\n## Workloads\n")[1], re.M)
    assert headings == [("chat", ": moved against the baseline"), ("a-finetune", "")]
    assert "## Changes against the baseline" in md and '<section id="changes">' in files["report.html"]


@pytest.mark.slow
def test_a_re_plan_that_changes_nothing_applies_nothing_but_its_schedule(tmp_path):
    spec = _spec(tmp_path, "2027-01", 20)
    base = _write(tmp_path, _compile(spec), "base")
    files = pipeline.compile_spec(spec, pipeline.CompileOptions(baseline=base)).artifacts
    runbook = files["RUNBOOK.md"]
    assert "No pool changes." in runbook and "Workloads placed elsewhere" not in runbook
    site = _site_section(runbook, "aws-use1")
    assert "Deployed already with the baseline" in site
    assert re.findall(r"^### \d+\.\d+ (\w+)", site, re.M) == ["The"]       # the monthly schedule only
    assert "terraform -chdir" not in site and "kubectl apply -f kubernetes/" not in site


@pytest.mark.slow
def test_each_runbook_of_a_quarterly_replay_lists_only_its_changes(tmp_path):
    plans, base, path = [], None, None
    for start, rps in QUARTERS:
        result = pipeline.compile_spec(_spec(tmp_path, start, rps), pipeline.CompileOptions(baseline=path))
        if base is not None:
            section = _section(result.artifacts["RUNBOOK.md"], "## Changes against the baseline")
            listed = _rows(section, 4) if "No pool changes." not in section else []
            assert sorted(listed) == sorted(_expected(base, result.plan)), start
        else:
            assert "Changes against the baseline" not in result.artifacts["RUNBOOK.md"]
        base, path = result.plan, _write(tmp_path, result.plan, f"plan-{start}")
        plans.append(base)
    assert len(plans) == len(QUARTERS)


@pytest.mark.slow
def test_the_re_plans_runbook_shell_blocks_pass_shellcheck(scenario, tmp_path):
    blocks = _code_blocks(scenario[2]["RUNBOOK.md"], "sh")
    assert blocks
    for i, block in enumerate(blocks):
        lines = block.splitlines()
        indent = min(len(l) - len(l.lstrip()) for l in lines if l.strip())
        (tmp_path / f"{i}.sh").write_text("#!/bin/bash\n" + "\n".join(l[indent:] for l in lines) + "\n")
    out = subprocess.run([_tool("shellcheck"), "-S", "warning", "-s", "bash", *sorted(map(str, tmp_path.glob("*.sh")))],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_without_a_baseline_the_runbook_and_report_are_the_golden_ones():
    catalog = load_catalog()
    trees = sorted(Path(GOLDEN, "examples").iterdir())
    assert trees
    for tree in trees:
        plan = from_dict(json.loads((tree / "plan.json").read_text(encoding="utf-8")))
        out = {**render(plan, catalog), **render_report(plan, catalog)}
        for name in ("RUNBOOK.md", "report.md", "report.html"):
            assert out[name] == (tree / name).read_text(encoding="utf-8"), (tree.name, name)


@pytest.mark.slow
def test_a_re_plans_start_from_its_baseline_is_told(tmp_path):
    """Completing the baseline's plan for the changed spec is a search of its own (tens of
    seconds on a large estate): each way it tries is said before it runs, the exact baseline
    first."""
    (start, rps), (later, more) = QUARTERS[0], QUARTERS[1]
    base = pipeline.compile_spec(_spec(tmp_path, start, rps)).plan
    heard: list[str] = []
    pipeline.compile_spec(_spec(tmp_path, later, more), pipeline.CompileOptions(
        baseline=_write(tmp_path, base, "base"), progress=heard.append))
    tried = [m for m in heard if m.startswith("starting from the baseline: ")]
    assert tried and tried[0] == "starting from the baseline: the baseline's decisions held"
    assert heard.index(tried[0]) > next(k for k, m in enumerate(heard) if m.startswith("formulated "))
