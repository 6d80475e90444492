"""No name from the spec can inject anything into HCL, shell, YAML or CSV.

Two layers: the renderer refuses names outside the spec's pattern (E701), and every
template filter escapes what it is given. Both are tested: hostile strings through the
filters (read back by the real parsers), hostile names through render(), and names that
pass the pattern but sit at its edges through the whole pipeline of validators.
"""

from __future__ import annotations

import base64
import csv
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import hcl2
import pytest
import yaml

from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.render import SAFE_NAME, render
from compiler.render.environment import csv_field, hcl_string, k8s_name, shell_quote, yaml_scalar
from plans import aws_plan, onprem_plan, renamed, site_renamed, write

HOSTILE = [
    'a"b',
    "x${jsonencode(var.secret)}",
    "%{ for x in y }",
    "$(touch PWNED)",
    "`touch PWNED`",
    "a; touch PWNED",
    "line1\nline2: injected",
    "key: value\n- item",
    "'single' \"double\" \\back",
    "=HYPERLINK(\"http://x\")",
    "-rm",
    "{a: 1}",
    "null",
    "tab\there",
    "ünïcödé ✓",
]
EDGE_NAMES = ["a" * 63, "x", "w9", "a-" * 31 + "z", "z0-0"]


@pytest.mark.parametrize("text", HOSTILE)
def test_hcl_filter_reads_back_as_one_literal(text):
    doc = hcl2.loads(f"x = {hcl_string(text)}\ny = 1\n")
    assert set(doc) == {"x", "y"} and doc["y"] == 1
    assert "${" not in doc["x"].replace("$${", "")   # interpolation is always escaped


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not installed")
def test_terraform_evaluates_hcl_literals_back_to_the_same_text(tmp_path):
    body = "".join(f"  v{i} = {hcl_string(t)}\n" for i, t in enumerate(HOSTILE))
    (tmp_path / "main.tf").write_text(f"locals {{\n{body}}}\n")
    # terraform console answers only the last line of piped input: ask for one list.
    exprs = "jsonencode([%s])\n" % ", ".join(f"base64encode(local.v{i})"
                                            for i in range(len(HOSTILE)))
    out = subprocess.run(["terraform", "console"], cwd=tmp_path, input=exprs, capture_output=True,
                         text=True, timeout=60, env={"PATH": "/usr/local/bin:/usr/bin:/bin",
                                                     "TF_CLI_CONFIG_FILE": "/dev/null",
                                                     "CHECKPOINT_DISABLE": "1",
                                                     "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    got = re.findall(r'\\"([A-Za-z0-9+/=]*)\\"', out.stdout)
    assert [base64.b64decode(g).decode() for g in got] == HOSTILE


@pytest.mark.parametrize("text", HOSTILE)
def test_shell_filter_is_one_inert_word(text, tmp_path):
    out = subprocess.run(["bash", "-c", f"printf '%s' {shell_quote(text)}"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=10)
    assert out.stdout == text
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("text", HOSTILE)
def test_yaml_filter_reads_back_as_one_scalar(text):
    assert yaml.safe_load(f"key: {yaml_scalar(text)}\nother: 1\n") == {"key": text, "other": 1}


@pytest.mark.parametrize("text", HOSTILE)
def test_csv_filter_is_one_field_and_never_a_formula(text):
    rows = list(csv.reader(io.StringIO(f"{csv_field(text)},end\n")))
    assert len(rows) == 1 and len(rows[0]) == 2 and rows[0][1] == "end"
    assert rows[0][0] in (text, "'" + text)
    assert not rows[0][0].startswith(("=", "+", "-", "@"))


@pytest.mark.parametrize("text", HOSTILE + EDGE_NAMES)
def test_k8s_name_is_always_a_dns_label(text):
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", k8s_name(text))


@pytest.mark.parametrize("name", [h for h in HOSTILE if not SAFE_NAME.match(h)]
                         + ["A", "-a", "a-", "a" * 64, "1abc", "a_b", "../x"])
def test_render_refuses_unsafe_workload_names(name):
    with pytest.raises(CompileError) as err:
        render(renamed(aws_plan(), "llama-8b-ablation", name), load_catalog())
    assert [d.code for d in err.value.diagnostics] == ["E701"]
    assert "workload" in err.value.diagnostics[0].message


@pytest.mark.parametrize("name", ["../etc", "a/b", "Aws", "x\ny"])
def test_render_refuses_unsafe_site_names(name):
    with pytest.raises(CompileError) as err:
        render(site_renamed(aws_plan(), "aws-use1", name), load_catalog())
    assert err.value.diagnostics[0].code == "E701"


def _tool(name: str) -> str | None:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    return found if Path(found).exists() else None


@pytest.mark.parametrize("name", EDGE_NAMES)
def test_edge_of_pattern_names_render_valid_files(name, tmp_path):
    assert SAFE_NAME.match(name)
    plan = renamed(site_renamed(onprem_plan(), "fra-dc1", name), "llama-405b-pretrain", name)
    plan = renamed(plan, "chat-70b", name[::-1] if SAFE_NAME.match(name[::-1]) else "c" + name[1:])
    files = render(plan, load_catalog())
    assert f"slurm/{name}/jobs/{name}.sbatch" in files and f"onprem/{name}/bom.csv" in files
    assert render(plan, load_catalog()) == files
    write(files, tmp_path)
    for path, text in files.items():
        if path.endswith(".tf"):
            hcl2.loads(text)
        elif path.endswith(".yaml"):
            for doc in yaml.safe_load_all(text):
                meta = doc["metadata"]
                assert len(meta["name"]) <= 63 and re.fullmatch(r"[a-z0-9-.]+", meta["name"])
        elif path.endswith(".csv"):
            rows = list(csv.reader(io.StringIO(text)))
            assert all(len(r) == len(rows[0]) for r in rows)
    shellcheck = _tool("shellcheck")
    if shellcheck:
        out = subprocess.run([shellcheck, "-S", "warning", "-s", "bash",
                              str(tmp_path / f"slurm/{name}/jobs/{name}.sbatch")],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout
    validate = _tool("kubernetes-validate")
    if validate:
        builtin = []
        for i, f in enumerate(sorted((tmp_path / "kubernetes").rglob("*.yaml"))):
            for j, doc in enumerate(yaml.safe_load_all(f.read_text())):
                if doc["kind"] not in {"ResourceFlavor", "ClusterQueue", "LocalQueue", "JobSet", "Gateway",
                                       "HTTPRoute", "InferencePool"}:
                    one = tmp_path / f"k{i}-{j}.yaml"
                    one.write_text(yaml.safe_dump(doc))
                    builtin.append(str(one))
        out = subprocess.run([validate, "-k", "1.30.0", "--strict", *builtin],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "ERROR" not in out.stdout and "WARN" not in out.stdout, \
            out.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("slurmctld") is None, reason="slurmctld is not installed")
def test_longest_site_name_loads_in_slurm(tmp_path):
    import slurm_harness
    name = "a" * 63
    files = render(site_renamed(onprem_plan(), "fra-dc1", name), load_catalog())
    prefix = f"slurm/{name}/"
    write({p[len(prefix):]: t for p, t in files.items() if p.startswith(prefix)}, tmp_path / "c")
    with slurm_harness.SlurmHarness(tmp_path / "c", tmp_path / "run") as h:
        for job in sorted((tmp_path / "c" / "jobs").glob("*.sbatch")):
            assert h.test_job(job).returncode == 0
        assert h.errors() == []


# ---------------------------------------------------------------- the same names in a real spec

ROOT = Path(__file__).resolve().parents[1]
HYBRID = ROOT / "examples" / "hybrid-llm-platform.yaml"
REJECTED = [h for h in HOSTILE if not SAFE_NAME.match(h)] + ["A", "-a", "a-", "a" * 64, "1abc",
                                                          "a_b", "../x", "a.b"]


def _spec_with_names(tmp_path: Path, names: dict[str, str]) -> Path:
    data = yaml.safe_load(HYBRID.read_text())
    for w in data["workloads"]:
        w["name"] = names.get(w["name"], w["name"])
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def test_spec_pattern_and_render_guard_are_the_same():
    from compiler.resources import schema
    assert schema("spec.schema.json")["$defs"]["name"]["pattern"] == SAFE_NAME.pattern


@pytest.mark.parametrize("name", REJECTED)
def test_validator_rejects_hostile_workload_names(name, tmp_path):
    from compiler.source import load
    from compiler.validate import validate
    path = _spec_with_names(tmp_path, {"chat-70b": name})
    assert yaml.safe_load(path.read_text())["workloads"][2]["name"] == name   # reached the spec as is
    with pytest.raises(CompileError) as err:
        validate(load(path), load_catalog())
    assert err.value.exit_code == 2
    assert [d.code for d in err.value.diagnostics] == ["E106"], err.value.diagnostics
    from compiler.diagnostics import format_path
    assert format_path(err.value.diagnostics[0].path) == "$.workloads[2].name"


EDGE_SPEC_NAMES = {"llama-70b-continued": "a" * 63, "support-8b-finetune": "z0-0",
                   "chat-70b": "x", "eu-assistant-8b": "a-" * 31 + "z"}


@pytest.mark.parametrize("name", EDGE_NAMES)
def test_validator_accepts_names_at_the_edges_of_the_pattern(name, tmp_path):
    from compiler.source import load
    from compiler.validate import validate
    spec = validate(load(_spec_with_names(tmp_path, {"chat-70b": name})), load_catalog())
    assert name in {w.name for w in spec.workloads}


@pytest.mark.slow
def test_edge_names_through_the_whole_pipeline_pass_every_validator(tmp_path):
    """Names that pass the pattern at its edges (63 characters, one character, dashes) through
    validate, estimate, solve and render; every file then goes through the real tools."""
    import slurm_harness
    from compiler.pipeline import compile_spec
    from test_render_kubernetes import CRD_KINDS, _crd_validator

    files = compile_spec(_spec_with_names(tmp_path, EDGE_SPEC_NAMES)).artifacts
    assert {w["name"] for w in yaml.safe_load(files["plan.json"])["workloads"]} == set(EDGE_SPEC_NAMES.values())
    out = tmp_path / "out"
    write(files, out)
    jobs = sorted(p for p in files if p.endswith(".sbatch"))
    assert f"slurm/fra-dc1/jobs/{'a' * 63}.sbatch" in jobs
    shellcheck = _tool("shellcheck")
    assert shellcheck, "shellcheck is not installed"
    r = subprocess.run([shellcheck, "-S", "warning", "-s", "bash", *(str(out / j) for j in jobs)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout
    builtin = []
    for i, path in enumerate(sorted(p for p in files if p.startswith("kubernetes/"))):
        for j, doc in enumerate(yaml.safe_load_all(files[path])):
            if not doc:
                continue
            meta = doc["metadata"]
            assert len(meta["name"]) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", meta["name"])
            if doc["kind"] in CRD_KINDS:
                assert not list(_crd_validator(doc["kind"]).iter_errors(doc)), (path, doc["kind"])
            else:
                one = tmp_path / f"k{i}-{j}.yaml"
                one.write_text(yaml.safe_dump(doc))
                builtin.append(str(one))
    validate = _tool("kubernetes-validate")
    assert validate and builtin
    r = subprocess.run([validate, "-k", "1.30.0", "--strict", *builtin], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and not re.search(r"^(ERROR|WARN)", r.stdout + r.stderr, re.M), r.stdout
    if not slurm_harness.available():
        pytest.skip("slurmctld/slurmd/sbatch are not installed: the Slurm half was not run")
    with slurm_harness.SlurmHarness(out / "slurm" / "fra-dc1", tmp_path / "run") as h:
        for job in jobs:
            t = h.test_job(out / job)
            assert t.returncode == 0, f"{job}: {t.stdout}{t.stderr}"
        assert h.errors() == []
