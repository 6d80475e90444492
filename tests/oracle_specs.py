"""Seeded small random specs and in-process compiles for the optimality oracles.

The oracles (tests/test_oracle_pins.py, tests/test_oracle_monotone.py,
tests/test_optimality_cases.py) check the solver's claim -- `optimal` or a gap -- from
outside the model: a spec that only restricts another (a pin, a lower quota, a workload
more, a site less) can never have a cheaper optimum. They need many small specs that each
compile in well under a second, so this module generates them:

- `random_spec(seed)`: plain data of a valid spec (`infra-compile validate` passes) with
  1-3 sites (cloud regions with on_demand / spot / reserved_1y / reserved_3y pricing and a
  quota on every GPU type they offer, some of them 0; data centres with owned nodes, few racks
  and, beside a cloud site, tight power budgets), 1-3 workloads (LLM training of small token
  counts on llama-3-8b, llama-2-7b or an inline 1B model, ResNet-50 training, llama services,
  some at 99.9%), a 3-12 month horizon and mostly an `allowed_gpus` filter. Only catalog names
  that exist are used. Same seed -> same spec. About 5% are infeasible. The quotas also bound
  the node counts the estimate stage scans for a training job (1-GPU instances otherwise run
  to max_training_gpus), which keeps most compiles under a second.
- `compile_outcome(path)`: `compile_spec` in-process without its render stage (the oracles
  only read the plan's cost and gap), under a branch-and-bound node limit and never a time
  limit, so the outcome is the same on every machine. Returns an `Outcome` (cost, gap, status,
  the plan's (site, instance) per workload, the candidates' pools) or the CompileError's exit
  code; cached per spec text, so the test files share compiles within one pytest session, in
  every worker of it (tests/shared_cache.py). A shipped example is read from its session-wide
  compile (tests/examples_cache.py), not compiled again.
- `relaxation_problem(relaxed, restricted)`: the oracles' one check.
- `pin_spec`, `dump`, `load_data`, `write`: YAML in and out, numbers kept numbers.
"""

from __future__ import annotations

import copy
import hashlib
import math
import random
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from examples_cache import ROOT, estimates_seen, example
from shared_cache import key as content_key, shared

from compiler.optimize.settings import DEFAULT

# The optimality counterexamples (pairs of a spec and a twin that only restricts it), checked out
# next to this repository: ../shared/optimality-cases from its root.
CASES = ROOT.parent / "shared" / "optimality-cases"

# Node limit for every oracle compile: deterministic (a node count, not seconds) and the
# compiler's own default. A stop at the limit is reported as a gap, which the oracles honour.
MAX_NODES = DEFAULT.max_nodes

# USD: plans are written in cents; a little more for the LP's feasibility tolerance on
# continuous node-hours (1e-7 relative), so equal optima of two specs never look different.
ABS_TOL = 0.01
REL_TOL = 1e-7

MONTH_DAYS = 365.0 / 12.0

CLOUD_SITES = (
    {"name": "aws-use1", "provider": "aws", "region": "us-east-1"},
    {"name": "aws-usw2", "provider": "aws", "region": "us-west-2"},
    {"name": "gcp-usc1", "provider": "gcp", "region": "us-central1"},
    {"name": "azure-eus", "provider": "azure", "region": "eastus"},
)
DATA_CENTRES = ("dc-a", "dc-b")
OWNED_MODELS = ("dgx-h100", "dgx-a100", "l40s-server", "hgx-h100")
GPUS = ("H100", "A100-80GB", "L40S", "L4", "H200")
CLOUD_GPUS = {"aws": {"H100", "A100-80GB", "L40S", "L4", "H200", "A100-40GB"},
              "gcp": {"H100", "A100-80GB", "L4", "H200", "A100-40GB"},
              "azure": {"H100", "A100-80GB", "H200", "A100-40GB"}}
ONPREM_GPUS = {"H100", "A100-80GB", "L40S", "H200", "B200"}
TINY_LLM = {"name": "tiny-1b", "arch": "dense", "params_b": 1, "layers": 16, "hidden": 2048, "heads": 16,
            "kv_heads": 8, "vocab": 32000, "ffn_hidden": 8192}
# (model, tokens to train) for LLM training: tens to a few thousand GPU-hours.
LLM_TRAINING = (("llama-3-8b", (2e9, 5e9, 2e10, 6e10)), ("llama-2-7b", (3e9, 1e10, 4e10)),
                (TINY_LLM, (2e10, 1e11, 4e11)))
SERVING = ("llama-3-8b", "llama-2-7b")


# --- the generator ------------------------------------------------------------------------

def _cloud_site(rng: random.Random, proto: dict, gpus: set[str]) -> dict:
    site = {"name": proto["name"], "type": "cloud", "provider": proto["provider"], "region": proto["region"]}
    extra = [p for p in ("spot", "reserved_1y", "reserved_3y") if rng.random() < 0.45]
    if rng.random() < 0.1 and extra:
        pricing = extra                      # no on-demand: reserved (or spot) capacity only
    else:
        pricing = ["on_demand", *extra]
    site["pricing"] = pricing
    # A quota on every GPU type the site offers (accounts have them): it also bounds the node
    # counts a training job may hold there, which keeps each estimate small.
    offered = sorted(gpus & CLOUD_GPUS[proto["provider"]])
    site["quotas"] = {g: rng.choice((0, 8, 16, 16, 32, 32, 64)) for g in offered}
    if offered and not any(site["quotas"].values()):
        site["quotas"][offered[0]] = 16          # some GPU type stays usable at the site
    return site


def _data_centre(rng: random.Random, name: str, tight: bool) -> dict:
    """A data centre; `tight`: a power budget that admits no or few new nodes (another site, in
    the cloud, takes the rest)."""
    site = {"name": name, "type": "on_prem",
            "power_kw": rng.choice((1, 5, 8, 12, 15, 25) if tight else (40, 80, 150)),
            "electricity_usd_per_kwh": rng.choice((0.08, 0.12, 0.15, 0.2)),
            "pue": rng.choice((1.1, 1.2, 1.3, 1.5)),
            "max_racks": rng.choice((1, 2, 3, 4))}
    owned = []
    if rng.random() < 0.75:
        for model in rng.sample(OWNED_MODELS, rng.choice((1, 1, 1, 2))):
            owned.append({"instance": model, "nodes": rng.choice((1, 2, 2, 3, 4))})
        site["owned"] = owned
    if rng.random() < 0.15:
        owned_gpus = 8 * sum(o["nodes"] for o in owned)
        site["max_gpus"] = max(owned_gpus, rng.choice((16, 32, 64)))
    if rng.random() < 0.15:
        site["rack_power_kw"] = 45.0      # fits 4 of the largest owned nodes per rack
    return site


def _training(rng: random.Random, k: int, horizon: int, site_names: list[str]) -> dict:
    start = rng.randrange(0, horizon)
    left_days = (horizon - start) * MONTH_DAYS
    if rng.random() < 0.12:
        w = {"name": f"vision-{k}", "kind": "training", "model": "resnet-50", "samples": 1281167,
             "epochs": rng.choice((1, 3, 10))}
        deadline = rng.choice((1, 2, 7))
    else:
        model, tokens = rng.choice(LLM_TRAINING)
        w = {"name": f"train-{k}", "kind": "training", "model": copy.deepcopy(model),
             "tokens": rng.choice(tokens), "seq_len": rng.choice((2048, 4096, 8192))}
        if rng.random() < 0.15:
            w["optimizer"] = "adamw-8bit"
        deadline = rng.choice((None, None, 7, 14, 30, 60))
    window = {"start_month": start}
    if deadline is not None and deadline <= left_days:
        window["deadline_days"] = deadline
    w["window"] = window
    if rng.random() < 0.4:
        w["interruptible"] = True
    if rng.random() < 0.3:
        w["data"] = {"dataset_tb": rng.choice((0.5, 2, 10)), "home": rng.choice(site_names)}
    if rng.random() < 0.1:
        w["checkpoint"] = {"interval_min": rng.choice((30, 120)), "keep": rng.choice((1, 3))}
    return w


def _inference(rng: random.Random, k: int, horizon: int, site_names: list[str]) -> dict:
    w = {"name": f"serve-{k}", "kind": "inference", "model": rng.choice(SERVING),
         "quantization": rng.choice(("bf16", "bf16", "fp8", "int8")),
         "traffic": {"peak_rps": rng.choice((0.5, 1, 2, 4, 10, 30)),
                     "input_tokens": rng.choice((200, 800, 1000)),
                     "output_tokens": rng.choice((100, 200, 250)),
                     "growth_per_month": rng.choice((0.0, 0.0, 0.01, 0.05))},
         "slo": {"ttft_p99_ms": rng.choice((500, 800, 1000, 2000)),
                 "tpot_p99_ms": rng.choice((40, 50, 60, 80)),
                 "availability": 0.999 if len(site_names) > 1 and rng.random() < 0.3 else 0.99},
         "window": {"start_month": rng.randrange(0, horizon)}}
    return w


def random_spec(seed: int) -> dict:
    """A small valid spec, as plain data; the same seed always gives the same spec."""
    rng = random.Random(seed)
    horizon = rng.choice((3, 4, 6, 9, 12))
    shape = rng.choice(("cloud", "cloud", "on_prem", "hybrid", "hybrid", "hybrid"))
    n_cloud = {"cloud": rng.choice((1, 1, 2)), "on_prem": 0, "hybrid": rng.choice((1, 1, 2))}[shape]
    n_dc = {"cloud": 0, "on_prem": rng.choice((1, 2)), "hybrid": 1}[shape]

    allowed = None
    if rng.random() < 0.85:
        allowed = sorted(rng.sample(GPUS, rng.choice((2, 2, 3))))
    gpus = set(allowed or GPUS)

    sites = [_cloud_site(rng, p, gpus) for p in sorted(rng.sample(CLOUD_SITES, n_cloud), key=lambda p: p["name"])]
    sites += [_data_centre(rng, name, tight=shape == "hybrid") for name in DATA_CENTRES[:n_dc]]
    site_names = [s["name"] for s in sites]

    # Every allowed set must leave some GPU at some site (else every workload is infeasible).
    offered = set().union(*(CLOUD_GPUS[s["provider"]] if s["type"] == "cloud" else ONPREM_GPUS for s in sites))
    if allowed is not None and not (set(allowed) & offered):
        allowed = sorted(set(allowed) | {"H100"})

    workloads = []
    for k in range(rng.choice((1, 2, 2, 3))):
        make = _inference if rng.random() < 0.45 else _training
        w = make(rng, k, horizon, site_names)
        if len(site_names) > 1 and rng.random() < 0.12:
            w["sites"] = sorted(rng.sample(site_names, len(site_names) - 1))
            if w.get("data"):
                w["data"]["home"] = w["sites"][0]
            if w["kind"] == "inference" and len(w["sites"]) < 2:
                w["slo"]["availability"] = 0.99
        workloads.append(w)

    policy: dict = {"placement": shape}
    if allowed is not None:
        policy["allowed_gpus"] = allowed
    if shape == "hybrid" and rng.random() < 0.08:
        policy["max_cloud_share"] = rng.choice((0.5, 0.9))
    return {"apiVersion": "infra-compile/v1", "name": f"oracle-{seed:04d}", "horizon_months": horizon,
            "sites": sites, "policy": policy, "workloads": workloads}


# --- YAML in and out ----------------------------------------------------------------------

def dump(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120)


def load_data(path: str | Path) -> dict:
    """A spec file as plain data, read the way the compiler reads it (`2.0e12` is a number)."""
    from compiler.source import load

    return copy.deepcopy(load(path).data)


def write(data: dict, directory: Path, stem: str | None = None) -> Path:
    path = Path(directory) / f"{stem or data['name']}.yaml"
    path.write_text(dump(data), encoding="utf-8")
    return path


def pin_spec(data: dict, workload: str, **pin) -> dict:
    """A copy of data with `pin` merged into the workload's pin (a restriction of the spec)."""
    out = copy.deepcopy(data)
    for w in out["workloads"]:
        if w["name"] == workload:
            w["pin"] = {**(w.get("pin") or {}), **pin}
            return out
    raise KeyError(workload)


# --- compiles -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pool:
    """A (site, instance) some candidate of a workload runs on, as the estimate stage found it."""
    site: str
    site_type: str
    instance: str
    gpu: str
    gpus_per_node: int
    gpus: tuple[int, ...]            # training: the GPU counts estimated there; inference: TP sizes


@dataclass(frozen=True)
class Outcome:
    exit_code: int                 # 0 a plan, 2 invalid, 3 infeasible, 5 no plan in time, 6 audit
    cost: float = math.nan         # plan.total_cost_usd
    gap: float = math.nan          # plan.solver.gap (relative)
    status: str = ""               # plan.solver.status, or the first diagnostic
    # workload -> the (site, instance) pairs its placements use in the plan
    chosen: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    # workload -> the pools of the candidates the estimate stage gave the optimizer; empty where
    # none were recorded: an invalid spec (exit 2; the estimate stage itself raises no CompileError)
    pools: tuple[tuple[str, tuple[Pool, ...]], ...] = ()

    @property
    def has_plan(self) -> bool:
        return self.exit_code == 0

    @property
    def bound(self) -> float:
        """What the plan proves: no plan of this spec costs less (cost * (1 - gap))."""
        return self.cost * (1.0 - self.gap)

    def chosen_by(self, workload: str) -> set[tuple[str, str]]:
        return set(dict(self.chosen).get(workload, ()))

    def __str__(self) -> str:
        if self.has_plan:
            return f"${self.cost:,.2f} ({self.status}, gap {self.gap:.4%})"
        return f"exit {self.exit_code} ({self.status})"


_CACHE: dict[tuple, Outcome] = {}


def _no_render(plan, catalog) -> dict[str, str]:
    return {}


def _pools(candidates) -> tuple[tuple[str, tuple[Pool, ...]], ...]:
    out = []
    for w, cands in sorted(candidates.by_workload.items()):
        by: dict[tuple[str, str], list] = {}
        for c in cands:
            by.setdefault((c.site, c.instance), []).append(c)
        out.append((w, tuple(Pool(s, cs[0].site_type, i, cs[0].gpu, cs[0].gpus_per_node,
                                  tuple(sorted({c.gpus for c in cs})))
                             for (s, i), cs in sorted(by.items()))))
    return tuple(out)


@contextmanager
def _render_stubbed():
    from compiler import pipeline

    inner = pipeline.render_artifacts
    pipeline.render_artifacts = _no_render
    try:
        yield
    finally:
        pipeline.render_artifacts = inner


def _shipped_example(path: Path, max_nodes: int) -> bool:
    """Whether tests/examples_cache.py's compile of path is the one compile_outcome would run: a
    file of examples/, the compiler's default node limit (example() runs `compile_spec` with
    default options: that limit, no time limit) and neither compile_spec nor its estimate stage
    replaced by a test double."""
    from compiler import optimize, pipeline

    return (path.resolve().parent == ROOT / "examples" and max_nodes == optimize.DEFAULT.max_nodes
            and all(getattr(f, "__module__", None) == pipeline.__name__
                    for f in (pipeline.estimate_candidates, pipeline.compile_spec)))


def compile_outcome(path: str | Path, max_nodes: int = MAX_NODES) -> Outcome:
    """`compile_spec` in-process, its render stage stubbed out (the oracles read only the plan;
    the audit and every other stage run). Cached per spec text and per estimate stage in use (a
    test double of the estimate stage is never served a result cached without it; with the
    pipeline's own stages, shared with the run's other workers: shared_cache.shared). The
    candidates the estimate stage hands the optimizer are recorded on the way (`Outcome.pools`).
    A shipped example is not compiled again: its session-wide compile (examples_cache.example,
    the same options, its candidates recorded the same way) is read."""
    from compiler import pipeline
    from compiler.diagnostics import CompileError

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    key = (hashlib.sha256(text.encode()).hexdigest(), max_nodes, pipeline.estimate_candidates, pipeline.compile_spec)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    def outcome() -> Outcome:
        seen: list = []
        try:
            if _shipped_example(path, max_nodes):
                candidates, result = example(path.stem)
                seen, plan = [candidates], result.plan
            else:
                with estimates_seen() as seen, _render_stubbed():
                    plan = pipeline.compile_spec(path, pipeline.CompileOptions(max_nodes=max_nodes)).plan
            chosen = tuple((w.name, tuple(sorted({(p.site, p.instance) for p in w.placements})))
                           for w in plan.workloads)
            out = Outcome(0, float(plan.total_cost_usd), float(plan.solver.gap), plan.solver.status, chosen)
        except CompileError as exc:
            first = exc.diagnostics[0] if exc.diagnostics else None
            out = Outcome(exc.exit_code, status=f"{first.code}: {first.message}" if first else "")
        if seen:
            out = replace(out, pools=_pools(seen[-1]))
        return out

    own_stages = all(getattr(f, "__module__", None) == pipeline.__name__
                     for f in (pipeline.estimate_candidates, pipeline.compile_spec, pipeline.render_artifacts))
    out = shared("oracle", content_key(text, str(max_nodes)), outcome) if own_stages else outcome()
    _CACHE[key] = out
    return out


def relaxation_problem(relaxed: Outcome, restricted: Outcome, relaxed_name: str = "relaxed",
                       restricted_name: str = "restricted") -> str | None:
    """Why `relaxed` (a spec whose plans include every plan of `restricted`) breaks the
    optimality claim, or None. A restricted spec with a plan means the relaxed one has a plan, and
    the restricted plan costs at least what the relaxed one proves: its cost * (1 - gap), less
    ABS_TOL + REL_TOL of rounding. A compile that fails otherwise than infeasible (3) or out of
    nodes (5) -- an audit finding (6), an invalid twin (2) -- is a failure too: nothing to compare."""
    for name, out in ((restricted_name, restricted), (relaxed_name, relaxed)):
        if out.exit_code not in (0, 3, 5):
            what = " (an internal error: the plan failed its audit)" if out.exit_code == 6 else ""
            return f"the {name} spec's compile failed{what}: {out}"
    if not restricted.has_plan:
        return None
    if not relaxed.has_plan:
        return f"the {relaxed_name} spec has no plan ({relaxed}) while the {restricted_name} one has one"
    tol = ABS_TOL + REL_TOL * abs(relaxed.cost)
    if restricted.cost < relaxed.bound - tol:
        return (f"the {restricted_name} spec is cheaper, by ${relaxed.bound - restricted.cost:,.2f}, than the "
                f"{relaxed_name} plan's bound ${relaxed.bound:,.2f} (its cost less its reported gap)")
    return None
