"""Whole-pipeline benchmark: validate, estimate, solve and render on generated platforms.

    python benchmarks/bench_pipeline.py [--sizes 10 100 300] [--solver cbc] [--time-limit 120]
                                        [--max-nodes 1000] [--gap 0.005] [--seed 0] [--keep DIR]

Each size N is a seeded YAML spec of N workloads (about 60% LLM training, 10% vision
training, 30% LLM inference) over four cloud regions and one data centre, written to a
file and run through the same stages as `infra-compile SPEC`. Prints a table of each
stage's seconds and its growth factor against the smallest size, plus the solver's status
and reported gap. `platform_spec(n, seed)` is also what tests/test_hardening.py uses to get
a spec whose solve takes a while.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SITES = [
    {"name": "aws-use1", "type": "cloud", "provider": "aws", "region": "us-east-1",
     "pricing": ["on_demand", "spot", "reserved_1y", "reserved_3y"], "quotas": {"H100": 2048}},
    {"name": "aws-usw2", "type": "cloud", "provider": "aws", "region": "us-west-2",
     "pricing": ["on_demand", "spot", "reserved_1y"], "quotas": {"H100": 1024}},
    {"name": "gcp-usc1", "type": "cloud", "provider": "gcp", "region": "us-central1",
     "pricing": ["on_demand", "spot", "reserved_1y"]},
    {"name": "azure-eus", "type": "cloud", "provider": "azure", "region": "eastus",
     "pricing": ["on_demand", "reserved_1y"]},
    {"name": "fra-dc1", "type": "on_prem", "power_kw": 4000, "electricity_usd_per_kwh": 0.12,
     "pue": 1.3, "max_racks": 120, "rack_power_kw": 40,
     "owned": [{"instance": "dgx-h100", "nodes": 8}]},
]
LLM_TRAINING = [("llama-2-7b", 1e10, 1e11), ("llama-3-8b", 2e10, 2e11), ("llama-2-13b", 2e10, 1e11),
                ("llama-3-70b", 5e10, 3e11)]
VISION = [("resnet-50", 1281167, (30, 90)), ("vit-b-16", 1281167, (30, 300))]
INFERENCE = [("llama-3-8b", "bf16", 400), ("llama-3-70b", "fp8", 800), ("llama-2-13b", "int8", 600)]


def platform_spec(n: int, seed: int = 0, horizon: int = 24) -> dict:
    """A valid spec (plain data) of n seeded workloads; same (n, seed) -> same spec."""
    rng = random.Random(seed)
    site_names = [s["name"] for s in SITES]
    workloads = []
    for k in range(n):
        roll = rng.random()
        start = rng.randrange(0, horizon - 2)
        if roll < 0.6:
            model, lo, hi = rng.choice(LLM_TRAINING)
            home = rng.choice(site_names)
            w = {"name": f"train-{k:03d}", "kind": "training", "model": model,
                 "tokens": float(f"{rng.uniform(lo, hi):.3g}"), "seq_len": rng.choice([4096, 8192]),
                 "window": {"start_month": start, "deadline_days": rng.choice([14, 30, 45, 60])},
                 "interruptible": rng.random() < 0.5,
                 "data": {"dataset_tb": rng.choice([1, 4, 10, 20]), "home": home}}
            if rng.random() < 0.2:
                w["sites"] = sorted(rng.sample(site_names, 2))
                w["data"]["home"] = w["sites"][0]
        elif roll < 0.7:
            model, samples, (e_lo, e_hi) = rng.choice(VISION)
            w = {"name": f"vision-{k:03d}", "kind": "training", "model": model, "samples": samples,
                 "epochs": rng.randint(e_lo, e_hi),
                 "window": {"start_month": start, "deadline_days": rng.choice([2, 7, 14])}}
        else:
            model, quant, ttft = rng.choice(INFERENCE)
            w = {"name": f"serve-{k:03d}", "kind": "inference", "model": model, "quantization": quant,
                 "traffic": {"peak_rps": rng.choice([5, 10, 20, 40]), "input_tokens": 1000,
                             "output_tokens": rng.choice([150, 250]),
                             "growth_per_month": rng.choice([0.0, 0.02, 0.05])},
                 "slo": {"ttft_p99_ms": ttft, "tpot_p99_ms": 60,
                         "availability": rng.choice([0.99, 0.999])},
                 "window": {"start_month": rng.randrange(0, horizon // 2)}}
        workloads.append(w)
    return {"apiVersion": "infra-compile/v1", "name": f"bench-{n}-s{seed}", "horizon_months": horizon,
            "sites": [dict(s) for s in SITES],
            "policy": {"placement": "hybrid", "allowed_gpus": ["H100", "H200", "A100-80GB", "L40S"]},
            "workloads": workloads}


def write_spec(n: int, seed: int, directory: str | Path) -> Path:
    import yaml

    path = Path(directory) / f"bench-{n}-s{seed}.yaml"
    path.write_text(yaml.safe_dump(platform_spec(n, seed), sort_keys=False), encoding="utf-8")
    return path


def run_stages(spec_path: Path, solver: str, time_limit: float | None, gap: float,
               max_nodes: int | None = None) -> dict:
    """Seconds per stage, exactly as compile_spec chains them (catalog load counted in validate)."""
    from compiler import pipeline
    from compiler.diagnostics import CompileError
    from compiler.estimate import estimate
    from compiler.optimize import SolveOptions, optimize
    from compiler.source import load
    from compiler.validate import validate

    t = {}
    t0 = time.perf_counter()
    catalog = pipeline.load_catalog()
    spec = validate(load(spec_path), catalog)
    t["validate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    candidates = estimate(spec, catalog)
    t["estimate"] = time.perf_counter() - t0
    n_candidates = sum(len(v) for v in candidates.by_workload.values())
    t0 = time.perf_counter()
    try:
        limits = {} if max_nodes is None else {"max_nodes": max_nodes}
        plan = optimize(candidates, SolveOptions(solver=solver, time_limit=time_limit, gap=gap, **limits))
    except CompileError as exc:
        # No plan (exit 3 infeasible, 5 out of time): a result of the benchmark, not a crash.
        t["solve"] = time.perf_counter() - t0
        t["render"] = float("nan")
        t["total"] = sum(v for v in t.values() if v == v)
        status = {3: "infeasible", 5: "no plan in time"}.get(exc.exit_code, f"exit {exc.exit_code}")
        return {"seconds": t, "candidates": n_candidates, "status": status, "gap": float("nan"),
                "files": 0}
    t["solve"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    artifacts = pipeline.render_artifacts(plan, candidates.catalog)
    t["render"] = time.perf_counter() - t0
    t["total"] = sum(t.values())
    return {"seconds": t, "candidates": n_candidates, "status": plan.solver.status,
            "gap": plan.solver.gap, "files": len(artifacts)}



def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.3%}"


STAGES = ("validate", "estimate", "solve", "render", "total")


def main(argv: list[str] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 300])
    ap.add_argument("--solver", choices=["cbc", "highs"], default="cbc")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per solve (default: none)")
    ap.add_argument("--gap", type=float, default=0.005, help="relative MIP gap to stop at")
    ap.add_argument("--max-nodes", type=int, default=None,
                    help="branch-and-bound nodes per solve (default: the compiler's, 0: no limit)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None, help="write the generated specs here")
    args = ap.parse_args(argv)

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        for n in sorted(args.sizes):
            path = write_spec(n, args.seed, where)
            r = run_stages(path, args.solver, args.time_limit, args.gap, args.max_nodes)
            rows.append((n, r))
            s = r["seconds"]
            console.print(f"N={n}: " + ", ".join(f"{k} {s[k]:.2f} s" for k in STAGES)
                          + f"; {r['status']}, gap {_pct(r['gap'])}", soft_wrap=True)

    base = rows[0][1]["seconds"]
    from compiler.optimize import MAX_NODES
    nodes = MAX_NODES if args.max_nodes is None else args.max_nodes
    table = Table(title=f"infra-compile pipeline: solver {args.solver}, gap {args.gap:g}, "
                        f"time limit {args.time_limit or 'none'}, node limit {nodes or 'none'}, "
                        f"seed {args.seed}")
    table.add_column("N", justify="right")
    table.add_column("candidates", justify="right")
    for stage in STAGES:
        table.add_column(f"{stage} s (x)", justify="right")
    table.add_column("status")
    table.add_column("gap", justify="right")
    for n, r in rows:
        cells = []
        for stage in STAGES:
            sec = r["seconds"][stage]
            if sec != sec:          # NaN: the stage did not run (no plan)
                cells.append("-")
                continue
            growth = f"{sec / base[stage]:.1f}x" if base[stage] > 0 else "-"
            cells.append(f"{sec:.2f} ({growth})")
        table.add_row(str(n), f"{r['candidates']:,}", *cells, r["status"], _pct(r["gap"]))
    console.print(table)
    console.print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
                  f"x = growth against N={rows[0][0]}")


if __name__ == "__main__":
    main()
