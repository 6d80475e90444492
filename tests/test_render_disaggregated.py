"""A service planned disaggregated is rendered as its prefill and decode servers and the routing
that pairs them (docs/artifacts.md): a toy spec (AWS B200, 8,000-token prompts at 20 ms TPOT,
`disaggregation: allowed`) compiled and rendered; the manifests pass yamllint, kubernetes-validate
--strict and the published CRD schemas as the other manifests do; the coherence oracle finds
nothing and names each break of a role's layout; the stack's images and configuration are
sourced data (compiler/serving_stack.yaml)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from coherence import check
from coherence_specs import compile_into
from test_render_kubernetes import CRD_KINDS, K8S_VERSION, _crd_validator, _tool

# At 60 requests/s the plan takes two unit shapes (docs/artifacts.md): units of 6 prefill x tp2 +
# 1 decode x tp4 and of 5 prefill x tp1 + 1 decode x tp2, sized to the SLO's bounds less the default
# 10% headroom (TTFT 2,700 ms, TPOT 18 ms); a prefix cache share is stated.
SPEC = """\
apiVersion: infra-compile/v1
name: pd-render
horizon_months: 2
sites:
  - {name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand]}
policy:
  placement: cloud
  allowed_gpus: [B200]
workloads:
  - name: rag-70b
    kind: inference
    model: llama-3-70b
    quantization: fp8
    disaggregation: allowed
    traffic: {peak_rps: 60, input_tokens: 8000, output_tokens: 300, prefix_cache_hit: 0.3}
    slo: {ttft_p99_ms: 3000, tpot_p99_ms: 20}
"""
SITE = "aws-use1"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pd-render")
    spec = root / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    done = compile_into(spec, root / "out")
    assert done is not None
    return done


def _plan(out: Path) -> dict:
    return json.loads((out / "plan.json").read_text())


def _units(out: Path) -> list[dict]:
    """The disaggregated placements of plan.json."""
    return [p for w in _plan(out)["workloads"] for p in w["placements"] if p.get("disaggregation") and p["replicas"]]


def _docs(out: Path) -> list[tuple[str, dict]]:
    return [(f.name, d) for f in sorted((out / "kubernetes" / SITE).glob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d]


def _deployment(out: Path, name: str) -> dict:
    return next(d for _f, d in _docs(out) if d["kind"] == "Deployment" and d["metadata"]["name"] == name)


def _args(dep: dict) -> dict[str, str]:
    (server,) = dep["spec"]["template"]["spec"]["containers"]
    return dict(a[2:].split("=", 1) if "=" in a else (a[2:], "") for a in server["args"])


def _object(p: dict) -> str:
    return f"rag-70b-tp{p['gpus_per_replica']}"


def test_the_plan_is_disaggregated_with_two_unit_shapes(out):
    shapes = {(p["disaggregation"]["prefill_tp"], p["disaggregation"]["decode_tp"]) for p in _units(out)}
    assert (2, 4) in shapes and len(shapes) == 2          # one with a prefill tp below the decode's


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_each_role_runs_its_layout(out, role):
    plan_w = _plan(out)["workloads"][0]
    for p in _units(out):
        g = p["disaggregation"]
        tp, per_unit = (g["prefill_tp"], g["prefill_instances"]) if role == "prefill" else (g["decode_tp"],
                                                                                            g["decode_instances"])
        dep = _deployment(out, f"{_object(p)}-{role}")
        pod = dep["spec"]["template"]
        assert pod["metadata"]["labels"]["llm-d.ai/role"] == role
        assert pod["metadata"]["labels"]["infra-compile.io/workload"] == "rag-70b"
        assert pod["spec"]["nodeSelector"] == {"infra-compile.io/pool": "p6-b200-48xlarge"}
        (server,) = pod["spec"]["containers"]
        assert server["resources"]["limits"]["nvidia.com/gpu"] == tp
        assert dep["spec"]["replicas"] == p["monthly_replicas"][0] * per_unit
        assert dep["metadata"]["annotations"]["infra-compile.io/monthly-replicas"] == \
            ",".join(str(r * per_unit) for r in p["monthly_replicas"])
        args = _args(dep)
        assert args["tensor-parallel-size"] == str(tp) and "pipeline-parallel-size" not in args
        assert args["max-num-seqs"] == ("1" if role == "prefill" else str(p["batch"]))
        assert args["max-model-len"] == str(plan_w["max_model_len"]) == "8300"
        assert json.loads(args["kv-transfer-config"]) == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        assert ("enable-prefix-caching" in args) == (role == "prefill")    # cached where prefilled
        env = {e["name"]: e for e in server["env"]}
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
        assert server["image"] == "vllm/vllm-openai:v0.10.1.1"


def test_decode_pods_put_the_routing_sidecar_in_front_of_vllm(out):
    from compiler.serving_stack import serving_stack
    for p in _units(out):
        decode = _deployment(out, f"{_object(p)}-decode")["spec"]["template"]["spec"]
        (sidecar,) = decode["initContainers"]
        assert sidecar["restartPolicy"] == "Always" and sidecar["image"] == serving_stack().sidecar.image.ref
        assert sidecar["args"] == ["--port=8000", "--vllm-port=8200", "--connector=nixlv2", "--secure-proxy=false"]
        assert _args(_deployment(out, f"{_object(p)}-decode"))["port"] == "8200"
        assert _args(_deployment(out, f"{_object(p)}-prefill"))["port"] == "8000"
        prefill = _deployment(out, f"{_object(p)}-prefill")["spec"]["template"]["spec"]
        assert "initContainers" not in prefill


def test_the_picker_is_llm_ds_scheduler_with_prefill_and_decode_profiles(out):
    from compiler.serving_stack import serving_stack
    docs = {(d["kind"], d["metadata"]["name"]): d for _f, d in _docs(out)}
    epp = docs[("Deployment", "rag-70b-epp")]["spec"]["template"]["spec"]["containers"][0]
    assert epp["image"] == serving_stack().scheduler.ref == "ghcr.io/llm-d/llm-d-inference-scheduler:v0.4.0"
    config = yaml.safe_load(docs[("ConfigMap", "rag-70b-epp")]["data"]["plugins.yaml"])
    types = [p["type"] for p in config["plugins"]]
    assert {"pd-profile-handler", "prefill-filter", "decode-filter", "prefill-header-handler",
            "prefix-cache-scorer"} <= set(types)
    handler = next(p for p in config["plugins"] if p["type"] == "pd-profile-handler")
    assert handler["parameters"] == {"threshold": 0}               # every prompt prefilled apart
    profiles = {s["name"]: [r["pluginRef"] for r in s["plugins"]] for s in config["schedulingProfiles"]}
    assert profiles["prefill"][0] == "prefill-filter" and profiles["decode"][0] == "decode-filter"
    assert "prefix-cache-scorer" in profiles["prefill"] and "prefix-cache-scorer" not in profiles["decode"]
    pool = docs[("InferencePool", "rag-70b")]["spec"]
    for p in _units(out):
        for role in ("prefill", "decode"):
            labels = _deployment(out, f"{_object(p)}-{role}")["spec"]["template"]["metadata"]["labels"]
            assert pool["selector"]["matchLabels"].items() <= labels.items()


def test_schedule_rows_per_role(out):
    rows = list((out / "schedule" / f"{SITE}.csv").read_text().splitlines())
    for p in _units(out):
        g = p["disaggregation"]
        for role, n in (("prefill", g["prefill_instances"]), ("decode", g["decode_instances"])):
            want = {r * n for r in p["monthly_replicas"]}
            got = {int(r.split(",")[8]) for r in rows if f",{_object(p)}-{role}," in r}
            assert got == want


def test_runbook_and_report_say_the_units(out):
    runbook = (out / "RUNBOOK.md").read_text()
    report = (out / "report.md").read_text()
    for p in _units(out):
        g = p["disaggregation"]
        layout = (f"{g['prefill_instances']} prefill x tp{g['prefill_tp']} + {g['decode_instances']} decode x "
                  f"tp{g['decode_tp']}")
        assert layout in runbook and layout in report


def test_hpas_scale_prefill_on_waiting_prompts_and_decode_below_its_batch(out):
    hpas = {d["spec"]["scaleTargetRef"]["name"]: d["spec"] for _f, d in _docs(out)
            if d["kind"] == "HorizontalPodAutoscaler"}
    for p in _units(out):
        pre, dec = hpas[f"{_object(p)}-prefill"], hpas[f"{_object(p)}-decode"]
        assert pre["metrics"][0]["pods"]["metric"]["name"] == "vllm_num_requests_waiting"
        assert pre["metrics"][0]["pods"]["target"]["averageValue"] == "1"
        assert dec["metrics"][0]["pods"]["metric"]["name"] == "vllm_num_requests_running"
        assert int(dec["metrics"][0]["pods"]["target"]["averageValue"]) < p["batch"]


# --- the real validators ----------------------------------------------------------------------

def test_yamllint(out):
    config = "{extends: default, rules: {line-length: {max: 160}, document-start: disable}}"
    res = subprocess.run([_tool("yamllint"), "-s", "-d", config, str(out / "kubernetes")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def test_builtin_kinds_pass_kubernetes_validate(out, tmp_path):
    files = []
    for i, (_f, doc) in enumerate(_docs(out)):
        if doc["kind"] in CRD_KINDS:
            continue
        f = tmp_path / f"{i:03d}-{doc['kind']}.yaml"
        f.write_text(yaml.safe_dump(doc, sort_keys=True))
        files.append(str(f))
    assert any("-Deployment" in f for f in files)
    res = subprocess.run([_tool("kubernetes-validate"), "-k", K8S_VERSION, "--strict", *files],
                         capture_output=True, text=True, timeout=120)
    bad = [line for line in (res.stdout + res.stderr).splitlines() if line.startswith(("ERROR", "WARN"))]
    assert res.returncode == 0 and not bad, res.stdout + res.stderr


def test_crd_objects_match_published_schemas(out):
    checked = 0
    for f, doc in _docs(out):
        if doc["kind"] in CRD_KINDS:
            errors = sorted(_crd_validator(doc["kind"]).iter_errors(doc), key=str)
            assert not errors, f"{f}: " + "; ".join(e.message for e in errors)
            checked += 1
    assert checked == 3            # the Gateway, the InferencePool and the HTTPRoute


# --- the coherence oracle -----------------------------------------------------------------------

def test_the_rendered_stack_is_coherent(out):
    assert check(out) == []


def _edit(out: Path, tmp_path: Path, file_glob: str, mutate) -> list[str]:
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    for f in sorted((copy / "kubernetes" / SITE).glob(file_glob)):
        docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
        for d in docs:
            mutate(d)
        f.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return check(copy)


def _server_args(change):
    def mutate(d):
        if d["kind"] == "Deployment":
            c = d["spec"]["template"]["spec"]["containers"][0]
            c["args"] = change(list(c["args"]))
    return mutate


def _prefill_tp_8(d):
    _server_args(lambda a: [x.replace("--tensor-parallel-size=2", "--tensor-parallel-size=8") for x in a])(d)


def _one_decode_replica_more(d):
    if d["kind"] == "Deployment":
        d["spec"]["replicas"] += 1


def _no_kv_transfer(d):
    _server_args(lambda a: [x for x in a if not x.startswith("--kv-transfer-config")])(d)


def _decode_batch(d):
    _server_args(lambda a: [x.replace("--max-num-seqs=124", "--max-num-seqs=300") for x in a])(d)


def _no_role(d):
    if d["kind"] == "Deployment":
        d["spec"]["template"]["metadata"]["labels"].pop("llm-d.ai/role", None)


def _colocated_picker(d):
    if d["kind"] == "ConfigMap" and "plugins.yaml" in d.get("data", {}):
        d["data"]["plugins.yaml"] = d["data"]["plugins.yaml"].replace("pd-profile-handler", "single-profile-handler")


def _sidecar_port(d):
    if d["kind"] == "Deployment":
        for c in d["spec"]["template"]["spec"].get("initContainers") or ():
            c["args"] = [a.replace("--vllm-port=8200", "--vllm-port=8001") for a in c["args"]]


@pytest.mark.parametrize("glob, edit, finding", [
    ("30-serve-rag-70b-tp16-prefill.yaml", _prefill_tp_8,
     "the prefill server runs tensor 8 x pipeline 1, the plan's unit (6 prefill x tp2 + 1 decode x tp4) sized tensor 2"),
    ("30-serve-rag-70b-tp16-decode.yaml", _one_decode_replica_more, "replicas 3, the plan runs 2 in month 0"),
    ("30-serve-rag-70b-tp16-decode.yaml", _no_kv_transfer, "needs vLLM's NixlConnector"),
    ("30-serve-rag-70b-tp16-decode.yaml", _decode_batch,
     "--max-num-seqs=300, the plan sized the decode servers at batch 124"),
    ("30-serve-rag-70b-tp16-prefill.yaml", _no_role, "matches no service placement of the plan"),
    ("30-serve-rag-70b-tp16-prefill.yaml", _no_role, "has no Deployment of its prefill servers"),
    ("31-route-rag-70b.yaml", _colocated_picker, "runs no prefill and decode profiles"),
    ("30-serve-rag-70b-tp16-decode.yaml", _sidecar_port, "no routing sidecar sends to the decode server's port 8200"),
])
def test_the_oracle_names_a_broken_disaggregated_stack(out, tmp_path, glob, edit, finding):
    found = _edit(out, tmp_path, glob, edit)
    assert any(finding in line for line in found), found


# --- the stack's data ---------------------------------------------------------------------------

def test_the_stacks_images_and_config_are_sourced_data():
    from compiler.serving_stack import serving_stack
    stack = serving_stack()
    keys = {s.key for s in stack.sources}
    assert {stack.scheduler.source, stack.sidecar.image.source, stack.kv_transfer.source} <= keys
    for s in stack.sources:
        assert s.url.startswith("https://") and s.title
        assert dt.date.fromisoformat(s.as_of) <= dt.date.today() + dt.timedelta(days=1)
    assert stack.kv_transfer.config == '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


@pytest.mark.parametrize("break_it, message", [
    (lambda d: d.pop("scheduler"), "KeyError"),
    (lambda d: d["sidecar"].update(source="nowhere"), "source 'nowhere' is not under sources"),
    (lambda d: next(iter(d["sources"].values())).update(as_of="last week"), "is not a date"),
    (lambda d: d["picker"]["profiles"]["decode"].append({"plugin": "typo-scorer", "weight": 1}), "typo-scorer"),
])
def test_a_broken_data_file_names_what_is_wrong(break_it, message):
    from compiler.serving_stack import DATA_FILE, StackDataError, from_data
    from importlib.resources import files
    data = yaml.safe_load(files("compiler").joinpath(DATA_FILE).read_text())
    break_it(data)
    with pytest.raises(StackDataError, match=message):
        from_data(data)
