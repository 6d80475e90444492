"""Re-planning benchmark: one-line changes to the 100-workload platform, re-planned from its plan.

    python benchmarks/bench_replan.py [--workloads 100] [--seed 0] [--no-scratch]
    python benchmarks/bench_replan.py --sweep 30 [--seed 0]

Compiles platform_spec(N, seed) (bench_pipeline.py), then three one-line changes, each twice:
re-planned with the base plan as --baseline, and from scratch. For each it prints how many of the
workloads the change did not touch changed placements (site, instance, pricing, nodes or
replicas), the change in total against the base plan, what the new work costs on its own, the
plan's moves (policy.replan) and the seconds of both compiles. What a team should see: a change
moves almost nothing else, an addition costs about its own cost, a removal never costs more.

`--sweep N` instead sweeps platform_spec(N, seed) over relaxations only (H100 or A100 20% cheaper,
traffic 10% lower, 20% fewer tokens): each keeps the base plan a plan
of the scenario, so none may cost more than the base plan, and the table says so.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_pipeline import platform_spec  # noqa: E402

FINETUNE = {"name": "extra-finetune", "kind": "training", "model": "llama-3-8b", "tokens": 2.0e10,
            "window": {"start_month": 3, "deadline_days": 14}}


def scenarios(spec: dict) -> list[tuple[str, dict, set[str]]]:
    """(label, changed spec, the workloads the change touches)."""
    ws = spec["workloads"]
    svc = next(w for w in ws if w["kind"] == "inference")
    job = next(w for w in ws if w["kind"] == "training")
    raised = {**svc, "traffic": {**svc["traffic"], "peak_rps": round(svc["traffic"]["peak_rps"] * 1.1, 3)}}
    return [
        ("add an 8B fine-tune", {**spec, "workloads": ws + [FINETUNE]}, {FINETUNE["name"]}),
        (f"{svc['name']} traffic +10%", {**spec, "workloads": [raised if w is svc else w for w in ws]}, {svc["name"]}),
        (f"drop {job['name']}", {**spec, "workloads": [w for w in ws if w is not job]}, {job["name"]}),
    ]


def placed(plan) -> dict[str, tuple]:
    return {w.name: tuple(sorted((p.site, p.instance, p.pricing, p.nodes, p.monthly_replicas) for p in w.placements))
            for w in plan.workloads}


def compile_(path: Path, baseline: Path | None = None):
    from compiler import pipeline

    t0 = time.perf_counter()
    plan = pipeline.compile_spec(str(path), pipeline.CompileOptions(
        baseline=None if baseline is None else str(baseline), warn=lambda *_: None)).plan
    return plan, time.perf_counter() - t0


RELAXATIONS = """\
scenarios:
  - name: h100-cheaper
    prices: [{gpu: H100, factor: 0.8}]
  - name: a100-cheaper
    prices: [{gpu: A100-80GB, factor: 0.8}]
  - name: less-traffic
    traffic: 0.9
  - name: fewer-tokens
    tokens: 0.8
"""


def relaxations(n: int, seed: int, console) -> None:
    """Sweep platform_spec(n, seed) over RELAXATIONS and print each against the base plan."""
    import json

    from rich.table import Table

    from compiler.sweep import prepare, sweep

    tmp = Path(tempfile.mkdtemp(prefix="bench-relax-"))
    spec = platform_spec(n, seed)
    (tmp / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (tmp / "relaxed.yaml").write_text(RELAXATIONS)
    t0 = time.perf_counter()
    table, files = sweep(prepare(tmp / "spec.yaml", tmp / "relaxed.yaml"), workers=2)
    base = json.loads(files["_base/plan.json"])
    out = Table(title=f"Relaxations of {spec['name']} ({time.perf_counter() - t0:.0f} s, 2 workers)")
    for col in ("scenario", "status", "gap", "total", "against base"):
        out.add_column(col, justify="left" if col in ("scenario", "status") else "right")
    out.add_row("base", base["solver"]["status"], f"{base['solver']['gap']:.2%}", f"${base['total_cost_usd']:,.0f}", "")
    for r in table:
        out.add_row(r.scenario, r.status, "-" if r.gap is None else f"{r.gap:.2%}",
                    "-" if r.total_usd is None else f"${r.total_usd:,.0f}",
                    "-" if r.total_usd is None else f"{r.total_usd - base['total_cost_usd']:+,.0f}")
    console.print(out)


def main(argv: list[str] | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    from compiler.plan import to_json

    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-scratch", action="store_true", help="skip the compiles from scratch")
    ap.add_argument("--sweep", type=int, metavar="N", help="sweep N workloads over relaxations instead")
    args = ap.parse_args(argv)
    console = Console(width=160)
    if args.sweep:
        relaxations(args.sweep, args.seed, console)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-replan-"))
    spec = platform_spec(args.workloads, args.seed)
    (tmp / "base.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    base, base_s = compile_(tmp / "base.yaml")
    (tmp / "base.json").write_text(to_json(base))
    console.print(f"base {spec['name']}: ${base.total_cost_usd:,.0f}, {base.solver.status} "
                  f"gap {base.solver.gap:.2%}, {base_s:.0f} s")
    table = Table(title=f"Re-plans of {spec['name']} from its plan")
    for col in ("change", "others moved", "total change", "new work's own cost", "moves priced",
                "re-plan s", "scratch s", "scratch: others moved", "scratch: total change"):
        table.add_column(col, justify="left" if col == "change" else "right")
    for label, changed, touched in scenarios(spec):
        path = tmp / f"{label.split()[0]}.yaml"
        path.write_text(yaml.safe_dump(changed, sort_keys=False))
        plan, s = compile_(path, tmp / "base.json")
        before, after = placed(base), placed(plan)
        moved = [w for w in before if w in after and w not in touched and before[w] != after[w]]
        own = sum(w.cost_usd for w in plan.workloads if w.name in touched and w.name not in before)
        row = [label, str(len(moved)), f"{plan.total_cost_usd - base.total_cost_usd:+,.0f}",
               f"{own:,.0f}" if own else "-", f"{plan.solver.moves_usd:,.0f}", f"{s:.0f}"]
        if args.no_scratch:
            row += ["-", "-", "-"]
        else:
            fresh, fs = compile_(path)
            fresh_moved = [w for w in before if w in placed(fresh) and w not in touched and before[w] != placed(fresh)[w]]
            row += [f"{fs:.0f}", str(len(fresh_moved)), f"{fresh.total_cost_usd - base.total_cost_usd:+,.0f}"]
        table.add_row(*row)
        console.print(f"  {label}: moved {', '.join(moved[:8]) or 'none'}{' ...' if len(moved) > 8 else ''}")
    console.print(table)


if __name__ == "__main__":
    main()
