"""Kubernetes output: yamllint, kubernetes-validate --strict for built-in kinds, and the
published Kueue/JobSet, Gateway API (Gateway, HTTPRoute) and inference extension (InferencePool)
CRD schemas (vendored under tests/schemas/) for the rest."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from plans import PLANS, rendered, write

SCHEMAS = Path(__file__).resolve().parent / "schemas"
K8S_VERSION = "1.30.0"
CRD_KINDS = {"ResourceFlavor", "ClusterQueue", "LocalQueue", "JobSet", "Gateway", "HTTPRoute", "InferencePool"}
# the published CRDs' schemas, converted (tests/schemas/*.json say from which commit)
CRD_SCHEMAS = {"JobSet": "jobset-v1alpha2.json", "Gateway": "gateway-v1.json",
               "HTTPRoute": "httproute-v1.json", "InferencePool": "inferencepool-v1.json"}


def _yaml_files(case: str) -> dict[str, str]:
    return {p: t for p, t in rendered(case).items() if p.endswith(".yaml")}


def _docs(case: str) -> list[tuple[str, dict]]:
    """Every object, and the JobSet a recurring job's CronJob creates from its ConfigMap, so that
    JobSet passes every check a one-time job's does."""
    docs = [(p, d) for p, t in _yaml_files(case).items() for d in yaml.safe_load_all(t) if d]
    return docs + [(p, yaml.safe_load(d["data"]["jobset.yaml"])) for p, d in docs
                   if d["kind"] == "ConfigMap" and "jobset.yaml" in d.get("data", {})]


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(found).exists():
        pytest.skip(f"{name} is not installed")
    return found


@pytest.mark.parametrize("case", sorted(PLANS))
def test_yamllint(case, tmp_path):
    write(_yaml_files(case), tmp_path)
    config = "{extends: default, rules: {line-length: {max: 160}, document-start: disable}}"
    out = subprocess.run([_tool("yamllint"), "-s", "-d", config, "."], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("case", sorted(PLANS))
def test_builtin_kinds_pass_kubernetes_validate(case, tmp_path):
    files = []
    for i, (path, doc) in enumerate(_docs(case)):
        if doc["kind"] in CRD_KINDS:
            continue
        f = tmp_path / f"{i:03d}-{doc['kind']}.yaml"
        f.write_text(yaml.safe_dump(doc, sort_keys=True))
        files.append(str(f))
    # The JobSet's pod-per-node Job is a batch/v1 JobTemplateSpec: check it as a real Job.
    for i, (path, doc) in enumerate(_docs(case)):
        if doc["kind"] == "JobSet":
            for rj in doc["spec"]["replicatedJobs"]:
                job = {"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"name": doc["metadata"]["name"] + "-" + rj["name"],
                                    "namespace": doc["metadata"]["namespace"]},
                       "spec": rj["template"]["spec"]}
                f = tmp_path / f"{i:03d}-jobset-{rj['name']}.yaml"
                f.write_text(yaml.safe_dump(job, sort_keys=True))
                files.append(str(f))
    assert files
    out = subprocess.run([_tool("kubernetes-validate"), "-k", K8S_VERSION, "--strict", *files],
                         capture_output=True, text=True, timeout=120)
    bad = [line for line in (out.stdout + out.stderr).splitlines()
           if line.startswith(("ERROR", "WARN"))]
    assert out.returncode == 0 and not bad, out.stdout + out.stderr


def _crd_validator(kind: str) -> jsonschema.Draft7Validator:
    if kind in CRD_SCHEMAS:
        schema = json.loads((SCHEMAS / CRD_SCHEMAS[kind]).read_text())
    else:
        kueue = json.loads((SCHEMAS / "kueue-v1beta1.json").read_text())
        schema = {"definitions": kueue["definitions"], "$ref": f"#/definitions/{kind}"}
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("case", sorted(PLANS))
def test_crd_objects_match_published_schemas(case):
    checked = 0
    for path, doc in _docs(case):
        if doc["kind"] in CRD_KINDS:
            errors = sorted(_crd_validator(doc["kind"]).iter_errors(doc), key=str)
            assert not errors, f"{path}: " + "; ".join(e.message for e in errors)
            checked += 1
    if any(d["kind"] == "JobSet" for _, d in _docs(case)):
        assert checked >= 4
    # the routing in front of the services: a Gateway per site that serves, an InferencePool and
    # an HTTPRoute per service there
    serving = {p.rsplit("/", 1)[0] for p, d in _docs(case) if "/30-serve-" in p}
    gateways = {p.rsplit("/", 1)[0] for p, d in _docs(case) if d["kind"] == "Gateway"}
    assert gateways == serving
    kinds = [d["kind"] for _, d in _docs(case)]
    assert kinds.count("InferencePool") == kinds.count("HTTPRoute") >= len(serving)


def test_crd_schema_catches_a_typo():
    # The excerpt is closed: a misspelt field fails, as strict server-side validation does.
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
           "metadata": {"name": "q", "namespace": "n"}, "spec": {"clusterQeue": "x"}}
    assert list(_crd_validator("LocalQueue").iter_errors(bad))


def test_kueue_quota_and_inference_objects_follow_the_plan():
    docs = _docs("aws")
    cq = next(d for _, d in docs if d["kind"] == "ClusterQueue")
    flavors = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
               for f in cq["spec"]["resourceGroups"][0]["flavors"]}
    # finetune-13b trains on the 4 p4de.24xlarge nodes: 32 GPUs, 4 x 96 vCPUs, and
    # 4 x floor(1152e9 B / 2^20 x 0.95) = 4 x 1,043,701 MiB of memory.
    assert flavors == {"p4de-24xlarge-on-demand": {"cpu": 384, "memory": "4174804Mi",
                                                   "nvidia.com/gpu": 32}}
    jobset = next(d for _, d in docs if d["kind"] == "JobSet")
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "training"
    (part,) = jobset["spec"]["replicatedJobs"]
    assert part["name"] == "w-od"
    job = part["template"]["spec"]
    assert job["parallelism"] == 4 and job["completionMode"] == "Indexed"
    # the pod lands on the flavor's nodes: the instance's domain at the pricing Kueue admits
    assert job["template"]["spec"]["nodeSelector"] == {"infra-compile.io/pool": "p4de-24xlarge",
                                                       "infra-compile.io/pricing": "on_demand"}
    dep = next(d for _, d in docs if d["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 6
    pod = dep["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 4
    assert pod["nodeSelector"] == {"infra-compile.io/pool": "g6e-48xlarge"}
    assert dep["metadata"]["annotations"]["infra-compile.io/monthly-replicas"] == ",".join(["6"] * 12)
    assert pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    hpa = next(d for _, d in docs if d["kind"] == "HorizontalPodAutoscaler")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    pdb = next(d for _, d in docs if d["kind"] == "PodDisruptionBudget")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {
        "matchLabels": {"app.kubernetes.io/name": "chat-8b"}}}


def test_two_placements_of_a_service_at_one_site_are_two_deployments():
    # chat runs 4 replicas of 2 GPUs and 2 of 4 GPUs at aws-use1 (two candidates): each gets its
    # own Deployment, Service, HPA and PDB; both serve the model under the workload's name.
    from compiler.catalog import load_catalog
    from compiler.render import render
    from plans import split_plan

    files = render(split_plan(), load_catalog())
    serve = sorted(p for p in files if "/30-serve-" in p)
    assert serve == ["kubernetes/aws-use1/30-serve-chat-tp2.yaml", "kubernetes/aws-use1/30-serve-chat-tp4.yaml"]
    deps = {}
    for path in serve:
        docs = [d for d in yaml.safe_load_all(files[path]) if d]
        names = {d["metadata"]["name"] for d in docs}
        dep = next(d for d in docs if d["kind"] == "Deployment")
        deps[dep["metadata"]["name"]] = dep
        assert len(names) == 1, names       # Deployment, Service, HPA and PDB share one name
    assert {n: d["spec"]["replicas"] for n, d in deps.items()} == {"chat-tp2": 4, "chat-tp4": 2}
    for d in deps.values():
        args = d["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "--served-model-name=chat" in args
    assert deps["chat-tp4"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": 4}


def _service_plan(monthly_a, monthly_b):
    """Two services alternating on one reserved g6e.48xlarge node (4 GPUs a replica)."""
    from compiler.plan import Holding, Placement
    from dataclasses import replace
    from plans import _plan, inference
    from compiler.plan import Pool, SitePlan

    def placement(monthly):
        held = tuple(1 if r else 0 for r in monthly)
        return Placement("aws-usw2", "g6e.48xlarge", "reserved_1y", 1, 4 * max(monthly), max(monthly),
                         gpus_per_replica=4, monthly_replicas=tuple(monthly),
                         holdings=(Holding("reserved_1y", held, tuple(730.0 * n for n in held)),))
    return _plan("alternating", [SitePlan("aws-usw2", "cloud", "aws", "us-west-2", ("kubernetes",))],
                 [Pool("aws-usw2", "g6e.48xlarge", "L40S", 8, 1, "reserved_1y", "ethernet",
                       monthly_nodes=(1,) * 12)],
                 [inference("a", [placement(monthly_a)], tp=4, gpu="L40S"),
                  inference("b", [placement(monthly_b)], tp=4, gpu="L40S")], [])


def test_services_follow_the_plans_months_not_their_peaks():
    # a and b alternate on one 8-GPU node (2 replicas of 4 GPUs each, in turn): month 0's
    # Deployments are a at 2 and b at 0, and each HPA's bounds are its first running month's;
    # the schedule says when each changes, so no month asks for more than the one node.
    from compiler.catalog import load_catalog
    from compiler.render import render

    a = (2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0)
    b = tuple(2 - r for r in a)
    files = render(_service_plan(a, b), load_catalog())
    docs = {(d["kind"], d["metadata"]["name"]): d for p, t in files.items() if p.endswith(".yaml")
            for d in yaml.safe_load_all(t) if d}
    assert docs[("Deployment", "a")]["spec"]["replicas"] == 2
    assert docs[("Deployment", "b")]["spec"]["replicas"] == 0
    for name in "ab":
        hpa = docs[("HorizontalPodAutoscaler", name)]["spec"]
        assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 2)
    rows = list(csv.DictReader(io.StringIO(files["schedule/aws-usw2.csv"])))
    replicas = {(r["object"], m): int(r["count"]) for r in rows if r["kind"] == "replicas"
                for m in range(int(r["month_first"]), int(r["month_last"]) + 1)}
    for m in range(12):
        assert replicas[("a", m)] == a[m] and replicas[("b", m)] == b[m]
        assert 4 * (replicas[("a", m)] + replicas[("b", m)]) <= 8
    nodes = [r for r in rows if r["kind"] == "nodes"]
    assert [(r["orchestrator"], r["month_first"], r["month_last"], r["count"], r["nodes"]) for r in nodes] == [
        ("kubernetes", "0", "11", "1", "g6e-48xlarge-r1y01")]


def test_onprem_kubernetes_nodes_are_listed_with_their_labels():
    # fra-dc1's Kubernetes share (the 4 bought L40S servers) has no node group to label it: the
    # Node objects do, with the pool and pricing the services and flavors select.
    docs = [d for p, d in _docs("onprem") if d["kind"] == "Node"]
    assert [d["metadata"]["name"] for d in docs] == [f"l40s-server-buy0{i}" for i in range(1, 5)]
    assert all(d["metadata"]["labels"] == {"infra-compile.io/pool": "l40s-server",
                                           "infra-compile.io/pricing": "purchase"} for d in docs)
    dep = next(d for p, d in _docs("onprem") if d["kind"] == "Deployment" and "fra-dc1" in p)
    assert dep["spec"]["template"]["spec"]["nodeSelector"] == {"infra-compile.io/pool": "l40s-server"}


def test_a_recurring_job_is_one_cronjob_that_creates_its_jobset():
    docs = [(p, d) for p, d in _docs("aws") if p.endswith("20-train-finetune-13b.yaml")]
    kinds = [d["kind"] for _, d in docs]
    assert kinds == ["ConfigMap", "ServiceAccount", "Role", "RoleBinding", "CronJob", "JobSet"]
    cron = next(d for _, d in docs if d["kind"] == "CronJob")
    assert cron["spec"]["schedule"] == "0 0 * * 1"            # every 7d: Mondays
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"       # runs never overlap
    script = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "create -f /jobset/jobset.yaml" in script
    jobset = next(d for _, d in docs if d["kind"] == "JobSet")
    assert jobset["metadata"]["name"] == "finetune-13b"
    role = next(d for _, d in docs if d["kind"] == "Role")
    assert role["rules"] == [{"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"],
                              "verbs": ["get", "create", "delete"]}]
