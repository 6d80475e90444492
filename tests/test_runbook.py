"""RUNBOOK.md in every output folder, checked against the files it describes with real parsers
(python-hcl2, PyYAML, Slurm's key=value lines) and plan.json + the spec, sharing no code with
compiler/render/runbook.py; the schedule's CronJob through kubernetes-validate, the CI workflow
through PyYAML and every shell it runs through shellcheck; every Terraform variable declared is
one the folder uses."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import hcl2
import pytest
import yaml

from examples_cache import EXAMPLES, HEAVY, ROOT, example

GOLDEN = ROOT / "tests" / "golden"


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(found).exists():
        pytest.skip(f"{name} is not installed")
    return found


@pytest.fixture(scope="module", params=["light", pytest.param("heavy", marks=pytest.mark.slow)])
def outputs(request) -> dict[str, dict[str, str]]:
    """Each example's artifacts, and each render golden tree (test_render_golden keeps those equal
    to what the renderer writes now): the light examples in the fast tier, the heavy examples
    (minutes to compile) in the slow one, the trees in both (a check that something of a kind
    was written holds of each set)."""
    heavy = request.param == "heavy"
    out = {name: dict(example(name)[1].artifacts) for name in EXAMPLES if (name in HEAVY) == heavy}
    for tree in sorted(GOLDEN.glob("render-*")):
        out[tree.name] = {p.relative_to(tree).as_posix(): p.read_text() for p in tree.rglob("*") if p.is_file()}
    return out


def _sites(files: dict[str, str], top: str) -> list[str]:
    return sorted({p.split("/")[1] for p in files if p.startswith(top + "/")})


def _site_section(runbook: str, site: str) -> str:
    m = re.search(rf"^## \d+\. Site {re.escape(site)} \(.*?\)\n(.*?)(?=^## |\Z)", runbook, re.S | re.M)
    assert m, f"RUNBOOK.md has no section for site {site}"
    return m.group(1)


def _hcl_name(key: str) -> str:
    return key.strip('"')


def _variables(text: str) -> dict[str, dict]:
    return {_hcl_name(k): v for block in hcl2.loads(text).get("variable", []) for k, v in block.items()}


def test_every_output_folder_has_a_runbook(outputs):
    for name, files in outputs.items():
        assert "RUNBOOK.md" in files, name
        assert files["RUNBOOK.md"].startswith("# Runbook: "), name


def test_every_declared_terraform_variable_is_used(outputs):
    """A variable nothing reads is one more thing ops must set for nothing (availability_zone
    was required where no capacity reservation is made)."""
    for name, files in outputs.items():
        for site in _sites(files, "terraform"):
            declared = _variables(files[f"terraform/{site}/variables.tf"])
            rest = "".join(t for p, t in files.items()
                           if p.startswith(f"terraform/{site}/") and not p.endswith("variables.tf"))
            unused = [v for v in declared if not re.search(rf"\bvar\.{v}\b", rest)]
            assert not unused, (name, site, unused)


@pytest.mark.slow
def test_llm_pretrain_aws_does_not_ask_for_an_availability_zone():
    def declared(name):
        return _variables(example(name)[1].artifacts["terraform/aws-use1/variables.tf"])

    assert "availability_zone" not in declared("llm-pretrain-aws")
    assert "availability_zone" in declared("multi-region-inference")


def test_runbook_lists_every_required_variable_and_no_other(outputs):
    for name, files in outputs.items():
        for site in _sites(files, "terraform"):
            section = _site_section(files["RUNBOOK.md"], site)
            listed = dict(re.findall(r"^\| `([a-z_0-9]+)` \| (.*) \|$", section, re.M))
            declared = _variables(files[f"terraform/{site}/variables.tf"])
            required = {v: _hcl_name(d["description"]) for v, d in declared.items() if "default" not in d}
            # what the month files set is not asked of the operator; month 0's file sets it all
            month0 = files.get(f"terraform/{site}/months/000.tfvars", "")
            by_months = set(re.findall(r"^(\w+) = \{", month0, re.M))
            assert by_months <= set(required), (name, site)
            required = {v: d for v, d in required.items() if v not in by_months}
            assert set(listed) == set(required), (name, site)
            for v, description in required.items():
                assert listed[v] == description.replace("|", "\\|"), (name, site, v)


def _month0(files: dict[str, str], site: str) -> dict:
    """The variables month 0's file sets (the first apply's)."""
    from test_render_terraform import plain
    text = files.get(f"terraform/{site}/months/000.tfvars")
    return plain(hcl2.loads(text)) if text else {}


def _planned(main_tf: str, month0: dict) -> int:
    from test_render_terraform import at
    total = 0
    for block in hcl2.loads(main_tf).get("resource", []):
        for _type, named in block.items():
            for _name, body in named.items():
                total += at(body.get("count", 1), month0)
    return total


def test_terraform_plan_count_is_what_main_tf_declares(outputs):
    for name, files in outputs.items():
        for site in _sites(files, "terraform"):
            n = _planned(files[f"terraform/{site}/main.tf"], _month0(files, site))
            assert f"`Plan: {n} to add, 0 to change, 0 to destroy.`" in _site_section(files["RUNBOOK.md"], site), (name, site)


def _code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^ *```{lang}\n(.*?)^ *```", text, re.S | re.M)


def test_backend_examples_parse_and_name_the_provider_backend(outputs):
    backends = {"aws": "s3", "google": "gcs", "azurerm": "azurerm"}
    for name, files in outputs.items():
        for site in _sites(files, "terraform"):
            section = _site_section(files["RUNBOOK.md"], site)
            blocks = _code_blocks(section, "hcl")
            assert len(blocks) == 2, (name, site)
            backend = hcl2.loads(blocks[0])["terraform"][0]["backend"][0]
            provider = _hcl_name(next(iter(hcl2.loads(files[f"terraform/{site}/providers.tf"])["provider"][0])))
            assert _hcl_name(next(iter(backend))) == backends[provider], (name, site)
            settings = hcl2.loads(blocks[1])
            assert settings and all(settings.values()), (name, site)
            assert f"terraform -chdir=terraform/{site} init -backend-config=backend.hcl" in section


def _expand(hostlist: str) -> int:
    n = 0
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", hostlist):
        m = re.search(r"\[(.*)\]", part)
        if not m:
            n += 1
            continue
        for r in m.group(1).split(","):
            a, _, b = r.partition("-")
            n += int(b or a) - int(a) + 1
    return n


# What the routing files' CRD kinds are installed by (the projects' release documents: Gateway
# API v1.4.0's standard channel, the inference extension v1.2.0's manifests).
ROUTING_RELEASES = {
    "gateway.networking.k8s.io": "https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.4.0/"
                                 "standard-install.yaml",
    "inference.networking.k8s.io": "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/"
                                   "download/v1.2.0/manifests.yaml"}


def _check_routing_prerequisites(files: dict[str, str], site: str, section: str, installs: list[str]) -> None:
    """A site whose files hold the routing layer is told, before its first apply, to install the
    CRDs of every kind its files use (GKE provides the Gateway API's with its controller), and
    checks each of them; a site without one installs none."""
    docs = [d for p, t in files.items() if p.startswith(f"kubernetes/{site}/") and p.endswith(".yaml")
            for d in yaml.safe_load_all(t) if d]
    groups = {d["apiVersion"].split("/")[0]: d["kind"] for d in docs if d["apiVersion"].split("/")[0] in ROUTING_RELEASES}
    if not groups:
        assert not installs and "Before the first apply" not in section, site
        return
    gateway = next(d for d in docs if d["kind"] == "Gateway")
    gke = gateway["spec"]["gatewayClassName"].startswith("gke-")
    want = [ROUTING_RELEASES[g] for g in ROUTING_RELEASES if g in groups and not (gke and g.startswith("gateway."))]
    assert installs == want, site
    first = section.index("kubectl apply -f kubernetes/")
    assert all(section.index(u) < first for u in want), site
    check = re.search(r"^Check: `kubectl get crd ([^`]+)`", section, re.M)
    kinds = {(d["kind"].lower() + "s", d["apiVersion"].split("/")[0]) for d in docs
             if d["apiVersion"].split("/")[0] in ROUTING_RELEASES}
    assert check and set(check.group(1).split()) == {f"{k}.{g}" for k, g in kinds}, site
    assert f"`kubectl get gatewayclass {gateway['spec']['gatewayClassName']}`" in section, site
    if not gke:
        assert re.search(r"^istioctl install -y --set values\.pilot\.env\.ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true$",
                         section, re.M), site


def test_apply_order_follows_the_files_written(outputs):
    for name, files in outputs.items():
        runbook = files["RUNBOOK.md"]
        sites = sorted({p.split("/")[1] for p in files if "/" in p and p.split("/")[0] in
                        ("terraform", "slurm", "kubernetes", "onprem", "schedule")} - {""})
        sites = sorted({s.removesuffix(".csv").removesuffix(".sh").removesuffix(".cronjob.yaml") for s in sites})
        headings = re.findall(r"^## \d+\. Site (\S+) ", runbook, re.M)
        assert headings == sites, name
        for site in sites:
            section = _site_section(runbook, site)
            order = [t for t in ("Hardware", "Terraform", "Slurm", "Kubernetes", "The monthly schedule")
                     if re.search(rf"^### \d+\.\d+ {t}", section, re.M)]
            written = [t for t, there in (("Hardware", f"onprem/{site}/bom.csv" in files),
                                          ("Terraform", f"terraform/{site}/main.tf" in files),
                                          ("Slurm", f"slurm/{site}/slurm.conf" in files),
                                          ("Kubernetes", any(p.startswith(f"kubernetes/{site}/") for p in files)),
                                          ("The monthly schedule", f"schedule/{site}.sh" in files)) if there]
            assert order == written, (name, site)
            applied = re.findall(r"^kubectl apply -f (\S+)$", section, re.M)
            prerequisites = [a for a in applied if "://" in a]
            applied = [a for a in applied if "://" not in a]
            assert applied == sorted(p for p in files if p.startswith(f"kubernetes/{site}/")), (name, site)
            _check_routing_prerequisites(files, site, section, prerequisites)
            # every job once: a one-time job's sbatch, a recurring one's script copied and scrontab installed
            jobs = re.findall(r"`sbatch (\S+)`", section) + re.findall(r"`scrontab (slurm/\S+)`", section)
            jobs += [p for p in re.findall(r"copy `(\S+)`", section)]
            assert sorted(jobs) == sorted(p for p in files if p.startswith(f"slurm/{site}/jobs/")), (name, site)
            if f"slurm/{site}/slurm.conf" in files:
                parts = re.findall(r"^PartitionName=(\S+) Nodes=(\S+)", files[f"slurm/{site}/slurm.conf"], re.M)
                assert parts
                for part, hosts in parts:
                    assert f"`scontrol show partition {part}` shows `TotalNodes={_expand(hosts)}`" in section
                for p in files:
                    if p.startswith(f"slurm/{site}/jobs/") and p.endswith(".sbatch"):
                        nodes = re.search(r"^#SBATCH --nodes=(\d+)$", files[p], re.M).group(1)
                        job = re.search(r"^#SBATCH --job-name=(\S+)$", files[p], re.M).group(1)
                        assert f"shows `{job} {nodes}`" in section


def test_buy_list_is_the_plans_reservations(outputs):
    for name in (n for n in EXAMPLES if n in outputs):
        files = outputs[name]
        plan = json.loads(files["plan.json"])
        spec = yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text())
        region = {s["name"]: (s.get("provider", ""), s.get("region", "")) for s in spec["sites"]}
        want = []
        for pool in plan["pools"]:
            term = {"reserved_1y": 12, "reserved_3y": 36}.get(pool["pricing"])
            for r in pool.get("reservations", []) if term else []:
                provider, reg = region[pool["site"]]
                want.append((pool["site"], provider, reg, pool["instance"], str(r["nodes"]),
                             "1 year" if term == 12 else "3 years", str(r["start_month"]),
                             str(r["start_month"] + term - 1)))
        section = re.search(r"^## 1\. Reservations.*?\n(.*?)^## ", files["RUNBOOK.md"], re.S | re.M).group(1)
        rows = [tuple(c.strip() for c in l.strip("|").split("|"))[:8] for l in section.splitlines()
                if l.startswith("| ") and not l.startswith(("| Site ", "| ---"))]
        assert sorted(rows) == sorted(want), name
        if not want:
            assert "the plan reserves no capacity" in section
    if "multi-region-inference" in outputs:
        assert any("reserved_1y" == p["pricing"] for p in json.loads(outputs["multi-region-inference"]["plan.json"])["pools"])


def test_metrics_adapter_is_asked_for_where_an_hpa_reads_a_custom_metric(outputs):
    for name, files in outputs.items():
        metrics = set()
        for p, text in files.items():
            if p.startswith("kubernetes/"):
                for doc in yaml.safe_load_all(text):
                    if doc and doc["kind"] == "HorizontalPodAutoscaler":
                        metrics |= {m["pods"]["metric"]["name"] for m in doc["spec"]["metrics"] if m["type"] == "Pods"}
        runbook = files["RUNBOOK.md"]
        if not metrics:
            assert "custom.metrics.k8s.io" not in runbook, name
            continue
        rules = yaml.safe_load(_code_blocks(runbook, "yaml")[0])["rules"]["custom"]
        assert {r["name"]["as"] for r in rules} == metrics, name
        for m in metrics:
            assert f"`pods/{m}`" in runbook


def _schedule_files(outputs, suffix):
    return [(name, p, t) for name, files in outputs.items() for p, t in sorted(files.items())
            if p.startswith(("schedule/", "ci/")) and p.endswith(suffix)]


def test_cronjobs_pass_the_api_schemas_and_run_the_sites_script(outputs, tmp_path):
    found = _schedule_files(outputs, ".cronjob.yaml")
    assert found, "no example or golden tree writes a schedule CronJob"
    paths = []
    for i, (name, p, text) in enumerate(found):
        docs = [d for d in yaml.safe_load_all(text) if d]
        assert [d["kind"] for d in docs] == ["ServiceAccount", "Role", "RoleBinding", "CronJob"]
        site = p.split("/")[1].removesuffix(".cronjob.yaml")
        files = outputs[name]
        assert f"schedule/{site}.sh" in files
        assert not re.search(r"^\s+node ", files[f"schedule/{site}.sh"], re.M), "a handover site got a CronJob"
        cron = docs[3]
        container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        assert 'exec bash /schedule/apply.sh "${month}"' in container["args"][0]
        for j, d in enumerate(docs):
            f = tmp_path / f"{i:03d}-{j}.yaml"
            f.write_text(yaml.safe_dump(d))
            paths.append(str(f))
        (tmp_path / f"{i:03d}.sh").write_text("#!/bin/bash\n" + container["args"][0])
    out = subprocess.run([_tool("kubernetes-validate"), "-k", "1.30.0", "--strict", "--quiet", *paths],
                         capture_output=True, text=True, timeout=120)
    bad = [l for l in (out.stdout + out.stderr).splitlines() if l.startswith(("ERROR", "WARN"))]
    assert out.returncode == 0 and not bad, out.stdout + out.stderr
    scripts = sorted(str(p) for p in tmp_path.glob("*.sh"))
    sc = subprocess.run([_tool("shellcheck"), "-S", "warning", "-s", "bash", *scripts],
                        capture_output=True, text=True, timeout=120)
    assert sc.returncode == 0, sc.stdout + sc.stderr


def test_ci_workflow_parses_and_runs_each_sites_script(outputs, tmp_path):
    found = _schedule_files(outputs, ".yml")
    assert found
    for i, (name, p, text) in enumerate(found):
        doc = yaml.safe_load(text)
        assert doc["on"]["schedule"][0]["cron"] == "0 6 1 * *"
        scripts = sorted(q for q in outputs[name] if q.startswith("schedule/") and q.endswith(".sh"))
        ran = []
        for job_id, job in doc["jobs"].items():
            assert job["runs-on"]
            for step in job["steps"]:
                if "run" in step:
                    ran += re.findall(r"^bash (schedule/\S+\.sh) ", step["run"], re.M)
                    (tmp_path / f"{i:03d}-{job_id}.sh").write_text("#!/bin/bash\n" + step["run"])
        assert sorted(ran) == scripts, name
    sc = subprocess.run([_tool("shellcheck"), "-S", "warning", "-s", "bash",
                         *sorted(str(p) for p in tmp_path.glob("*.sh"))], capture_output=True, text=True, timeout=120)
    assert sc.returncode == 0, sc.stdout + sc.stderr


def test_month_arithmetic_of_the_schedule_jobs(outputs, tmp_path):
    """The snippet the CronJob and CI job share picks the month since PLAN_START, and stops
    quietly outside the horizon."""
    name, _p, text = _schedule_files(outputs, ".cronjob.yaml")[0]
    cron = [d for d in yaml.safe_load_all(text) if d][3]
    script = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0]
    script = script.replace("exec bash /schedule/apply.sh", "echo applying")
    f = tmp_path / "month.sh"
    f.write_text(script)
    from datetime import datetime, timezone
    now = datetime.now(timezone.utc)
    three_ago = (now.year * 12 + now.month - 1 - 3)
    start = f"{three_ago // 12:04d}-{three_ago % 12 + 1:02d}"
    run = lambda **env: subprocess.run(["bash", str(f)], capture_output=True, text=True, timeout=30,
                                       env={"PATH": "/usr/bin:/bin", **env}).stdout.strip()
    assert run(PLAN_START=start) == "applying 3"
    assert run(MONTH="5") == "applying 5"
    assert "outside the plan's horizon" in run(MONTH="999")
    assert "outside the plan's horizon" in run(MONTH="-1")


def _unquote(d: dict) -> dict:
    return {_hcl_name(k): _hcl_name(v) for k, v in (d or {}).items()}


def _node_groups(files: dict[str, str], site: str) -> list[tuple[str, int, int]]:
    """(label selector, least, most nodes) of each Kubernetes node group the site's files make:
    Terraform node groups in the cloud, labelled Node objects on-prem."""
    from test_render_terraform import at
    out = []
    main = files.get(f"terraform/{site}/main.tf")
    month0 = _month0(files, site)
    if main:
        for block in hcl2.loads(main).get("resource", []):
            for kind, named in block.items():
                kind = _hcl_name(kind)
                for body in named.values():
                    if kind == "aws_eks_node_group":
                        labels, sc = _unquote(body["labels"]), body["scaling_config"][0]
                        bounds = (sc["min_size"], sc["max_size"])
                    elif kind == "google_container_node_pool":
                        labels = _unquote(body["node_config"][0]["labels"])
                        a = body.get("autoscaling")
                        bounds = (a[0]["min_node_count"], a[0]["max_node_count"]) if a else (body["node_count"],) * 2
                    elif kind == "azurerm_kubernetes_cluster_node_pool":
                        labels = _unquote(body["node_labels"])
                        bounds = ((body["min_count"], body["max_count"]) if "min_count" in body
                                  else (body["node_count"],) * 2)
                    else:
                        continue
                    # month 0's size, as the first apply creates it (0 where the group does not exist yet)
                    exists = at(body.get("count", 1), month0)
                    out.append((",".join(f"{k}={v}" for k, v in labels.items()),
                                *(at(b, month0) * exists for b in bounds)))
    nodes = files.get(f"kubernetes/{site}/05-nodes.yaml")
    if nodes:
        count: dict[str, int] = {}
        for doc in yaml.safe_load_all(nodes):
            if doc and doc["kind"] == "Node":
                lab = doc["metadata"]["labels"]
                key = f"infra-compile.io/pool={lab['infra-compile.io/pool']},infra-compile.io/pricing={lab['infra-compile.io/pricing']}"
                count[key] = count.get(key, 0) + 1
        out += [(k, n, n) for k, n in count.items()]
    return out


def test_node_checks_are_the_node_groups_written(outputs):
    checked = 0
    for name, files in outputs.items():
        for site in sorted({p.split("/")[1] for p in files if p.startswith("kubernetes/")}):
            section = _site_section(files["RUNBOOK.md"], site)
            stated = [(sel, "no nodes" if text.startswith("no nodes (its node group is created in month ") else text)
                      for sel, text in re.findall(r"^- `kubectl get nodes -l (\S+)` shows (.*)\.$", section, re.M)]
            want = []
            for selector, low, high in _node_groups(files, site):
                text = ("no nodes" if high == 0 else f"{high} node{'s' if high != 1 else ''}" if low == high else
                        f"between {low} and {high} nodes (the node group scales with the pods)")
                want.append((selector, text))
            assert sorted(stated) == sorted(want), (name, site)
            checked += len(want)
    assert checked


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not installed on this machine")
@pytest.mark.slow
@pytest.mark.skipif(not Path("/opt/tf-plugins/registry.terraform.io/hashicorp/aws").is_dir(),
                    reason="no hashicorp/aws provider mirror under /opt/tf-plugins")
def test_aws_folder_with_the_runbooks_backend_passes_terraform_validate(tmp_path):
    from plans import write
    from test_render_terraform import _terraform_env

    files, site = dict(example("llm-pretrain-aws")[1].artifacts), "aws-use1"
    prefix = f"terraform/{site}/"
    folder = tmp_path / site
    backend_tf, backend_hcl = _code_blocks(_site_section(files["RUNBOOK.md"], site), "hcl")
    write({**{p[len(prefix):]: t for p, t in files.items() if p.startswith(prefix)},
           "backend.tf": backend_tf, "backend.hcl": backend_hcl}, folder)
    env = _terraform_env(tmp_path)
    for args in (["fmt", "-check", "-diff"], ["init", "-backend=false", "-input=false", "-no-color"],
                 ["validate", "-no-color"]):
        out = subprocess.run(["terraform", *args], cwd=folder, capture_output=True, text=True,
                             timeout=180, env=env)
        assert out.returncode == 0, f"terraform {args[0]}: {out.stdout}{out.stderr}"


def test_runbook_shell_blocks_pass_shellcheck(outputs, tmp_path):
    n = 0
    for name, files in outputs.items():
        for i, block in enumerate(_code_blocks(files["RUNBOOK.md"], "sh")):
            lines = block.splitlines()
            indent = min(len(l) - len(l.lstrip()) for l in lines if l.strip())
            (tmp_path / f"{name}-{i}.sh").write_text("#!/bin/bash\n" + "\n".join(l[indent:] for l in lines) + "\n")
            n += 1
    assert n
    out = subprocess.run([_tool("shellcheck"), "-S", "warning", "-s", "bash",
                          *sorted(str(p) for p in tmp_path.glob("*.sh"))], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_new_yaml_has_no_duplicate_keys(outputs, tmp_path):
    paths = []
    for i, (name, p, text) in enumerate(_schedule_files(outputs, ".cronjob.yaml") + _schedule_files(outputs, ".yml")):
        f = tmp_path / f"{i:03d}.yaml"
        f.write_text(text)
        paths.append(str(f))
    out = subprocess.run([_tool("yamllint"), "-d", "{rules: {key-duplicates: enable, indentation: enable}}", *paths],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
