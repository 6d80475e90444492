"""Wide expert parallelism across nodes, planned and rendered (docs/performance-model.md "Wide expert
parallelism", docs/artifacts.md): DeepSeek-R1 in NVFP4 at 300,000 output tokens/s and a 50 ms TPOT
on Azure's GB200 NVL72 instances is cheapest as one replica of 64 GPUs on 16 four-GPU trays of one
rack, attention data parallel x 64 with its experts expert parallel over them (candidate
.../dp64-ep64), where the EP4 and EP8 layouts carry fewer tokens/s a GPU; on AWS's B200 nodes, whose
EFA the catalog's vLLM 0.10.1.1 (no dual-batch overlap) crosses with every all-to-all exposed, no
wide layout pays and the plan keeps its replicas within a node.

The wide replica is rendered as one group of a LeaderWorkerSet (kubernetes-sigs/lws v0.7.0): 16
pods of 4 GPUs, the leader serving the API with vLLM's multi-node data-parallel flags
(--data-parallel-size 64, --data-parallel-size-local 4, the leader's address and RPC port: vLLM's
"Expert Parallel Deployment" guide, v0.10.1.1), each worker --headless from rank LWS_WORKER_INDEX x
4; the manifests pass yamllint, kubernetes-validate --strict (the built-in kinds and both pod
templates as Pods) and the LeaderWorkerSet CRD's published schema; the coherence oracle finds
nothing and names each break of the layout."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from coherence import check
from coherence_specs import compile_into
from test_render_kubernetes import K8S_VERSION, SCHEMAS, _tool

GB200 = """\
apiVersion: infra-compile/v1
name: wide-ep
horizon_months: 2
sites:
  - {name: az-wus3, type: cloud, provider: azure, region: westus3, pricing: [on_demand]}
policy:
  placement: cloud
  allowed_gpus: [GB200]
workloads:
  - name: reasoner
    kind: inference
    model: deepseek-r1
    quantization: fp4
    traffic: {peak_rps: 150, input_tokens: 1000, output_tokens: 2000}
    slo: {ttft_p99_ms: 5000, tpot_p99_ms: 50}
"""
B200 = GB200.replace("name: wide-ep", "name: no-wide-ep").replace(
    "{name: az-wus3, type: cloud, provider: azure, region: westus3, pricing: [on_demand]}",
    "{name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand]}").replace(
    "allowed_gpus: [GB200]", "allowed_gpus: [B200]")
SITE = "az-wus3"
FILE = f"kubernetes/{SITE}/30-serve-reasoner.yaml"


def _compile(tmp_path_factory, name: str, text: str) -> Path:
    root = tmp_path_factory.mktemp(name)
    spec = root / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    done = compile_into(spec, root / "out")
    assert done is not None
    return done


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory, "wide-ep", GB200)


def _placements(out: Path) -> list[dict]:
    (w,) = [w for w in json.loads((out / "plan.json").read_text())["workloads"] if w["name"] == "reasoner"]
    return [p for p in w["placements"] if p["replicas"]]


def _docs(out: Path) -> list[tuple[str, dict]]:
    return [(f.name, d) for f in sorted((out / "kubernetes" / SITE).glob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d]


def _lws(out: Path) -> dict:
    (lws,) = [d for _f, d in _docs(out) if d["kind"] == "LeaderWorkerSet"]
    return lws


def _container(template: dict) -> dict:
    (c,) = template["spec"]["containers"]
    return c


def test_the_plan_serves_one_replica_over_16_trays_of_the_rack(out):
    (p,) = _placements(out)
    assert p["candidate"].endswith("/dp64-ep64") and p["gpus_per_replica"] == 64 and p["replicas"] == 1
    assert (p["layout"]["tp"], p["layout"]["pp"], p["layout"]["dp"], p["layout"]["ep"]) == (1, 1, 64, 64)


def test_on_b200_over_efa_no_wide_layout_pays(tmp_path_factory):
    done = _compile(tmp_path_factory, "no-wide-ep", B200)
    placements = _placements(done)
    assert placements and all(p["gpus_per_replica"] <= 8 for p in placements)
    assert not list((done / "kubernetes").glob("*/30-serve-*.yaml")) or not any(
        d["kind"] == "LeaderWorkerSet" for f in (done / "kubernetes").glob("*/*.yaml")
        for d in yaml.safe_load_all(f.read_text()) if d)
    # the estimate says why: every width over the fabric carries less per GPU than a layout within a
    # node (at this TPOT, tp4)
    from compiler import pipeline

    cands, _doc = pipeline.estimate(done.parent / "spec.yaml")
    why = [r.reason for r in cands.rejected["reasoner"] if r.gpus > 8]
    assert len(why) == 4 and all(r.startswith("wide expert parallel dp") and "does not pay" in r
                                 and " tokens/s a GPU against " in r for r in why), why


def test_the_group_is_16_pods_of_4_gpus_one_a_node(out):
    lws = _lws(out)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1" and lws["spec"]["replicas"] == 1
    assert lwt["size"] == 16 and lwt["restartPolicy"] == "RecreateGroupOnPodRestart"
    for t in (lwt["leaderTemplate"], lwt["workerTemplate"]):
        assert _container(t)["resources"]["limits"]["nvidia.com/gpu"] == 4
        assert t["spec"]["nodeSelector"] == {"infra-compile.io/pool": "standard-nd128isr-ndr-gb200-v6"}
    # the InferencePool selects the leaders only: the workers run headless
    assert lwt["leaderTemplate"]["metadata"]["labels"]["infra-compile.io/workload"] == "reasoner"
    assert "infra-compile.io/workload" not in lwt["workerTemplate"]["metadata"]["labels"]
    assert not [d for _f, d in _docs(out) if d["kind"] == "Deployment" and d["metadata"]["name"] == "reasoner"]


def test_the_servers_carry_the_multi_node_layout(out):
    (p,) = _placements(out)
    lwt = _lws(out)["spec"]["leaderWorkerTemplate"]
    leader, worker = _container(lwt["leaderTemplate"]), _container(lwt["workerTemplate"])
    args = leader["args"]
    for flag in ("--tensor-parallel-size=1", "--data-parallel-size=64", "--enable-expert-parallel",
                 "--data-parallel-size-local=4", "--data-parallel-address=$(LWS_LEADER_ADDRESS)",
                 "--data-parallel-rpc-port=13345", f"--max-num-seqs={-(-p['batch'] // 64)}"):
        assert flag in args, flag
    assert "--headless" not in args and "command" not in leader
    # the workers: the same flags, --headless, their first rank from their index in the group
    assert worker["args"] == args + ["--headless"]
    assert worker["command"][:2] == ["/bin/sh", "-c"]
    assert "--data-parallel-start-rank=$((LWS_WORKER_INDEX * 4))" in worker["command"][2]
    for c in (leader, worker):
        assert {"name": "VLLM_ALL2ALL_BACKEND", "value": "deepep_low_latency"} in c["env"]
    # the HPA scales the LeaderWorkerSet (its scale subresource selects the leaders)
    (hpa,) = [d for _f, d in _docs(out) if d["kind"] == "HorizontalPodAutoscaler"]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                             "kind": "LeaderWorkerSet", "name": "reasoner"}


def test_the_runbook_and_schedule_know_the_leader_worker_set(out):
    runbook = (out / "RUNBOOK.md").read_text()
    assert "kubectl apply --server-side -f https://github.com/kubernetes-sigs/lws/releases/download/v0.7.0/" \
           "manifests.yaml" in runbook
    assert "get leaderworkerset reasoner" in runbook and "a group of 16 pods" in runbook
    script = (out / "schedule" / f"{SITE}.sh").read_text()
    assert "replicas reasoner 1 leaderworkerset" in script
    cron = yaml.safe_load_all((out / "schedule" / f"{SITE}.cronjob.yaml").read_text())
    role = next(d for d in cron if d and d["kind"] == "Role")
    assert any("leaderworkersets/scale" in r["resources"] for r in role["rules"])


def test_yamllint(out):
    config = "{extends: default, rules: {line-length: {max: 160}, document-start: disable}}"
    res = subprocess.run([_tool("yamllint"), "-s", "-d", config, str(out / "kubernetes"), str(out / "schedule")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


CRD_KINDS = {"Gateway", "HTTPRoute", "InferencePool", "LeaderWorkerSet"}


def test_builtin_kinds_and_both_pod_templates_pass_kubernetes_validate(out, tmp_path):
    files = []
    for i, (_f, doc) in enumerate(_docs(out)):
        if doc["kind"] == "LeaderWorkerSet":
            # each template is a core/v1 PodTemplateSpec: checked as a Pod
            for role in ("leaderTemplate", "workerTemplate"):
                t = doc["spec"]["leaderWorkerTemplate"][role]
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"reasoner-{role.lower()}",
                                                                        "namespace": doc["metadata"]["namespace"],
                                                                        **t.get("metadata", {})},
                       "spec": t["spec"]}
                f = tmp_path / f"{i:03d}-{role}.yaml"
                f.write_text(yaml.safe_dump(pod, sort_keys=True))
                files.append(str(f))
            continue
        if doc["kind"] in CRD_KINDS:
            continue
        f = tmp_path / f"{i:03d}-{doc['kind']}.yaml"
        f.write_text(yaml.safe_dump(doc, sort_keys=True))
        files.append(str(f))
    assert sum("Template" in f for f in files) == 2
    res = subprocess.run([_tool("kubernetes-validate"), "-k", K8S_VERSION, "--strict", *files],
                         capture_output=True, text=True, timeout=120)
    bad = [line for line in (res.stdout + res.stderr).splitlines() if line.startswith(("ERROR", "WARN"))]
    assert res.returncode == 0 and not bad, res.stdout + res.stderr


def _lws_validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads((SCHEMAS / "leaderworkerset-v1.json").read_text()))


def test_the_leader_worker_set_matches_the_published_crd_schema(out):
    errors = sorted(_lws_validator().iter_errors(_lws(out)), key=str)
    assert not errors, "; ".join(e.message for e in errors)
    # the excerpt is closed: a misspelt field or an unknown policy fails, as strict validation does
    bad = json.loads(json.dumps(_lws(out)))
    bad["spec"]["leaderWorkerTemplate"]["sise"] = 16
    assert list(_lws_validator().iter_errors(bad))
    bad = json.loads(json.dumps(_lws(out)))
    bad["spec"]["startupPolicy"] = "WorkersFirst"
    assert list(_lws_validator().iter_errors(bad))


def test_the_rendered_stack_is_coherent(out):
    assert check(out) == []


def _edit(out: Path, tmp_path: Path, change) -> list[str]:
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    f = copy / FILE
    docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
    for d in docs:
        change(d)
    f.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return check(copy)


def _leader(d: dict) -> dict:
    return _container(d["spec"]["leaderWorkerTemplate"]["leaderTemplate"]) if d["kind"] == "LeaderWorkerSet" else {}


def _worker(d: dict) -> dict:
    return _container(d["spec"]["leaderWorkerTemplate"]["workerTemplate"]) if d["kind"] == "LeaderWorkerSet" else {}


def _set_args(c: dict, edit) -> None:
    if c:
        c["args"] = edit(list(c["args"]))


def _labels(d: dict) -> None:
    if d["kind"] == "LeaderWorkerSet":
        d["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]["infra-compile.io/workload"] = \
            "reasoner"


def _hpa_kind(d: dict) -> None:
    if d["kind"] == "HorizontalPodAutoscaler":
        d["spec"]["scaleTargetRef"].update(kind="Deployment", apiVersion="apps/v1")


def _size(d: dict) -> None:
    if d["kind"] == "LeaderWorkerSet":
        d["spec"]["leaderWorkerTemplate"]["size"] = 8


def _start_rank(d: dict) -> None:
    w = _worker(d)
    if w:
        w["command"][2] = w["command"][2].replace("LWS_WORKER_INDEX * 4", "LWS_WORKER_INDEX * 8")


def _backend(d: dict) -> None:
    w = _worker(d)
    if w:
        w["env"] = [e for e in w["env"] if e["name"] != "VLLM_ALL2ALL_BACKEND"]


@pytest.mark.parametrize("change, says", [
    (lambda d: _set_args(_worker(d), lambda a: [x for x in a if x != "--headless"]), "not told --headless"),
    (lambda d: _set_args(_leader(d), lambda a: a + ["--headless"]), "the leader runs --headless"),
    (lambda d: (_set_args(_leader(d), lambda a: [x.replace("-local=4", "-local=8") for x in a]),
                _set_args(_worker(d), lambda a: [x.replace("-local=4", "-local=8") for x in a])),
     "--data-parallel-size-local=8, a pod has 4 GPUs"),
    (lambda d: _set_args(_leader(d), lambda a: [x.replace("$(LWS_LEADER_ADDRESS)", "10.0.0.1") for x in a]),
     "not the group's leader"),
    (_start_rank, "start at rank LWS_WORKER_INDEX x 8"),
    (_backend, "its workers run VLLM_ALL2ALL_BACKEND=None"),
    (lambda d: _set_args(_worker(d), lambda a: [x.replace("--max-num-seqs=", "--max-num-seqs=1") for x in a]),
     "workers' flags differ from the leader's in --max-num-seqs"),
    (_labels, "selects the headless worker pods"),
    (_hpa_kind, "its HPA scales a Deployment"),
    (_size, "matches no service placement"),
], ids=["worker-not-headless", "leader-headless", "local-ranks", "leader-address", "start-rank", "no-deepep",
        "worker-batch", "pool-selects-workers", "hpa-kind", "group-size"])
def test_the_oracle_names_each_break_of_the_layout(out, tmp_path, change, says):
    found = _edit(out, tmp_path, change)
    assert any(says in f and "reasoner" in f for f in found), found


def test_a_replan_deletes_the_leader_worker_set_it_replaces(out):
    # The baseline runs `reasoner` as a LeaderWorkerSet; a plan that serves it on one tray instead
    # (tp4, a Deployment of the same name) leaves the baseline's LeaderWorkerSet running unless the
    # runbook deletes it: by its name and kind, and nothing else of that name (the Service, HPA and
    # PDB named `reasoner` are the new plan's).
    from dataclasses import replace

    from compiler import pipeline
    from compiler.candidates import Layout
    from compiler.render import render

    from compiler import baseline

    result = pipeline.compile_spec(out.parent / "spec.yaml", pipeline.CompileOptions(solver="cbc"))
    base, catalog = result.plan, result.candidates.catalog
    # the plan serving NVFP4 reads back as a baseline, as ops would hand it to the next compile
    assert baseline.load(out / "plan.json").workloads == base.workloads
    (w,) = [w for w in base.workloads if w.name == "reasoner"]
    p = w.placements[0]
    tray = replace(p, gpus_per_replica=4, gpus=4 * p.replicas * 16, replicas=p.replicas * 16,
                   monthly_replicas=tuple(r * 16 for r in p.monthly_replicas), layout=Layout(tp=4),
                   candidate=p.candidate.replace("dp64-ep64", "tp4"), batch=max(1, p.batch // 16))
    head = replace(base, workloads=tuple(replace(x, placements=(tray,)) if x.name == "reasoner" else x
                                         for x in base.workloads))
    files = render(head, catalog, base)
    kinds = [d["kind"] for d in yaml.safe_load_all(files[FILE]) if d]
    assert "Deployment" in kinds and "LeaderWorkerSet" not in kinds
    runbook = files["RUNBOOK.md"]
    deletes = [line for line in runbook.splitlines() if line.startswith("kubectl ") and " delete " in line
               and "reasoner" in line]
    assert deletes == ["kubectl -n wide-ep delete leaderworkerset reasoner --ignore-not-found"], deletes
    assert "delete LeaderWorkerSet reasoner (a serving layout this plan dropped)" in runbook
