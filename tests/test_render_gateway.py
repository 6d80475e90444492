"""The serving stack: the vLLM servers are told the spec's serving choices (prefix caching,
speculative decoding) in the syntax of the image's vLLM release, the autoscaler keeps headroom
below the batch at the SLO, and a routing layer (Gateway API and its inference extension: a
Gateway, and per service an InferencePool, its endpoint picker and an HTTPRoute) sits in front of
each service. The CRD objects are checked against the published schemas (tests/schemas/), and
a compiled spec with both serving choices passes the coherence oracle, which names each break."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
import yaml

from coherence import check
from coherence_specs import FIXTURE_SPEC, compile_into
from compiler.plan import SpecInputs
from plans import PLANS, with_workload

SCHEMAS = Path(__file__).resolve().parent / "schemas"
CHAT = {"peak_rps": 20, "input_tokens": 1000, "output_tokens": 200}


def _validator(name: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads((SCHEMAS / name).read_text()))


def _render(plan, catalog=None) -> dict[str, str]:
    from compiler.catalog import load_catalog
    from compiler.render import render
    return render(plan, catalog or load_catalog())


def _docs(files: dict[str, str]) -> list[tuple[str, dict]]:
    return [(p, d) for p, t in sorted(files.items()) if p.endswith(".yaml") for d in yaml.safe_load_all(t) if d]


def _aws(**inputs):
    """The aws case's chat-8b (L40S: vLLM v0.6.3) with the spec inputs given."""
    return with_workload(PLANS["aws"](), "chat-8b", inputs=SpecInputs.of({"traffic": CHAT, **inputs}))


def _server_args(files: dict[str, str], name: str) -> list[str]:
    dep = next(d for p, d in _docs(files) if d["kind"] == "Deployment" and d["metadata"]["name"] == name)
    return dep["spec"]["template"]["spec"]["containers"][0]["args"]


def _services(plan, gpu: str):
    """The site views' services of `plan`, run on the serving image the catalog names for `gpu`."""
    from compiler.catalog import load_catalog
    from compiler.render.site import site_view
    catalog = load_catalog()
    views = [site_view(plan, catalog, s) for s in plan.sites]
    return [replace(svc, serving=catalog.gpus[gpu].serving) for v in views for svc in v.inference]


# --- the server's arguments ------------------------------------------------------------------

def test_plain_service_is_told_no_serving_choices():
    args = _server_args(_render(_aws()), "chat-8b")
    assert args == ["--model=/models/chat-8b", "--served-model-name=chat-8b", "--tensor-parallel-size=4",
                    "--max-num-seqs=48", "--port=8000"]


def test_prefix_cache_share_turns_on_prefix_caching():
    files = _render(_aws(traffic={**CHAT, "prefix_cache_hit": 0.6}))
    assert "--enable-prefix-caching" in _server_args(files, "chat-8b")
    assert "60% of prompt tokens served from the cache" in files["kubernetes/aws-usw2/30-serve-chat-8b.yaml"]


def test_speculative_decoding_before_vllm_0_8_is_separate_flags():
    # the L40S's image is vLLM v0.6.3: --speculative-model and --num-speculative-tokens
    files = _render(_aws(speculative={"method": "draft", "acceptance": 0.7, "draft_tokens": 4}))
    args = _server_args(files, "chat-8b")
    assert args[-3:] == ["--speculative-model=/models/chat-8b/draft", "--num-speculative-tokens=4", "--port=8000"]
    assert not any(a.startswith("--speculative-config") for a in args)
    assert "models/chat-8b/draft/ on the claim" in files["kubernetes/aws-usw2/30-serve-chat-8b.yaml"]


@pytest.mark.parametrize("gpu, method, want", [
    ("B200", "heads", "eagle"),             # vllm/vllm-openai:v0.10.1.1
    ("MI300X", "draft", "draft_model"),     # rocm/vllm's vLLM 0.9.0.1
    ("MI300X", "heads", "eagle"),
])
def test_speculative_decoding_from_vllm_0_8_is_one_json_config(gpu, method, want):
    plan = _aws(speculative={"method": method, "acceptance": 0.8, "draft_tokens": 3})
    (svc,) = _services(plan, gpu)
    (config,) = [a for a in svc.args if a.startswith("--speculative-config=")]
    assert json.loads(config.split("=", 1)[1]) == {"method": want, "model": "/models/chat-8b/draft",
                                                   "num_speculative_tokens": 3}
    assert not any(a.startswith(("--speculative-model", "--num-speculative-tokens")) for a in svc.args)


def test_a_draft_model_on_vllm_0_10_stops_the_render():
    # vLLM 0.10 (the B200's image) runs no draft-model speculation: the server would not start
    from compiler.catalog import load_catalog
    from compiler.diagnostics import CompileError
    catalog = load_catalog()
    b200 = catalog.gpus["B200"].serving
    catalog = replace(catalog, gpus={**catalog.gpus, "L40S": replace(catalog.gpus["L40S"], serving=b200)})
    with pytest.raises(CompileError) as err:
        _render(_aws(speculative={"method": "draft", "acceptance": 0.7, "draft_tokens": 4}), catalog)
    assert err.value.diagnostics[0].code == "E713" and "v0.10.1.1" in err.value.diagnostics[0].message
    _render(_aws(speculative={"method": "heads", "acceptance": 0.7, "draft_tokens": 4}), catalog)


def test_the_vllm_release_is_the_catalogs_and_agrees_with_the_image_tag():
    """The render takes the release from the catalog's field, never from the tag; the tag (read
    here, as a check) names the same release for every serving image."""
    from compiler.catalog import load_catalog
    from compiler.catalog.model import ServingImage
    from compiler.render.site import vllm_version
    from test_render_catalog import vllm_version as from_tag

    images = {g.serving for g in load_catalog().gpus.values() if g.serving is not None}
    assert {i.version for i in images} == {"v0.6.3", "v0.10.1.1", "v0.19.1-cu130", "rocm6.4.1_vllm_0.9.0.1_20250605"}
    for image in images:
        assert vllm_version(image) == image.vllm == from_tag(image.ref)[1]
    assert vllm_version(ServingImage("x", "v0.10.1.1", "", "", "")) == ()    # the tag is not read


# --- the autoscaler's headroom -----------------------------------------------------------------

def test_autoscaler_targets_below_the_batch_at_the_slo():
    from compiler.render.site import AUTOSCALER_TARGET_SHARE
    files = _render(_aws())
    hpa = next(d for _p, d in _docs(files) if d["kind"] == "HorizontalPodAutoscaler")
    target = int(hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"])
    assert target == int(48 * AUTOSCALER_TARGET_SHARE) == 38 < 48
    (svc,) = _services(with_workload(PLANS["aws"](), "chat-8b"), "L40S")
    assert replace(svc, batch=1).hpa_target == 1       # never 0


# --- the routing layer --------------------------------------------------------------------------

def test_routing_objects_follow_the_services():
    files = _render(_aws(traffic={**CHAT, "prefix_cache_hit": 0.5}))
    docs = {(d["kind"], d["metadata"]["name"]): d for p, d in _docs(files) if "aws-usw2" in p}
    gateway = docs[("Gateway", "inference")]
    assert gateway["spec"]["gatewayClassName"] == "istio"
    pool = docs[("InferencePool", "chat-8b")]["spec"]
    server = docs[("Deployment", "chat-8b")]["spec"]["template"]["metadata"]["labels"]
    assert pool["selector"]["matchLabels"].items() <= server.items()
    assert pool["targetPorts"] == [{"number": 8000}]
    picker = pool["endpointPickerRef"]
    assert picker == {"name": "chat-8b-epp", "port": {"number": 9002}}
    assert docs[("Service", "chat-8b-epp")]["spec"]["ports"][0]["port"] == 9002
    epp = docs[("Deployment", "chat-8b-epp")]["spec"]["template"]["spec"]["containers"][0]
    assert epp["args"][:4] == ["--pool-name", "chat-8b", "--pool-namespace", "llm-pretrain-aws"]
    config = yaml.safe_load(docs[("ConfigMap", "chat-8b-epp")]["data"]["plugins.yaml"])
    assert [p["type"] for p in config["plugins"]] == ["queue-scorer", "kv-cache-utilization-scorer",
                                                      "prefix-cache-scorer"]
    route = docs[("HTTPRoute", "chat-8b")]["spec"]
    assert route["parentRefs"][0]["name"] == "inference"
    (rule,) = route["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/chat-8b"}}]
    assert rule["backendRefs"] == [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                    "name": "chat-8b"}]


def test_picker_scores_prefixes_only_where_the_service_caches_them():
    files = _render(_aws())
    cm = next(d for _p, d in _docs(files) if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "chat-8b-epp")
    assert "prefix-cache-scorer" not in cm["data"]["plugins.yaml"]


def test_gke_sites_use_gkes_gateway_class():
    gw = next(d for _p, d in _docs(_render(PLANS["gcp"]())) if d["kind"] == "Gateway")
    assert gw["spec"]["gatewayClassName"] == "gke-l7-rilb"


def test_one_pool_holds_every_placement_of_a_service_at_a_site():
    from plans import split_plan
    files = _render(split_plan())
    docs = _docs(files)
    (pool,) = [d for _p, d in docs if d["kind"] == "InferencePool"]
    servers = [d for _p, d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] in ("chat-tp2", "chat-tp4")]
    assert len(servers) == 2
    for d in servers:
        assert pool["spec"]["selector"]["matchLabels"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
    assert "(chat-tp2, chat-tp4)" in files["kubernetes/aws-use1/31-route-chat.yaml"]


@pytest.mark.parametrize("schema, doc", [
    ("httproute-v1.json", {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                           "metadata": {"name": "r"}, "spec": {"rules": [{"backendRef": [{"name": "p"}]}]}}),
    ("inferencepool-v1.json", {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
                               "metadata": {"name": "p"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                                                                   "targetPortNumber": 8000}}),
    ("gateway-v1.json", {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "g"},
                         "spec": {"gatewayClassName": "istio", "listeners": [{"name": "http", "port": 80}]}}),
])
def test_stored_crd_schemas_catch_a_wrong_field(schema, doc):
    # a misspelt backendRefs, v1alpha2's targetPortNumber on v1, a listener without its protocol
    assert list(_validator(schema).iter_errors(doc))


# --- the coherence oracle -----------------------------------------------------------------------

SERVING_CHOICES = ("    traffic: {peak_rps: 5, input_tokens: 800, output_tokens: 200, growth_per_month: 0.05, "
                   "prefix_cache_hit: 0.5}\n"
                   "    speculative: {method: heads, acceptance: 0.7, draft_tokens: 3}\n")


@pytest.fixture(scope="module")
def choices_out(tmp_path_factory) -> Path:
    old = "    traffic: {peak_rps: 5, input_tokens: 800, output_tokens: 200, growth_per_month: 0.05}\n"
    assert FIXTURE_SPEC.count(old) == 1
    root = tmp_path_factory.mktemp("serving-choices")
    spec = root / "spec.yaml"
    spec.write_text(FIXTURE_SPEC.replace(old, SERVING_CHOICES), encoding="utf-8")
    out = compile_into(spec, root / "good")
    assert out is not None
    return out


def _serve_files(out: Path) -> list[Path]:
    return sorted(out.glob("kubernetes/*/30-serve-chat*.yaml"))


def test_a_compiled_spec_with_serving_choices_is_coherent(choices_out):
    assert _serve_files(choices_out)
    for f in _serve_files(choices_out):
        text = f.read_text()
        assert "--enable-prefix-caching" in text and "speculative" in text
    assert check(choices_out) == []


def _broken(choices_out: Path, tmp_path: Path, edit) -> list[str]:
    out = tmp_path / "out"
    shutil.copytree(choices_out, out)
    edit(out)
    return check(out)


def _edit_docs(path: Path, mutate) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for d in docs:
        mutate(d)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _args(d: dict, change) -> None:
    if d["kind"] == "Deployment":
        c = d["spec"]["template"]["spec"]["containers"][0]
        c["args"] = change(list(c["args"]))


def _no_prefix_caching(out):
    _edit_docs(_serve_files(out)[0], lambda d: _args(d, lambda a: [x for x in a if x != "--enable-prefix-caching"]))


def _other_draft_tokens(out):
    def change(args):
        return [x.replace('"num_speculative_tokens": 3', '"num_speculative_tokens": 5')
                .replace("--num-speculative-tokens=3", "--num-speculative-tokens=5") for x in args]
    _edit_docs(_serve_files(out)[0], lambda d: _args(d, change))


def _no_speculation(out):
    _edit_docs(_serve_files(out)[0], lambda d: _args(d, lambda a: [x for x in a if "speculative" not in x]))


def _hpa_at_the_batch(out):
    def mutate(d):
        if d["kind"] == "HorizontalPodAutoscaler":
            d["spec"]["metrics"][0]["pods"]["target"]["averageValue"] = "100000"
    _edit_docs(_serve_files(out)[0], mutate)


def _pool_selects_nothing(out):
    route = sorted(out.glob("kubernetes/*/31-route-chat.yaml"))[0]

    def mutate(d):
        if d["kind"] == "InferencePool":
            d["spec"]["selector"]["matchLabels"] = {"infra-compile.io/workload": "nobody"}
    _edit_docs(route, mutate)


def _no_route(out):
    route = sorted(out.glob("kubernetes/*/31-route-chat.yaml"))[0]
    docs = [d for d in yaml.safe_load_all(route.read_text()) if d and d["kind"] != "HTTPRoute"]
    route.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _picker_port(out):
    route = sorted(out.glob("kubernetes/*/31-route-chat.yaml"))[0]

    def mutate(d):
        if d["kind"] == "InferencePool":
            d["spec"]["endpointPickerRef"]["port"]["number"] = 9999
    _edit_docs(route, mutate)


@pytest.mark.parametrize("edit, finding", [
    (_no_prefix_caching, "not told --enable-prefix-caching"),
    (_other_draft_tokens, "drafts 5 tokens a step, the plan sized 3"),
    (_no_speculation, "the plan sized speculative decoding (heads, 3 tokens a step), the server is not told"),
    (_hpa_at_the_batch, "the HPA targets 100000 requests in flight per replica"),
    (_pool_selects_nothing, "0 InferencePools select all of its server pods"),
    (_no_route, "no HTTPRoute sends requests to InferencePool chat"),
    (_picker_port, "calls its endpoint picker on port 9999"),
])
def test_the_oracle_names_a_broken_serving_stack(choices_out, tmp_path, edit, finding):
    found = _broken(choices_out, tmp_path, edit)
    assert any(finding in line for line in found), found


@pytest.mark.parametrize("inputs", [
    None, [], "x", {"traffic": "x"}, {"traffic": {"prefix_cache_hit": "half"}},
    {"speculative": {"method": "lookahead", "draft_tokens": 3, "acceptance": 0.7}},
    {"speculative": {"method": "draft", "draft_tokens": "3", "acceptance": 0.7}},
    {"speculative": {"method": "heads"}}, {"speculative": True},
])
def test_inputs_a_plan_read_from_outside_may_hold_serve_plainly(inputs):
    # a baseline's plan.json may hold anything in `inputs`: the render never stops on it
    from compiler.render.site import ServingChoices, serving_choices
    stated = None if inputs is None else SpecInputs.of(inputs)
    assert serving_choices(stated, "/models/chat") == ServingChoices()
    assert "--enable-prefix-caching" not in _server_args(_render(
        with_workload(PLANS["aws"](), "chat-8b", inputs=stated)), "chat-8b")
