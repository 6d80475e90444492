"""Seeded small random specs for the coherence oracle (tests/coherence.py, tests/test_coherence.py).

`random_spec(seed)` gives plain data of a valid spec that compiles in about a second with CBC;
the same seed gives the same spec. The shape cycles with the seed so every few seeds cover:
- hybrid: one cloud region and a data centre with owned nodes and power to buy more;
- several clouds: two or three of AWS / GCP / Azure regions the catalog prices;
- one cloud region with spot and reserved pricing;
- on-prem only (owned nodes, purchases).
Cloud sites offer on_demand plus some of spot / reserved_1y / reserved_3y, with a quota on every
GPU type they offer (which also bounds the node counts the estimate stage scans). 2-4 workloads:
LLM training (small token counts on llama-3-8b, llama-2-7b or an inline 1B model) on Slurm or on
Kubernetes, some interruptible, some pinned to a pricing (spot, reserved, purchase) so those
pools show up; llama services at 99% or, with two sites or more, 99.9%. Horizons of 6-12 months.
Of seeds 0-200, 3 are infeasible (`compile_into` says so with None); none ends in the compiler's
own audit finding (exit 6) since the allotment fix for pinned reserved jobs (5 did before).

The ideas come from tests/oracle_specs.py (quotas that bound the estimate, catalog names that
exist) and tests/test_fuzz_pipeline.py; nothing is shared with them.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import yaml

CLOUD_SITES = (
    {"name": "aws-use1", "provider": "aws", "region": "us-east-1"},
    {"name": "aws-usw2", "provider": "aws", "region": "us-west-2"},
    {"name": "gcp-usc1", "provider": "gcp", "region": "us-central1"},
    {"name": "azure-eus", "provider": "azure", "region": "eastus"},
)
CLOUD_GPUS = {"aws": ("H100", "A100-80GB", "L40S", "L4"),
              "gcp": ("H100", "A100-80GB", "L4"),
              "azure": ("H100", "A100-80GB")}
OWNED_MODELS = ("dgx-h100", "dgx-a100", "l40s-server", "hgx-h100")
GPUS = ("H100", "A100-80GB", "L40S", "L4")
TINY_LLM = {"name": "tiny-1b", "arch": "dense", "params_b": 1, "layers": 16, "hidden": 2048, "heads": 16,
            "kv_heads": 8, "vocab": 32000, "ffn_hidden": 8192}
LLM_TRAINING = (("llama-3-8b", (2e9, 5e9, 2e10)), ("llama-2-7b", (3e9, 1e10)), (TINY_LLM, (2e10, 1e11)))
SERVING = ("llama-3-8b", "llama-2-7b")
SHAPES = ("hybrid", "multicloud", "cloud", "onprem")
MONTH_DAYS = 365.0 / 12.0


# A hand-written spec whose plan has one of everything the broken-output tests edit (pins make it
# so): Slurm on a reserved AWS block that changes hands with a service (a reservation, State=CLOUD
# nodes), Kubernetes training on an AWS spot node group, Slurm on a bought on-prem node, a service
# on owned on-prem nodes (Node objects) and in the cloud, a BOM with owned and bought nodes.
FIXTURE_SPEC = """\
apiVersion: infra-compile/v1
name: coherence-fixture
horizon_months: 6
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand, spot, reserved_1y]
    quotas: {H100: 32, L40S: 32, L4: 32}
  - name: dc-a
    type: on_prem
    power_kw: 80
    electricity_usd_per_kwh: 0.12
    pue: 1.3
    max_racks: 3
    owned: [{instance: l40s-server, nodes: 2}]
policy: {placement: hybrid, allowed_gpus: [H100, L40S, L4]}
workloads:
  - name: pretrain
    kind: training
    model: llama-3-8b
    tokens: 2.0e10
    seq_len: 4096
    orchestrator: slurm
    pin: {site: aws-use1, pricing: reserved_1y}
  - name: sweep
    kind: training
    model: llama-2-7b
    tokens: 1.0e10
    seq_len: 2048
    interruptible: true
    orchestrator: kubernetes
    window: {start_month: 1}
    pin: {site: aws-use1, pricing: spot}
  - name: onprem-train
    kind: training
    model: {name: tiny-1b, arch: dense, params_b: 1, layers: 16, hidden: 2048, heads: 16, kv_heads: 8, vocab: 32000, ffn_hidden: 8192}
    tokens: 1.0e11
    seq_len: 2048
    orchestrator: slurm
    pin: {site: dc-a, pricing: purchase}
  - name: chat
    kind: inference
    model: llama-3-8b
    quantization: fp8
    traffic: {peak_rps: 5, input_tokens: 800, output_tokens: 200, growth_per_month: 0.05}
    slo: {ttft_p99_ms: 1000, tpot_p99_ms: 60, availability: 0.99}
"""


def _cloud_site(rng: random.Random, proto: dict, allowed: set[str], want: tuple[str, ...] = ()) -> dict:
    extra = [p for p in ("spot", "reserved_1y", "reserved_3y") if p in want or rng.random() < 0.5]
    site = {"name": proto["name"], "type": "cloud", "provider": proto["provider"], "region": proto["region"],
            "pricing": ["on_demand", *extra]}
    offered = [g for g in CLOUD_GPUS[proto["provider"]] if g in allowed]
    site["quotas"] = {g: rng.choice((8, 16, 16, 32, 64)) for g in offered}
    return site


def _data_centre(rng: random.Random, name: str) -> dict:
    site = {"name": name, "type": "on_prem", "power_kw": rng.choice((40, 80, 150)),
            "electricity_usd_per_kwh": rng.choice((0.08, 0.12, 0.15)), "pue": rng.choice((1.2, 1.3, 1.5)),
            "max_racks": rng.choice((2, 3, 4))}
    site["owned"] = [{"instance": m, "nodes": rng.choice((1, 2, 3, 4))}
                     for m in sorted(rng.sample(OWNED_MODELS, rng.choice((1, 1, 2))))]
    return site


def _training(rng: random.Random, k: int, horizon: int, sites: list[dict]) -> dict:
    model, tokens = rng.choice(LLM_TRAINING)
    w = {"name": f"train-{k}", "kind": "training", "model": copy.deepcopy(model), "tokens": rng.choice(tokens),
         "seq_len": rng.choice((2048, 4096))}
    start = rng.randrange(0, max(1, horizon - 1))
    window = {"start_month": start}
    deadline = rng.choice((None, 7, 14, 30))
    if deadline is not None and deadline <= (horizon - start) * MONTH_DAYS:
        window["deadline_days"] = deadline
    w["window"] = window
    w["orchestrator"] = rng.choice(("slurm", "kubernetes"))
    if rng.random() < 0.5:
        w["interruptible"] = True
    # A pricing pin now and then, so spot, reserved and bought pools show up.
    if rng.random() < 0.4:
        options = []
        for s in sites:
            if s["type"] == "cloud":
                options += [(s["name"], p) for p in s["pricing"]
                            if p != "on_demand" and (p != "spot" or w.get("interruptible"))]
            else:
                options.append((s["name"], "purchase"))
        if options:
            site, pricing = rng.choice(options)
            w["pin"] = {"site": site, "pricing": pricing}
    return w


def _inference(rng: random.Random, k: int, horizon: int, sites: list[dict]) -> dict:
    return {"name": f"serve-{k}", "kind": "inference", "model": rng.choice(SERVING),
            "quantization": rng.choice(("bf16", "fp8", "int8")),
            "traffic": {"peak_rps": rng.choice((0.5, 1, 2, 5, 10)), "input_tokens": rng.choice((200, 800)),
                        "output_tokens": rng.choice((100, 200)),
                        "growth_per_month": rng.choice((0.0, 0.02, 0.05))},
            "slo": {"ttft_p99_ms": rng.choice((800, 1000, 2000)), "tpot_p99_ms": rng.choice((50, 60, 80)),
                    "availability": 0.999 if len(sites) > 1 and rng.random() < 0.5 else 0.99},
            "window": {"start_month": rng.randrange(0, horizon)}}


def random_spec(seed: int) -> dict:
    """A small valid spec as plain data; the same seed always gives the same spec."""
    rng = random.Random(seed)
    shape = SHAPES[seed % len(SHAPES)]
    horizon = rng.choice((6, 9, 12))
    allowed = set(rng.sample(GPUS, rng.choice((2, 3, 4)))) | {"H100"}
    if shape == "hybrid":
        clouds = [rng.choice(CLOUD_SITES)]
    elif shape == "multicloud":
        clouds = rng.sample(CLOUD_SITES, rng.choice((2, 3)))
    elif shape == "cloud":
        clouds = [rng.choice(CLOUD_SITES)]
    else:
        clouds = []
    want = ("spot", "reserved_1y") if shape == "cloud" else ()
    sites = [_cloud_site(rng, c, allowed, want) for c in sorted(clouds, key=lambda c: c["name"])]
    if shape in ("hybrid", "onprem"):
        sites.append(_data_centre(rng, "dc-a"))
    workloads = []
    n = rng.choice((2, 3, 3, 4))
    for k in range(n):
        # at least one training and (with more than two workloads) one service
        kind = "training" if k == 0 else "inference" if k == 1 and n > 2 else rng.choice(("training", "inference"))
        make = _training if kind == "training" else _inference
        workloads.append(make(rng, k, horizon, sites))
    trainings = [w for w in workloads if w["kind"] == "training"]
    if seed % 3 == 0 and trainings:          # both orchestrators, often in one spec
        trainings[0]["orchestrator"] = "kubernetes"
    policy = {"placement": {"hybrid": "hybrid", "onprem": "on_prem"}.get(shape, "cloud"),
              "allowed_gpus": sorted(allowed)}
    return {"apiVersion": "infra-compile/v1", "name": f"coherence-{seed:04d}", "horizon_months": horizon,
            "sites": sites, "policy": policy, "workloads": workloads}


def spec_text(seed: int) -> str:
    return yaml.safe_dump(random_spec(seed), sort_keys=False, default_flow_style=None, width=120)


RANDOM_SPEC_NODES = 10


def compile_into(spec_path: str | Path, out_dir: str | Path, max_nodes: int | None = None) -> Path | None:
    """Compile a spec in-process with CBC (every stage, render and audit included) and write its
    files to out_dir as `infra-compile SPEC -o out_dir [--max-nodes N]` does; None when the solver
    finds it infeasible (exit 3). Any other error propagates."""
    from compiler import pipeline
    from compiler.diagnostics import CompileError
    from compiler.output import write

    try:
        result = pipeline.compile_spec(Path(spec_path), pipeline.CompileOptions(solver="cbc", max_nodes=max_nodes))
    except CompileError as exc:
        if exc.exit_code == 3:
            return None
        raise
    return write(result.artifacts, out_dir)


def compile_seed(seed: int, folder: str | Path) -> Path | None:
    """random_spec(seed) written to folder/spec.yaml and compiled into folder/out."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / f"coherence-{seed:04d}.yaml"
    spec.write_text(spec_text(seed), encoding="utf-8")
    # The files are checked against the plan, whatever its cost: a node budget keeps the few
    # seeds whose search runs long (37: two minutes on its own) short, and every plan is still
    # audited by the compile.
    return compile_into(spec, folder / "out", max_nodes=RANDOM_SPEC_NODES)
