"""The pull-request recipe of docs/ci.md, run as written, and the comment it leaves.

The recipe's commands are read from the doc (between its `recipe` markers) and run by bash on
two specs: onprem-vision as the base, and as the head the same lab asked to train ViT ten times
longer in two days, which owned nodes cannot do and bought ones can. The comment is parsed by a
Markdown parser (markdown-it, CommonMark with GFM tables) and its total row checked against the
two plan.json files; the exit status against the threshold, computed here from the same files.
The GitHub and GitLab jobs in the doc must be valid YAML and run those very lines."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")


def _recipe() -> str:
    block = DOC.split("<!-- recipe:begin -->", 1)[1].split("<!-- recipe:end -->", 1)[0]
    return re.search(r"```sh\n(.*?)```", block, re.S).group(1)


def _yaml_blocks() -> list[dict]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC, re.S)]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _run_recipe(tmp: Path, base: Path, head: Path, limit: str) -> tuple[int, str]:
    env = dict(os.environ, BASE_SPEC=str(base), HEAD_SPEC=str(head), COST_RISE_LIMIT=limit,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", "-e", "-c", _recipe()], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return int((tmp / "cost-diff.rc").read_text().strip()), (tmp / "cost-diff.md").read_text()


def _total(path: Path) -> float:
    return json.loads(path.read_text())["total_cost_usd"]


def _tables(markdown: str) -> list[list[list[str]]]:
    """Every table of the document as rows of cell texts (header row first)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    tables, row, inside = [], None, False
    for t in tokens:
        if t.type == "table_open":
            tables.append([])
        elif t.type == "tr_open":
            row = []
        elif t.type == "tr_close":
            tables[-1].append(row)
        elif t.type in ("th_open", "td_open"):
            inside = True
        elif t.type in ("th_close", "td_close"):
            inside = False
        elif t.type == "inline" and inside:
            row.append("".join(c.content for c in t.children or [] if c.type == "text"))
    return tables


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("specs")
    base = tmp / "base.yaml"
    shutil.copy(ROOT / "examples" / "onprem-vision.yaml", base)
    text = base.read_text()
    head_text = text.replace("epochs: 300", "epochs: 3000").replace(
        "window: {start_month: 1, deadline_days: 7}", "window: {start_month: 1, deadline_days: 2}")
    assert head_text.count("3000") == 1 and "deadline_days: 2}" in head_text
    head = tmp / "head.yaml"
    head.write_text(head_text)
    return base, head


@pytest.mark.slow
def test_the_recipe_posts_a_table_and_fails_past_the_limit(specs, tmp_path):
    base, head = specs
    rc, comment = _run_recipe(tmp_path, base, head, "5")
    a, b = _total(tmp_path / "plan-base" / "plan.json"), _total(tmp_path / "plan-head" / "plan.json")
    assert b > a * 1.05          # the head's plan buys nodes: far past a 5% limit
    assert rc == 7

    tables = _tables(comment)
    assert tables, comment
    cost = tables[0]
    assert cost[0][:4] == ["Cost", "Base", "Head", "Change"]
    total = next(r for r in cost if r[0] == "Total")
    assert total[1] == f"${a:,.0f}" and total[2] == f"${b:,.0f}"
    assert total[3] == f"+${b - a:,.0f}"
    assert total[4] == f"{(b - a) / a * 100:+.1f}%"
    plans = next(t for t in tables if t[0][0] == "Plan")
    assert [r[0] for r in plans[1:]] == ["base", "head"]
    for row, path in zip(plans[1:], ("plan-base", "plan-head")):
        solver = json.loads((tmp_path / path / "plan.json").read_text())["solver"]
        assert row[2] == solver["status"] and row[3] == f"{solver['gap'] * 100:.2f}%"
    workloads = next(t for t in tables if t[0][0] == "Workload")
    # the workload the edit changed; another only where its share of shared costs moved (the
    # owned nodes rewired for the new job's fabric), said as such
    assert [r[0] for r in workloads[1:] if r[-1] != "cost only"] == ["vit-b16-imagenet"]
    assert all(r[1] == "changed" for r in workloads[1:] if r[-1] == "cost only")
    assert "rises more than the 5.0% allowed" in comment


@pytest.mark.slow
def test_within_the_limit_the_job_passes(specs, tmp_path):
    base, head = specs
    rc, comment = _run_recipe(tmp_path, base, head, "100000")
    assert rc == 0
    assert "Within the 100000.0% rise allowed" in comment


def test_the_ci_jobs_run_the_recipe_as_tested():
    blocks = _yaml_blocks()
    github = next(b for b in blocks if "cost-diff" in (b.get("jobs") or {}))
    gitlab = next(b for b in blocks if "script" in (b.get("cost-diff") or {}))
    recipe = _lines(_recipe())
    steps = github["jobs"]["cost-diff"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert any(_lines(r) == recipe for r in runs)
    assert any("gh pr comment" in r and "--body-file cost-diff.md" in r for r in runs)
    assert runs[-1].strip() == 'exit "$(cat cost-diff.rc)"'
    script = gitlab["cost-diff"]["script"]
    assert any(_lines(s) == recipe for s in script)
    assert script[-1].strip() == 'exit "$(cat cost-diff.rc)"'
    assert any("merge_requests/$CI_MERGE_REQUEST_IID/notes" in s for s in script)
