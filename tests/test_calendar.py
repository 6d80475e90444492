"""The spec's `start: YYYY-MM`: month 0 becomes a calendar month, and every output a person reads
names calendar months (plan.Calendar is the one rule). Without a start every output stays as it
was (the golden trees). The dated trees here go through the same real tools the undated ones do:
shellcheck, kubernetes-validate, yamllint, the plan schema, and bash running the schedule."""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import hcl2
import jsonschema
import pytest
import yaml

import test_runbook
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.diff import diff_plans, diff_to_json
from compiler.plan import Calendar, Reservation, from_dict, month_range, months_text, to_json
from compiler.render import render
from compiler.report import render_report
from compiler.resources import schema
from compiler.source import parse
from compiler.validate import validate
from examples_cache import ROOT, example
from golden import GOLDEN, _read_tree, diff_trees
from plans import PLANS, onprem_plan, owned_job, write

START = "2027-11"          # a year boundary inside every 12-month test horizon
# "month 3", "Month 0", "months 0-2": a month named by its index, where a dated output names
# calendar months instead
BARE_MONTH = re.compile(r"\b[Mm]onths? \d")


# ---------------------------------------------------------------------------- the one rule

def test_a_calendar_names_months_from_its_start():
    c = Calendar("2027-11")
    assert [c.name(m) for m in (0, 1, 2, 14, -1)] == ["2027-11", "2027-12", "2028-01", "2029-01", "2027-10"]
    assert c.span(1, 3) == "2027-12..2028-02" and c.span(2, 2) == "2028-01"
    assert c.runs([0, 1, 3, 14, 15]) == "2027-11..2027-12, 2028-02, 2029-01..2029-02"
    assert c.month(2) == "2028-01" and c.months(0, 1) == "2027-11..2027-12"
    assert c.index("2028-02") == 3 and c.index("2027-10") == -1
    assert c.period(12) == "2027-11..2028-10"


def test_without_a_start_months_are_indices_as_before():
    c = Calendar()
    assert not c.dated
    assert c.span(3, 7) == month_range(3, 7) == "3-7" and c.name(0) == "0"
    assert c.runs([0, 1, 3, 12, 13]) == months_text([0, 1, 3, 12, 13]) == "0-1, 3, 12-13"
    assert (c.month(3), c.months(3, 7), c.months(3, 3)) == ("month 3", "months 3-7", "month 3")


# ---------------------------------------------------------------------------- the spec

SPEC = (ROOT / "examples" / "onprem-vision.yaml").read_text()


def _dated(text: str, value: str) -> str:
    """The spec with `start: value` on the line before horizon_months."""
    return text.replace("\nhorizon_months:", f"\nstart: {value}\nhorizon_months:", 1)


START_LINE = _dated(SPEC, "x").splitlines().index("start: x") + 1


@pytest.mark.parametrize("value", ["2027-01", '"2027-01"', "'2027-12'"])
def test_a_valid_start_is_the_specs(value):
    spec = validate(parse(_dated(SPEC, value), "spec.yaml"), load_catalog())
    assert spec.start == value.strip("'\"")
    assert validate(parse(SPEC, "spec.yaml"), load_catalog()).start is None


@pytest.mark.parametrize("value,code,hint", [
    ("2027-13", "E106", "write the year and the month, e.g. 2027-01 for January 2027"),
    ("2027-00", "E106", "write the year and the month, e.g. 2027-01 for January 2027"),
    ('"Jan 2027"', "E106", "try '2027-01'"),
    ("2027-01-15", "E106", "try '2027-01'"),      # YAML reads a date; a start is a month
    ("2027-3", "E106", "try '2027-03'"),
    ("03/2027", "E106", "try '2027-03'"),
    ('""', "E106", "write the year and the month, e.g. 2027-01 for January 2027"),
    ("2027", "E103", "write the year and the month, e.g. 2027-01 for January 2027"),
    ("202701", "E103", "write the year and the month, e.g. 2027-01 for January 2027"),
    ("[2027, 1]", "E103", "write the year and the month, e.g. 2027-01 for January 2027"),
])
def test_a_bad_start_is_an_error_at_its_value(value, code, hint):
    with pytest.raises(CompileError) as err:
        validate(parse(_dated(SPEC, value), "spec.yaml"), load_catalog())
    [d] = err.value.diagnostics
    assert (d.code, d.path, d.position.line, d.position.column, d.hint) == (code, ("start",), START_LINE, 8, hint)
    assert d.message.startswith("bad month " if code == "E106" else "must be a calendar month as YYYY-MM, got")
    assert err.value.exit_code == 2


def test_the_schemas_and_terraform_check_one_month_pattern():
    from compiler.plan import MONTH_PATTERN
    assert schema("spec.schema.json")["$defs"]["month"]["pattern"] == MONTH_PATTERN
    assert schema("plan.schema.json")["properties"]["start"]["pattern"] == MONTH_PATTERN
    tf = _tree("aws")["terraform/aws-use1/variables.tf"]
    assert f'regex("{MONTH_PATTERN}", var.plan_start)' in tf


def test_docs_say_what_start_does():
    reference = (ROOT / "docs" / "spec-reference.md").read_text()
    assert "| `start` |" in reference


# ---------------------------------------------------------------------------- hand-made plans, dated

def _schedule_plan():
    """onprem_plan with a Slurm job on all 8 owned nodes in months 0-1 and a Kubernetes job on one
    in month 3: a node changes hands (test_render_schedule's plan)."""
    plan = onprem_plan()
    return replace(plan, workloads=plan.workloads + (owned_job("big", 8, {0, 1}),
                                                     owned_job("small", 1, {3}, "kubernetes")))


CASES = {**PLANS, "handover": _schedule_plan}
_TREES: dict[tuple[str, str | None], dict[str, str]] = {}


def _tree(case: str, start: str | None = START) -> dict[str, str]:
    """Every file of one plan dated `start`: the render stage's, the report and plan.json."""
    if (case, start) not in _TREES:
        plan, catalog = replace(CASES[case](), start=start), load_catalog()
        files = {**render(plan, catalog), **render_report(plan, catalog), "plan.json": to_json(plan)}
        _TREES[case, start] = dict(sorted(files.items()))
    return _TREES[case, start]


@pytest.mark.parametrize("case", sorted(PLANS))
def test_without_a_start_the_render_is_the_golden_tree(case):
    files = _tree(case, None)
    golden = _read_tree(GOLDEN / f"render-{case}")
    assert not diff_trees(golden, {p: t for p, t in files.items() if p in golden})
    assert "start" not in json.loads(files["plan.json"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_dated_plan_names_no_month_by_its_index(case):
    files = _tree(case)
    bare = [f"{p}:{i}: {line.strip()}" for p, t in files.items() if not p.endswith(".json")
            for i, line in enumerate(t.splitlines(), 1) if BARE_MONTH.search(line)]
    assert not bare, "\n".join(bare)
    # the schedule knows the start: nothing asks for PLAN_START or reads it
    assert not any(re.search(r"vars\.PLAN_START|\$\{PLAN_START|plan-start", t) for t in files.values())
    for p in ("RUNBOOK.md", "report.md", "report.html"):
        assert START in files[p], p


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_dated_plan_differs_from_the_undated_one_only_where_months_are_named(case):
    dated, undated = _tree(case), _tree(case, None)
    assert sorted(dated) == sorted(undated)
    assert json.loads(dated["plan.json"]) == {**json.loads(undated["plan.json"]), "start": START}
    jsonschema.validate(START, schema("plan.schema.json")["properties"]["start"])
    for path in dated:
        if path.startswith(("terraform/", "kubernetes/", "slurm/")) and dated[path] != undated[path]:
            # comments, the annotation of the months a node changes hands in, plan_start's default
            changed = [line[1:] for line in difflib.unified_diff(undated[path].splitlines(), dated[path].splitlines(),
                                                                  lineterm="", n=0)
                       if line[:1] in "+-" and not line.startswith(("+++", "---"))]
            assert all(line.lstrip().startswith("#") or "infra-compile.io/months" in line
                       or re.match(r"\s*(default|description)\s+=", line) for line in changed), (path, changed)


def test_the_runbook_and_report_name_the_months():
    files = _tree("aws")
    runbook = files["RUNBOOK.md"]
    assert "The 12-month horizon runs from 2027-11 to 2028-10" in runbook
    assert "applies one month (2027-11 to 2028-10 as YYYY-MM, or its index 0 to 11)" in runbook
    assert "Apply 2027-11:" in runbook and "Nothing changes after 2027-11" in runbook
    assert "(it runs in 2027-11..2028-10)" in runbook
    assert "--from-literal=plan-start" not in runbook and "`PLAN_START`" not in runbook
    report = files["report.md"]
    assert "horizon 12 months (2027-11..2028-10)." in report
    assert "from 2027-11; cost" in report
    # the charts' month axes are labelled with calendar months (SVG text), not indices
    ticks = re.findall(r">(\d{4}-\d{2})</text>", files["report.html"])
    assert ticks[:3] == ["2027-11", "2027-12", "2028-01"] and ">month of the horizon</text>" not in files["report.html"]
    assert ">month of the horizon</text>" in _tree("aws", None)["report.html"]


def test_the_schedule_csv_and_bom_add_calendar_columns():
    files = _tree("handover")
    rows = list(csv.reader(io.StringIO(files["schedule/fra-dc1.csv"])))
    assert rows[0][-2:] == ["calendar_first", "calendar_last"]
    assert all(Calendar(START).name(int(r[1])) == r[-2] and Calendar(START).name(int(r[2])) == r[-1]
               for r in rows[1:])
    bom = list(csv.reader(io.StringIO(files["onprem/fra-dc1/bom.csv"])))
    assert bom[0][-1] == "calendar_month" and len({len(r) for r in bom}) == 1
    assert all(r[-1] == Calendar(START).name(int(r[3])) for r in bom[1:-1])


def test_terraform_plan_start_defaults_to_the_start():
    files = _tree("aws")
    variables = {k.strip('"'): v for block in hcl2.loads(files["terraform/aws-use1/variables.tf"])["variable"]
                 for k, v in block.items()}
    assert variables["plan_start"]["default"].strip('"') == START
    # so the runbook no longer asks for it (undated, it must be set)
    assert "| `plan_start` |" not in files["RUNBOOK.md"]
    assert "| `plan_start` |" in _tree("aws", None)["RUNBOOK.md"]


# ---------------------------------------------------------------------------- the schedule runs

def _run(script: str, tmp_path: Path, *args: str, **env) -> subprocess.CompletedProcess:
    path = tmp_path / "run.sh"
    path.write_text(script)
    return subprocess.run(["bash", str(path), *args], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", **env})


def test_the_apply_script_takes_a_calendar_month_or_an_index(tmp_path):
    script = _tree("handover")["schedule/fra-dc1.sh"]
    # 2028-02 is month 3: the Kubernetes job holds own08, so Slurm drains it, named by the month
    for month in ("2028-02", "3"):
        out = _run(script, tmp_path, month, "--dry-run")
        assert out.returncode == 0, out.stderr
        assert "scontrol update NodeName=dgx-h100-own08 State=DRAIN Reason=kubernetes-2028-02" in out.stdout
    assert "Reason=idle-2028-04" in _run(script, tmp_path, "2028-04", "--dry-run").stdout
    for month in ("2027-10", "2028-11", "2028-13", "2028-00", "12", "x", ""):
        out = _run(script, tmp_path, month, "--dry-run")
        assert out.returncode == 2 and "from 2027-11 to 2028-10 (YYYY-MM), or its index from 0 to 11" in out.stderr
        assert out.stdout == ""


def test_the_cronjob_knows_the_start_and_stops_outside_the_horizon(tmp_path):
    text = _tree("aws")["schedule/aws-usw2.cronjob.yaml"]
    cron = [d for d in yaml.safe_load_all(text) if d][3]
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert [e["name"] for e in container["env"]] == ["NAMESPACE"]
    script = container["args"][0].replace("exec bash /schedule/apply.sh", "echo applying")
    assert _run(script, tmp_path, MONTH="2028-01").stdout.strip() == "applying 2"
    assert _run(script, tmp_path, MONTH="5").stdout.strip() == "applying 5"
    for month in ("2027-10", "2028-11"):
        out = _run(script, tmp_path, MONTH=month)
        assert out.returncode == 0
        assert out.stdout.strip() == f"{month} is outside the plan's horizon (2027-11 to 2028-10): nothing to apply"
    # no MONTH: the current month, counted from the start (outside this plan's horizon today or not)
    out = _run(script, tmp_path).stdout.strip()
    assert out.startswith("applying ") or out.endswith("nothing to apply")


@pytest.fixture(scope="module")
def dated_outputs() -> dict[str, dict[str, str]]:
    """The dated trees of every hand-made plan and of one compiled example, in the shape
    test_runbook's checks read."""
    out = {f"dated-{case}": _tree(case) for case in CASES}
    out["dated-llm-pretrain-aws"] = dict(_dated_example().artifacts)
    return out


@pytest.mark.parametrize("check", [
    "test_every_output_folder_has_a_runbook",
    "test_every_declared_terraform_variable_is_used",
    "test_runbook_lists_every_required_variable_and_no_other",
    "test_terraform_plan_count_is_what_main_tf_declares",
    "test_apply_order_follows_the_files_written",
    "test_node_checks_are_the_node_groups_written",
])
def test_runbook_checks_hold_for_dated_plans(check, dated_outputs):
    getattr(test_runbook, check)(dated_outputs)


@pytest.mark.parametrize("check", [
    "test_cronjobs_pass_the_api_schemas_and_run_the_sites_script",   # kubernetes-validate, shellcheck
    "test_ci_workflow_parses_and_runs_each_sites_script",            # shellcheck
    "test_runbook_shell_blocks_pass_shellcheck",
    "test_new_yaml_has_no_duplicate_keys",                           # yamllint
])
def test_tool_checks_hold_for_dated_plans(check, dated_outputs, tmp_path):
    getattr(test_runbook, check)(dated_outputs, tmp_path)


def test_dated_schedule_scripts_pass_shellcheck(dated_outputs, tmp_path):
    scripts = {f"{name}/{p}": t for name, files in dated_outputs.items() for p, t in files.items()
               if p.endswith((".sh", ".sbatch"))}
    assert any("/schedule/" in p for p in scripts)
    write(scripts, tmp_path)
    out = subprocess.run([test_runbook._tool("shellcheck"), "-S", "warning", "-s", "bash",
                          *sorted(str(tmp_path / p) for p in scripts)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_dated_kubernetes_objects_pass_kubernetes_validate(case, tmp_path):
    crds = {"ResourceFlavor", "ClusterQueue", "LocalQueue", "JobSet"}
    docs = [d for p, t in _tree(case).items() if p.endswith(".yaml") for d in yaml.safe_load_all(t) if d]
    paths = []
    for i, doc in enumerate(d for d in docs if d["kind"] not in crds):
        f = tmp_path / f"{i:03d}.yaml"
        f.write_text(yaml.safe_dump(doc))
        paths.append(str(f))
    assert paths
    out = subprocess.run([test_runbook._tool("kubernetes-validate"), "-k", "1.30.0", "--strict", "--quiet", *paths],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ERROR" not in out.stdout + out.stderr, out.stdout + out.stderr


def test_dated_terraform_is_formatted(tmp_path):
    for case in ("aws", "gcp", "azure"):
        write({p: t for p, t in _tree(case).items() if p.startswith("terraform/")}, tmp_path / case)
    out = subprocess.run(["terraform", "fmt", "-check", "-recursive", "-diff", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


# ---------------------------------------------------------------------------- a compiled example

_EXAMPLE = "llm-pretrain-aws"
_DATED: list = []


def _dated_example():
    """The example compiled with `start: 2027-01` (the solve is the same: start names months only)."""
    if not _DATED:
        from compiler import pipeline
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            spec = Path(tmp) / f"{_EXAMPLE}.yaml"
            spec.write_text(_dated((ROOT / "examples" / f"{_EXAMPLE}.yaml").read_text(), "2027-01"))
            _DATED.append(pipeline.compile_spec(spec))
    return _DATED[0]


def _plan_without(text: str, *keys: str) -> dict:
    d = json.loads(text)
    d["solver"]["seconds"] = 0.0
    d["spec"]["sha256"] = ""
    for k in keys:
        d.pop(k, None)
    return d


def test_a_compiled_example_dated_plans_the_same_and_names_calendar_months():
    undated = example(_EXAMPLE)[1].artifacts
    dated = _dated_example().artifacts
    # the same spec without start renders what it did (the golden tree, test_examples too)
    golden = _read_tree(GOLDEN / "examples" / _EXAMPLE)
    assert not diff_trees({p: t for p, t in golden.items() if p != "plan.json"},
                          {p: t for p, t in undated.items() if p != "plan.json"})
    assert sorted(dated) == sorted(undated)
    assert json.loads(dated["plan.json"])["start"] == "2027-01"
    jsonschema.validate(json.loads(dated["plan.json"]), schema("plan.schema.json"))
    assert _plan_without(dated["plan.json"], "start") == _plan_without(undated["plan.json"])
    for path in ("RUNBOOK.md", "report.md", "report.html"):
        assert "2027-01" in dated[path], path
    bare = [f"{p}: {line.strip()}" for p, t in dated.items() if not p.endswith(".json")
            for line in t.splitlines() if BARE_MONTH.search(line)]
    assert not bare, "\n".join(bare)
    horizon = json.loads(dated["plan.json"])["horizon_months"]
    assert f"horizon {horizon} months (2027-01..{Calendar('2027-01').name(horizon - 1)})." in dated["report.md"]


# ---------------------------------------------------------------------------- diff

def test_diff_names_calendar_months_and_lines_up_two_starts():
    def growing(plan, start, first):
        """Every service runs 1 + k replicas in its calendar month k (counted from 2027-01), for
        the plan's months from calendar month `first`."""
        return replace(plan, start=start, workloads=tuple(
            replace(w, placements=tuple(replace(p, monthly_replicas=tuple(1 + first + m for m in range(12)))
                                        for p in w.placements)) if w.kind == "inference" else w
            for w in plan.workloads))

    base = _tree_plan("onprem")
    a, b = growing(base, "2027-01", 0), growing(base, "2027-03", 2)
    # B starts two months later: the calendar months both plans cover line up and agree, so no
    # replicas changed (A's two months before B starts are past, B's two after A ends are new; by
    # index, every month would differ)
    d = diff_plans(a, b)
    assert not [r for w in d.workloads for r in w.replicas]
    # one month of the overlap raised in B: that calendar month, and only it, is a change
    bumped = replace(b, workloads=tuple(
        replace(w, placements=tuple(replace(p, monthly_replicas=tuple(r + (m == 5) for m, r in enumerate(p.monthly_replicas)))
                                    for p in w.placements)) if w.kind == "inference" else w
        for w in b.workloads))
    replicas = [r for w in diff_plans(a, bumped).workloads for r in w.replicas]
    assert replicas and {r.months for r in replicas} == {"2027-08"}
    data = diff_to_json(d)
    assert (data["plans"]["a"]["start"], data["plans"]["b"]["start"]) == ("2027-01", "2027-03")
    assert any("compared as calendar months" in c for c in data["cautions"])
    # undated: by index, named by index, as before
    d = diff_plans(growing(base, None, 0), growing(base, None, 2))
    assert {r.months for w in d.workloads for r in w.replicas} == {"0-11"}
    assert "start" not in diff_to_json(d)["plans"]["a"]
    assert not [c for c in diff_to_json(d)["cautions"] if "dated" in c or "calendar" in c]
    # one dated plan: by index, named by its calendar, and said so
    d = diff_plans(growing(base, None, 0), growing(base, "2027-01", 0))
    assert not [r for w in d.workloads for r in w.replicas]
    assert any("only plan B is dated" in c for c in diff_to_json(d)["cautions"])


def test_diff_names_a_reserved_terms_start_by_its_calendar_month():
    base = _tree_plan("aws")
    pool = next(i for i, p in enumerate(base.pools) if p.pricing == "reserved_1y")

    def terms(plan, start, month):
        pools = list(plan.pools)
        pools[pool] = replace(pools[pool], reservations=(Reservation(month, 4),))
        return replace(plan, pools=tuple(pools), start=start)

    [resized] = diff_plans(terms(base, "2027-01", 2), terms(base, "2027-01", 4)).pools_resized
    assert [(c.field, c.a, c.b) for c in resized.changes] == [("reservations", "4 from 2027-03", "4 from 2027-05")]
    [resized] = diff_plans(terms(base, None, 2), terms(base, None, 4)).pools_resized
    assert [(c.a, c.b) for c in resized.changes] == [("4 from month 2", "4 from month 4")]
    # a term bought in 2027-03 is the same term in a plan that starts two months later
    assert not diff_plans(terms(base, "2027-01", 2), terms(base, "2027-03", 0)).pools_resized


def _tree_plan(case: str):
    return from_dict(json.loads(_tree(case, None)["plan.json"]))


# ---------------------------------------------------------------------------- infeasibility

@pytest.mark.parametrize("start,when", [(None, " in month "), ("2027-01", " in 2027-")])
def test_an_infeasible_month_is_named_as_the_spec_names_months(start, when):
    from compiler.optimize import optimize
    from optimize_fixtures import candidates, cloud, spec, train_cand, training

    aws = cloud(quotas={"H100": 8}, index=0)
    w = training("big")
    sp = replace(spec([aws], [w]), start=start)
    with pytest.raises(CompileError) as err:
        optimize(candidates(sp, [train_cand(w, aws, "p5.48xlarge", 4, 500.0)]))
    (d,) = [d for d in err.value.diagnostics if "quota" in d.message]
    assert f"24 GPUs short{when}" in d.message
