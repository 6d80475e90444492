"""Every plan.json from outside (`--baseline`, `--start-from`, `diff A B`) and every output path
is treated as hostile (compiler/plan_reader.py, compiler/output.py).

Each attack is one small file: the command exits 2 with the file named on its first line and
a short message, no traceback or internal error, nothing written, no user file touched; NaN
and Infinity never pass the cost gate. Nothing here solves: a baseline is refused before the
estimate, an output path before the solve.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from compiler import output, plan_reader
from compiler.cli import _route, app
from compiler.diagnostics import CompileError
from compiler.diff import Delta, diff_plans, diff_to_json
from compiler.diff_comment import over_threshold, render_comment
from compiler.plan import Pool, Reservation, to_json
from plan_fixtures import doubled_inference_plan, hybrid_plan
from plans import aws_plan
from test_held import SPEC as HELD
from test_owned_bought import SPEC as RETIRE

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str):
    return CliRunner().invoke(app, _route(list(args)))


def refused(result, path) -> str:
    """The first line of a refusal: exit 2, the file named first, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{path}:"), result.stderr
    return first


@pytest.fixture
def spec(tmp_path) -> Path:
    """test_held's spec (aws-use1, start 2027-01), holding nothing of its own."""
    path = tmp_path / "held.yaml"
    path.write_text(HELD.replace("HELD\n", "").replace("RPS", "20"), encoding="utf-8")
    return path


def baseline_doc(**changes) -> dict:
    """A plan of `held` that started three months before the spec, with a term of 2
    p5.48xlarge nodes bought in its month 0 (still running at the spec's start)."""
    pool = Pool("aws-use1", "p5.48xlarge", "H100", 8, 2, "reserved_1y", "efa", (2,) * 12, (0.5,) * 12,
                (1460.0,) * 12, (Reservation(0, 2),))
    return json.loads(to_json(replace(aws_plan(), spec_name="held", start="2026-10", pools=(pool,), **changes)))


def write(path: Path, doc) -> Path:
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def _set(doc: dict, dotted: str, value) -> dict:
    *head, last = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    at = doc
    for k in head:
        at = at[k]
    at[last] = value
    return doc


# --- the cost gate ---------------------------------------------------------------------------

@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_total_that_is_no_number_never_passes_the_cost_gate(tmp_path, literal):
    a = write(tmp_path / "a.json", to_json(hybrid_plan()))
    text = to_json(hybrid_plan())
    b = write(tmp_path / "b.json", text.replace(f'"total_cost_usd": {json.loads(text)["total_cost_usd"]}',
                                                f'"total_cost_usd": {literal}'))
    assert literal in b.read_text()
    for args in ((str(a), str(b)), (str(b), str(a))):
        result = cli("diff", *args, "--fail-above", "5", "--format", "markdown")
        first = refused(result, args[1] if args[1] == str(b) else args[0])
        assert "error[E014] at $.total_cost_usd: number must be finite" in first
        assert "nan" not in result.stdout.lower() and "inf" not in result.stdout.lower()


def test_the_gate_fails_closed_on_a_total_that_is_no_number():
    # the reader refuses such a plan; a PlanDiff made some other way still cannot pass
    d = diff_plans(hybrid_plan(), doubled_inference_plan())
    for bad in (math.nan, math.inf):
        assert over_threshold(replace(d, total=Delta("total_cost_usd", 100.0, bad)), 0.05)
        assert over_threshold(replace(d, total=Delta("total_cost_usd", bad, 100.0)), 0.05)
    assert not over_threshold(replace(d, total=Delta("total_cost_usd", 100.0, 104.0)), 0.05)


# --- hostile baselines: refused, exit 2, the file named --------------------------------------

HOSTILE = {
    # name: (the file's text from the baseline doc, the code, words of the message)
    "nan-total": (lambda d: json.dumps(_set(d, "total_cost_usd", "NAN")).replace('"NAN"', "NaN"),
                  "E014", "number must be finite, got NaN"),
    "deep": (lambda d: "[" * 100_000 + "]" * 100_000, "E013", "nested deeper than 64 levels"),
    "deep-inside": (lambda d: json.dumps(_set(d, "workloads.0.inputs", json.loads("[" * 70 + "]" * 70))),
                    "E013", "nested deeper than 64 levels"),
    "digits": (lambda d: json.dumps(d).replace('"horizon_months": 12', '"horizon_months": ' + "9" * 100_000),
               "E014", "number is too long (100,000 characters)"),
    "held-1e308": (lambda d: json.dumps(_set(d, "pools.0.reservations.0.nodes", 1e308)),
                   "E014", "must be an integer, got 1e+308"),
    "held-1e18": (lambda d: json.dumps(_set(d, "pools.0.reservations.0.nodes", 10**18)),
                  "E014", "must be <= 10,000,000, got 1000000000000000000"),
    "total-text": (lambda d: json.dumps(_set(d, "total_cost_usd", "cheap")), "E010", "must be number, got 'cheap'"),
    "start-0000-00": (lambda d: json.dumps(_set(d, "start", "0000-00")), "E010", "'0000-00' is not a name, month"),
    "start-9999-06": (lambda d: json.dumps(_set(d, "start", "9999-06")), "E014", "the plan starts in 9999-06"),
    "pools-1e5": (lambda d: json.dumps(_set(d, "pools", [d["pools"][0]] * 100_000)), "E013", None),
    "name": (lambda d: json.dumps(_set(d, "pools.0.site", "aws-use1; rm -rf /")), "E010", "'aws-use1; rm -rf /'"),
    "not-an-object": (lambda d: "[1, 2]", "E010", "a plan is a JSON object"),
    # a name the schema's pattern admits but no cost category of the Plan's typed breakdown
    "cost-category": (lambda d: json.dumps(_set(d, "cost_breakdown_usd.gpu_rental", 1.0)), "E010",
                      "no cost category 'gpu_rental'"),
    "not-utf8": (lambda d: b"\xff\xfe{}".decode("latin-1"), "E010", None),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_baseline_is_refused_with_the_file_named(tmp_path, spec, case):
    make, code, words = HOSTILE[case]
    bad = tmp_path / f"{case}.json"
    text = make(baseline_doc())
    bad.write_bytes(text.encode("latin-1") if case == "not-utf8" else text.encode("utf-8"))
    out = tmp_path / "out"
    t0 = time.perf_counter()
    for option in ("--baseline", "--start-from"):
        first = refused(cli(str(spec), option, str(bad), "-o", str(out), "-q"), bad)
        assert f"error[{code}]" in first and (words is None or words in first), first
    assert time.perf_counter() - t0 < 20
    assert len(first) < 400                       # an excerpt, never the file
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == sorted(["held.yaml", bad.name])
    # the same file given to diff
    first = refused(cli("diff", str(bad), str(bad)), bad)
    assert f"error[{code}]" in first


def test_the_hostile_baselines_fixture_is_a_plan_the_reader_takes(tmp_path, spec):
    # the attacks above are each one change from this: the fixture itself is read whole
    plan = plan_reader.read(write(tmp_path / "ok.json", baseline_doc()))
    assert plan.spec_name == "held" and plan.pools[0].reservations[0].nodes == 2


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "big-sparse"])
def test_pipes_devices_and_huge_files_are_refused_before_reading(tmp_path, spec, kind):
    """In a child process with a timeout: a reader that blocks or reads on must fail the test,
    not hang it."""
    if kind == "fifo":
        path = tmp_path / "plan.fifo"
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "directory":
        path = tmp_path / "a-folder"
        path.mkdir()
    else:
        path = tmp_path / "huge.json"
        with open(path, "wb") as fh:
            fh.truncate(500 << 20)              # 500 MB of one line, sparse: nothing is written
    for args in ([str(spec), "--baseline", str(path), "-o", str(tmp_path / "out"), "-q"],
                 ["diff", str(path), str(path)]):
        run = subprocess.run([sys.executable, "-m", "compiler", *args], capture_output=True, text=True,
                             timeout=60, cwd=tmp_path)
        assert run.returncode == 2, run.stderr
        assert run.stderr.startswith(f"{path}: error[E013]"), run.stderr
        assert len(run.stderr) < 400 and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


def test_a_long_line_is_quoted_as_an_excerpt(tmp_path):
    # one line of 1 MB whose JSON breaks at its end: the message quotes 60 characters near it
    doc = baseline_doc()
    doc["workloads"][0]["estimate"]["notes"] = ["x" * 9_000] * 120
    bad = write(tmp_path / "long.json", json.dumps(doc)[:-1] + "!")
    assert len(bad.read_text()) > 1_000_000
    result = cli("diff", str(bad), str(bad))
    first = refused(result, bad)
    assert "error[E010]" in first and "not JSON" in first
    assert len(result.stderr) < 500


def test_a_baseline_of_another_spec_names_the_baseline(tmp_path, spec):
    bad = write(tmp_path / "other.json", _set(baseline_doc(), "spec.name", "another"))
    first = refused(cli(str(spec), "--baseline", str(bad), "-q", "-o", str(tmp_path / "out")), bad)
    assert "error[E011] at $.spec.name: the baseline is a plan of 'another', this spec is 'held'" in first
    later = write(tmp_path / "later.json", _set(baseline_doc(), "start", "2027-04"))
    assert "error[E011] at $.start" in refused(cli(str(spec), "--baseline", str(later), "-q"), later)


def test_a_held_term_of_an_instance_not_sold_there_is_checked_as_the_specs_are(tmp_path, spec):
    # the spec's own `reserved` of p9.fake is E218 at validate; the baseline's term is the same
    bad = write(tmp_path / "fake.json", _set(baseline_doc(), "pools.0.instance", "p9.fake"))
    first = refused(cli(str(spec), "--baseline", str(bad), "-q", "-o", str(tmp_path / "out")), bad)
    assert "error[E218] at $.pools[0].instance: a reservation of 'p9.fake' at us-east-1: the catalog does " \
           "not sell it there" in first
    spec_own = tmp_path / "own.yaml"
    spec_own.write_text(HELD.replace("HELD\n", "    reserved:\n      - {instance: p9.fake, nodes: 2, until: 2027-10}\n")
                        .replace("RPS", "20"), encoding="utf-8")
    own = cli("validate", str(spec_own))
    assert own.exit_code == 2 and "a reservation of 'p9.fake' at us-east-1: the catalog does not sell it there" \
        in own.stderr
    # a term that ended before the spec's start is not carried, so not checked
    from compiler import baseline, pipeline

    ended = write(tmp_path / "ended.json", _set(_set(baseline_doc(), "pools.0.instance", "p9.fake"), "start", "2025-10"))
    parsed, catalog, _ = pipeline.validate(spec)
    carried, _ = baseline.carried(parsed, baseline.load(ended), catalog)
    assert carried.sites[0].reserved == ()


def test_nodes_bought_of_a_model_the_catalog_lacks_are_an_error(tmp_path):
    spec = tmp_path / "retire.yaml"
    spec.write_text(RETIRE, encoding="utf-8")
    pool = Pool("dc1", "dgx-h999", "H100", 8, 2, "purchase", "infiniband-ndr", (2,) * 12, (0.5,) * 12, (1460.0,) * 12)
    doc = json.loads(to_json(replace(aws_plan(), spec_name="retire", start="2026-01", pools=(pool,))))
    bad = write(tmp_path / "bought.json", doc)
    first = refused(cli(str(spec), "--baseline", str(bad), "-q", "-o", str(tmp_path / "out")), bad)
    assert "error[E212] at $.pools[0].instance: unknown on-prem node model 'dgx-h999'" in first


def test_a_start_whose_calendar_runs_past_four_digit_years_is_refused_at_validate(tmp_path):
    # owned nodes bought at a start of 9999-06 would end their life in 10004: no plan names that
    spec = tmp_path / "far.yaml"
    spec.write_text(RETIRE.replace("start: 2027-01", "start: 9999-06"), encoding="utf-8")
    result = cli("validate", str(spec))
    assert result.exit_code == 2
    assert "error[E106] at $.start: start 9999-06 is outside the months a plan names (1900-01 to 2999-12)" \
        in result.stderr


# --- output paths -----------------------------------------------------------------------------

def test_an_existing_file_is_never_replaced_by_an_output_folder(tmp_path, spec):
    target = tmp_path / "existing-file.txt"
    target.write_text("precious\n")
    first = refused(cli(str(spec), "-o", str(target), "-q"), target.resolve())
    assert "error[E015]" in first and "is a file" in first
    assert target.read_text() == "precious\n"
    with pytest.raises(CompileError):
        output.write({"plan.json": "{}\n"}, target)
    assert target.read_text() == "precious\n"


def test_a_users_folder_is_never_replaced(tmp_path, spec):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.md").write_text("mine\n")
    first = refused(cli(str(spec), "-o", str(mine), "-q"), mine.resolve())
    assert "error[E015]" in first and "did not write" in first
    # a plan.json of a compile beside the user's files does not make the folder the compiler's
    (mine / "plan.json").write_text(to_json(hybrid_plan()))
    refused(cli(str(spec), "-o", str(mine), "-q"), mine.resolve())
    refused(cli(str(spec), "-o", str(tmp_path), "-q"), tmp_path.resolve())     # -o . in one's work
    assert (mine / "notes.md").read_text() == "mine\n" and (tmp_path / "held.yaml").is_file()


def test_a_path_that_cannot_be_written_is_refused_before_anything_is(tmp_path, spec):
    afile = tmp_path / "afile"
    afile.write_text("x")
    under = afile / "out"
    first = refused(cli(str(spec), "-o", str(under), "-q"), under.resolve())
    assert "error[E015]" in first and "a folder above the output folder is a file" in first
    if os.geteuid() != 0:     # root writes where the mode says no
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        first = refused(cli(str(spec), "-o", str(locked / "out"), "-q"), (locked / "out").resolve())
        assert "cannot create the output folder" in first and not (locked / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["afile", "held.yaml"] + (
        ["locked"] if os.geteuid() != 0 else []))


def test_the_compilers_own_folders_are_replaced(tmp_path):
    tree = {"plan.json": to_json(hybrid_plan()), "report.md": "r\n", "terraform/x/main.tf": "t\n"}
    out = tmp_path / "out"
    out.mkdir()                                   # empty: nothing to lose
    output.write(tree, out)
    output.write({**tree, "report.md": "again\n"}, out)         # the lock file knows the folder
    (tmp_path / ".out.lock").unlink()             # a clone or a moved folder: its plan.json says
    output.write({**tree, "report.md": "third\n"}, out)
    assert (out / "report.md").read_text() == "third\n"
    (tmp_path / ".out.lock").unlink()
    (out / "plan.json").write_text('{"spec": "a terraform plan, say"}')   # not a compile's plan.json
    with pytest.raises(CompileError) as err:
        output.write(tree, out)
    assert err.value.diagnostics[0].code == "E015" and (out / "report.md").read_text() == "third\n"


def test_what_a_compile_writes_at_the_top_of_its_folder_is_known_to_the_output_stage():
    # a folder of the compiler's, recognised by its plan.json, holds only these names
    for case in (ROOT / "tests" / "golden" / "examples").iterdir():
        assert {p.name for p in case.iterdir()} <= output.COMPILE_ENTRIES, case.name


def test_check_never_reads_a_fifo_in_the_output_folder(tmp_path):
    out = tmp_path / "out"
    output.write({"plan.json": to_json(hybrid_plan()), "report.md": "r\n"}, out)
    (out / "report.md").unlink()
    os.mkfifo(tmp_path / "fifo")
    (out / "report.md").symlink_to(tmp_path / "fifo")     # reading it would wait for a writer forever
    d = output.drift({"plan.json": to_json(hybrid_plan()), "report.md": "r\n"}, out)
    assert d.changed == ("report.md",)


# --- diff over mutated plan.json files --------------------------------------------------------

_BASE = json.loads(to_json(hybrid_plan()))
_HEAD = json.loads(to_json(doubled_inference_plan()))


def mutated(doc: dict, mutations) -> dict:
    """A copy of `doc` with each (path, value) mutation applied: the key dropped ("drop") or set."""
    doc = json.loads(json.dumps(doc))
    for path, value in mutations:
        at = doc
        try:
            for k in path[:-1]:
                at = at[k]
            if value == "drop":
                del at[path[-1]]
            else:
                at[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue                               # an earlier mutation removed the way there
    return doc


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


_ALL_PATHS = sorted(_paths(_HEAD), key=str)
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["2027-01", "0000-00", "9999-12", "", "NaN"]),
                    st.lists(st.integers(-3, 3), max_size=3), st.just({}))


@settings(max_examples=50, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_ALL_PATHS), st.one_of(st.just("drop"), _VALUES)), min_size=1, max_size=3))
def test_diff_of_mutated_plans_is_a_diff_or_a_clear_error(tmp_path_factory, mutations):
    doc = mutated(_HEAD, mutations)
    folder = tmp_path_factory.mktemp("fuzz")
    a = write(folder / "a.json", json.dumps(_BASE))
    b = folder / "b.json"
    b.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8")
    try:
        plans = [plan_reader.read(p, complete=False) for p in (a, b)]
    except CompileError as exc:
        assert exc.exit_code == 2 and exc.source.filename == str(b)
        assert exc.diagnostics[0].code in ("E010", "E013", "E014")
        return
    d = diff_plans(*plans)
    json.dumps(diff_to_json(d), allow_nan=False)   # a diff that is JSON, with numbers only
    render_comment(d, 0.05)


def test_a_baseline_placing_work_at_a_site_it_never_names_is_refused(tmp_path, spec):
    # a placement whose site no entry of sites or pools names has nothing to be read back on
    bad = write(tmp_path / "nowhere.json", _set(baseline_doc(), "workloads.0.placements.0.site", "gcp-nowhere"))
    first = refused(cli(str(spec), "--baseline", str(bad), "-q", "-o", str(tmp_path / "out")), bad)
    assert "error[E010] at $.workloads[0].placements[0].site: the plan cannot be read back: workload" in first
    assert "'gcp-nowhere', a site the plan's sites and pools do not name" in first
    # the fixture itself places finetune-13b at aws-usw2, a site it names with no pool there: read
    assert plan_reader.read(write(tmp_path / "ok.json", baseline_doc())).spec_name == "held"
