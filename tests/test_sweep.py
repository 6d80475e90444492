"""`infra-compile sweep`: scenarios expanded and checked, compiled on local processes and on a real
Dask cluster (scheduler and worker processes) to the same bytes, tabled from the plan files, and
a price curve that never rises as the price falls.

The spec is small on purpose (an 8B service and an 8B fine-tune, AWS and a lab with one owned
L40S server): its 14 scenarios compile in seconds each, so the suite can run the sweep three
times. Every figure checked here is read back from the scenario's own plan.json or recompiled
from the scenario's own input files, never from the sweep's code."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SPEC = """\
apiVersion: infra-compile/v1
name: sweep-small
horizon_months: 6
sites:
  - {name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand, spot]}
  - name: lab-dc1
    type: on_prem
    power_kw: 60
    electricity_usd_per_kwh: 0.12
    pue: 1.4
    max_racks: 2
    owned:
      - {instance: l40s-server, nodes: 1}
policy:
  placement: hybrid
workloads:
  - name: assistant
    kind: inference
    model: llama-3-8b
    traffic: {peak_rps: 4, input_tokens: 500, output_tokens: 200}
    slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80, availability: 0.99}
  - name: tune-8b
    kind: training
    model: llama-3-8b
    tokens: 2.0e+10
    window: {start_month: 1, deadline_days: 10}
"""

SCENARIOS = """\
apiVersion: infra-compile/v1
scenarios:
  - name: h100
    description: every H100 price scaled
    prices: [{gpu: H100, factor: {from: 0.6, to: 1.2, step: 0.2}}]
  - name: traffic
    traffic: {from: 1, to: 3, step: 0.5}
  - name: cloud
    policy: {placement: cloud}
  - name: on-prem
    policy: {placement: on_prem}
  - name: three-nines
    availability: 0.999
  - name: starved
    description: on-prem L40S only, at a thousand times the traffic
    policy: {placement: on_prem, allowed_gpus: [L40S]}
    traffic: 1000
"""

NAMES = ["h100@0.6", "h100@0.8", "h100@1", "h100@1.2", "traffic@1", "traffic@1.5", "traffic@2",
         "traffic@2.5", "traffic@3", "cloud", "on-prem", "three-nines", "starved"]


def _cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "compiler", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def _files(root: Path) -> dict[str, str]:
    """Every file under `root`, plan.json without its solver seconds (benchmarks/bench_sweep.py)."""
    benchmarks = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if benchmarks not in sys.path:
        sys.path.insert(0, benchmarks)
    from bench_sweep import files

    return files(root)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    (tmp / "spec.yaml").write_text(SPEC)
    (tmp / "scenarios.yaml").write_text(SCENARIOS)
    return tmp


@pytest.fixture(scope="module")
def local_pool(work):
    """The sweep on the local pool, two worker processes (`--workers 1`, one scenario after
    another in the calling process, runs the same compile_job; the pool is the path to check)."""
    _cli("sweep", "spec.yaml", "scenarios.yaml", "-o", "one", "--workers", "2", "-q", cwd=work)
    return work / "one"


@pytest.mark.slow
def test_every_scenario_has_its_row_and_folder(local_pool):
    doc = json.loads((local_pool / "scenarios.json").read_text())
    rows = doc["scenarios"]
    assert [r["scenario"] for r in rows] == NAMES
    for r in rows[:-1]:
        plan = json.loads((local_pool / r["scenario"] / "out" / "plan.json").read_text())
        assert r["total_cost_usd"] == round(plan["total_cost_usd"], 2)
        assert r["status"] == plan["solver"]["status"] and r["gap"] == round(plan["solver"]["gap"], 6)
        assert r["cost_by_workload_usd"] == {w["name"]: round(w["cost_usd"], 2) for w in plan["workloads"]}
        gpus = {}
        for p in plan["pools"]:
            gpus[p["gpu"]] = gpus.get(p["gpu"], 0) + p["nodes"] * p["gpus_per_node"]
        assert r["gpus_by_type"] == gpus
    # the starved lab cannot hold what a thousand times the traffic needs: its row says so, and
    # the other scenarios ran
    starved = rows[-1]
    assert starved["status"] == "infeasible" and starved["total_cost_usd"] is None
    errors = (local_pool / "starved" / "errors.txt").read_text()
    assert "error[E303]" in errors and "starved/spec.yaml" in errors
    assert not (local_pool / "starved" / "out").exists()


@pytest.mark.slow
def test_cloud_share_is_the_cloud_spend(local_pool):
    rows = {r["scenario"]: r for r in json.loads((local_pool / "scenarios.json").read_text())["scenarios"]}
    assert rows["cloud"]["cloud_share"] == 1.0
    assert rows["on-prem"]["cloud_share"] == 0.0
    plan = json.loads((local_pool / "traffic@1" / "out" / "plan.json").read_text())
    cloud_sites = {s["name"] for s in plan["sites"] if s["type"] == "cloud"}
    cloud = plan["cost_breakdown_usd"]["cloud_compute"] + sum(
        s["cost_usd"] for s in plan["storage"] if s["site"] in cloud_sites)
    assert rows["traffic@1"]["cloud_share"] == pytest.approx(cloud / plan["total_cost_usd"], abs=1e-6)


@pytest.mark.slow
def test_csv_says_what_json_says(local_pool):
    table = list(csv.DictReader(io.StringIO((local_pool / "scenarios.csv").read_text(), newline="")))
    rows = json.loads((local_pool / "scenarios.json").read_text())["scenarios"]
    assert [r["scenario"] for r in table] == NAMES
    for c, j in zip(table, rows):
        assert c["status"] == j["status"]
        if j["total_cost_usd"] is not None:
            assert float(c["total_cost_usd"]) == pytest.approx(j["total_cost_usd"], abs=0.01)
            assert float(c["workload:assistant"]) == pytest.approx(j["cost_by_workload_usd"]["assistant"], abs=0.01)


@pytest.mark.slow
def test_the_price_curve_never_rises_as_the_price_falls(local_pool):
    """A cheaper H100 is a relaxation: the optimum at a lower price is no dearer. Each plan is
    within its proven gap of its optimum, so plan(p) x (1 - gap(p)) <= optimum(p) <= optimum(q)
    <= plan(q) for p < q."""
    rows = [r for r in json.loads((local_pool / "scenarios.json").read_text())["scenarios"]
            if r["swept"] == "prices[0].factor"]
    assert [r["point"] for r in rows] == [0.6, 0.8, 1.0, 1.2]
    for low, high in zip(rows, rows[1:]):
        assert low["total_cost_usd"] * (1 - low["gap"]) <= high["total_cost_usd"] + 0.01
    # and the cut is real: at 60% of the price the plan uses H100s and costs less than at 100%
    assert rows[0]["total_cost_usd"] < rows[2]["total_cost_usd"]
    assert "H100" in rows[0]["gpus_by_type"]


@pytest.mark.slow
def test_a_scenario_folder_recompiles_to_the_same_files(local_pool, tmp_path):
    folder = local_pool / "h100@0.6"
    _cli(str(folder / "spec.yaml"), "--catalog", str(folder / "catalog.yaml"), "-o", str(tmp_path / "again"),
         "-q", cwd=tmp_path)
    assert _files(tmp_path / "again") == _files(folder / "out")
    plan = json.loads((folder / "out" / "plan.json").read_text())
    assert plan["catalog"]["version"].endswith("+sweep-h100-0.6")


@pytest.mark.slow
def test_overlay_scales_exactly_the_matching_prices(local_pool):
    import yaml

    from compiler.catalog import load_catalog

    base = load_catalog()
    overlay = yaml.safe_load((local_pool / "h100@0.6" / "catalog.yaml").read_text())
    h100 = {n for n, i in base.instances.items() if i.gpu == "H100"}
    assert set(overlay["instances"]) == h100
    for name, rec in overlay["instances"].items():
        before = {r.region: r for r in base.instances[name].prices}
        for region, row in rec["prices"].items():
            for option in ("on_demand", "spot", "reserved_1y", "reserved_3y"):
                old = getattr(before[region], option)
                assert (row[option] is None) == (old is None)
                if old is not None:
                    assert row[option] == pytest.approx(old * 0.6, rel=1e-5)
    h100_nodes = {n for n, node in base.onprem_nodes.items() if node.gpu == "H100"}
    assert set(overlay["onprem_nodes"]) == h100_nodes
    for name in h100_nodes:
        assert overlay["onprem_nodes"][name]["capex_usd"] == pytest.approx(base.onprem_nodes[name].capex_usd * 0.6)


@pytest.fixture()
def dask_cluster(tmp_path):
    """A real Dask cluster on this machine: a scheduler process and a worker process of two
    single-threaded workers, found through a scheduler file."""
    pytest.importorskip("distributed")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    sched_file = tmp_path / "scheduler.json"
    bindir = Path(sys.executable).parent
    procs = [subprocess.Popen([str(bindir / "dask"), "scheduler", "--scheduler-file", str(sched_file),
                               "--host", "127.0.0.1", "--port", "0", "--no-dashboard"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        procs.append(subprocess.Popen([str(bindir / "dask"), "worker", "--scheduler-file", str(sched_file),
                                       "--nworkers", "2", "--nthreads", "1", "--no-dashboard"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        from distributed import Client

        address = json.loads(sched_file.read_text())["address"]
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)


@pytest.mark.slow
def test_a_dask_cluster_writes_the_same_bytes(work, local_pool, dask_cluster):
    _cli("sweep", "spec.yaml", "scenarios.yaml", "-o", "dask", "--scheduler", dask_cluster, "-q", cwd=work)
    assert _files(work / "dask") == _files(local_pool)


@pytest.mark.slow
def test_ctrl_c_stops_every_worker_and_writes_nothing(work):
    proc = subprocess.Popen([sys.executable, "-m", "compiler", "sweep", "spec.yaml", "scenarios.yaml",
                             "-o", "stopped", "--workers", "2", "-q"], cwd=work, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kids: list[str] = []
    deadline = time.monotonic() + 120
    while len(kids) < 2 and time.monotonic() < deadline:     # past validation: workers compiling
        time.sleep(0.5)
        kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(kids) >= 2, "no worker processes were running"
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGINT)     # what a terminal's Ctrl-C sends: the whole group
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert not (work / "stopped").exists()
    def running(pid: str) -> bool:       # a zombie has ended; only its parent's reaper is missing
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False

    deadline = time.monotonic() + 10
    while any(running(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [k for k in kids if running(k)] == []


# --- the scenarios file's errors ------------------------------------------------------------

def _prepare_errors(work: Path, text: str) -> str:
    (work / "bad.yaml").write_text(text)
    done = _cli("sweep", "spec.yaml", "bad.yaml", "-o", "never", cwd=work, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert not (work / "never").exists()
    return done.stderr


def test_every_mistake_at_once_located_in_the_scenarios_file(work):
    err = _prepare_errors(work, """\
scenarios:
  - name: a
    traffic: {factor: 2, workloads: [asistant]}
  - name: b
    prices: [{gpu: H100, factor: {from: 1, to: 2, step: 0.5}}]
    tokens: {from: 1, to: 2, step: 1}
  - name: a
  - name: c
    remove_sites: [lab-dc2]
  - name: d
    prices: [{gpu: H101, factor: 0.5}]
""")
    assert "bad.yaml:3:38: error[E705] at $.scenarios[0].traffic.workloads[0]: no workload 'asistant'" in err
    assert "did you mean 'assistant'?" in err
    assert "bad.yaml:6:13: error[E703] at $.scenarios[1].tokens: a scenario sweeps one factor" in err
    assert "bad.yaml:7:11: error[E702] at $.scenarios[2].name: scenario name 'a' is used twice" in err
    assert "error[E705] at $.scenarios[3].remove_sites[0]: no site 'lab-dc2'" in err
    assert "error[E705] at $.scenarios[4].prices[0]: no price in the catalog matches this filter" in err


def test_schema_errors_name_the_key(work):
    err = _prepare_errors(work, "scenarios:\n  - name: x\n    trafic: 2\n  - name: y\n    traffic: -1\n")
    assert "bad.yaml:3:5: error[E101] at $.scenarios[0]: unknown key 'trafic'" in err
    assert "did you mean 'traffic'?" in err
    assert "bad.yaml:5:14: error[E102] at $.scenarios[1].traffic: must be > 0, got -1" in err


@pytest.mark.slow
def test_range_mistakes(work):
    err = _prepare_errors(work, """\
scenarios:
  - name: y
    traffic: {from: 0, to: 2, step: 1}
  - name: z
    prices: [{factor: {values: [0.5, -1]}}]
""")
    assert "bad.yaml:3:21: error[E102] at $.scenarios[0].traffic.from: must be > 0, got 0" in err
    assert "error[E102] at $.scenarios[1].prices[0].factor.values[1]: must be > 0, got -1" in err
    # a range's keys are checked once every value is well-formed
    err = _prepare_errors(work, """\
scenarios:
  - name: y
    traffic: {from: 1, to: 3, step: 1}
  - name: z
    traffic: {values: [1, 2]}
  - name: w
    traffic: {from: 1, to: 2}
  - name: v
    tokens: {workloads: [tune-8b]}
""")
    assert "bad.yaml:7:14: error[E703] at $.scenarios[2].traffic: a range needs from, to and step (missing step)" in err
    assert "bad.yaml:9:13: error[E703] at $.scenarios[3].tokens: 'tokens' needs a factor" in err


def test_a_scenario_that_breaks_the_spec_is_an_error_before_any_solve(work):
    err = _prepare_errors(work, "scenarios:\n  - name: ok\n  - name: no-sites\n    remove_sites: [aws-use1, lab-dc1]\n")
    assert "bad.yaml:3:5: error[E704] at $.scenarios[1]: scenario 'no-sites' makes the spec invalid" in err


def test_a_range_that_expands_too_far(work):
    err = _prepare_errors(work, "scenarios:\n  - name: r\n    traffic: {from: 1, to: 100, step: 0.01}\n")
    assert "error[E703]" in err and "more than 100 points" in err


# --- the page, in a real browser ----------------------------------------------------------

from test_report_browser import ARTIFACTS, browser  # noqa: E402,F401  (the headless Chromium fixture)


@pytest.mark.slow
def test_the_page_opens_with_its_table_charts_and_links(local_pool, browser):  # noqa: F811
    browser.get((local_pool / "index.html").as_uri())
    assert browser.title == "Scenarios of sweep-small"
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('#scenarios tbody tr')).map(function (r) {"
        "  return Array.from(r.cells).map(function (c) { return c.textContent; }); });")
    assert [c[0] for c in cells] == NAMES
    rows = {r["scenario"]: r for r in json.loads((local_pool / "scenarios.json").read_text())["scenarios"]}
    for c in cells:
        row = rows[c[0]]
        total = row["total_cost_usd"]
        assert c[3] == ("" if total is None else f"${total:,.0f}")
        if total is not None:
            assert c[-1] == ", ".join(f"{site} {n}" for site, n in sorted(row["gpus_by_site"].items()))
    charts = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.chart')).map(function (s) {"
        "  var r = s.getBoundingClientRect(); return [s.getAttribute('aria-label'), r.width, r.height]; });")
    labels = [c[0] for c in charts]
    assert labels == ["Total cost per scenario, stacked by cost category",
                      "Total cost of h100 over prices[0].factor, with the proven bound",
                      "Total cost of traffic over traffic, with the proven bound",
                      "Total cost against the cloud share, per scenario"]
    assert all(w > 100 and h > 100 for _l, w, h in charts), charts
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('#scenarios a')).map(function (a) {"
        "  return a.getAttribute('href'); });")
    assert len(links) == len(NAMES) - 1                        # the infeasible one has no report
    assert all((local_pool / link).is_file() for link in links)
    errors = [e for e in browser.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
    assert errors == []
    ARTIFACTS.mkdir(exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight;")
    browser.set_window_size(1280, min(int(height) + 40, 16000))
    browser.save_screenshot(str(ARTIFACTS / "sweep.png"))


@pytest.mark.slow
def test_an_unreachable_scheduler_is_an_error_not_a_traceback(monkeypatch):
    pytest.importorskip("distributed")
    from compiler.diagnostics import CompileError
    from compiler.sweep import run

    monkeypatch.setattr(run, "CONNECT_SECONDS", 2)
    with pytest.raises(CompileError) as info:
        run.run_jobs([run.Job("a", SPEC, None)], scheduler="tcp://127.0.0.1:9")
    [d] = info.value.diagnostics
    assert d.code == "E707" and "tcp://127.0.0.1:9" in d.message
