"""The shipped examples, end to end: every stage runs, every artifact passes the real
tools, and the whole output tree matches tests/golden/examples/<name>/ byte for byte
(rewrite with `pytest --update-golden` when a change is intended)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import hcl2
import jsonschema
import pytest
import yaml

import slurm_harness
from plans import write

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))


def _stable(artifacts: dict[str, str]) -> dict[str, str]:
    """plan.json records the solve time; everything else must be identical run to run."""
    plan = json.loads(artifacts["plan.json"])
    plan["solver"]["seconds"] = 0.0
    return {**artifacts, "plan.json": json.dumps(plan, indent=2, sort_keys=True) + "\n"}


@pytest.fixture(scope="module")
def compiled():
    from compiler.pipeline import compile_spec

    return {name: compile_spec(ROOT / "examples" / f"{name}.yaml").artifacts for name in EXAMPLES}


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(found).exists():
        pytest.skip(f"{name} is not installed")
    return found


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_matches_golden_tree(name, compiled, golden):
    golden(f"examples/{name}", _stable(compiled[name]))


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_plan_is_valid_and_complete(name, compiled):
    from compiler.resources import schema

    plan = json.loads(compiled[name]["plan.json"])
    jsonschema.Draft202012Validator(schema("plan.schema.json")).validate(plan)
    spec = yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text())
    assert sorted(w["name"] for w in plan["workloads"]) == sorted(w["name"] for w in spec["workloads"])
    assert plan["solver"]["status"] == "optimal"
    assert plan["total_cost_usd"] > 0
    assert {"report.md", "report.html"} <= set(compiled[name])


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_terraform_parses(name, compiled):
    tf = {p: t for p, t in compiled[name].items() if p.endswith(".tf")}
    for path, text in tf.items():
        hcl2.loads(text)  # raises on a syntax error
    clouds = {p.split("/")[1] for p in tf}
    plan = json.loads(compiled[name]["plan.json"])
    used_cloud_sites = {pool["site"] for pool in plan["pools"]
                        if any(s["name"] == pool["site"] and s["type"] == "cloud" for s in plan["sites"])}
    assert used_cloud_sites <= clouds


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_kubernetes_objects_pass_the_api_schemas(name, compiled, tmp_path):
    files = {p: t for p, t in compiled[name].items() if p.startswith("kubernetes/")}
    if not files:
        pytest.skip(f"{name} runs no Kubernetes site")
    builtin = []
    for i, (path, text) in enumerate(sorted(files.items())):
        for j, doc in enumerate(yaml.safe_load_all(text)):
            if doc and "kueue" not in doc["apiVersion"] and "jobset" not in doc["apiVersion"]:
                f = tmp_path / f"{i:03d}-{j}.yaml"
                f.write_text(yaml.safe_dump(doc))
                builtin.append(str(f))
    out = subprocess.run([_tool("kubernetes-validate"), "-k", "1.30.0", "--strict", "--quiet", *builtin],
                         capture_output=True, text=True, timeout=120)
    bad = [l for l in (out.stdout + out.stderr).splitlines() if l.startswith(("ERROR", "WARN"))]
    assert out.returncode == 0 and not bad, out.stdout + out.stderr


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_job_scripts_pass_shellcheck(name, compiled, tmp_path):
    jobs = {p: t for p, t in compiled[name].items() if p.endswith(".sbatch")}
    if not jobs:
        pytest.skip(f"{name} has no Slurm jobs")
    write(jobs, tmp_path)
    out = subprocess.run([_tool("shellcheck"), "-S", "warning", "-s", "bash",
                          *(str(tmp_path / p) for p in sorted(jobs))],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


SLURM_SITES = [(name, site) for name in EXAMPLES for site in sorted({
    p.split("/")[1] for p in [q.relative_to(ROOT / "tests" / "golden" / "examples" / name).as_posix()
                             for q in (ROOT / "tests" / "golden" / "examples" / name).rglob("slurm.conf")]
    if p.startswith("slurm/")})]


@pytest.mark.skipif(not slurm_harness.available(),
                    reason="slurmctld/slurmd/sbatch are not installed (apt-get install slurmctld slurmd slurm-client)")
@pytest.mark.parametrize("name,site", SLURM_SITES, ids=[f"{n}:{s}" for n, s in SLURM_SITES])
def test_example_slurm_loads_and_jobs_test_submit(name, site, compiled, tmp_path):
    prefix = f"slurm/{site}/"
    conf = tmp_path / "conf"
    write({p[len(prefix):]: t for p, t in compiled[name].items() if p.startswith(prefix)}, conf)
    with slurm_harness.SlurmHarness(conf, tmp_path / "run") as h:
        for job in sorted((conf / "jobs").glob("*.sbatch")):
            out = h.test_job(job)
            assert out.returncode == 0, f"{job.name}: {out.stdout}{out.stderr}"
        assert h.errors() == []


def test_check_is_clean_on_fresh_output_and_exit_4_after_edits(tmp_path):
    spec = ROOT / "examples" / "onprem-vision.yaml"
    out = tmp_path / "out"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "compiler", *args], capture_output=True,
                              text=True, timeout=300)

    assert cli(str(spec), "-o", str(out), "-q").returncode == 0
    assert cli(str(spec), "-o", str(out), "--check").returncode == 0
    report = out / "report.md"
    report.write_text(report.read_text() + "hand edit\n")
    bom = next(out.glob("onprem/*/bom.csv"))
    bom.unlink()
    r = cli(str(spec), "-o", str(out), "--check")
    assert r.returncode == 4
    assert f"{report}: differs" in r.stderr
    assert f"{bom}: missing" in r.stderr


def test_diff_names_what_doubled_traffic_changed(tmp_path):
    """A spec and its edited copy (inference traffic doubled): diff names the workloads, the
    pools that changed and the cost delta; exit 0."""
    src = ROOT / "examples" / "multi-region-inference.yaml"
    data = yaml.safe_load(src.read_text())
    for w in data["workloads"]:
        w["traffic"]["peak_rps"] *= 2
    edited = tmp_path / "doubled.yaml"
    edited.write_text(yaml.safe_dump(data, sort_keys=False))

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "compiler", *args], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout

    cli(str(src), "-o", str(tmp_path / "a"), "-q")
    cli(str(edited), "-o", str(tmp_path / "b"), "-q")
    a, b = (json.loads((tmp_path / x / "plan.json").read_text()) for x in "ab")
    d = json.loads(cli("diff", str(tmp_path / "a" / "plan.json"), str(tmp_path / "b" / "plan.json"),
                       "--format", "json"))
    assert d["changed"] is True
    total = d["total_cost_usd"]
    assert total["delta"] == pytest.approx(b["total_cost_usd"] - a["total_cost_usd"], abs=0.01)
    assert total["delta"] > 0
    changed_workloads = {w["name"] for w in d["workloads"] if w["status"] == "changed"}
    assert changed_workloads == {"chat-70b", "assistant-8b"}
    assert d["pools"]["added"] or d["pools"]["resized"]
    text = cli("diff", str(tmp_path / "a" / "plan.json"), str(tmp_path / "b" / "plan.json"))
    assert "chat-70b" in text and "resized" in text
